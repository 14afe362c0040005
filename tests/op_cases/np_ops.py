"""Cases for ``ops/np_ops.py``: the NumPy-semantics reductions (zero-dim results, int mean as
float32), ``_npi_argmax``/``_npi_argmin`` (int64), ``_np_reshape``, ``_npi_tensordot`` and
``_npi_matmul`` (broadcast batch axes), ``_npi_zeros/ones/full`` (() and 0 dims), against
NumPy, with gradients by finite differences."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase


def _np_ref(fn, out_dtype=None):
    def ref(x, axis=None, keepdims=False, dtype=None, ddof=0):
        extra = {"ddof": ddof} if fn in (np.std, np.var) else {}
        out = np.asarray(fn(x, axis=axis, keepdims=keepdims, **extra))
        return out.astype(out_dtype or x.dtype)
    return ref


def _fill_ref(fill):
    def ref(shape, dtype="float32", value=None):
        return np.full(shape, fill if value is None else value).astype(dtype)
    return ref


_REDUCTIONS = {"_np_sum": np.sum, "_npi_mean": np.mean, "_np_max": np.max, "_np_min": np.min,
               "_np_prod": np.prod, "_npi_std": np.std, "_npi_var": np.var}
_VARIANTS = [({}, "all"), ({"axis": 1}, "axis1"), ({"axis": (0, 2), "keepdims": True},
                                                     "tuple-keepdims"),
             ({"axis": -1}, "negative"), ({"keepdims": True}, "all-keepdims")]


def _cases():
    cases = []
    for name, fn in _REDUCTIONS.items():
        domain = (0.5, 1.5) if name == "_np_prod" else (-2.0, 2.0)
        for attrs, tag in _VARIANTS:
            cases.append(OpCase(name, shapes=[(2, 3, 4)], attrs=attrs, ref=_np_ref(fn),
                                domain=domain, id=tag))
    cases += [
        OpCase("_npi_std", shapes=[(3, 5)], attrs={"axis": 1, "ddof": 1},
               ref=_np_ref(np.std), id="ddof"),
        OpCase("_npi_mean", make=lambda rng, dtype: [np.array([[1, 2], [3, 6]], np.int32)],
               attrs={"axis": 1}, ref=_np_ref(np.mean, "float32"), grad=False,
               dtypes=("int32",), id="int32-gives-float32"),
        OpCase("_np_sum", make=lambda rng, dtype: [rng.randint(-9, 9, (3, 4)).astype(np.int32)],
               ref=_np_ref(np.sum), grad=False, dtypes=("int32",), id="int32"),
        OpCase("_npi_argmax", shapes=[(3, 4)], attrs={"axis": 1}, grad=False,
               ref=lambda x, axis=None, keepdims=False: np.argmax(x, axis=axis)),
        OpCase("_npi_argmax", shapes=[(3, 4)], grad=False, id="flat",
               ref=lambda x, axis=None, keepdims=False: np.asarray(np.argmax(x))),
        OpCase("_npi_argmin", shapes=[(3, 4)], attrs={"axis": 0, "keepdims": True},
               grad=False,
               ref=lambda x, axis=None, keepdims=False: np.argmin(x, axis=0)[None, :]),
        OpCase("_np_reshape", shapes=[(2, 3, 4)], attrs={"newshape": (4, -1)},
               ref=lambda x, newshape, order="C": x.reshape(newshape)),
        OpCase("_np_reshape", shapes=[(1, 1)], attrs={"newshape": ()}, id="to-scalar",
               ref=lambda x, newshape, order="C": x.reshape(newshape)),
        OpCase("_npi_tensordot", shapes=[(2, 3, 4), (4, 3, 5)],
               attrs={"a_axes_summed": (1, 2), "b_axes_summed": (1, 0)},
               ref=lambda a, b, a_axes_summed, b_axes_summed: np.tensordot(
                   a, b, axes=(list(a_axes_summed), list(b_axes_summed)))),
        OpCase("_npi_tensordot", shapes=[(3, 4), (4,)], id="matrix-vector",
               attrs={"a_axes_summed": (1,), "b_axes_summed": (0,)},
               ref=lambda a, b, a_axes_summed, b_axes_summed: np.tensordot(a, b, axes=1)),
        OpCase("_npi_matmul", shapes=[(2, 3, 4), (4, 5)], ref=np.matmul, id="broadcast"),
        OpCase("_npi_matmul", shapes=[(2, 1, 3, 4), (5, 4, 2)], ref=np.matmul, id="batch"),
    ]
    cases += [
        OpCase("_npx_reshape", shapes=[(2, 3, 4)], attrs={"newshape": (-2, -1)},
               ref=lambda x, newshape, reverse=False, order="C": x.reshape(2, 12)),
        OpCase("_npx_reshape", shapes=[(2, 3, 4)], attrs={"newshape": (-6, 1, 2, -4)},
               id="split", ref=lambda x, newshape, reverse=False, order="C": x.reshape(
                   1, 2, 3, 4)),
        OpCase("_npx_reshape", shapes=[(4, 1)], attrs={"newshape": (-2, -3)}, id="drop",
               ref=lambda x, newshape, reverse=False, order="C": x.reshape(4)),
        OpCase("_np_cumsum", shapes=[(3, 4)], attrs={"axis": 1},
               ref=lambda a, axis=None, dtype=None: np.cumsum(a, axis=axis)),
        OpCase("_np_cumsum", shapes=[(2, 3)], id="flat",
               ref=lambda a, axis=None, dtype=None: np.cumsum(a)),
    ]
    for name, fill in (("_npi_zeros", 0.0), ("_npi_ones", 1.0), ("_npi_full", None)):
        for attrs, tag in (({"shape": (2, 3)}, "f32"), ({"shape": ()}, "scalar"),
                           ({"shape": (2, 0), "dtype": "int32"}, "zero-size")):
            attrs = {**attrs, "value": 7.5} if fill is None else attrs
            cases.append(OpCase(name, shapes=[], attrs=attrs, ref=_fill_ref(fill), grad=False,
                                dtypes=("float32",), id=tag))
    return cases


CASES = _cases()
