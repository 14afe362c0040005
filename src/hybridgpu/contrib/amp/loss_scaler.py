"""AMP's dynamic loss scaler: starts at 2**16, halves after a step whose gradients overflow,
doubles after 2000 clean steps (at most 2**24), as MXNet's.

Example:
    >>> s = LossScaler()
    >>> s.loss_scale, s.update(overflow=True), s.update(overflow=False), s.loss_scale
    (65536.0, True, False, 32768.0)
"""

from __future__ import annotations

import logging

import numpy as np

__all__ = ["LossScaler"]


class LossScaler:
    """Dynamic loss scale for float16 training."""

    def __init__(self):
        self._loss_scale = 2.0 ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2.0 ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        """The factor losses are multiplied by now."""
        return self._loss_scale

    def has_overflow(self, params):
        """Whether any gradient of ``params`` (Parameters) holds inf or nan; updates the scale
        for the next step as MXNet does."""
        grads = [g for p in params if p.grad_req != "null" for g in p.list_grad()]
        overflow = not all(bool(np.isfinite(g.asnumpy()).all()) for g in grads)
        return self.update(overflow)

    def update(self, overflow):
        """Take one step's overflow flag: the scale becomes the pending one, halved after an
        overflow, doubled after ``2000`` clean steps. Returns ``overflow``."""
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.0
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.0)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return overflow
