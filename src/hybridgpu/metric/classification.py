"""Classification metrics: ``Accuracy``, ``TopKAccuracy``, ``F1``, ``MCC``, ``PCC`` and
``Perplexity``.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.metric import classification
    >>> m = classification.F1(average='micro')
    >>> m.update(mx.nd.array([0, 1, 1]), mx.nd.array([[0.3, 0.7], [0., 1.], [0.4, 0.6]]))
    >>> m.update(mx.nd.array([1, 0]), mx.nd.array([[0.9, 0.1], [0.8, 0.2]]))
    >>> round(m.get()[1], 6)
    0.666667
"""

from __future__ import annotations

import math

import numpy

from .. import ndarray
from ..ndarray import NDArray
from .core import EvalMetric, _host, _is_array, alias, check_label_shapes, register


def _argmax(pred, axis):
    if isinstance(pred, NDArray):
        return ndarray.argmax(pred, axis=axis)
    return numpy.argmax(numpy.asarray(pred), axis=axis)


@register
@alias("acc")
class Accuracy(EvalMetric):
    """The fraction of predictions equal to the label. A prediction of another shape than its
    label holds scores for each class along ``axis`` and is reduced by argmax first.

    Example:
        >>> import hybridgpu as mx
        >>> m = Accuracy()
        >>> m.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
        >>> m.get()
        ('accuracy', 0.6666666666666666)
    """

    def __init__(self, axis=1, name="accuracy", output_names=None, label_names=None):
        super().__init__(name, axis=axis, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.axis = axis

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            if pred.shape != label.shape:
                pred = _argmax(pred, self.axis)
            pred = _host(pred).astype("int32").ravel()
            label = _host(label).astype("int32").ravel()
            check_label_shapes(label, pred)
            self._add(int((pred == label).sum()), len(pred))


@register
@alias("top_k_accuracy", "top_k_acc")
class TopKAccuracy(EvalMetric):
    """The fraction of samples whose label is among the ``top_k`` highest scores (``top_k``
    must be at least 2; the name gets ``_<top_k>`` appended).

    Example:
        >>> import hybridgpu as mx
        >>> m = TopKAccuracy(top_k=2)
        >>> m.update([mx.nd.array([0, 2])], [mx.nd.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]])])
        >>> m.get()
        ('top_k_accuracy_2', 0.5)
    """

    def __init__(self, top_k=1, name="top_k_accuracy", output_names=None, label_names=None):
        super().__init__(name, top_k=top_k, output_names=output_names, label_names=label_names,
                         has_global_stats=True)
        self.top_k = top_k
        assert self.top_k > 1, "Please use Accuracy if top_k is no more than 1"
        self.name += f"_{self.top_k}"

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            assert len(pred.shape) <= 2, "Predictions should be no more than 2 dims"
            order = numpy.argpartition(_host(pred).astype("float32"), -self.top_k)
            label = _host(label).astype("int32")
            check_label_shapes(label, order)
            num_samples = order.shape[0]
            if order.ndim == 1:
                # As MXNet 1.9: a 1-d prediction counts in the local statistics only.
                self.sum_metric += int((order == label.ravel()).sum())
            else:
                top = order[:, -min(order.shape[1], self.top_k):]
                hits = int((top == label.reshape(-1, 1)).sum())
                self.sum_metric += hits
                self.global_sum_metric += hits
            self.num_inst += num_samples
            self.global_num_inst += num_samples


class _BinaryClassificationMetrics:
    """True/false positive/negative counts of a binary classifier, local and global."""

    _FIELDS = ("true_positives", "false_positives", "false_negatives", "true_negatives")

    def __init__(self):
        self.reset_stats()

    def update_binary_stats(self, label, pred):
        """Count one batch: ``pred`` holds two scores a sample, ``label`` 0 or 1 a sample."""
        pred = _host(pred)
        label = _host(label).astype("int32").ravel()
        pred_true = numpy.argmax(pred, axis=1) == 1
        check_label_shapes(label, pred)
        if len(numpy.unique(label)) > 2:
            raise ValueError(f"{self.__class__.__name__} currently only supports binary "
                             "classification.")
        label_true = label == 1
        counts = ((pred_true & label_true).sum(), (pred_true & ~label_true).sum(),
                  (~pred_true & label_true).sum(), (~pred_true & ~label_true).sum())
        for field, count in zip(self._FIELDS, counts):
            setattr(self, field, getattr(self, field) + int(count))
            setattr(self, "global_" + field, getattr(self, "global_" + field) + int(count))

    def _counts(self, use_global):
        prefix = "global_" if use_global else ""
        return [getattr(self, prefix + field) for field in self._FIELDS]

    def fscore_of(self, use_global=False):
        """F1 of the local (or global) counts; 0 where undefined."""
        tp, fp, fn, _ = self._counts(use_global)
        precision = tp / (tp + fp) if tp + fp > 0 else 0.0
        recall = tp / (tp + fn) if tp + fn > 0 else 0.0
        if precision + recall == 0:
            return 0.0
        return 2 * precision * recall / (precision + recall)

    @property
    def fscore(self):
        return self.fscore_of(False)

    @property
    def global_fscore(self):
        return self.fscore_of(True)

    def matthewscc(self, use_global=False):
        """Matthews correlation of the counts (zero factors of the denominator taken as 1)."""
        tp, fp, fn, tn = (float(c) for c in self._counts(use_global))
        if tp + fp + fn + tn == 0:
            return 0.0
        denom = 1.0
        for term in (tp + fp, tp + fn, tn + fp, tn + fn):
            denom *= term if term != 0 else 1.0
        return (tp * tn - fp * fn) / math.sqrt(denom)

    @property
    def total_examples(self):
        return sum(self._counts(False))

    @property
    def global_total_examples(self):
        return sum(self._counts(True))

    def local_reset_stats(self):
        for field in self._FIELDS:
            setattr(self, field, 0)

    def reset_stats(self):
        for field in self._FIELDS:
            setattr(self, field, 0)
            setattr(self, "global_" + field, 0)


class _BinaryMetric(EvalMetric):
    """A score of the binary counts: per ``update`` call averaged (``'macro'``) or of all counts
    together (``'micro'``). Subclasses give ``_score(counts, use_global)``."""

    def __init__(self, name, output_names, label_names, average):
        self._average = average
        self._metrics = _BinaryClassificationMetrics()
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=True)

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        counts = self._metrics
        for label, pred in zip(labels, preds):
            counts.update_binary_stats(label, pred)
        if self._average == "macro":
            self._add(self._score(counts, False), 1)
            counts.reset_stats()
        else:
            self.sum_metric = self._score(counts, False) * counts.total_examples
            self.global_sum_metric = self._score(counts, True) * counts.global_total_examples
            self.num_inst = counts.total_examples
            self.global_num_inst = counts.global_total_examples

    def reset(self):
        super().reset()
        self._metrics.reset_stats()

    def reset_local(self):
        super().reset_local()
        self._metrics.local_reset_stats()


@register
class F1(_BinaryMetric):
    """The F1 score (harmonic mean of precision and recall) of a binary classifier whose
    predictions hold two scores a sample; ``average`` is ``'macro'`` or ``'micro'``.

    Example:
        >>> import hybridgpu as mx
        >>> m = F1()
        >>> m.update([mx.nd.array([0., 1., 1.])], [mx.nd.array([[0.3, 0.7], [0., 1.], [0.4, 0.6]])])
        >>> m.get()
        ('f1', 0.8)
    """

    def __init__(self, name="f1", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    @staticmethod
    def _score(counts, use_global):
        return counts.fscore_of(use_global)

    @property
    def average(self):
        return self._average

    @property
    def metrics(self):
        return self._metrics


@register
class MCC(_BinaryMetric):
    """The Matthews correlation coefficient of a binary classifier (see ``PCC`` for more
    classes); ``average`` is ``'macro'`` or ``'micro'``.

    Example:
        >>> import hybridgpu as mx
        >>> m = MCC()
        >>> scores = mx.nd.array([[.3, .7], [0, 1], [.4, .6], [1, 0]])
        >>> m.update([mx.nd.array([0, 1, 1, 0])], [scores])
        >>> round(m.get()[1], 6)
        0.57735
    """

    def __init__(self, name="mcc", output_names=None, label_names=None, average="macro"):
        super().__init__(name, output_names, label_names, average)

    @staticmethod
    def _score(counts, use_global):
        return counts.matthewscc(use_global)


@register
class PCC(EvalMetric):
    """The multiclass Matthews correlation (Gorodkin's R_K) of the confusion matrix of all
    batches; the matrix grows with the largest class seen. nan while it is degenerate.

    Example:
        >>> import hybridgpu as mx
        >>> m = PCC()
        >>> m.update([mx.nd.array([0, 1, 2, 2])], [mx.nd.array([0, 1, 2, 1])])
        >>> m.get()
        ('pcc', 0.7)
    """

    def __init__(self, name="pcc", output_names=None, label_names=None, has_global_stats=True):
        self.k = 2
        super().__init__(name, output_names=output_names, label_names=label_names,
                         has_global_stats=has_global_stats)

    @staticmethod
    def _calc_mcc(cmat):
        n = cmat.sum()
        rows, cols = cmat.sum(axis=1), cmat.sum(axis=0)
        cov_rr = numpy.sum(rows * (n - rows))
        cov_cc = numpy.sum(cols * (n - cols))
        if cov_rr == 0 or cov_cc == 0:
            return float("nan")
        cov_rc = numpy.sum(cmat.diagonal() * n - rows * cols)
        return float(cov_rc / (cov_rr * cov_cc) ** 0.5)

    def _grow(self, k):
        pad = ((0, k - self.k), (0, k - self.k))
        self.lcm = numpy.pad(self.lcm, pad)
        self.gcm = numpy.pad(self.gcm, pad)
        self.k = k

    def update(self, labels, preds):
        labels, preds = check_label_shapes(labels, preds, True)
        for label, pred in zip(labels, preds):
            label = _host(label).astype("int32")
            pred = _host(pred)
            pred = pred.argmax(axis=1) if pred.shape != label.shape else pred.astype("int32")
            largest = max(pred.max(), label.max())
            if largest >= self.k:
                self._grow(int(largest) + 1)
            batch = numpy.zeros((self.k, self.k))
            numpy.add.at(batch, (pred.ravel(), label.ravel()), 1)
            self.lcm += batch
            self.gcm += batch
        self.num_inst += 1
        self.global_num_inst += 1

    @property
    def sum_metric(self):
        return self._calc_mcc(self.lcm) * self.num_inst

    @property
    def global_sum_metric(self):
        return self._calc_mcc(self.gcm) * self.global_num_inst

    def reset(self):
        self.global_num_inst = 0.0
        self.gcm = numpy.zeros((self.k, self.k))
        self.reset_local()

    def reset_local(self):
        self.num_inst = 0.0
        self.lcm = numpy.zeros((self.k, self.k))


@register
class Perplexity(EvalMetric):
    """``exp`` of the mean negative log of the probability given to the label (along ``axis``
    of the prediction). Labels equal to ``ignore_label`` are left out (``None``: keep all).

    Example:
        >>> import hybridgpu as mx
        >>> m = Perplexity(ignore_label=None)
        >>> m.update([mx.nd.array([0, 1, 1])], [mx.nd.array([[0.3, 0.7], [0, 1.], [0.4, 0.6]])])
        >>> round(m.get()[1], 6)
        1.771098
    """

    def __init__(self, ignore_label, axis=-1, name="perplexity", output_names=None,
                 label_names=None):
        super().__init__(name, ignore_label=ignore_label, output_names=output_names,
                         label_names=label_names, has_global_stats=True)
        self.ignore_label = ignore_label
        self.axis = axis

    def _batch(self, label, pred):
        """``(-sum of log-probabilities, number counted)`` of one label/prediction pair."""
        label, pred = _host(label), _host(pred)
        axis = self.axis % pred.ndim
        assert label.size * pred.shape[axis] == pred.size, \
            f"shape mismatch: {label.shape} vs. {pred.shape}"
        label = label.reshape(pred.shape[:axis] + pred.shape[axis + 1:])
        index = numpy.clip(label.astype("int32"), 0, pred.shape[axis] - 1)  # 'clip' as pick
        prob = numpy.take_along_axis(pred, numpy.expand_dims(index, axis), axis).squeeze(axis)
        num = 0.0 if self.ignore_label is not None else 0
        if self.ignore_label is not None:
            ignore = (label == self.ignore_label).astype(prob.dtype)
            num -= float(ignore.sum())
            prob = prob * (1 - ignore) + ignore
        loss = -float(numpy.log(numpy.maximum(prob, prob.dtype.type(1e-10))).sum())
        return loss, num + prob.size

    def update(self, labels, preds):
        labels = [labels] if _is_array(labels) else labels
        preds = [preds] if _is_array(preds) else preds
        assert len(labels) == len(preds), \
            f"{len(labels)} labels but {len(preds)} predictions"
        loss, num = 0.0, 0
        for label, pred in zip(labels, preds):
            batch_loss, batch_num = self._batch(label, pred)
            loss += batch_loss
            num += batch_num
        self._add(loss, num)

    def get(self):
        if self.num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.sum_metric / self.num_inst))

    def get_global(self):
        if self.global_num_inst == 0:
            return (self.name, float("nan"))
        return (self.name, math.exp(self.global_sum_metric / self.global_num_inst))
