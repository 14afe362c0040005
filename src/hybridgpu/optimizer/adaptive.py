"""Optimizers with per-element adaptive steps: ``Adam``, ``AdamW``, ``RMSProp``, ``AdaGrad``,
``AdaDelta`` and ``FTML``.

Each rule is written once on the raw arrays, with MXNet 1.9's arithmetic (its ``adam_update``,
``rmsprop_update``/``rmspropalex_update`` and ``ftml_update`` ops, and the NDArray code of its
``AdaGrad`` and ``AdaDelta``); coefficients such as ``1 - beta2`` are formed in the weight's
dtype, as MXNet's kernels do, so results agree to float32 rounding.

``AdamW`` is not an optimizer in MXNet 1.9 (only the ``mx.nd.contrib.adamw_update`` op is);
hybridgpu provides it with the rule GluonNLP's ``BERTAdam`` (and MXNet 2's ``AdamW``) builds on
that op. See ``AdamW``.

Example:
    >>> import hybridgpu as mx
    >>> opt = Adam(learning_rate=0.1)
    >>> w, g = mx.nd.array([1.0, -1.0]), mx.nd.array([0.5, -3.0])
    >>> opt.update(0, w, g, opt.create_state(0, w))
    >>> [round(x, 5) for x in w.asnumpy().tolist()]  # Adam's first step is ~lr per weight
    [0.9, -0.9]
"""

from __future__ import annotations

import math

from .. import ndarray as nd
from .optimizer import Optimizer, clip_op, op_scalars, register
from .sgd import aggregation_size

__all__ = ["Adam", "AdamW", "RMSProp", "AdaGrad", "AdaDelta", "FTML"]


def _zeros(weight, count):
    return tuple(nd.zeros(weight.shape, weight.context, dtype=weight.dtype)
                 for _ in range(count))


def _clip_if_set(array, bound):
    """Clip like MXNet's NDArray-level optimizers: whenever ``clip_gradient`` is not None."""
    return array if bound is None else array.clip(-bound, bound)


def _moments(mean, var, g, beta1, beta2):
    """``mean = beta1 * mean + (1 - beta1) * g``; ``var = beta2 * var + (1 - beta2) * g**2``."""
    f = op_scalars(mean.dtype)
    b1, b2 = f(beta1), f(beta2)
    mean *= b1
    mean += (f(1) - b1) * g
    var *= b2
    var += (f(1) - b2) * (g * g)


@register
class Adam(Optimizer):
    """Adam, from *Adam: A Method for Stochastic Optimization*::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * g
        var = beta2 * var + (1 - beta2) * g**2
        weight -= lr * sqrt(1 - beta2**t) / (1 - beta1**t) * mean / (sqrt(var) + epsilon)

    where ``t`` counts this weight's updates. ``lazy_update`` has no effect (dense only).

    Example:
        >>> opt = Adam()
        >>> opt.learning_rate, opt.beta1, opt.beta2, opt.epsilon
        (0.001, 0.9, 0.999, 1e-08)
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_update = lazy_update
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = op_scalars(weight.dtype)
        lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        g = grad * f(self.rescale_grad) + weight * f(wd)
        g = clip_op(g, self.clip_gradient)
        mean, var = state
        _moments(mean, var, g, self.beta1, self.beta2)
        weight -= f(lr) * mean / (xp.sqrt(var) + f(self.epsilon))


@register
class AdamW(Optimizer):
    """Adam with decoupled weight decay (*Decoupled Weight Decay Regularization*)::

        g = clip(rescale_grad * grad, clip_gradient)
        mean = beta1 * mean + (1 - beta1) * g
        var = beta2 * var + (1 - beta2) * g**2
        eta = lr * sqrt(1 - beta2**t) / (1 - beta1**t)   (eta = lr if not correct_bias)
        weight -= eta * (mean / (sqrt(var) + epsilon) + wd * weight)

    MXNet 1.9 has no ``AdamW`` optimizer, only the ``mx.nd.contrib.adamw_update`` op; this
    class is that op driven the way GluonNLP's ``BERTAdam`` and MXNet 2's ``AdamW`` drive it
    (``lr=1, eta=`` the bias-corrected rate), with their defaults (``epsilon=1e-6``). Unlike
    ``Adam``, the weight decay does not pass through the moments.

    Example:
        >>> import hybridgpu as mx
        >>> opt = AdamW(learning_rate=0.1, wd=0.5, correct_bias=False)
        >>> w = mx.nd.array([1.0])
        >>> opt.update(0, w, mx.nd.array([0.0]), opt.create_state(0, w))
        >>> round(w.asscalar().item(), 6)  # a zero gradient: only the decay, 1 - 0.1 * 0.5
        0.95
    """

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 correct_bias=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.correct_bias = correct_bias
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = op_scalars(weight.dtype)
        if self.correct_bias:
            lr *= math.sqrt(1.0 - self.beta2 ** t) / (1.0 - self.beta1 ** t)
        g = self._rescaled(grad, weight.dtype)
        mean, var = state
        _moments(mean, var, g, self.beta1, self.beta2)
        weight -= f(lr) * (mean / (xp.sqrt(var) + f(self.epsilon)) + weight * f(wd))


@register
class RMSProp(Optimizer):
    """RMSProp: Tieleman & Hinton's, or Graves's ``centered`` version::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        n = (1 - gamma1) * g**2 + gamma1 * n
        not centered:  weight -= lr * g / sqrt(n + epsilon)
        centered:      mean = (1 - gamma1) * g + gamma1 * mean
                       delta = gamma2 * delta - lr * g / sqrt(n - mean**2 + epsilon)
                       weight += delta

    then the weight is clipped to ``[-clip_weights, clip_weights]`` when ``clip_weights`` is
    set. The state is ``(n,)``, or ``(n, mean, delta)`` when centered.

    Example:
        >>> import hybridgpu as mx
        >>> opt = RMSProp(learning_rate=0.1, gamma1=0.0, epsilon=0.0)
        >>> w = mx.nd.array([1.0])
        >>> opt.update(0, w, mx.nd.array([-4.0]), opt.create_state(0, w))
        >>> round(w.asscalar().item(), 6)
        1.1
    """

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1, self.gamma2 = gamma1, gamma2
        self.centered = centered
        self.epsilon = epsilon
        self.clip_weights = clip_weights
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _zeros(weight, 3 if self.centered else 1)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = op_scalars(weight.dtype)
        g = clip_op(grad * f(self.rescale_grad) + weight * f(wd), self.clip_gradient)
        g1, eps = f(self.gamma1), f(self.epsilon)
        n = state[0]
        n *= g1
        n += (f(1) - g1) * (g * g)
        if not self.centered:
            weight -= f(lr) * (g / xp.sqrt(n + eps))
        else:
            _, mean, delta = state
            mean *= g1
            mean += (f(1) - g1) * g
            delta *= f(self.gamma2)
            delta -= f(lr) * (g / xp.sqrt(n - mean * mean + eps))
            weight += delta
        if self.clip_weights and self.clip_weights >= 0:
            xp.clip(weight, -self.clip_weights, self.clip_weights, out=weight)


@register
class AdaGrad(Optimizer):
    """AdaGrad, from *Adaptive Subgradient Methods for Online Learning and Stochastic
    Optimization*::

        g = clip(rescale_grad * grad, clip_gradient)
        history += g**2
        weight -= lr * (g / sqrt(history + eps) + wd * weight)

    Example:
        >>> import hybridgpu as mx
        >>> opt = AdaGrad(learning_rate=0.1, eps=0.0)
        >>> w = mx.nd.array([1.0])
        >>> opt.update(0, w, mx.nd.array([-3.0]), opt.create_state(0, w))
        >>> round(w.asscalar().item(), 6)
        1.1
    """

    def __init__(self, eps=1e-7, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _zeros(weight, 1)[0]

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = weight.dtype.type
        g = _clip_if_set(grad * f(self.rescale_grad), self.clip_gradient)
        state += g * g
        div = g / xp.sqrt(state + f(self.float_stable_eps))
        weight += (div + weight * f(wd)) * f(-lr)


@register
class AdaDelta(Optimizer):
    """AdaDelta, from *ADADELTA: An Adaptive Learning Rate Method* (no learning rate)::

        g = clip(rescale_grad * grad, clip_gradient)
        acc_g = rho * acc_g + (1 - rho) * g**2
        delta = sqrt(acc_delta + epsilon) / sqrt(acc_g + epsilon) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta**2
        weight -= delta + wd * weight

    MXNet's version also multiplies the caller's gradient array by ``rescale_grad`` in place;
    this one leaves the gradient alone.

    Example:
        >>> opt = AdaDelta()
        >>> opt.rho, opt.epsilon
        (0.9, 1e-05)
    """

    def __init__(self, rho=0.90, epsilon=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.rho = rho
        self.epsilon = epsilon
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = weight.dtype.type
        g = _clip_if_set(grad * f(self.rescale_grad), self.clip_gradient)
        acc_g, acc_delta = state
        rho, keep, eps = f(self.rho), f(1.0 - self.rho), f(self.epsilon)
        acc_g *= rho
        acc_g += keep * g * g
        delta = xp.sqrt(acc_delta + eps) / xp.sqrt(acc_g + eps) * g
        acc_delta *= rho
        acc_delta += keep * delta * delta
        weight -= delta + f(wd) * weight


@register
class FTML(Optimizer):
    """FTML, from *FTML - Follow the Moving Leader in Deep Learning*::

        g = clip(rescale_grad * grad + wd * weight, clip_gradient)
        v = beta2 * v + (1 - beta2) * g**2
        d_t = (1 - beta1**t) / lr * (sqrt(v / (1 - beta2**t)) + epsilon)
        z = beta1 * z + (1 - beta1) * g - (d_t - beta1 * d) * weight
        d = d_t
        weight = -z / d_t

    The state is ``(d, v, z)``.

    Example:
        >>> opt = FTML()
        >>> opt.beta1, opt.beta2, opt.epsilon
        (0.6, 0.999, 1e-08)
    """

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.aggregate_num = aggregation_size()

    def create_state(self, index, weight):
        return _zeros(weight, 3)

    def _step(self, xp, weight, grad, state, lr, wd, t):
        f = op_scalars(weight.dtype)
        b1, b2, one = f(self.beta1), f(self.beta2), f(1)
        g = clip_op(grad * f(self.rescale_grad) + weight * f(wd), self.clip_gradient)
        d, v, z = state
        v *= b2
        v += (one - b2) * (g * g)
        d_t = (one - b1 ** t) / f(lr) * (xp.sqrt(v / (one - b2 ** t)) + f(self.epsilon))
        z *= b1
        z += (one - b1) * g - (d_t - b1 * d) * weight
        d[...] = d_t
        weight[...] = -z / d_t
