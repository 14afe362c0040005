"""The metric machinery: ``EvalMetric``, ``CompositeEvalMetric``, the registry behind
``create``, ``CustomMetric``/``np`` for metrics written as functions, and ``Loss``.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.metric import core
    >>> m = core.create(lambda label, pred: float((label == pred).mean()), name='same')
    >>> m.update(mx.nd.array([1, 2]), mx.nd.array([1, 3]))
    >>> m.get()
    ('same', 0.5)
"""

from __future__ import annotations

import json
import warnings
from collections import OrderedDict

import numpy

from ..ndarray import NDArray

#: What ``CompositeEvalMetric.get`` treats as one value (not a list of values).
numeric_types = (float, int, numpy.generic)


# -- helpers ----------------------------------------------------------------------------------

def _is_array(x):
    return isinstance(x, (NDArray, numpy.ndarray))


def _host(x):
    """A NumPy array holding ``x`` (an NDArray on any context, or anything array-like)."""
    return x.asnumpy() if isinstance(x, NDArray) else numpy.asarray(x)


def check_label_shapes(labels, preds, wrap=False, shape=False):
    """Raise ``ValueError`` unless ``labels`` and ``preds`` have the same length (or, with
    ``shape=True``, the same shape); with ``wrap=True`` return single arrays wrapped in lists.

    Example:
        >>> check_label_shapes([1, 2], [3])
        Traceback (most recent call last):
        ...
        ValueError: Shape of labels 2 does not match shape of predictions 1
    """
    if shape:
        label_shape, pred_shape = labels.shape, preds.shape
    else:
        label_shape, pred_shape = len(labels), len(preds)
    if label_shape != pred_shape:
        raise ValueError(f"Shape of labels {label_shape} does not match shape of "
                         f"predictions {pred_shape}")
    if wrap:
        labels = [labels] if _is_array(labels) else labels
        preds = [preds] if _is_array(preds) else preds
    return labels, preds


def _py(value):
    """A NumPy scalar as a Python number (so sums accumulate in float64 as under NumPy 1.x)."""
    return value.item() if isinstance(value, numpy.generic) else value


def _name_value_pairs(name, value):
    names = name if isinstance(name, list) else [name]
    values = value if isinstance(value, list) else [value]
    return list(zip(names, values))


# -- the registry -----------------------------------------------------------------------------

_REGISTRY: dict = {}


def _register_as(klass, name):
    name = name.lower()
    old = _REGISTRY.get(name)
    if old is not None and old is not klass:
        warnings.warn(f"New metric {klass.__module__}.{klass.__name__} registered with name "
                      f"{name} is overriding existing metric {old.__module__}.{old.__name__}",
                      UserWarning, stacklevel=3)
    _REGISTRY[name] = klass


def register(klass):
    """Register an ``EvalMetric`` subclass under its lower-cased class name (a decorator)."""
    assert issubclass(klass, EvalMetric), f"Can only register subclass of {EvalMetric.__name__}"
    _register_as(klass, klass.__name__)
    return klass


def alias(*aliases):
    """A decorator registering an ``EvalMetric`` subclass under extra names."""
    def decorate(klass):
        for name in aliases:
            _register_as(klass, name)
        return klass
    return decorate


def _create(metric, *args, **kwargs):
    """A metric from a registered name, a JSON string, a config dict or an instance."""
    if isinstance(metric, EvalMetric):
        assert not args and not kwargs, \
            "metric is already an instance. Additional arguments are invalid"
        return metric
    if isinstance(metric, dict):
        config = dict(metric)
        return _create(config.pop("metric"), **config)
    assert isinstance(metric, str), "metric must be of string type"
    if metric.startswith("["):
        assert not args and not kwargs
        name, config = json.loads(metric)
        return _create(name, **config)
    if metric.startswith("{"):
        assert not args and not kwargs
        return _create(json.loads(metric))
    name = metric.lower()
    assert name in _REGISTRY, \
        f"{name} is not registered. Please register with metric.register first"
    return _REGISTRY[name](*args, **kwargs)


def create(metric, *args, **kwargs):
    """Create a metric from a name (``'acc'``), an ``EvalMetric`` instance (returned as it is),
    a list of those (a ``CompositeEvalMetric``), a function ``feval(label, pred)`` (a
    ``CustomMetric``), a config dict from ``get_config()`` or its JSON text. ``args`` and
    ``kwargs`` go to the constructor.

    Example:
        >>> create('top_k_acc', top_k=5).name
        'top_k_accuracy_5'
        >>> create(['acc', 'rmse']).get()
        (['accuracy', 'rmse'], [nan, nan])
    """
    if callable(metric):
        return CustomMetric(metric, *args, **kwargs)
    if isinstance(metric, list):
        composite = CompositeEvalMetric()
        for child in metric:
            composite.add(create(child, *args, **kwargs))
        return composite
    return _create(metric, *args, **kwargs)


# -- the base class ---------------------------------------------------------------------------

class EvalMetric:
    """Base class of all metrics: subclasses implement ``update(labels, preds)``.

    ``name`` is shown by ``get()``; ``output_names`` and ``label_names`` pick (and order) the
    arrays that ``update_dict`` passes to ``update`` (default: all of them). Extra keyword
    arguments are kept for ``get_config()``.

    Example:
        >>> class Count(EvalMetric):
        ...     def update(self, labels, preds):
        ...         self._add(len(preds), 1)
        >>> m = Count('count')
        >>> m.update_dict({'y': 0}, {'out1': 0, 'out2': 0})
        >>> print(m)
        EvalMetric: {'count': 2.0}
    """

    def __init__(self, name, output_names=None, label_names=None, **kwargs):
        self.name = str(name)
        self.output_names = output_names
        self.label_names = label_names
        self._has_global_stats = kwargs.pop("has_global_stats", False)
        self._kwargs = kwargs
        self.reset()

    def __str__(self):
        return f"EvalMetric: {dict(self.get_name_value())}"

    def get_config(self):
        """The configuration as a dict; ``create(**config)`` makes the same metric again."""
        config = self._kwargs.copy()
        config.update({"metric": self.__class__.__name__, "name": self.name,
                       "output_names": self.output_names, "label_names": self.label_names})
        return config

    def update_dict(self, label, pred):
        """``update`` with the arrays of two name -> array dicts (chosen by ``label_names``
        and ``output_names``)."""
        if self.output_names is not None:
            pred = [pred[name] for name in self.output_names]
        else:
            pred = list(pred.values())
        if self.label_names is not None:
            label = [label[name] for name in self.label_names]
        else:
            label = list(label.values())
        self.update(label, pred)

    def update(self, labels, preds):
        """Add one batch: ``labels`` and ``preds`` are lists of arrays (or single arrays)."""
        raise NotImplementedError()

    def _add(self, value, count):
        """Add ``value`` summed over ``count`` instances to the local and global statistics."""
        self.sum_metric += value
        self.global_sum_metric += value
        self.num_inst += count
        self.global_num_inst += count

    def reset(self):
        """Clear the local and the global statistics."""
        self.num_inst = 0
        self.sum_metric = 0.0
        self.global_num_inst = 0
        self.global_sum_metric = 0.0

    def reset_local(self):
        """Clear the local statistics only."""
        self.num_inst = 0
        self.sum_metric = 0.0

    def get(self):
        """``(name, value)`` over the batches since the last ``reset_local``; nan before any."""
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.sum_metric / self.num_inst)

    def get_global(self):
        """``(name, value)`` over the batches since the last ``reset``."""
        if not self._has_global_stats:
            return self.get()
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, self.global_sum_metric / self.global_num_inst)

    def get_name_value(self):
        """``get()`` as a list of ``(name, value)`` pairs."""
        return _name_value_pairs(*self.get())

    def get_global_name_value(self):
        """``get_global()`` as a list of ``(name, value)`` pairs."""
        if not self._has_global_stats:
            return self.get_name_value()
        return _name_value_pairs(*self.get_global())


@register
@alias("composite")
class CompositeEvalMetric(EvalMetric):
    """Several metrics updated together; ``get()`` returns a list of names and one of values.

    Example:
        >>> import hybridgpu as mx
        >>> m = CompositeEvalMetric(['acc', 'f1'])
        >>> m.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
        >>> m.get()
        (['accuracy', 'f1'], [0.6666666666666666, 0.8])
    """

    def __init__(self, metrics=None, name="composite", output_names=None, label_names=None):
        self.metrics = []
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.metrics = [create(m) for m in (metrics or [])]

    def add(self, metric):
        """Append a child metric (anything ``create`` accepts)."""
        self.metrics.append(create(metric))

    def get_metric(self, index):
        """The child metric at ``index``."""
        try:
            return self.metrics[index]
        except IndexError:
            raise ValueError(f"Metric index {index} is out of range 0 and "
                             f"{len(self.metrics)}") from None

    def update_dict(self, labels, preds):
        if self.label_names is not None:
            labels = OrderedDict((k, v) for k, v in labels.items() if k in self.label_names)
        if self.output_names is not None:
            preds = OrderedDict((k, v) for k, v in preds.items() if k in self.output_names)
        for metric in self.metrics:
            metric.update_dict(labels, preds)

    def update(self, labels, preds):
        for metric in self.metrics:
            metric.update(labels, preds)

    def reset(self):
        for metric in self.metrics:
            metric.reset()

    def reset_local(self):
        for metric in self.metrics:
            metric.reset_local()

    @staticmethod
    def _join(results):
        names, values = [], []
        for name, value in results:
            names.extend([name] if isinstance(name, str) else name)
            values.extend([value] if isinstance(value, numeric_types) else value)
        return (names, values)

    def get(self):
        return self._join(m.get() for m in self.metrics)

    def get_global(self):
        return self._join(m.get_global() for m in self.metrics)

    def get_config(self):
        config = super().get_config()
        config["metrics"] = [m.get_config() for m in self.metrics]
        return config


# -- losses and custom metrics ----------------------------------------------------------------

@register
class Loss(EvalMetric):
    """The mean of the values of the predictions, which are losses; labels are ignored.

    Example:
        >>> import hybridgpu as mx
        >>> m = Loss()
        >>> m.update(None, mx.nd.array([1, 2, 3, 6]))
        >>> m.get()
        ('loss', 3.0)
    """

    def __init__(self, name="loss", output_names=None, label_names=None):
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, _, preds):
        if _is_array(preds):
            preds = [preds]
        for pred in preds:
            pred = _host(pred)
            self._add(float(pred.sum()), pred.size)


@register
class CustomMetric(EvalMetric):
    """A metric computed by ``feval(label, pred)`` on NumPy copies of each pair; ``feval``
    returns the batch's value, or a tuple ``(sum_metric, num_inst)``. The name defaults to
    ``feval``'s (``custom(<lambda>)`` for a lambda). With ``allow_extra_outputs`` the
    predictions may outnumber the labels (extra ones are ignored).

    Example:
        >>> import hybridgpu as mx
        >>> m = CustomMetric(lambda label, pred: (abs(label - pred).sum(), label.size))
        >>> m.update([mx.nd.array([1, 2])], [mx.nd.array([1, 4])])
        >>> m.get()
        ('custom(<lambda>)', 1.0)
    """

    def __init__(self, feval, name=None, allow_extra_outputs=False, output_names=None,
                 label_names=None):
        if name is None:
            name = feval.__name__
            if "<" in name:
                name = f"custom({name})"
        super().__init__(name, feval=feval, allow_extra_outputs=allow_extra_outputs,
                         output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self._feval = feval
        self._allow_extra_outputs = allow_extra_outputs

    def update(self, labels, preds):
        if not self._allow_extra_outputs:
            labels, preds = check_label_shapes(labels, preds, True)
        for pred, label in zip(preds, labels):
            value = self._feval(_host(label), _host(pred))
            if isinstance(value, tuple):
                self._add(_py(value[0]), _py(value[1]))
            else:
                self._add(_py(value), 1)

    def get_config(self):
        raise NotImplementedError("CustomMetric cannot be serialized")


def np(numpy_feval, name=None, allow_extra_outputs=False):
    """A ``CustomMetric`` from ``numpy_feval(label, pred)``, a function of NumPy arrays that
    returns a number.

    Example:
        >>> import hybridgpu as mx
        >>> def mean_diff(label, pred):
        ...     return (pred - label).mean()
        >>> m = np(mean_diff)
        >>> m.update([mx.nd.array([1, 2])], [mx.nd.array([2, 4])])
        >>> m.get()
        ('mean_diff', 1.5)
    """
    def feval(label, pred):
        return numpy_feval(label, pred)

    feval.__name__ = numpy_feval.__name__
    return CustomMetric(feval, name, allow_extra_outputs)
