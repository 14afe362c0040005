"""Gradient-descent optimizers: ``SGD`` (with momentum), ``NAG`` and ``Signum``.

Each update rule is written once, on the raw arrays, with MXNet 1.9's arithmetic (its fused
``sgd_update``/``sgd_mom_update``/``nag_mom_update``/``signum_update`` ops), in the weight's
dtype. ``rescale_grad`` multiplies the gradient, ``clip_gradient`` then clips it; the weight
decay is not clipped.

Example:
    >>> import hybridgpu as mx
    >>> opt = NAG(learning_rate=0.1, momentum=0.9)
    >>> w, g = mx.nd.array([1.0]), mx.nd.array([1.0])
    >>> opt.update(0, w, g, opt.create_state(0, w))
    >>> round(w.asscalar().item(), 6)
    0.81
"""

from __future__ import annotations

import os

from .. import ndarray as nd
from .optimizer import Optimizer, op_scalars, register

__all__ = ["SGD", "NAG", "Signum"]


def aggregation_size():
    """How many weights one multi-tensor update takes: ``MXNET_OPTIMIZER_AGGREGATION_SIZE``
    when set (as MXNet's SGD reads it), else 4096."""
    return int(os.getenv("MXNET_OPTIMIZER_AGGREGATION_SIZE", "4096"))


def _momentum_state(weight, momentum):
    if momentum == 0.0:
        return None
    return nd.zeros(weight.shape, weight.context, dtype=weight.dtype)


def _sgd_plain(weight, g, lr, wd):
    """``w = (1 - lr * wd) * w - lr * g``, rounded as MXNet's ``sgd_update``."""
    f = op_scalars(weight.dtype)
    weight *= f(1) - f(lr) * f(wd)
    weight -= f(lr) * g


@register
class SGD(Optimizer):
    """Stochastic gradient descent, with momentum when ``momentum > 0``::

        g = clip(rescale_grad * grad, clip_gradient)
        state = momentum * state - lr * wd * weight - lr * g
        weight += state          # (momentum = 0: weight = (1 - lr * wd) * weight - lr * g)

    ``lazy_update`` is accepted and has no effect (hybridgpu has no sparse gradients). With
    ``multi_precision`` and float16 weights the state is ``(momentum, float32 weight)``.

    Example:
        >>> import hybridgpu as mx
        >>> opt = SGD(learning_rate=0.1, wd=0.5)
        >>> w = mx.nd.array([2.0])
        >>> opt.update(0, w, mx.nd.array([1.0]), None)
        >>> round(w.asscalar().item(), 6)
        1.8
    """

    _MASTER_FIRST = False

    def __init__(self, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.lazy_update = lazy_update
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _momentum_state(weight, self.momentum)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        # rounded as MXNet's multi_sgd_update / multi_sgd_mom_update, which its SGD uses
        f = op_scalars(weight.dtype)
        g = self._rescaled(grad, weight.dtype)
        if state is None or self.momentum <= 0:
            weight -= f(lr) * f(wd) * weight + f(lr) * g
            return
        state *= f(self.momentum)
        state -= f(lr) * f(wd) * weight
        state -= f(lr) * g
        weight += state


@register
class NAG(Optimizer):
    """Nesterov accelerated gradient, as MXNet 1.9's ``nag_mom_update`` computes it::

        g = clip(rescale_grad * grad, clip_gradient)
        weight += momentum * (momentum * state - lr * (g + wd * weight))
                  - lr * (g + wd * weight)
        state = momentum * state - lr * (g + wd * weight)    # with the updated weight

    The state's weight-decay term uses the weight just updated: MXNet's kernel writes the weight
    in place before it computes the momentum, and this reproduces its numbers. With
    ``momentum = 0`` this is plain SGD. With ``multi_precision`` and float16 weights the state
    is ``(momentum, float32 weight)``, as in MXNet.

    Example:
        >>> import hybridgpu as mx
        >>> opt = NAG(learning_rate=0.1, momentum=0.5)
        >>> w = mx.nd.array([1.0])
        >>> opt.update(0, w, mx.nd.array([2.0]), opt.create_state(0, w))
        >>> round(w.asscalar().item(), 6)  # 1 - 0.1 * 2 * (1 + 0.5)
        0.7
    """

    _MASTER_FIRST = False

    def __init__(self, momentum=0.0, **kwargs):
        super().__init__(**kwargs)
        self.momentum = momentum
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _momentum_state(weight, self.momentum)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        g = self._rescaled(grad, weight.dtype)
        if state is None or self.momentum <= 0:
            _sgd_plain(weight, g, lr, wd)
            return
        f = op_scalars(weight.dtype)
        lr, wd, momentum = f(lr), f(wd), f(self.momentum)
        step = lr * (g + wd * weight)
        weight += momentum * (momentum * state - step) - step
        state *= momentum
        state -= lr * (g + wd * weight)


@register
class Signum(Optimizer):
    """Signum (signSGD with momentum), from *signSGD: Compressed Optimisation for Non-Convex
    Problems*::

        state = momentum * state - (1 - momentum) * (wd * weight + clip(rescale_grad * grad))
        weight = (1 - lr * wd_lh) * weight + lr * sign(state)

    With ``momentum = 0`` (signSGD) the weight moves by ``-lr * sign(grad)`` after
    ``(1 - lr * wd)`` decay; MXNet's ``signsgd_update`` ignores ``rescale_grad`` and
    ``clip_gradient`` there, and so does this.

    Example:
        >>> import hybridgpu as mx
        >>> opt = Signum(learning_rate=0.1, momentum=0.0)
        >>> w = mx.nd.array([1.0, 1.0])
        >>> opt.update(0, w, mx.nd.array([3.0, -0.001]), None)
        >>> [round(x, 6) for x in w.asnumpy().tolist()]
        [0.9, 1.1]
    """

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = momentum
        self.wd_lh = wd_lh
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _momentum_state(weight, self.momentum)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = op_scalars(weight.dtype)
        if state is None or self.momentum <= 0:
            weight *= f(1) - f(lr) * f(wd)
            weight -= f(lr) * xp.sign(grad)
            return
        g = self._rescaled(grad, weight.dtype)
        keep = f(1) - f(self.momentum)
        state *= f(self.momentum)
        state -= keep * f(wd) * weight + keep * g
        weight *= f(1) - f(lr) * f(self.wd_lh or 0.0)
        weight += f(lr) * xp.sign(state)
