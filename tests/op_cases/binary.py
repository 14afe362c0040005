"""Cases for ``ops/elemwise_binary.py``: every op in its elemwise, broadcast and scalar form."""

from __future__ import annotations

import numpy as np

from op_harness import OpCase

_NP = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
       "mod": np.mod, "power": np.power, "maximum": np.maximum, "minimum": np.minimum,
       "hypot": np.hypot}
_LOGIC = {"equal": np.equal, "not_equal": np.not_equal, "greater": np.greater,
          "greater_equal": np.greater_equal, "lesser": np.less, "lesser_equal": np.less_equal,
          "logical_and": np.logical_and, "logical_or": np.logical_or,
          "logical_xor": np.logical_xor}
_ELEM = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
         "div": "elemwise_div"}
_SCALAR = {"add": "_plus_scalar", "sub": "_minus_scalar"}
_RSCALAR = {"sub": "_rminus_scalar", "div": "_rdiv_scalar", "mod": "_rmod_scalar",
            "power": "_rpower_scalar"}


def _domain(key):
    return (0.5, 2.0) if key in ("div", "mod", "power") else (-2.0, 2.0)


def _mod_inputs(shape_a, shape_b):
    """a in (0.1, 1.4), b in (1.5, 2): a / b never reaches an integer, so mod is smooth."""
    return lambda rng, dtype: [rng.uniform(0.1, 1.4, shape_a).astype(dtype),
                               rng.uniform(1.5, 2.0, shape_b).astype(dtype)]


def _same_dtype(fn):
    return lambda a, b: fn(a, b).astype(a.dtype)


def _scalar_ref(fn, reverse):
    def ref(a, scalar, **_):
        s = a.dtype.type(scalar)
        return (fn(s, a) if reverse else fn(a, s)).astype(a.dtype)

    return ref


def _cases():
    cases = []
    for key, fn in {**_NP, **_LOGIC}.items():
        grad = key in _NP
        dom = _domain(key)
        ref = _same_dtype(fn)
        mod = key == "mod"
        cases.append(OpCase(_ELEM.get(key, f"_{key}"), shapes=[(3, 4), (3, 4)], ref=ref,
                            grad=grad, domain=dom,
                            make=_mod_inputs((3, 4), (3, 4)) if mod else None))
        cases.append(OpCase(f"broadcast_{key}", shapes=[(2, 1, 4), (3, 1)], ref=ref,
                            grad=grad, domain=dom,
                            make=_mod_inputs((2, 1, 4), (3, 1)) if mod else None))
        scalar = {"power": 2.0, "mod": 1.7}.get(key, 1.5)
        cases.append(OpCase(_SCALAR.get(key, f"_{key}_scalar"), shapes=[(3, 4)],
                            attrs={"scalar": scalar}, ref=_scalar_ref(fn, False), grad=grad,
                            domain=(0.1, 1.6) if mod else dom))
        if key in _RSCALAR:  # rmod: 1.7 % a with a in (1.75, 2) stays smooth
            cases.append(OpCase(_RSCALAR[key], shapes=[(3, 4)], attrs={"scalar": scalar},
                                ref=_scalar_ref(fn, True), grad=grad,
                                domain=(1.75, 2.0) if mod else dom))
    cases.append(OpCase("broadcast_mod", shapes=[(3, 4), (4,)], domain=(0.5, 2.0),
                        ref=_same_dtype(np.mod), grad=False, id="rowwise"))
    cases.append(OpCase("_reduce_sum_like", shapes=[(2, 3, 4), (3, 1)],
                        ref=lambda x, like: x.sum(axis=(0, 2)).reshape(3, 1)))
    return cases


CASES = _cases()
