"""``mx.gluon.loss``: MXNet 1.9's losses as HybridBlocks, with MXNet's names, signatures,
defaults and results.

Every loss is called as ``loss(pred, label[, sample_weight])`` and returns one value per
sample: the elementwise loss, times ``sample_weight`` (broadcast) and the scalar ``weight``,
averaged over every axis except ``batch_axis``. Labels are reshaped to ``pred``'s shape when
they have as many elements (a label of another size is an error naming the loss and both
shapes). The formulas are the numerically stable ones (log-softmax, ``softrelu``), written with
``F.*`` ops only, so every loss runs imperatively, hybridized, and on Symbols.

Differences from MXNet 1.9.1, on purpose:

* A ``weight`` that is not a number is refused when the loss is made (``TypeError``), not at
  the first call (``AssertionError``); ``L2Loss(weight=None)`` means ``weight=1`` (MXNet fails
  on ``None / 2``).
* A label whose size does not fit ``pred`` raises ``LabelShapeError`` (both a ``ValueError``, as
  MXNet's imperative error, and an ``MXNetError``, as its hybridized one) naming the loss and
  both shapes, imperatively and while tracing.
* ``PoissonNLLLoss(compute_full=True)`` adds Stirling's term only where ``target > 1`` without
  evaluating ``0 * log(0)``: a zero target gives a finite loss (MXNet returns NaN).
* ``KLDivLoss`` reshapes ``label`` like ``pred`` as the other losses do (MXNet multiplies the
  two as they are).
* ``PoissonNLLLoss(compute_full=True)`` works under ``autograd.record()`` and hybridized
  (MXNet 1.9.1 multiplies in place there and fails in both).
* ``CTCLoss`` is built from ``F.*`` ops (the forward recursion in log space, unrolled over
  time; gradients by differentiating it), not a ``CTCLoss`` op, so it needs the shapes of
  ``pred`` and ``label``: always known imperatively and while hybridized; a ``sym.var`` needs
  ``shape=``. A label that cannot fit its sequence gives loss 0 as in MXNet, and gradient 0
  (MXNet leaves it uninitialized when ``pred_lengths`` is given). Padding is any negative
  label (MXNet: -1).
* ``SDMLLoss`` can be hybridized (MXNet reads ``x1.shape`` on a Symbol and fails).

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon import loss as gloss
    >>> pred = mx.nd.array([[0.5, 1.0], [2.0, -1.0]])
    >>> label = mx.nd.array([[0.0, 1.0], [1.0, -1.0]])
    >>> l2 = gloss.L2Loss(prefix="l2_")
    >>> l2
    L2Loss(batch_axis=0, w=1.0)
    >>> l2(pred, label).asnumpy()  # 0.5 * mean of squared differences, per sample
    array([0.0625, 0.25  ], dtype=float32)
    >>> l2(pred, label, mx.nd.array([[2.0], [0.0]])).asnumpy()  # sample_weight
    array([0.125, 0.   ], dtype=float32)
    >>> ce = gloss.SoftmaxCrossEntropyLoss()
    >>> ce.hybridize()
    >>> ce(mx.nd.array([[0.0, 0.0], [2.0, 0.0]]), mx.nd.array([1, 0])).asnumpy().round(4)
    array([0.6931, 0.1269], dtype=float32)
    >>> l2(pred, mx.nd.zeros((2, 3)))
    Traceback (most recent call last):
      ...
    hybridgpu.gluon.loss.LabelShapeError: L2Loss 'l2': label of shape (2, 3) does not fit ...
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .. import modes
from ..base import MXNetError
from ..ndarray import NDArray
from .hybrid_block import HybridBlock

__all__ = ["Loss", "L2Loss", "L1Loss", "SigmoidBinaryCrossEntropyLoss", "SigmoidBCELoss",
           "SoftmaxCrossEntropyLoss", "SoftmaxCELoss", "KLDivLoss", "CTCLoss", "HuberLoss",
           "HingeLoss", "SquaredHingeLoss", "LogisticLoss", "TripletLoss", "PoissonNLLLoss",
           "CosineEmbeddingLoss", "SDMLLoss", "LabelShapeError"]


class LabelShapeError(MXNetError, ValueError):
    """A label (or second input) whose shape does not fit ``pred``: catchable as MXNet's
    imperative ``ValueError`` and as its hybridized ``MXNetError``."""


# -- shared helpers ---------------------------------------------------------------------------

def _shape(x):
    """``x``'s shape as a tuple, or None where it is not known (a Symbol without shapes)."""
    if isinstance(x, NDArray):
        return tuple(x.shape)
    try:
        shape = tuple(x.shape)
    except MXNetError:
        return None
    return None if 0 in shape else shape


def _checked_shape(x):
    """``_shape(x)`` for a check that only picks an error message: not recorded as a read of
    the trace (``modes.unwatched``), so a hybridized loss serves every batch size with one run
    of its Python."""
    with modes.unwatched():
        return _shape(x)


def _dtype(x):
    """``x``'s dtype name (float32 for a Symbol whose dtype is not known)."""
    try:
        return np.dtype(x.dtype).name
    except MXNetError:
        return "float32"


def _size(shape):
    return math.prod(shape)


def _check_weight(block, weight):
    if weight is not None and (isinstance(weight, bool)
                               or not isinstance(weight, numbers.Number)):
        raise TypeError(f"{type(block).__name__}: weight must be a number or None, got "
                        f"{weight!r} of type {type(weight).__name__}")
    return weight


class Loss(HybridBlock):
    """Base class of the losses: keeps the scalar ``weight`` and the ``batch_axis``.

    Subclasses implement ``hybrid_forward(F, pred, label, ...)`` and may use the helpers
    ``_like`` (label to ``pred``'s shape), ``_weighted`` and ``_batch_mean``.

    Example:
        >>> class Cube(Loss):
        ...     def __init__(self, weight=None, batch_axis=0, **kwargs):
        ...         super().__init__(weight, batch_axis, **kwargs)
        ...     def hybrid_forward(self, F, pred, label, sample_weight=None):
        ...         loss = F.abs(pred - self._like(F, label, pred)) ** 3
        ...         return self._batch_mean(F, self._weighted(F, loss, sample_weight))
        >>> from hybridgpu import nd
        >>> Cube(weight=2.0)(nd.array([[1.0, 2.0]]), nd.array([[0.0, 0.0]])).asnumpy()
        array([9.], dtype=float32)
    """

    def __init__(self, weight, batch_axis, **kwargs):
        super().__init__(**kwargs)
        self._weight = _check_weight(self, weight)
        self._batch_axis = batch_axis

    def __repr__(self):
        return f"{type(self).__name__}(batch_axis={self._batch_axis}, w={self._weight})"

    def hybrid_forward(self, F, x, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement hybrid_forward")

    def _mismatch(self, what, got, like, like_what="pred", expected=None):
        expected = _size(like) if expected is None else expected
        return LabelShapeError(f"{type(self).__name__} {self.name!r}: {what} of shape {got} "
                               f"does not fit {like_what} of shape {like} ({_size(got)} "
                               f"elements, expected {expected})")

    def _like(self, F, x, like, what="label", like_what="pred"):
        """``x`` reshaped to ``like``'s shape (same number of elements, else an error naming
        the loss and both shapes). On Symbols: ``F.reshape_like``, so a traced graph keeps
        no batch size."""
        got, want = _checked_shape(x), _checked_shape(like)
        if got is not None and want is not None and _size(got) != _size(want):
            raise self._mismatch(what, got, want, like_what)
        if isinstance(x, NDArray):
            return x if got == want else F.reshape(x, shape=want)
        return F.reshape_like(x, like)

    def _weighted(self, F, loss, sample_weight=None, weight=None):
        """``loss * sample_weight`` (broadcast) ``* weight`` (default: the loss's own)."""
        weight = self._weight if weight is None else weight
        if sample_weight is not None:
            loss = F.broadcast_mul(loss, sample_weight)
        if weight is not None:
            loss = loss * weight
        return loss

    def _batch_mean(self, F, loss):
        return F.mean(loss, axis=self._batch_axis, exclude=True)


def _softplus_neg_abs(F, x):
    """``log(1 + exp(-|x|))``: the bounded part of a stable ``log(1 + exp(x))``."""
    return F.Activation(-F.abs(x), act_type="softrelu")


# -- regression losses ------------------------------------------------------------------------

class L2Loss(Loss):
    """``0.5 * (label - pred)^2``, averaged over the non-batch axes.

    Example:
        >>> from hybridgpu import nd
        >>> L2Loss()(nd.array([[1.0, 3.0]]), nd.array([[0.0, 1.0]])).asnumpy()
        array([1.25], dtype=float32)
    """

    def __init__(self, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.square(self._like(F, label, pred) - pred)
        half = 0.5 if self._weight is None else self._weight / 2
        return self._batch_mean(F, self._weighted(F, loss, sample_weight, half))


class L1Loss(Loss):
    """``|label - pred|``, averaged over the non-batch axes.

    Example:
        >>> from hybridgpu import nd
        >>> L1Loss()(nd.array([[1.0, 3.0]]), nd.array([[0.0, 1.0]])).asnumpy()
        array([1.5], dtype=float32)
    """

    def __init__(self, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.abs(self._like(F, label, pred) - pred)
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))


class HuberLoss(Loss):
    """Smoothed L1: ``0.5/rho * d^2`` where ``d = |label - pred| <= rho``, else
    ``d - 0.5 * rho``.

    Example:
        >>> from hybridgpu import nd
        >>> HuberLoss(rho=1)(nd.array([[0.5, 3.0]]), nd.array([[0.0, 0.0]])).asnumpy()
        array([1.3125], dtype=float32)
    """

    def __init__(self, rho=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._rho = rho

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        dist = F.abs(self._like(F, label, pred) - pred)
        loss = F.where(dist > self._rho, dist - 0.5 * self._rho,
                       (0.5 / self._rho) * F.square(dist))
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))


# -- classification losses --------------------------------------------------------------------

class SigmoidBinaryCrossEntropyLoss(Loss):
    """Binary cross-entropy of ``sigmoid(pred)`` (or of ``pred`` itself with
    ``from_sigmoid=True``) against labels in [0, 1]; ``pos_weight`` (4th argument, broadcast)
    scales the positive term.

    Example:
        >>> from hybridgpu import nd
        >>> bce = SigmoidBinaryCrossEntropyLoss()
        >>> bce(nd.array([[0.0, 100.0]]), nd.array([[1.0, 1.0]])).asnumpy().round(5)
        array([0.34657], dtype=float32)
        >>> bce(nd.array([[0.0]]), nd.array([[1.0]]), None, nd.array([2.0])).asnumpy().round(5)
        array([1.38629], dtype=float32)
    """

    def __init__(self, from_sigmoid=False, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_sigmoid = from_sigmoid

    def hybrid_forward(self, F, pred, label, sample_weight=None, pos_weight=None):
        label = self._like(F, label, pred)
        if self._from_sigmoid:
            loss = self._from_probabilities(F, pred, label, pos_weight)
        elif pos_weight is None:
            # log(1 + exp(x)) - x z, stably: relu(x) - x z + log(1 + exp(-|x|))
            loss = F.relu(pred) - pred * label + _softplus_neg_abs(F, pred)
        else:
            # (1 - z) x + (1 + (pw - 1) z) log(1 + exp(-x))
            scale = F.broadcast_mul(pos_weight - 1, label) + 1
            loss = pred - pred * label + scale * (_softplus_neg_abs(F, pred) + F.relu(-pred))
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))

    @staticmethod
    def _from_probabilities(F, prob, label, pos_weight):
        eps = 1e-12
        positive = F.log(prob + eps) * label
        if pos_weight is not None:
            positive = F.broadcast_mul(positive, pos_weight)
        return -(positive + F.log(1.0 - prob + eps) * (1.0 - label))


SigmoidBCELoss = SigmoidBinaryCrossEntropyLoss


class SoftmaxCrossEntropyLoss(Loss):
    """Cross-entropy of ``softmax(pred, axis)`` against class indices (``sparse_label``) or
    distributions; ``from_logits=True`` takes ``pred`` as log-probabilities already.

    Example:
        >>> from hybridgpu import nd
        >>> ce = SoftmaxCrossEntropyLoss()
        >>> ce(nd.array([[1.0, 1.0, 1.0, 1.0]]), nd.array([2])).asnumpy().round(5)
        array([1.38629], dtype=float32)
        >>> dense = SoftmaxCrossEntropyLoss(sparse_label=False, from_logits=True)
        >>> dense(nd.array([[-1.0, -2.0]]), nd.array([[0.5, 0.5]])).asnumpy()
        array([1.5], dtype=float32)
    """

    def __init__(self, axis=-1, sparse_label=True, from_logits=False, weight=None,
                 batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._axis = axis
        self._sparse_label = sparse_label
        self._from_logits = from_logits

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        if self._sparse_label:
            self._check_sparse(pred, label)
            loss = -F.pick(pred, label, axis=self._axis, keepdims=True)
        else:
            label = self._like(F, label, pred)
            loss = -F.sum(pred * label, axis=self._axis, keepdims=True)
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))

    def _check_sparse(self, pred, label):
        """Class indices: ``pred``'s shape without ``axis`` (or with ``axis`` of size 1)."""
        shape, got = _checked_shape(pred), _checked_shape(label)
        if shape is None or got is None:
            return
        axis = self._axis % len(shape)
        kept = shape[:axis] + (1,) + shape[axis + 1:]
        if got not in (shape[:axis] + shape[axis + 1:], kept):
            raise self._mismatch("label", got, shape, expected=f"{_size(kept)} class indices "
                                 f"for sparse_label=True and axis={self._axis}")


SoftmaxCELoss = SoftmaxCrossEntropyLoss


class KLDivLoss(Loss):
    """Kullback-Leibler divergence ``label * (log(label) - log_pred)``, summed (not averaged,
    as in MXNet) over the non-batch axes; ``pred`` is log-probabilities (``from_logits=True``,
    the default) or logits (softmax along ``axis``).

    Example:
        >>> from hybridgpu import nd
        >>> kl = KLDivLoss(from_logits=False)
        >>> kl(nd.array([[0.0, 0.0]]), nd.array([[0.5, 0.5]])).asnumpy()
        array([0.], dtype=float32)
    """

    def __init__(self, from_logits=True, axis=-1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._axis = axis

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        if not self._from_logits:
            pred = F.log_softmax(pred, axis=self._axis)
        label = self._like(F, label, pred)
        loss = label * (F.log(label + 1e-12) - pred)
        return F.sum(self._weighted(F, loss, sample_weight), axis=self._batch_axis,
                     exclude=True)


class HingeLoss(Loss):
    """``max(0, margin - pred * label)`` for labels in {-1, 1}.

    Example:
        >>> from hybridgpu import nd
        >>> HingeLoss()(nd.array([[0.5, 2.0]]), nd.array([[1.0, -1.0]])).asnumpy()
        array([1.75], dtype=float32)
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def _hinge(self, F, pred, label):
        return F.relu(self._margin - pred * self._like(F, label, pred))

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = self._hinge(F, pred, label)
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))


class SquaredHingeLoss(HingeLoss):
    """``max(0, margin - pred * label)^2`` for labels in {-1, 1}.

    Example:
        >>> from hybridgpu import nd
        >>> SquaredHingeLoss()(nd.array([[0.5, 2.0]]), nd.array([[1.0, -1.0]])).asnumpy()
        array([4.625], dtype=float32)
    """

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        loss = F.square(self._hinge(F, pred, label))
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))


class LogisticLoss(Loss):
    """``log(1 + exp(-pred * label))`` for labels in {-1, 1} (``label_format='signed'``) or
    {0, 1} (``'binary'``).

    Example:
        >>> from hybridgpu import nd
        >>> LogisticLoss(label_format="binary")(nd.array([[0.0]]), nd.array([[1.0]])).asnumpy()
        array([0.6931472], dtype=float32)
    """

    def __init__(self, weight=None, batch_axis=0, label_format="signed", **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        if label_format not in ("signed", "binary"):
            raise ValueError(f"LogisticLoss: label_format can only be 'signed' or 'binary', "
                             f"received {label_format!r}.")
        self._label_format = label_format

    def hybrid_forward(self, F, pred, label, sample_weight=None):
        label = self._like(F, label, pred)
        if self._label_format == "binary":
            label = 2 * label - 1
        margin = pred * label
        loss = F.relu(-margin) + _softplus_neg_abs(F, margin)
        return self._batch_mean(F, self._weighted(F, loss, sample_weight))


# -- embedding losses -------------------------------------------------------------------------

class TripletLoss(Loss):
    """``max(0, |pred - positive|^2 - |pred - negative|^2 + margin)``, the squared distances
    summed over the non-batch axes.

    Example:
        >>> from hybridgpu import nd
        >>> a, p, n = nd.array([[0.0, 0.0]]), nd.array([[1.0, 0.0]]), nd.array([[0.0, 2.0]])
        >>> TripletLoss(margin=4)(a, p, n).asnumpy()
        array([1.], dtype=float32)
    """

    def __init__(self, margin=1, weight=None, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, pred, positive, negative):
        positive = self._like(F, positive, pred, "positive")
        negative = self._like(F, negative, pred, "negative")
        gap = F.square(positive - pred) - F.square(negative - pred)
        loss = F.relu(F.sum(gap, axis=self._batch_axis, exclude=True) + self._margin)
        return self._weighted(F, loss)


class CosineEmbeddingLoss(Loss):
    """``1 - cos(input1, input2)`` for label 1, ``max(0, cos - margin)`` for label -1; one
    value per sample, shape ``(batch, 1)`` (MXNet's, not averaged).

    Example:
        >>> from hybridgpu import nd
        >>> x = nd.array([[1.0, 0.0], [1.0, 0.0]])
        >>> y = nd.array([[0.0, 1.0], [1.0, 1.0]])
        >>> CosineEmbeddingLoss()(x, y, nd.array([1, -1])).asnumpy().round(4)
        array([[1.    ],
               [0.7071]], dtype=float32)
    """

    def __init__(self, weight=None, batch_axis=0, margin=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._margin = margin

    def hybrid_forward(self, F, input1, input2, label, sample_weight=None):
        input1 = self._like(F, input1, input2, "input1", "input2")
        label = F.reshape(label, shape=(-1, 1))
        cos = _cosine(F, input1, input2)
        similar = (1 - cos) * (label == 1)
        zero = F.zeros((1, 1), dtype=_dtype(input2))
        dissimilar = F.broadcast_maximum(zero, (label == -1) * (cos - self._margin))
        return self._weighted(F, similar + dissimilar, sample_weight)


def _cosine(F, x, y, axis=-1):
    """Cosine similarity along ``axis`` as a column ``(batch, 1)``; norms floored at 1e-12."""
    norms = F.reshape(F.norm(x, axis=axis) * F.norm(y, axis=axis), shape=(-1, 1))
    dots = F.reshape(F.sum(x * y, axis=axis), shape=(-1, 1))
    return dots / F.broadcast_maximum(norms, F.full((1, 1), 1e-12, dtype=_dtype(y)))


class SDMLLoss(Loss):
    """Smoothed deep metric learning loss: row ``i`` of ``x1`` should be nearest to row ``i``
    of ``x2`` among the batch; the targets are smoothed by ``smoothing_parameter``. As in
    MXNet, ``weight`` and ``batch_axis`` are stored but not used.

    Example:
        >>> from hybridgpu import nd
        >>> x = nd.array([[0.0, 0.0], [10.0, 0.0]])
        >>> SDMLLoss(smoothing_parameter=0.0)(x, x).asnumpy()
        array([0., 0.], dtype=float32)
    """

    def __init__(self, smoothing_parameter=0.3, weight=1.0, batch_axis=0, **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self.kl_loss = KLDivLoss(from_logits=True)
        self.smoothing_parameter = smoothing_parameter

    def hybrid_forward(self, F, x1, x2):
        shape = _shape(x1)
        if shape is None:
            raise MXNetError(f"SDMLLoss {self.name!r} needs the batch size: give x1 a shape "
                             "(sym.var(name, shape=...))")
        batch = shape[0]
        diffs = F.broadcast_sub(F.expand_dims(x1, axis=1), F.expand_dims(x2, axis=0))
        distances = F.sum(F.square(diffs), axis=2)
        same = F.eye(batch, dtype=_dtype(x1))
        smooth = self.smoothing_parameter
        labels = same * (1 - smooth) + (1 - same) * (smooth / (batch - 1))
        return self.kl_loss(F.log_softmax(-distances, axis=1), labels)


# -- counts -----------------------------------------------------------------------------------

class PoissonNLLLoss(Loss):
    """Negative log-likelihood of ``target`` under a Poisson distribution of rate
    ``exp(pred)`` (``from_logits=True``) or ``pred``; ``compute_full`` adds Stirling's
    approximation of ``log(target!)`` for targets above 1. Averaged over all elements: shape
    ``(1,)``, as in MXNet.

    Example:
        >>> from hybridgpu import nd
        >>> PoissonNLLLoss()(nd.array([[0.0, 0.0]]), nd.array([[1.0, 3.0]])).asnumpy()
        array([1.], dtype=float32)
    """

    def __init__(self, weight=None, from_logits=True, batch_axis=0, compute_full=False,
                 **kwargs):
        super().__init__(weight, batch_axis, **kwargs)
        self._from_logits = from_logits
        self._compute_full = compute_full

    def hybrid_forward(self, F, pred, target, sample_weight=None, epsilon=1e-08):
        target = self._like(F, target, pred, "target")
        if self._from_logits:
            loss = F.exp(pred) - target * pred
        else:
            loss = pred - target * F.log(pred + epsilon)
        if self._compute_full:
            above_one = target > 1
            safe = F.where(above_one, target, F.ones_like(target))  # no 0 * log(0)
            stirling = safe * F.log(safe) - safe + 0.5 * F.log(2 * math.pi * safe)
            loss = loss + stirling * above_one
        return F.mean(self._weighted(F, loss, sample_weight))


# -- sequences --------------------------------------------------------------------------------

#: Log-probability standing for "impossible" in the CTC recursion (finite, so no NaN gradients).
_NEG = -1e10


class CTCLoss(Loss):
    """Connectionist Temporal Classification loss: ``-log p(label | pred)`` summed over every
    alignment, per sample (shape ``(batch,)``). ``pred`` holds unnormalized scores whose last
    class (``alphabet_size - 1``) is the blank; ``label`` holds zero-based classes padded with
    -1, or its lengths are given as ``label_lengths``; ``pred_lengths`` shortens sequences.
    A label that cannot fit in its sequence gives 0 (MXNet's convention).

    Example:
        >>> from hybridgpu import nd
        >>> pred = nd.zeros((1, 2, 3))  # one sequence of 2 steps, classes {0, 1, blank}
        >>> CTCLoss()(pred, nd.array([[0, -1]])).asnumpy().round(5)  # 3 alignments of 9
        array([1.09861], dtype=float32)
    """

    def __init__(self, layout="NTC", label_layout="NT", weight=None, **kwargs):
        if layout not in ("NTC", "TNC"):
            raise ValueError(f"CTCLoss: only 'NTC' and 'TNC' layouts for pred are supported, "
                             f"got {layout!r}")
        if label_layout not in ("NT", "TN"):
            raise ValueError(f"CTCLoss: only 'NT' and 'TN' layouts for label are supported, "
                             f"got {label_layout!r}")
        self._layout = layout
        self._label_layout = label_layout
        super().__init__(weight, label_layout.find("N"), **kwargs)

    def hybrid_forward(self, F, pred, label, pred_lengths=None, label_lengths=None,
                       sample_weight=None):
        if self._layout == "NTC":
            pred = F.swapaxes(pred, 0, 1)
        if self._label_layout == "TN":
            label = F.swapaxes(label, 0, 1)
        shape, label_shape = _shape(pred), _shape(label)
        if shape is None or label_shape is None:
            raise MXNetError(f"CTCLoss {self.name!r} unrolls over time and needs the shapes of "
                             "pred and label: declare them with sym.var(name, shape=...)")
        if len(shape) != 3 or len(label_shape) != 2 or label_shape[0] != shape[1]:
            raise self._mismatch("label", label_shape, shape, expected=f"(batch={shape[1]}, "
                                 "label length) for layout 'TNC'")
        if label_shape[1] > shape[0]:
            raise MXNetError(f"CTCLoss {self.name!r}: the max number of labels cannot exceed "
                             f"the maximum sequence length of the data: label of shape "
                             f"{label_shape} has {label_shape[1]} per sequence, pred of shape "
                             f"{shape} (layout TNC) has {shape[0]} steps")
        loss = _ctc(F, pred, label, shape, label_shape[1], pred_lengths, label_lengths)
        return self._weighted(F, loss, sample_weight)


def _logsumexp(F, *terms):
    top = terms[0]
    for term in terms[1:]:
        top = F.maximum(top, term)
    top = F.BlockGrad(top)  # the shift cancels out of the value and the gradient
    total = F.exp(terms[0] - top)
    for term in terms[1:]:
        total = total + F.exp(term - top)
    return top + F.log(total)


def _shifted(F, alpha, by, pad, width):
    """``alpha`` (``width`` wide) moved ``by`` places right along axis 1, the first ``by``
    places ``pad``."""
    kept = F.slice_axis(alpha, axis=1, begin=0, end=width - by)
    return F.concat(*([pad] * by), kept, dim=1)


def _ctc_labels(F, label, length, blank, pad):
    """The labels with blanks between and around, ``(batch, 2 * L + 1)``, and the penalty that
    forbids skipping a blank between two equal labels (or skipping to a blank)."""
    batch, width = _shape(label)
    positions = F.reshape(F.arange(width, dtype=_dtype(label)), shape=(1, -1))
    inside = F.broadcast_lesser(positions, F.reshape(length, shape=(-1, 1)))
    blanks = F.zeros_like(label) + blank
    clean = inside * label + (1 - inside) * blanks
    pairs = F.reshape(F.stack(blanks, clean, axis=2), shape=(batch, -1))
    ext = F.concat(pairs, pad * 0 + blank, dim=1)
    no_skip = (ext == blank) + (ext == _shifted(F, ext, 2, pad * 0 + blank, 2 * width + 1))
    return ext, (no_skip > 0) * _NEG


def _ctc_lengths(F, label):
    """Labels before the first -1 of each row."""
    width = _shape(label)[1]
    order = F.arange(width, dtype=_dtype(label))
    upto = F.broadcast_lesser_equal(F.reshape(order, shape=(-1, 1)),
                                    F.reshape(order, shape=(1, -1)))
    seen_padding = F.dot(label < 0, upto)
    return F.sum(seen_padding == 0, axis=1)


def _cast_like(F, x, like):
    """``x`` in ``like``'s dtype (``None`` stays ``None``)."""
    if x is None or _dtype(x) == _dtype(like):
        return x
    return F.cast(x, dtype=_dtype(like))


def _ctc(F, pred, label, shape, label_width, pred_lengths, label_lengths):
    """``-log p(label | pred)`` for ``pred`` in layout TNC, by the forward (alpha) recursion in
    log space, unrolled over the ``T`` steps."""
    steps, batch, classes = shape
    label, pred_lengths, label_lengths = (_cast_like(F, x, pred)
                                          for x in (label, pred_lengths, label_lengths))
    length = _ctc_lengths(F, label) if label_lengths is None else label_lengths
    pad = F.zeros_like(F.slice_axis(label, axis=1, begin=0, end=1)) + _NEG
    ext, skip_penalty = _ctc_labels(F, label, length, classes - 1, pad)
    logp = F.swapaxes(F.log_softmax(pred, axis=-1), 0, 1)          # (N, T, C)
    picks = F.one_hot(ext, depth=classes, dtype=_dtype(pred))
    emit = F.batch_dot(logp, picks, transpose_b=True)                # (N, T, S)
    emit = F.split(emit, num_outputs=steps, axis=1, squeeze_axis=True) if steps > 1 else [
        F.reshape(emit, shape=(batch, -1))]
    width = 2 * label_width + 1
    start = (F.reshape(F.arange(width, dtype=_dtype(pred)), shape=(1, -1)) >= 2) * _NEG
    alpha = F.broadcast_add(emit[0], start)
    for t in range(1, steps):
        new = _logsumexp(F, alpha, _shifted(F, alpha, 1, pad, width),
                         _shifted(F, alpha, 2, pad, width) + skip_penalty) + emit[t]
        alpha = new if pred_lengths is None else F.where(pred_lengths > t, new, alpha)
    last = F.pick(alpha, 2 * length, axis=1)
    before = F.pick(alpha, 2 * length - 1, axis=1) + (length == 0) * _NEG
    likelihood = _logsumexp(F, last, before)
    return F.where(likelihood > _NEG / 2, -likelihood, F.zeros_like(likelihood))


# MXNet's module-level helpers, which GluonCV's and GluonNLP's losses import (issue 21)

def _apply_weighting(F, loss, weight=None, sample_weight=None):
    """``loss * sample_weight`` (broadcast) ``* weight``, MXNet's ``loss._apply_weighting``.

    Example:
        >>> from hybridgpu import nd
        >>> _apply_weighting(nd, nd.array([[1.0, 2.0]]), 3.0, nd.array([[2.0]])).asnumpy()
        array([[ 6., 12.]], dtype=float32)
    """
    if sample_weight is not None:
        loss = F.broadcast_mul(loss, sample_weight)
    if weight is not None:
        if isinstance(weight, bool) or not isinstance(weight, numbers.Number):
            raise TypeError(f"_apply_weighting: weight must be a number, got {weight!r}")
        loss = loss * weight
    return loss


def _reshape_like(F, x, y):
    """``x`` reshaped to ``y``'s shape (MXNet's ``loss._reshape_like``).

    Example:
        >>> from hybridgpu import nd
        >>> _reshape_like(nd, nd.ones((4,)), nd.ones((2, 2))).shape
        (2, 2)
    """
    if isinstance(x, NDArray):
        return x.reshape(y.shape)
    return F.reshape_like(x, y)
