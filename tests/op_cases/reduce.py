"""Cases for ``ops/reduce.py``."""

from __future__ import annotations

from op_harness import OpCase

CASES = [
    OpCase("sum", shapes=[(2, 3, 4)], ref=lambda x: x.sum().reshape(1), id="all"),
    OpCase("sum", shapes=[(2, 3, 4)], attrs={"axis": 1}, ref=lambda x, axis: x.sum(axis=1),
           id="axis1"),
    OpCase("sum", shapes=[(2, 3, 4)], attrs={"axis": (0, 2), "keepdims": True},
           ref=lambda x, **a: x.sum(axis=(0, 2), keepdims=True), id="keepdims"),
    OpCase("sum", shapes=[(2, 3, 4)], attrs={"axis": 1, "exclude": True},
           ref=lambda x, **a: x.sum(axis=(0, 2)), id="exclude"),
]
