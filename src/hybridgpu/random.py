"""``mx.random``: ``seed`` makes every random op repeatable; the sampling functions are those
of ``mx.nd.random`` (``uniform``, ``normal``, ``randint``, ``randn``, ``shuffle``).

Example:
    >>> import hybridgpu as mx
    >>> mx.random.seed(0); a = mx.random.uniform(shape=(2,))
    >>> mx.random.seed(0); b = mx.random.uniform(shape=(2,))
    >>> bool((a == b).asnumpy().all())
    True
"""

from .ndarray.random import normal, randint, randn, shuffle, uniform
from .random_state import seed

__all__ = ["seed", "uniform", "normal", "randint", "randn", "shuffle"]
