"""``mx.lr_scheduler``: learning rates as a function of the number of updates (MXNet 1.x).

A scheduler is called with ``num_update``, the largest number of updates any weight has
received, and returns the learning rate. The values equal MXNet 1.9's step for step, including
its statefulness: ``FactorScheduler`` and ``MultiFactorScheduler`` lower ``base_lr`` as updates
pass each step and never raise it again, and ``PolyScheduler``/``CosineScheduler`` decay from
the ``base_lr`` they were built with (an optimizer's ``learning_rate`` overwrites ``base_lr``,
which moves the factor schedulers but not these two, as in MXNet).

During the first ``warmup_steps`` updates every scheduler returns the warm-up rate: rising
linearly from ``warmup_begin_lr`` to ``base_lr`` (``warmup_mode='linear'``) or held at
``warmup_begin_lr`` (``'constant'``).

Example:
    >>> sched = FactorScheduler(step=2, factor=0.5, base_lr=1.0)
    >>> [sched(n) for n in range(1, 8)]
    [1.0, 1.0, 0.5, 0.5, 0.25, 0.25, 0.125]
    >>> cos = CosineScheduler(max_update=4, base_lr=1.0, warmup_steps=2)
    >>> [round(cos(n), 4) for n in range(6)]
    [0.0, 0.5, 1.0, 0.5, 0.0, 0.0]
"""

from __future__ import annotations

import logging
from math import cos, pi

__all__ = ["LRScheduler", "FactorScheduler", "MultiFactorScheduler", "PolyScheduler",
           "CosineScheduler"]


class LRScheduler:
    """Base class: ``base_lr`` and the warm-up shared by every scheduler.

    Subclasses implement ``__call__(num_update)``.

    Example:
        >>> s = LRScheduler(base_lr=0.1, warmup_steps=4, warmup_begin_lr=0.02)
        >>> [round(s.get_warmup_lr(n), 3) for n in range(4)]
        [0.02, 0.04, 0.06, 0.08]
    """

    def __init__(self, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0, warmup_mode="linear"):
        self.base_lr = base_lr
        if not isinstance(warmup_steps, int):
            raise TypeError(f"warmup_steps must be an int, got {warmup_steps!r}")
        self.warmup_steps = warmup_steps
        self.warmup_final_lr = base_lr
        self.warmup_begin_lr = warmup_begin_lr
        if self.warmup_begin_lr > self.warmup_final_lr:
            raise ValueError("Base lr has to be higher than warmup_begin_lr")
        if self.warmup_steps < 0:
            raise ValueError("Warmup steps has to be positive or 0")
        if warmup_mode not in ("linear", "constant"):
            raise ValueError("Supports only linear and constant modes of warmup")
        self.warmup_mode = warmup_mode

    def get_warmup_lr(self, num_update):
        """The learning rate at update ``num_update`` (< ``warmup_steps``) of the warm-up."""
        if num_update >= self.warmup_steps:
            raise ValueError(f"num_update {num_update} is past the {self.warmup_steps} "
                             "warm-up steps")
        if self.warmup_mode == "linear":
            increase = ((self.warmup_final_lr - self.warmup_begin_lr)
                        * float(num_update) / float(self.warmup_steps))
            return self.warmup_begin_lr + increase
        return self.warmup_begin_lr

    def __call__(self, num_update):
        """The learning rate after ``num_update`` updates."""
        raise NotImplementedError("must override this")


class FactorScheduler(LRScheduler):
    """``base_lr * factor ** floor((num_update - 1) / step)``, never below ``stop_factor_lr``.

    Example:
        >>> s = FactorScheduler(step=1, factor=0.1, stop_factor_lr=0.005, base_lr=1.0)
        >>> [s(n) for n in (1, 2, 3, 4)]
        [1.0, 0.1, 0.010000000000000002, 0.005]
    """

    def __init__(self, step, factor=1, stop_factor_lr=1e-8, base_lr=0.01, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if step < 1:
            raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.factor = factor
        self.stop_factor_lr = stop_factor_lr
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while num_update > self.count + self.step:
            self.count += self.step
            self.base_lr *= self.factor
            if self.base_lr < self.stop_factor_lr:
                self.base_lr = self.stop_factor_lr
                logging.info("Update[%d]: now learning rate arrived at %0.5e, will not change "
                             "in the future", num_update, self.base_lr)
            else:
                logging.info("Update[%d]: Change learning rate to %0.5e", num_update,
                             self.base_lr)
        return self.base_lr


class MultiFactorScheduler(LRScheduler):
    """Multiply the rate by ``factor`` once ``num_update`` passes each entry of ``step`` (an
    increasing list of ints).

    Example:
        >>> s = MultiFactorScheduler(step=[2, 4], factor=0.5, base_lr=1.0)
        >>> [s(n) for n in range(1, 7)]
        [1.0, 1.0, 0.5, 0.5, 0.25, 0.25]
    """

    def __init__(self, step, factor=1, base_lr=0.01, warmup_steps=0, warmup_begin_lr=0,
                 warmup_mode="linear"):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(step, list) or not step:
            raise TypeError(f"step must be a non-empty list of ints, got {step!r}")
        for i, value in enumerate(step):
            if i and value <= step[i - 1]:
                raise ValueError("Schedule step must be an increasing integer list")
            if value < 1:
                raise ValueError("Schedule step must be greater or equal than 1 round")
        if factor > 1.0:
            raise ValueError("Factor must be no more than 1 to make lr reduce")
        self.step = step
        self.cur_step_ind = 0
        self.factor = factor
        self.count = 0

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        while self.cur_step_ind < len(self.step) and num_update > self.step[self.cur_step_ind]:
            self.count = self.step[self.cur_step_ind]
            self.cur_step_ind += 1
            self.base_lr *= self.factor
            logging.info("Update[%d]: Change learning rate to %0.5e", num_update, self.base_lr)
        return self.base_lr


class _DecayToMax(LRScheduler):
    """Shared by Poly and Cosine: decay from the original ``base_lr`` to ``final_lr`` over the
    ``max_update - warmup_steps`` updates after warm-up, then stay."""

    def __init__(self, max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                 warmup_mode):
        super().__init__(base_lr, warmup_steps, warmup_begin_lr, warmup_mode)
        if not isinstance(max_update, int):
            raise TypeError(f"max_update must be an int, got {max_update!r}")
        if max_update < 1:
            raise ValueError("maximum number of updates must be strictly positive")
        self.base_lr_orig = base_lr
        self.max_update = max_update
        self.final_lr = final_lr
        self.max_steps = self.max_update - self.warmup_steps

    def _decay(self, done, total):
        """The fraction (1 at the start, 0 at the end) after ``done`` of ``total`` updates."""
        raise NotImplementedError

    def __call__(self, num_update):
        if num_update < self.warmup_steps:
            return self.get_warmup_lr(num_update)
        if num_update <= self.max_update:
            decay = self._decay(num_update - self.warmup_steps, self.max_steps)
            self.base_lr = self.final_lr + (self.base_lr_orig - self.final_lr) * decay
        return self.base_lr


class PolyScheduler(_DecayToMax):
    """``final_lr + (base_lr - final_lr) * (1 - n / max_steps) ** pwr`` after warm-up, where
    ``n = num_update - warmup_steps`` and ``max_steps = max_update - warmup_steps``.

    Example:
        >>> s = PolyScheduler(max_update=4, base_lr=1.0, pwr=2)
        >>> [s(n) for n in range(6)]
        [1.0, 0.5625, 0.25, 0.0625, 0.0, 0.0]
    """

    def __init__(self, max_update, base_lr=0.01, pwr=2, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)
        self.power = pwr

    def _decay(self, done, total):
        return pow(1 - float(done) / float(total), self.power)


class CosineScheduler(_DecayToMax):
    """``final_lr + (base_lr - final_lr) * (1 + cos(pi * n / max_steps)) / 2`` after warm-up.

    Example:
        >>> s = CosineScheduler(max_update=2, base_lr=1.0, final_lr=0.5)
        >>> [s(n) for n in range(4)]
        [1.0, 0.75, 0.5, 0.5]
    """

    def __init__(self, max_update, base_lr=0.01, final_lr=0, warmup_steps=0,
                 warmup_begin_lr=0, warmup_mode="linear"):
        super().__init__(max_update, base_lr, final_lr, warmup_steps, warmup_begin_lr,
                         warmup_mode)

    def _decay(self, done, total):
        return (1 + cos(pi * done / total)) / 2
