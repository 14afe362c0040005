"""Online evaluation metrics: MXNet 1.9's ``mx.metric`` (``Accuracy``, ``F1``, ``RMSE``, ...).

A metric accumulates statistics over the batches given to ``update(labels, preds)`` (lists of
NDArrays on any context, or single NDArrays) and reports them with ``get()``. Every metric keeps
two sets of statistics: *local* ones, cleared by ``reset_local()`` (one epoch's worth, say), and
*global* ones (``get_global()``), cleared only by ``reset()``. ``create`` builds a metric from a
name (``'acc'``, ``'ce'``, ``'top_k_accuracy'``...), a list of names, a function or a config.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import metric
    >>> acc = metric.create('acc')
    >>> acc.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
    >>> acc.get()
    ('accuracy', 0.6666666666666666)
    >>> both = metric.create(['acc', metric.MSE()])
    >>> both.update(mx.nd.array([1, 0]), mx.nd.array([1, 0]))
    >>> both.get_name_value()
    [('accuracy', 1.0), ('mse', 0.0)]
    >>> acc.reset_local(); acc.get(), acc.get_global()
    (('accuracy', nan), ('accuracy', 0.6666666666666666))
"""


from . import classification, core, regression
from .classification import F1, MCC, PCC, Accuracy, Perplexity, TopKAccuracy
from .core import (
                   CompositeEvalMetric,
                   CustomMetric,
                   EvalMetric,
                   Loss,
                   alias,
                   check_label_shapes,
                   create,
                   np,
                   numeric_types,
                   register,
)
from .regression import MAE, MSE, RMSE, CrossEntropy, NegativeLogLikelihood, PearsonCorrelation

__all__ = ["EvalMetric", "CompositeEvalMetric", "Accuracy", "TopKAccuracy", "F1", "MCC", "PCC",
           "Perplexity", "MAE", "MSE", "RMSE", "CrossEntropy", "NegativeLogLikelihood",
           "PearsonCorrelation", "Loss", "CustomMetric", "check_label_shapes", "create",
           "register", "alias", "np", "numeric_types", "classification", "core", "regression"]
