"""Cases for ``ops/sort.py``: ``topk`` in every ``ret_typ``, ``sort``, ``argsort``, along
several axes and the flattened array, with ties (equal elements keep their order, MXNet's
order for axes of up to 16 elements) and index dtypes."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _order(x, axis, ascend):
    """Stable order of ``x`` along ``axis`` (None: flattened), ties in index order."""
    if axis is None:
        x, axis = x.reshape(-1), 0
    return np.argsort(x if ascend else -x, axis=axis, kind="stable"), x, axis


def _first(a, k, axis):
    return np.take(a, np.arange(k), axis=axis)


def _topk_ref(data, axis=-1, k=1, ret_typ="indices", is_ascend=False, dtype="float32"):
    order, x, ax = _order(data, axis, is_ascend)
    k = x.shape[ax] if k < 1 else k
    top = _first(order, k, ax)
    if ret_typ == "mask":
        mask = np.zeros(x.shape, data.dtype)
        np.put_along_axis(mask, top, 1, axis=ax)
        return mask.reshape(data.shape)
    values = np.take_along_axis(x, top, axis=ax)
    return {"indices": top.astype(dtype), "value": values,
            "both": (values, top.astype(dtype))}[ret_typ]


def _ties(shape):
    """Small integers: plenty of ties along every axis of at most 16 elements."""
    return lambda rng, dtype: [rng.randint(0, 4, size=shape).astype(dtype)]


def _topk_cases():
    cases = []
    for ret in ("indices", "value", "both", "mask"):
        differentiable = ret in ("value", "both")
        for attrs, tag in (({"k": 2}, "k2"), ({"k": 3, "axis": 0, "is_ascend": True}, "axis0-asc"),
                           ({"k": 4, "axis": None}, "flat"), ({"k": 0, "axis": 1}, "all")):
            cases.append(OpCase("topk", shapes=[(3, 4, 5)], attrs={**attrs, "ret_typ": ret},
                                ref=_topk_ref, grad=differentiable, id=f"{ret}-{tag}"))
        cases.append(OpCase("topk", make=_ties((4, 7)), attrs={"k": 5, "ret_typ": ret},
                            ref=_topk_ref, grad=False, id=f"{ret}-ties"))
        cases.append(OpCase("topk", make=_ties((4, 7)),
                            attrs={"k": 5, "ret_typ": ret, "is_ascend": True},
                            ref=_topk_ref, grad=False, id=f"{ret}-ties-asc"))
    cases += [
        OpCase("topk", shapes=[(3, 6)], attrs={"k": 2, "dtype": "int32", "ret_typ": "both"},
               ref=_topk_ref, id="int32-indices"),
        OpCase("topk", make=lambda rng, dtype: [rng.randint(-5, 5, (3, 6)).astype(np.int32)],
               attrs={"k": 3, "ret_typ": "both"}, ref=_topk_ref, dtypes=("int32",),
               grad=False, id="int-data"),
    ]
    return cases


def _sort_ref(data, axis=-1, is_ascend=True):
    order, x, ax = _order(data, axis, is_ascend)
    return np.take_along_axis(x, order, axis=ax)


def _argsort_ref(data, axis=-1, is_ascend=True, dtype="float32"):
    return _order(data, axis, is_ascend)[0].astype(dtype)


_SORT_VARIANTS = [({}, "default"), ({"is_ascend": False}, "desc"), ({"axis": 0}, "axis0"),
                  ({"axis": None}, "flat"), ({"axis": -2, "is_ascend": False}, "axis-2-desc")]


def _sort_cases():
    cases = []
    for attrs, tag in _SORT_VARIANTS:
        cases.append(OpCase("sort", shapes=[(3, 4, 5)], attrs=attrs, ref=_sort_ref, id=tag))
        cases.append(OpCase("argsort", shapes=[(3, 4, 5)], attrs=attrs, ref=_argsort_ref,
                            id=tag))
        cases.append(OpCase("argsort", make=_ties((2, 7)), attrs=attrs, ref=_argsort_ref,
                            id=f"{tag}-ties"))
    cases += [
        OpCase("argsort", shapes=[(3, 5)], attrs={"dtype": "int32"}, ref=_argsort_ref,
               id="int32"),
        OpCase("sort", make=_ties((4, 9)), attrs={"is_ascend": False}, ref=_sort_ref,
               grad=False, id="ties"),
        OpCase("_backward_topk", make=_backward_inputs, attrs={"axis": 1},
               ref=_backward_ref),
        OpCase("_backward_topk", make=_backward_flat_inputs, attrs={"axis": None},
               ref=_backward_flat_ref, id="flat"),
    ]
    return cases


def _backward_inputs(rng, dtype):
    order = np.argsort(rng.uniform(size=(2, 5, 3)), axis=1)[:, :2, :]
    return [rng.uniform(-2, 2, (2, 2, 3)).astype(dtype), order.astype(np.float32),
            rng.uniform(-2, 2, (2, 5, 3)).astype(dtype)]


def _backward_ref(g, indices, data, axis=1):
    out = np.zeros_like(data)
    np.put_along_axis(out, indices.astype(np.int64), g, axis=axis)
    return out


def _backward_flat_inputs(rng, dtype):
    return [rng.uniform(-2, 2, (4,)).astype(dtype), np.array([5.0, 0.0, 11.0, 3.0]),
            rng.uniform(-2, 2, (3, 4)).astype(dtype)]


def _backward_flat_ref(g, indices, data, axis=None):
    out = np.zeros(data.size, data.dtype)
    out[indices.astype(np.int64)] = g
    return out.reshape(data.shape)


CASES = _topk_cases() + _sort_cases()
