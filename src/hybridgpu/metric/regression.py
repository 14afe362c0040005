"""Regression metrics: ``MAE``, ``MSE``, ``RMSE``, ``PearsonCorrelation``; and the
likelihood metrics ``CrossEntropy`` and ``NegativeLogLikelihood``.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.metric import regression
    >>> m = regression.MAE()
    >>> m.update(mx.nd.array([1, 2]), mx.nd.array([1.5, 2.5]))
    >>> m.get()
    ('mae', 0.5)
"""

from __future__ import annotations

import numpy

from .core import EvalMetric, _host, alias, check_label_shapes, register


def _columns(label, pred):
    """Host copies of ``label`` and ``pred``, a 1-d one made a column (so they broadcast)."""
    label, pred = _host(label), _host(pred)
    if label.ndim == 1:
        label = label.reshape(label.shape[0], 1)
    if pred.ndim == 1:
        pred = pred.reshape(pred.shape[0], 1)
    return label, pred


class _PerBatchMean(EvalMetric):
    """The mean over label/prediction pairs of ``_error(label, pred)``."""

    def __init__(self, name, output_names, label_names):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            self._add(float(self._error(*_columns(label, pred))), 1)


@register
class MAE(_PerBatchMean):
    """Mean absolute error, averaged over the label/prediction pairs given.

    Example:
        >>> import hybridgpu as mx
        >>> m = MAE()
        >>> m.update([mx.nd.array([2.5, 0.0, 2, 8])], [mx.nd.array([3, -0.5, 2, 7])])
        >>> m.get()
        ('mae', 0.5)
    """

    def __init__(self, name="mae", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label, pred):
        return numpy.abs(label - pred).mean()


@register
class MSE(_PerBatchMean):
    """Mean squared error, averaged over the label/prediction pairs given.

    Example:
        >>> import hybridgpu as mx
        >>> m = MSE()
        >>> m.update([mx.nd.array([2.5, 0.0, 2, 8])], [mx.nd.array([3, -0.5, 2, 7])])
        >>> m.get()
        ('mse', 0.375)
    """

    def __init__(self, name="mse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label, pred):
        return ((label - pred) ** 2.0).mean()


@register
class RMSE(_PerBatchMean):
    """Root mean squared error of each label/prediction pair, averaged over the pairs.

    Example:
        >>> import hybridgpu as mx
        >>> m = RMSE()
        >>> m.update([mx.nd.array([2.5, 0.0, 2, 8])], [mx.nd.array([3, -0.5, 2, 7])])
        >>> round(m.get()[1], 6)
        0.612372
    """

    def __init__(self, name="rmse", output_names=None, label_names=None):
        super().__init__(name, output_names, label_names)

    @staticmethod
    def _error(label, pred):
        return numpy.sqrt(((label - pred) ** 2.0).mean())


class _LogLikelihood(EvalMetric):
    """The mean over samples of ``-log(p + eps)``, ``p`` the probability given to the label."""

    def __init__(self, eps, name, output_names, label_names):
        super().__init__(name, eps=eps, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.eps = eps

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label, pred = _host(label).ravel(), _host(pred)
            num = pred.shape[0]
            assert label.shape[0] == num, (label.shape[0], num)
            prob = pred[numpy.arange(num, dtype=numpy.int64), label.astype(numpy.int64)]
            self._add(float((-numpy.log(prob + self.eps)).sum()), num)


@register
@alias("ce")
class CrossEntropy(_LogLikelihood):
    """Cross entropy of predicted class probabilities (one row a sample) and class labels.

    Example:
        >>> import hybridgpu as mx
        >>> m = CrossEntropy()
        >>> m.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
        >>> round(m.get()[1], 6)
        0.571599
    """

    def __init__(self, eps=1e-12, name="cross-entropy", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("nll_loss")
class NegativeLogLikelihood(_LogLikelihood):
    """Negative log-likelihood of predicted class probabilities and class labels.

    Example:
        >>> import hybridgpu as mx
        >>> m = NegativeLogLikelihood()
        >>> m.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
        >>> round(m.get()[1], 6)
        0.571599
    """

    def __init__(self, eps=1e-12, name="nll-loss", output_names=None, label_names=None):
        super().__init__(eps, name, output_names, label_names)


@register
@alias("pearsonr")
class PearsonCorrelation(EvalMetric):
    """Pearson correlation of labels and predictions: of each pair, averaged (``'macro'``), or
    of all values since ``reset()`` (``'micro'``, with running moments).

    Example:
        >>> import hybridgpu as mx
        >>> m = PearsonCorrelation()
        >>> m.update([mx.nd.array([1, 2, 3, 4])], [mx.nd.array([1, 3, 2, 4])])
        >>> round(m.get()[1], 6)
        0.8
    """

    def __init__(self, name="pearsonr", output_names=None, label_names=None, average="macro"):
        self.average = average
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def reset(self):
        super().reset()
        # count, means and sums of squared deviations of labels and predictions; co-moment
        self._moments = {"n": 0, "mean_l": 0.0, "mean_p": 0.0, "m2_l": 0.0, "m2_p": 0.0,
                         "co": 0.0}

    def _update_moments(self, label, pred):
        """Welford's update of the running moments with a batch of values."""
        m = self._moments
        m["n"] += len(label)
        delta_l = label - m["mean_l"]
        m["mean_l"] += numpy.sum(delta_l / m["n"])
        m["m2_l"] += numpy.sum(delta_l * (label - m["mean_l"]))
        m["co"] += numpy.sum((label - m["mean_l"]) * (pred - m["mean_p"]))
        delta_p = pred - m["mean_p"]
        m["mean_p"] += numpy.sum(delta_p / m["n"])
        m["m2_p"] += numpy.sum(delta_p * (pred - m["mean_p"]))

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            check_label_shapes(label, pred, False, True)
            label = _host(label).ravel().astype(numpy.float64)
            pred = _host(pred).ravel().astype(numpy.float64)
            if self.average == "macro":
                self._add(float(numpy.corrcoef(pred, label)[0, 1]), 1)
            else:
                self.num_inst += 1
                self.global_num_inst += 1
                self._update_moments(label, pred)

    def _micro(self):
        m = self._moments
        with numpy.errstate(divide="ignore", invalid="ignore"):
            return float(numpy.float64(m["co"]) / numpy.sqrt(m["m2_l"] * m["m2_p"]))

    def get(self):
        if self.num_inst == 0 or self.average == "macro":
            return super().get()
        return (self.name, self._micro())

    def get_global(self):
        if self.global_num_inst == 0 or self.average == "macro":
            return super().get_global()
        return (self.name, self._micro())
