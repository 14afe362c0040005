"""``mx.random``: ``seed`` makes every random op repeatable.

Example:
    >>> import hybridgpu as mx
    >>> mx.random.seed(0)
"""

from .random_state import seed

__all__ = ["seed"]
