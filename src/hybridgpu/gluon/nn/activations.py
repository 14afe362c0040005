"""MXNet 1.x's activation layers: ``Activation``, ``LeakyReLU``, ``PReLU``, ``ELU``, ``SELU``,
``GELU`` and ``Swish``, calling the same ops under the same node names as MXNet (``relu0_fwd``,
``leakyrelu0_fwd``, ``elu0_leakyrelu0``, ...), so exported graphs match.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon import nn
    >>> act = nn.LeakyReLU(0.1)
    >>> act, act(mx.nd.array([-2.0, 3.0])).asnumpy()
    (LeakyReLU(0.1), array([-0.2,  3. ], dtype=float32))
    >>> prelu = nn.PReLU()
    >>> prelu.initialize()
    >>> prelu(mx.nd.array([-2.0, 3.0])).asnumpy()  # alpha starts at 0.25
    array([-0.5,  3. ], dtype=float32)
"""

from __future__ import annotations

from ... import initializer
from ..hybrid_block import HybridBlock

__all__ = ["Activation", "LeakyReLU", "PReLU", "ELU", "SELU", "GELU", "Swish"]


class Activation(HybridBlock):
    """``F.Activation(x, act_type=activation)``: ``'relu'``, ``'sigmoid'``, ``'tanh'``,
    ``'softrelu'`` or ``'softsign'``. Its default prefix is the activation's name
    (``relu0_``), as in MXNet.

    Example:
        >>> Activation("tanh")
        Activation(tanh)
    """

    def __init__(self, activation, **kwargs):
        self._act_type = activation  # before Block.__init__: it names the block
        super().__init__(**kwargs)

    def _alias(self):
        return self._act_type

    def hybrid_forward(self, F, x):
        return F.Activation(x, act_type=self._act_type, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._act_type})"


class LeakyReLU(HybridBlock):
    """``x`` for ``x > 0``, ``alpha * x`` otherwise (``alpha >= 0``).

    Example:
        >>> LeakyReLU(0.5)
        LeakyReLU(0.5)
    """

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError(f"Slope coefficient for LeakyReLU must be no less than 0, got "
                             f"alpha={alpha!r}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._alpha})"


class PReLU(HybridBlock):
    """LeakyReLU with a learned slope ``alpha`` (shape ``(in_channels,)``, one per channel on
    axis 1, or one shared slope with the default ``in_channels=1``).

    Example:
        >>> p = PReLU(in_channels=3, prefix="p_")
        >>> p.alpha.name, p.alpha.shape, p.alpha.init
        ('p_alpha', (3,), Constant(value=0.25))
    """

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1,  # noqa: B008
                 **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """``x`` for ``x > 0``, ``alpha * (exp(x) - 1)`` otherwise.

    Example:
        >>> import hybridgpu as mx
        >>> ELU()(mx.nd.array([0.0, 2.0])).asnumpy()
        array([0., 2.], dtype=float32)
    """

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled ELU with the self-normalizing constants (``scale * elu(x, alpha)``)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit, ``x * Phi(x)`` (the erf form, as MXNet 1.x)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")


class Swish(HybridBlock):
    """``x * sigmoid(beta * x)``.

    Example:
        >>> import hybridgpu as mx
        >>> Swish()(mx.nd.array([0.0])).asnumpy()
        array([0.], dtype=float32)
    """

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")
