"""Cases for ``ops/join.py``: concatenation, stacking and splitting with 1 to 3 arrays, and
``add_n``."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _split_ref(x, num_outputs, axis=1, squeeze_axis=False):
    parts = np.split(x, num_outputs, axis=axis)
    if squeeze_axis:
        parts = [np.squeeze(p, axis=axis) for p in parts]
    return tuple(parts) if len(parts) > 1 else parts[0]


def _split_v2_ref(x, indices, axis=1, squeeze_axis=False, sections=0):
    if sections:
        return _split_ref(x, sections, axis, squeeze_axis)
    parts = np.split(x, list(indices[1:]), axis=axis)
    if squeeze_axis:
        parts = [np.squeeze(p, axis=axis) for p in parts]
    return tuple(parts) if len(parts) > 1 else parts[0]


def _join_cases():
    return [
        OpCase("Concat", shapes=[(2, 3), (2, 4)], ref=lambda *xs: np.concatenate(xs, 1)),
        OpCase("concat", shapes=[(2, 3), (1, 3), (4, 3)], attrs={"dim": 0},
               ref=lambda *xs, dim: np.concatenate(xs, dim), id="three"),
        OpCase("Concat", shapes=[(2, 3, 1), (2, 3, 2)], attrs={"dim": -1},
               ref=lambda *xs, dim: np.concatenate(xs, dim), id="negative"),
        OpCase("Concat", shapes=[(2, 3)], ref=lambda x: x.copy(), id="one"),
        OpCase("stack", shapes=[(2, 3), (2, 3)], ref=lambda *xs: np.stack(xs)),
        OpCase("stack", shapes=[(2, 3)] * 3, attrs={"axis": -1},
               ref=lambda *xs, axis: np.stack(xs, axis), id="three"),
        OpCase("stack", shapes=[(2, 3)] * 2, attrs={"axis": 1},
               ref=lambda *xs, axis: np.stack(xs, axis), id="middle"),
        OpCase("stack", shapes=[(2, 3)], ref=lambda x: x[None], id="one"),
        OpCase("add_n", shapes=[(2, 3)] * 2, ref=lambda a, b: a + b),
        OpCase("ElementWiseSum", shapes=[(2, 3)] * 3, ref=lambda a, b, c: a + b + c,
               id="three"),
        OpCase("add_n", shapes=[(4,)], ref=lambda a: a.copy(), id="one"),
    ]


def _split_cases():
    cases = [OpCase("SliceChannel", shapes=[(2, 6, 2)], attrs=attrs, ref=_split_ref,
                    id=f"s{i}")
             for i, attrs in enumerate([
                 {"num_outputs": 3},
                 {"num_outputs": 2, "axis": -1},
                 {"num_outputs": 6, "axis": 1, "squeeze_axis": True},
                 {"num_outputs": 1, "axis": 0},
             ])]
    cases.append(OpCase("split", shapes=[(4, 3)], attrs={"num_outputs": 2, "axis": 0},
                        ref=_split_ref, id="alias"))
    cases += [OpCase("_split_v2", shapes=[(5, 2, 3)], attrs=attrs, ref=_split_v2_ref,
                     id=f"v{i}")
              for i, attrs in enumerate([
                  {"indices": (0, 2, 3), "axis": 0},
                  {"indices": (0,), "axis": 1, "sections": 2},
                  {"indices": (0, 1), "axis": -2, "squeeze_axis": True},
                  {"indices": (0, 1, 1), "axis": -1},
                  {"indices": (0,), "axis": 2},
              ])]
    return cases


CASES = _join_cases() + _split_cases()
