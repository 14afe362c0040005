"""Cases for ``ops/assign.py``: ``_slice_assign`` (and its alias ``_crop_assign``) and
``_slice_assign_scalar`` with Python-style slices (``None``, negative indices and steps,
partial keys), against NumPy's slice assignment on a copy."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _key(begin, end, step=()):
    step = step or (None,) * len(begin)
    return tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))


def _assign_ref(lhs, rhs, begin, end, step=()):
    out = lhs.copy()
    out[_key(begin, end, step)] = rhs
    return out


def _assign_scalar_ref(data, scalar=0.0, begin=(), end=(), step=()):
    out = data.copy()
    out[_key(begin, end, step)] = scalar
    return out


_SLICES = [
    ({"begin": (1, 1), "end": (2, 3)}, "basic"),
    ({"begin": (None,), "end": (None,), "step": (2,)}, "leading-axis-step"),
    ({"begin": (-1, None, 3), "end": (None, None, 0), "step": (-2, None, -1)}, "negative"),
    ({"begin": (0, -2), "end": (3, None), "step": (None, 1)}, "none-step"),
]
_SHAPE = (3, 4, 5)


def _rhs_shape(attrs):
    key = _key(attrs["begin"], attrs["end"], attrs.get("step", ()))
    return np.empty(_SHAPE)[key].shape


CASES = [
    *[OpCase("_slice_assign", shapes=[_SHAPE, _rhs_shape(a)], attrs=a, ref=_assign_ref, id=tag)
      for a, tag in _SLICES],
    OpCase("_crop_assign", shapes=[(2, 3), (1, 3)], attrs={"begin": (1,), "end": (2,)},
           ref=_assign_ref, id="alias"),
    *[OpCase("_slice_assign_scalar", shapes=[_SHAPE], attrs={**a, "scalar": 2.5},
             ref=_assign_scalar_ref, id=tag) for a, tag in _SLICES],
    OpCase("_slice_assign_scalar", shapes=[(2, 3)], attrs={"begin": (0,), "end": (1,)},
           ref=_assign_scalar_ref, id="default-zero"),
    OpCase("_crop_assign_scalar", shapes=[(2, 3)],
           attrs={"scalar": -1, "begin": (None, 1), "end": (None, 2)},
           ref=_assign_scalar_ref, id="alias"),
]
