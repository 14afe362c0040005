"""Cases for ``ops/index.py``: slicing (Python-style ``slice``, strict ``slice_axis``,
``slice_like``), ``take``/``pick`` in every mode with float and int indices, ``one_hot``,
``gather_nd``/``scatter_nd``, and the hidden backward ops."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _data_and(index, shape=(2, 3, 4)):
    """make(): random data of ``shape`` plus the fixed index array ``index``."""
    def make(rng, dtype):
        return [rng.uniform(-2, 2, size=shape).astype(dtype), np.asarray(index)]

    return make


def _trunc(indices):
    return np.trunc(indices).astype(np.int64)


def _moded(indices, n, mode):
    idx = _trunc(indices)
    return np.clip(idx, 0, n - 1) if mode == "clip" else np.mod(idx, n)


# -- slicing --------------------------------------------------------------------------------

def _py_slice(x, begin, end, step=()):
    step = step or (None,) * len(begin)
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))]


def _slice_cases():
    variants = [
        ({"begin": (0, 1), "end": (2, 3)}, "basic"),
        ({"begin": (None, 1), "end": (None, None)}, "none"),
        ({"begin": (None, None, None), "end": (None, None, None), "step": (1, 2, -1)}, "steps"),
        ({"begin": (-1, -2), "end": (None, -1)}, "negative"),
        ({"begin": (0, 2), "end": (2, 0), "step": (1, -1)}, "reverse"),
        ({"begin": (None, 5), "end": (None, -10), "step": (None, -1)}, "clamped"),
        ({"begin": (1,), "end": (5,)}, "past-end"),
    ]
    cases = [OpCase("slice", shapes=[(2, 3, 4)], attrs=a, ref=_py_slice, id=tag)
             for a, tag in variants]
    cases.append(OpCase("crop", shapes=[(3, 4)], attrs={"begin": (1, 0), "end": (3, 2)},
                        ref=_py_slice, id="alias"))
    cases.append(OpCase("_backward_slice", shapes=[(2, 2, 4), (2, 3, 4)],
                        attrs={"begin": (None, 1), "end": (None, None)},
                        ref=_backward_ref(_py_slice)))
    return cases


def _axis_slice(x, axis, begin, end):
    key = [slice(None)] * x.ndim
    key[axis] = slice(begin, end)
    return x[tuple(key)]


def _like_slice(x, like, axes=()):
    key = [slice(None)] * x.ndim
    for a in axes or range(x.ndim):
        key[a] = slice(0, like.shape[a])
    return x[tuple(key)]


def _backward_ref(forward):
    """zeros like data, with forward(data) positions set to ograd."""
    def ref(g, x, *rest, **attrs):
        out = np.zeros_like(x)
        np.copyto(forward(out, *rest, **attrs), g)  # basic slicing gives a view of out
        return out

    return ref


def _slice_axis_cases():
    cases = [OpCase("slice_axis", shapes=[(2, 3, 4)], attrs=a, ref=_axis_slice, id=tag)
             for a, tag in (({"axis": 1, "begin": 1, "end": None}, "end-none"),
                            ({"axis": -1, "begin": -3, "end": -1}, "negative"),
                            ({"axis": 0, "begin": 0, "end": 1}, "axis0"))]
    cases.append(OpCase("_backward_slice_axis", shapes=[(2, 3, 2), (2, 3, 4)],
                        attrs={"axis": -1, "begin": 1, "end": 3},
                        ref=_backward_ref(_axis_slice)))
    cases += [
        OpCase("slice_like", shapes=[(3, 4, 5), (2, 3, 5)], ref=_like_slice, id="all"),
        OpCase("slice_like", shapes=[(3, 4, 5), (1, 2, 3)], attrs={"axes": (0, -1)},
               ref=lambda x, like, axes: _like_slice(x, like, (0, 2)), id="axes"),
        OpCase("slice_like", shapes=[(3, 4, 5), (2, 2)], attrs={"axes": (1,)},
               ref=_like_slice, id="fewer-dims"),
        OpCase("_backward_slice_like", shapes=[(2, 3, 5), (3, 4, 5), (2, 3, 5)],
               ref=_backward_ref(_like_slice)),
    ]
    return cases


# -- take, pick -----------------------------------------------------------------------------

_TAKE_INDEX = np.array([[0.0, 2.0, -1.0], [5.0, 1.7, -0.5]])  # out of range and fractional


def _take_ref(a, indices, axis=0, mode="clip"):
    n = a.shape[axis]
    if mode == "raise":
        return np.take(a, _trunc(indices), axis=axis)
    return np.take(a, _moded(indices, n, mode), axis=axis)


def _take_cases():
    cases = []
    for attrs, tag in (({}, "axis0-clip"), ({"axis": 1}, "axis1-clip"),
                       ({"axis": -1, "mode": "wrap"}, "wrap"), ({"axis": 1, "mode": "wrap"},
                                                                "axis1-wrap")):
        cases.append(OpCase("take", make=_data_and(_TAKE_INDEX), attrs=attrs, ref=_take_ref,
                            id=tag))
    cases += [
        OpCase("take", make=_data_and(np.array([2, 0, 1, 1], np.int32)),
               attrs={"axis": 1, "mode": "raise"}, ref=_take_ref, id="raise-int-indices"),
        OpCase("take", make=_data_and(np.array([[0, 0], [0, 1]], np.float32), (3,)),
               ref=_take_ref, id="repeats-1d"),
        OpCase("_backward_take", make=_take_backward_inputs, attrs={"axis": 1},
               ref=_take_backward_ref),
    ]
    return cases


def _take_backward_inputs(rng, dtype):
    data = rng.uniform(-2, 2, size=(2, 3, 4)).astype(dtype)
    g = rng.uniform(-2, 2, size=(2,) + _TAKE_INDEX.shape + (4,)).astype(dtype)
    return [g, _TAKE_INDEX, data]


def _take_backward_ref(g, indices, data, axis=1, mode="clip"):
    out = np.zeros_like(data)
    for pos, i in np.ndenumerate(_moded(indices, data.shape[axis], mode)):
        out[:, i, :] += g[(slice(None),) + pos + (slice(None),)]
    return out


def _pick_ref(data, index, axis=-1, keepdims=False, mode="clip"):
    idx = _moded(index, data.shape[axis], mode)
    kept = list(data.shape)
    kept[axis] = 1
    out = np.take_along_axis(data, idx.reshape(kept), axis=axis)
    return out if keepdims else out.reshape(np.delete(data.shape, axis % data.ndim))


def _pick_cases():
    last = np.array([[0.0, 1.0, 2.0], [3.0, -1.0, 5.0]])
    mid = np.array([[0, 1, 2, 1], [2, -1, 5, 0]], np.float32)
    return [
        OpCase("pick", make=_data_and(last), ref=_pick_ref, id="default"),
        OpCase("pick", make=_data_and(last), attrs={"keepdims": True}, ref=_pick_ref,
               id="keepdims"),
        OpCase("pick", make=_data_and(last), attrs={"mode": "wrap"}, ref=_pick_ref, id="wrap"),
        OpCase("pick", make=_data_and(mid), attrs={"axis": 1}, ref=_pick_ref, id="axis1"),
        OpCase("pick", make=_data_and(mid.reshape(2, 1, 4)), attrs={"axis": 1, "keepdims": True},
               ref=_pick_ref, id="kept-index"),
        OpCase("pick", make=_data_and(np.array([0.7, 1.5, -1.5]), (3, 3)), attrs={"axis": 1,
               "mode": "wrap"}, ref=_pick_ref, id="fractional"),
        OpCase("choose_element_0index", make=_data_and(np.array([1, 0, 2]), (3, 3)),
               ref=_pick_ref, id="alias"),
        OpCase("_backward_pick", make=_pick_backward_inputs, attrs={"axis": 1},
               ref=_pick_backward_ref),
    ]


def _pick_backward_inputs(rng, dtype):
    return [rng.uniform(-2, 2, size=(2, 4)).astype(dtype),
            np.array([[0, 1, 2, 7], [2, -1, 5, 0]], np.float32),
            rng.uniform(-2, 2, size=(2, 3, 4)).astype(dtype)]


def _pick_backward_ref(g, index, data, axis=1):
    idx = _moded(index, data.shape[axis], "clip")
    hit = np.arange(data.shape[axis]).reshape(1, -1, 1) == idx[:, None, :]
    return np.where(hit, g[:, None, :], 0).astype(g.dtype)


# -- one_hot, gather_nd, scatter_nd ---------------------------------------------------------

def _one_hot_ref(indices, depth, on_value=1.0, off_value=0.0, dtype="float32"):
    hit = _trunc(indices)[..., None] == np.arange(depth)
    return np.where(hit, on_value, off_value).astype(dtype)


def _one_hot_cases():
    idx = np.array([[0.0, 2.0, -1.0], [3.0, 1.7, -0.5]])
    make = lambda rng, dtype: [idx.astype(dtype)]  # noqa: E731
    return [
        OpCase("one_hot", make=make, attrs={"depth": 3}, ref=_one_hot_ref),
        OpCase("one_hot", make=make, attrs={"depth": 4, "on_value": 5, "off_value": -1},
               ref=_one_hot_ref, id="values"),
        OpCase("one_hot", make=lambda rng, dtype: [np.array([1, 0, 3], np.int32)],
               attrs={"depth": 4, "on_value": 2.5, "dtype": "int32"}, ref=_one_hot_ref,
               dtypes=("int32",), id="int"),
    ]


def _gather_ref(data, indices):
    idx = _trunc(indices)
    return data[tuple(idx)]


def _gather_cases():
    slices = np.array([[1, 0, 1], [2, -1, 2]], np.float32)  # a repeat and a negative index
    full = np.array([[[1, 0]], [[2, 1]], [[3, 0]]], np.float32)
    return [
        OpCase("gather_nd", make=_data_and(slices), ref=_gather_ref, id="slices"),
        OpCase("gather_nd", make=_data_and(full), ref=_gather_ref, id="elements"),
        OpCase("gather_nd", make=_data_and(np.array([[0, 1]], np.int32), (2, 3)),
               ref=_gather_ref, id="int-rows"),
        OpCase("_backward_gather_nd", make=lambda rng, dtype: [
            rng.uniform(-2, 2, (3, 4)).astype(dtype), slices], attrs={"shape": (2, 3, 4)},
            ref=_scatter_add_ref),
        OpCase("scatter_nd", make=lambda rng, dtype: [
            rng.uniform(-2, 2, (3,)).astype(dtype), np.array([[0, 1, 1], [1, 0, 2]])],
            attrs={"shape": (2, 3)}, ref=_scatter_ref),
        OpCase("scatter_nd", make=lambda rng, dtype: [
            rng.uniform(-2, 2, (2, 4)).astype(dtype), np.array([[2, 0]])],
            attrs={"shape": (3, 4)}, ref=_scatter_ref, id="rows"),
    ]


def _scatter_ref(data, indices, shape):
    out = np.zeros(shape, data.dtype)
    out[tuple(_trunc(indices))] = data
    return out


def _scatter_add_ref(data, indices, shape):
    out = np.zeros(shape, data.dtype)
    np.add.at(out, tuple(_trunc(indices)), data)
    return out


def _batch_take_ref(a, indices):
    rows = a.reshape(-1, a.shape[-1])
    idx = np.clip(_trunc(indices).reshape(-1), 0, rows.shape[1] - 1)
    return rows[np.arange(rows.shape[0]), idx].reshape(indices.shape)


def _ravel_ref(data, shape):
    dims = (10 ** 6,) + tuple(shape[1:])  # the first entry (maybe -1) plays no part
    return np.ravel_multi_index(tuple(_trunc(data)), dims).astype(data.dtype)


def _unravel_ref(data, shape):
    dims = (10 ** 6,) + tuple(shape[1:])
    return np.stack(np.unravel_index(_trunc(data), dims)).astype(data.dtype)


def _flat_cases():
    multi = np.array([[3, 6, 6, 0], [4, 5, 1, 0]])
    return [
        OpCase("batch_take", make=_data_and(np.array([0, 1, 0]), (3, 2)),
               ref=_batch_take_ref),
        OpCase("batch_take", make=_data_and(np.array([[-1, 2, 5]], np.int32), (3, 4)),
               ref=_batch_take_ref, id="clipped"),
        OpCase("ravel_multi_index", make=lambda rng, dtype: [multi.astype(dtype)],
               attrs={"shape": (7, 6)}, ref=_ravel_ref),
        OpCase("ravel_multi_index", make=lambda rng, dtype: [np.array(
            [[1, 0, 2], [2, 3, 0], [1, 1, 4]], dtype)], attrs={"shape": (-1, 4, 5)},
            ref=_ravel_ref, id="3d-placeholder"),
        OpCase("unravel_index", make=lambda rng, dtype: [np.array([22, 41, 37, 0], dtype)],
               attrs={"shape": (7, 6)}, ref=_unravel_ref),
        OpCase("unravel_index", make=lambda rng, dtype: [np.array([[7, 59], [20, 3]], dtype)],
               attrs={"shape": (-1, 4, 5)}, ref=_unravel_ref, id="2d-placeholder"),
    ]


CASES = (_slice_cases() + _slice_axis_cases() + _take_cases() + _pick_cases()
         + _one_hot_cases() + _gather_cases() + _flat_cases())
