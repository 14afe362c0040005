"""Cases for ``ops/loss.py``: forward values here; their gradients (which ignore the head
gradient, so finite differences do not apply) are pinned in ``tests/test_loss_ops.py``."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase

_TWO = [(2, 3), (2, 3)]
CASES = [
    OpCase("MakeLoss", shapes=[(2, 3)], ref=lambda x, **a: x, grad=False),
    OpCase("make_loss", shapes=[(2, 3)], ref=lambda x: x, grad=False),
    OpCase("LinearRegressionOutput", shapes=_TWO, ref=lambda x, y, **a: x, grad=False),
    OpCase("LogisticRegressionOutput", shapes=_TWO, ref=lambda x, y, **a: 1 / (1 + np.exp(-x)),
           grad=False),
    OpCase("MAERegressionOutput", shapes=_TWO, ref=lambda x, y, **a: x, grad=False),
]
TESTED_ELSEWHERE = {name: "tests/test_loss_ops.py" for name in (
    "MakeLoss", "make_loss", "LinearRegressionOutput", "LogisticRegressionOutput",
    "MAERegressionOutput")}
