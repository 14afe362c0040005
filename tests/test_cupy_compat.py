"""CuPy compatibility without a GPU: every op's ``compute`` runs on a *device guard*, a stand-in
for the ``cupy`` module that computes with NumPy but refuses what CuPy refuses or makes slow.

The guard (see docs/cupy_audit.md):

* ``DEVICE`` plays ``cupy``: it exposes only the functions checked to exist in CuPy 13, with
  CuPy's signatures where they differ (``argsort``/``sort`` are stable and take no other
  ``kind``, ``take`` has no ``mode``); it unwraps its arguments, calls NumPy and wraps the
  results as ``DeviceArray`` (a NumPy scalar result becomes a 0-d array, as in CuPy).
* ``DeviceArray`` plays ``cupy.ndarray``: operators and methods work, but ``np.<ufunc>`` or
  ``np.<function>`` called on it raise ``DirectNumpyCallError`` (a NumPy scalar on the left of an
  operator is allowed: CuPy handles that too); ``bool``/``int``/``float``/``item``/``tolist``
  and boolean-mask indexing are host syncs (``HostSyncError``); iterating over it raises
  ``ElementLoopError``; ``np.asarray``/``np.array`` on it raise ``HostConversionError``; a
  plain NumPy array mixed into a device call raises ``HostArrayMixError`` (CuPy accepts host
  arrays only in ``cupy.asarray``/``cupy.array``).
* ``cupyx.scatter_add`` and ``cupyx.scipy.special`` are stubbed in ``sys.modules`` while a
  compute runs (SciPy computes the special functions when installed), so the ``xp is not np``
  branches run too; random ops get a ``DeviceRandomState`` with CuPy's methods only.

A host sync is allowed only in ops whose ``OpDef.host_sync`` says so for the attributes
(``HOST_SYNCS`` lists them with the reason). Every result must be a device array of the NumPy
path's dtype and shape, with the same values (rtol 1e-4, as the GPU test), and the inputs must
end up equal on both paths (BatchNorm's in-place statistics included). Gradients are checked
too: the compute calls made by each case's gradient (hidden ``_backward_*`` ops) are replayed.
"""

from __future__ import annotations

import contextlib
import dis
import functools
import math
import operator
import sys
import types

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops

from op_harness import OpCase, as_tuple, collect_cases, run_all_outputs

_NP_ARRAY, _NP_ASARRAY = np.array, np.asarray  # the originals, used while they are patched


# -- errors and the session that records syncs ------------------------------------------------

class DeviceMisuseError(AssertionError):
    """compute used a device array in a way that fails or is slow on CuPy."""


class DirectNumpyCallError(DeviceMisuseError):
    """``np.<fn>`` called on a device array instead of ``xp.<fn>``."""


class HostSyncError(DeviceMisuseError):
    """A device value read on the host by an op that does not declare ``host_sync``."""


class HostConversionError(DeviceMisuseError):
    """``np.asarray``/``np.array`` on a device array (a silent copy to the host)."""


class HostArrayMixError(DeviceMisuseError):
    """A plain NumPy array passed where CuPy needs a device array."""


class ElementLoopError(DeviceMisuseError):
    """A Python loop over the elements of a device array."""


class MissingInCupyError(DeviceMisuseError):
    """A function or method CuPy does not have."""


class UnsupportedSignatureError(DeviceMisuseError):
    """An argument CuPy's version of the function does not take."""


class _Session:
    def __init__(self, op, allow_sync):
        self.op, self.allow_sync, self.syncs, self.misuses = op, allow_sync, [], []


_SESSIONS: list[_Session] = []


def _misuse(kind, message):
    session = _SESSIONS[-1] if _SESSIONS else None
    error = kind(f"{session.op}: {message}" if session else message)
    if session is not None:
        session.misuses.append(error)  # kept even if compute swallows the exception
    raise error


def _sync(what):
    """Record a host read; an error unless the running op declares host_sync."""
    if not _SESSIONS:
        return
    session = _SESSIONS[-1]
    if not session.allow_sync:
        _misuse(HostSyncError, f"{what} reads a device value on the host (a device sync), but "
                               "the op does not declare host_sync for these attributes")
    session.syncs.append(what)


# -- wrapping between plain NumPy arrays and device arrays ------------------------------------

def _plain(x):
    return np.ndarray.view(x, np.ndarray)


def _wrap(x):
    """NumPy results as device values: arrays and NumPy scalars become DeviceArray."""
    if isinstance(x, DeviceArray):
        return x
    if isinstance(x, np.ndarray):
        return np.ndarray.view(x, DeviceArray)
    if isinstance(x, np.generic):
        return np.ndarray.view(_NP_ASARRAY(x), DeviceArray)
    if isinstance(x, tuple):
        items = [_wrap(v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _unwrap(x):
    if isinstance(x, DeviceArray):
        return _plain(x)
    if isinstance(x, tuple):
        return tuple(_unwrap(v) for v in x)
    if isinstance(x, list):
        return [_unwrap(v) for v in x]
    if isinstance(x, dict):
        return {k: _unwrap(v) for k, v in x.items()}
    return x


def _holds(values, test):
    for v in values:
        if test(v):
            return True
        if isinstance(v, (tuple, list)) and _holds(v, test):
            return True
        if isinstance(v, dict) and _holds(v.values(), test):
            return True
    return False


def _check_device(what, args, kwargs=None, allow_0d=False):
    """HostArrayMixError when a plain NumPy array is among the arguments."""
    def host(v):
        return type(v) is np.ndarray and not (allow_0d and v.ndim == 0)

    if _holds(args, host) or (kwargs and _holds(kwargs.values(), host)):
        _misuse(HostArrayMixError, f"{what} got a host (NumPy) array; CuPy takes host arrays "
                                   "only in xp.asarray/xp.array (convert constants with "
                                   "xp.asarray first)")


@functools.cache
def _opcodes(code):
    return {ins.offset: ins.opname for ins in dis.get_instructions(code)}


def _from_operator(frame):
    """True when ``frame`` is executing a Python operator (not a function call)."""
    name = _opcodes(frame.f_code).get(frame.f_lasti, "")
    return name in ("BINARY_OP", "COMPARE_OP") or name.startswith(("BINARY_", "INPLACE_"))


# -- the device array ---------------------------------------------------------------------

class DeviceArray(np.ndarray):
    """A NumPy array playing ``cupy.ndarray`` (see the module docstring)."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and _from_operator(sys._getframe(1)):
            # ``np.float32(2) * x``: NumPy's scalar hands the operator to the array (as CuPy's
            # __array_ufunc__ does); numpy may pass the scalar as a 0-d array.
            _check_device(f"operator {ufunc.__name__}", inputs, allow_0d=True)
            return _wrap(getattr(ufunc, method)(*_unwrap(inputs), **_unwrap(kwargs)))
        name = ufunc.__name__ + ("" if method == "__call__" else f".{method}")
        hint = "cupyx.scatter_add" if name == "add.at" else f"xp.{ufunc.__name__}"
        _misuse(DirectNumpyCallError, f"np.{name} was called on a device array; use {hint}")

    def __array_function__(self, func, types_, args, kwargs):
        _misuse(DirectNumpyCallError, f"np.{func.__name__} was called on a device array; use "
                                      f"xp.{func.__name__}")

    def __getitem__(self, key):
        _check_device("x[key]", (key,))
        masks = key if isinstance(key, tuple) else (key,)
        if any(isinstance(k, DeviceArray) and k.dtype == np.bool_ for k in masks):
            _sync("boolean-mask indexing x[mask] (the result size)")
        return _wrap(np.ndarray.__getitem__(_plain(self), _unwrap(key)))

    def __setitem__(self, key, value):
        _check_device("x[key] = value", (key, value))
        np.ndarray.__setitem__(_plain(self), _unwrap(key), _unwrap(value))

    def __iter__(self):
        if _SESSIONS:
            _misuse(ElementLoopError, "a Python loop over a device array (one kernel and one "
                                      "host read per element); use xp array operations")
        return iter(_plain(self))

    @property
    def flat(self):
        _misuse(ElementLoopError, "x.flat walks the elements on the host")

    def __bool__(self):
        _sync("bool(x)")
        return bool(_plain(self))

    def __int__(self):
        _sync("int(x)")
        return int(_plain(self))

    def __float__(self):
        _sync("float(x)")
        return float(_plain(self))

    def __complex__(self):
        _sync("complex(x)")
        return complex(_plain(self))

    def __index__(self):
        _sync("using x as a Python int")
        return operator.index(_plain(self))

    def __contains__(self, value):
        _sync("`value in x`")
        return value in _plain(self)

    def __repr__(self):
        _sync("repr(x)")
        return "device " + repr(_plain(self))

    def __str__(self):
        _sync("str(x)")
        return str(_plain(self))

    def __format__(self, spec):
        _sync("formatting x")
        return format(_plain(self), spec)


def _words(text):
    return text.split()


_ARITHMETIC = _words("add sub mul truediv floordiv mod pow matmul and or xor lshift rshift")
_IN_PLACE = {f"__i{n}__" for n in _ARITHMETIC}
_OPERATORS = [f"__{p}{n}__" for n in [*_ARITHMETIC, "divmod"] for p in ("", "r", "i")]
_OPERATORS += [f"__{n}__" for n in _words("lt le eq ne gt ge neg pos abs invert")]
# numpy.ndarray methods cupy.ndarray lacks, and those that read values on the host.
_METHODS_NOT_IN_CUPY = {"byteswap", "getfield", "setfield", "setflags", "resize", "searchsorted",
                        "itemset", "newbyteorder", "to_device"}
_SYNCING_METHODS = {"item", "tolist", "tobytes", "tofile", "dump", "dumps", "nonzero",
                    "compress"}


def _operator(name):
    base = getattr(np.ndarray, name)

    def method(self, *args):
        _check_device(f"x.{name}", args, allow_0d=True)  # NumPy hands scalars over as 0-d
        result = base(_plain(self), *_unwrap(args))
        return self if name in _IN_PLACE else _wrap(result)

    return method


def _method(name):
    base = getattr(np.ndarray, name)

    def method(self, *args, **kwargs):
        if name in _METHODS_NOT_IN_CUPY:
            _misuse(MissingInCupyError, f"cupy.ndarray has no method {name}")
        _check_device(f"x.{name}", args, kwargs)
        if name in _SYNCING_METHODS:
            _sync(f"x.{name}()")
        return _wrap(base(_plain(self), *_unwrap(args), **_unwrap(kwargs)))

    return method


def _get(self, stream=None, order="C", out=None, blocking=True):
    """``cupy.ndarray.get``: a NumPy copy on the host (a sync)."""
    _sync("x.get() (a copy to the host)")
    return np.array(_plain(self), order=order)


DeviceArray.get = _get
for _name in _OPERATORS:
    if hasattr(np.ndarray, _name):
        setattr(DeviceArray, _name, _operator(_name))
for _name in dir(np.ndarray):
    if not _name.startswith("_") and callable(getattr(np.ndarray, _name)):
        setattr(DeviceArray, _name, _method(_name))


# -- the device module ----------------------------------------------------------------------

# cupy functions used as xp.<name>, checked in CuPy's API (cupy/__init__.py, docs.cupy.dev);
# ops may use only these (add a name after checking that CuPy has it with NumPy's signature).
_CUPY_FUNCTIONS = set(_words("""
empty empty_like eye full full_like identity ones ones_like zeros zeros_like copy array asarray
asanyarray ascontiguousarray asfortranarray arange linspace logspace meshgrid diag diagflat tri
tril triu copyto ravel reshape moveaxis rollaxis swapaxes transpose atleast_1d atleast_2d
atleast_3d broadcast_arrays broadcast_to expand_dims squeeze column_stack concatenate dstack
hstack stack vstack array_split split hsplit vsplit dsplit repeat tile unique flip fliplr flipud
roll rot90 bitwise_and bitwise_or bitwise_xor bitwise_not invert left_shift right_shift can_cast
result_type promote_types issubdtype indices ravel_multi_index unravel_index choose compress
diagonal extract select take take_along_axis place put fill_diagonal einsum cross dot inner kron
matmul outer tensordot vdot trace allclose isclose isfinite isinf isnan logical_and logical_not
logical_or logical_xor equal greater greater_equal less less_equal not_equal all any arccos
arcsin arctan arctan2 cos deg2rad degrees hypot rad2deg radians sin tan arccosh arcsinh arctanh
cosh sinh tanh around round ceil fix floor rint trunc prod sum cumprod cumsum nansum nanprod
diff exp exp2 expm1 log log10 log1p log2 logaddexp logaddexp2 copysign frexp ldexp nextafter
signbit add divide divmod floor_divide fmod modf multiply negative power reciprocal remainder
mod subtract true_divide conj conjugate imag real abs absolute cbrt clip fmax fmin maximum
minimum nan_to_num sign sqrt square pad count_nonzero argmax argmin flatnonzero nanargmax
nanargmin nonzero searchsorted where argpartition argsort lexsort partition sort amax max amin
min nanmax nanmin percentile ptp average mean std var nanmean nanstd nanvar bincount digitize
histogram
"""))
# cupy.linalg: cholesky, inv, solve, det and slogdet take stacks (..., n, n) (potrfBatched,
# getrfBatched/getriBatched, batched gesv).
_CUPY_LINALG = set(_words("cholesky inv solve det slogdet norm qr svd eigh eigvalsh pinv "
                          "matrix_power matrix_rank lstsq tensorinv tensorsolve"))
# Functions whose CuPy version reads device values on the host (output size or checks).
_CUPY_SYNCING = {"bincount", "nonzero", "flatnonzero", "unique", "compress", "extract",
                 "histogram"}
_CONSTANTS = {"pi", "e", "inf", "nan", "newaxis", "euler_gamma"}


def _stable_sort(np_fn):
    def sort(a, axis=-1, kind=None):
        if kind not in (None, "stable"):
            _misuse(UnsupportedSignatureError, f"cupy sorts stably only (kind=None or "
                                               f"'stable'), got kind={kind!r}")
        return np_fn(a, axis=axis, kind="stable")

    return sort


def _take(a, indices, axis=None, out=None):  # cupy.take has no mode=
    return np.take(a, indices, axis=axis, out=out)


def _where(condition, *xy):
    if not xy:
        _sync("xp.where(condition) (the result size)")
    return np.where(condition, *xy)


_CUPY_SIGNATURES = {"argsort": _stable_sort(np.argsort), "sort": _stable_sort(np.sort),
                    "take": _take, "where": _where}


def _device_function(qualname, impl, *, host_inputs=False, syncs=False):
    @functools.wraps(impl)
    def function(*args, **kwargs):
        if not host_inputs:
            _check_device(qualname, args, kwargs)
        if syncs:
            _sync(f"{qualname} (CuPy's version reads values on the host)")
        try:
            return _wrap(impl(*_unwrap(args), **_unwrap(kwargs)))
        except TypeError as err:
            if "unexpected keyword" in str(err):
                _misuse(UnsupportedSignatureError, f"{qualname}: {err}")
            raise

    return function


class _DeviceModule(types.ModuleType):
    """``cupy`` (or ``cupy.linalg``) played by NumPy: allowed functions only, device arrays."""

    def __init__(self, name, source, functions, submodules=None):
        super().__init__(name)
        self._source, self._functions, self._submodules = source, functions, submodules or {}

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._resolve(name)
        setattr(self, name, value)
        return value

    def _resolve(self, name):
        if name in self._submodules:
            return self._submodules[name]
        if name == "ndarray":
            return DeviceArray
        if name in self._functions:
            qualname = f"{self.__name__}.{name}"
            impl = _CUPY_SIGNATURES.get(name) or getattr(self._source, name)
            return _device_function(qualname, impl, host_inputs=name in ("asarray", "array",
                                                                         "asanyarray"),
                                    syncs=name in _CUPY_SYNCING)
        value = getattr(self._source, name, None)
        scalar_or_error = isinstance(value, type) and issubclass(value, (np.generic, Exception))
        if scalar_or_error or name in _CONSTANTS or name in ("dtype", "finfo", "iinfo"):
            return value  # scalar types, exceptions, constants, dtype info: NumPy's, as CuPy
        hint = " (compute gets rng= for random draws)" if name == "random" else ""
        _misuse(MissingInCupyError, f"{self.__name__}.{name} is not in the CuPy API list of "
                                    f"tests/test_cupy_compat.py{hint}")


DEVICE = _DeviceModule("cupy_guard", np, _CUPY_FUNCTIONS,
                       {"linalg": _DeviceModule("cupy_guard.linalg", np.linalg, _CUPY_LINALG)})


class DeviceRandomState:
    """``cupy.random.RandomState`` played by NumPy's (same stream for the same seed)."""

    METHODS = frozenset(_words("uniform normal randint permutation rand randn random_sample "
                               "standard_normal choice shuffle lognormal exponential gamma "
                               "beta binomial poisson"))

    def __init__(self, seed):
        self._rng = np.random.RandomState(seed)

    def __getattr__(self, name):
        if name not in self.METHODS:
            _misuse(MissingInCupyError, f"cupy.random.RandomState has no {name} in the list here")
        return _device_function(f"RandomState.{name}", getattr(self._rng, name))


# -- cupyx stubs and the patched host conversions --------------------------------------------

_SCATTER_ADD_DTYPES = ("int32", "float16", "float32", "float64", "uint32", "uint64")


def _scatter_add(a, slices, value):
    """``cupyx.scatter_add``: ``numpy.add.at`` with CuPy 13's dtype limits."""
    if not isinstance(a, DeviceArray):
        _misuse(HostArrayMixError, "cupyx.scatter_add needs a device array to add into")
    _check_device("cupyx.scatter_add", (slices, value))
    if a.dtype.name not in _SCATTER_ADD_DTYPES:
        _misuse(UnsupportedSignatureError, f"cupyx.scatter_add has no {a.dtype.name} kernel "
                                           f"(it has {', '.join(_SCATTER_ADD_DTYPES)})")
    values = _NP_ASARRAY(_unwrap(value)).astype(a.dtype, copy=False)  # CuPy casts to a's dtype
    np.add.at(_plain(a), _unwrap(slices), values)


def _cupyx_edges(name, x, y):
    """The values cupyx's kernels give at the edges (read in cupyx/scipy/special/_gamma.py
    and _gammaln.py): gamma is +inf at negative integers and -inf at -inf, gammaln -inf at -inf."""
    if name == "gamma":
        y = np.where((x < 0) & (np.floor(x) == x), np.inf, y)
    if name in ("gamma", "gammaln"):
        y = np.where(x == -np.inf, -np.inf, y)
    return y.astype(np.float32 if x.dtype in (np.float16, np.float32) else np.float64)


def _special_function(name):
    """``cupyx.scipy.special.<name>``: SciPy's when installed, else the op's own host code
    (erf, erfinv, gamma, gammaln, digamma), with cupyx's edge values."""
    try:
        from scipy import special

        host = getattr(special, name)
    except ImportError:
        from hybridgpu.ops.elemwise_unary import _HOST_SPECIAL

        host = _HOST_SPECIAL[name]
    def special_function(x):
        return _cupyx_edges(name, x, _NP_ASARRAY(host(x)))

    return _device_function(f"cupyx.scipy.special.{name}", special_function)


def _cupyx_modules():
    cupyx, scipy_, special = (types.ModuleType(n) for n in
                              ("cupyx", "cupyx.scipy", "cupyx.scipy.special"))
    cupyx.scatter_add, cupyx.scipy, scipy_.special = _scatter_add, scipy_, special
    for name in ("erf", "erfinv", "gamma", "gammaln", "digamma"):
        setattr(special, name, _special_function(name))
    return {"cupyx": cupyx, "cupyx.scipy": scipy_, "cupyx.scipy.special": special}


_CUPYX = _cupyx_modules()


def _guarded_conversion(name, original):
    def convert(obj, *args, **kwargs):
        if _holds((obj,), lambda v: isinstance(v, DeviceArray)):
            _misuse(HostConversionError, f"np.{name} on a device array copies it to the host "
                                         f"(a device sync); use xp.{name}")
        return original(obj, *args, **kwargs)

    return convert


@contextlib.contextmanager
def device_session(op_name, allow_sync=False):
    """Run compute code under the guard: cupyx stubs, patched host conversions, a sync log."""
    saved_modules = {k: sys.modules.get(k) for k in _CUPYX}
    names = ("array", "asarray", "asanyarray", "ascontiguousarray")
    saved_numpy = {n: getattr(np, n) for n in names}
    session = _Session(op_name, allow_sync)
    sys.modules.update(_CUPYX)
    for n in names:
        setattr(np, n, _guarded_conversion(n, saved_numpy[n]))
    _SESSIONS.append(session)
    try:
        yield session
    finally:
        _SESSIONS.pop()
        for n, fn in saved_numpy.items():
            setattr(np, n, fn)
        for k, module in saved_modules.items():
            if module is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = module


# -- running one compute call both ways -------------------------------------------------------

def _extras(op, is_train, seed, device):
    extra = {}
    if op.random:
        extra["rng"] = DeviceRandomState(seed) if device else np.random.RandomState(seed)
    if op.mode_dependent:
        extra["is_train"] = is_train
    return extra


def simulate(op, arrays, attrs, is_train=False, seed=0):
    """Run ``op.compute`` on NumPy and on the guard; assert the device run is clean and equal.
    Returns the host syncs the device run made."""
    host_in = [_NP_ARRAY(a, copy=True) for a in arrays]
    want = as_tuple(op.compute(np, *host_in, **attrs, **_extras(op, is_train, seed, False)))
    device_in = [np.ndarray.view(_NP_ARRAY(a, copy=True), DeviceArray) for a in arrays]
    with device_session(op.name, op.needs_host_sync(attrs)) as session:
        got = as_tuple(op.compute(DEVICE, *device_in, **attrs,
                                  **_extras(op, is_train, seed, True)))
    where = f"{op.name} with {attrs} on inputs {[(a.shape, a.dtype.name) for a in arrays]}"
    assert not session.misuses, f"{where}: {session.misuses}"
    assert len(got) == len(want), f"{where}: {len(got)} outputs on device, {len(want)} on host"
    for i, (g, w) in enumerate(zip(got, want)):
        assert isinstance(g, DeviceArray), (
            f"{where}: output {i} is a {type(g).__name__}, not a device array (a host "
            "conversion, or a NumPy-only code path)")
        _assert_same(f"{where}: output {i}", _plain(g), w)
    for i, (d, h) in enumerate(zip(device_in, host_in)):
        _assert_same(f"{where}: input {i} after the call", _plain(d), h)
    return session.syncs


def _assert_same(what, got, want):
    want = _NP_ASARRAY(want)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype} on device, {want.dtype} on host"
    assert got.shape == want.shape, f"{what}: shape {got.shape} on device, {want.shape} on host"
    if got.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True,
                                   err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


def gradient_calls(case):
    """``(op, arrays, attrs, is_train)`` of every compute call the case's gradient makes."""
    op = case.opdef
    attrs, inputs, outs = run_all_outputs(case, case.make_inputs(np.float64))
    rng = np.random.RandomState(case.seed + 1)
    visible = op.num_visible_outputs(attrs)
    gouts = [mx.nd.array(rng.standard_normal(o.shape) if i < visible else np.zeros(o.shape),
                         dtype="float64") for i, o in enumerate(outs)]
    calls, saved = [], [(o, o.compute) for o in ops.all_ops()]

    def recorder(o, original):
        def compute(xp, *arrays, **kwargs):
            rest = {k: v for k, v in kwargs.items() if k not in ("rng", "is_train")}
            calls.append((o, [_NP_ARRAY(a, copy=True) for a in arrays], rest,
                          kwargs.get("is_train", False)))
            return original(xp, *arrays, **kwargs)

        return compute

    for o, original in saved:
        o.compute = recorder(o, original)
    try:
        with mx.modes.training(case.is_train):
            op.grad(mx.nd, inputs, outs, gouts, **attrs)
    finally:
        for o, original in saved:
            o.compute = original
    return calls


# -- cases ----------------------------------------------------------------------------------

_POLES = [-3.0, -1.0, -0.0, 0.0, -np.inf, np.inf, np.nan, -2.5, 1.5]
# Ops without a table case (random ops), values where cupyx differs (poles), and syncing
# attributes without a case (_backward_take with mode='raise').
# ops/random_dists.py: distribution -> number of parameter arrays of its _sample_ op
_DISTRIBUTIONS = {"exponential": 1, "gamma": 2, "poisson": 1, "negative_binomial": 2,
                  "generalized_negative_binomial": 2}
_EXTRA_CASES = [
    OpCase("_random_uniform", attrs={"low": -1.0, "high": 2.0, "shape": (3, 4)}, id="sim"),
    OpCase("_random_uniform", attrs={"shape": (5,), "dtype": "float16"}, id="sim-fp16"),
    OpCase("_random_normal", attrs={"loc": 1.0, "scale": 2.0, "shape": (3, 4)}, id="sim"),
    OpCase("_random_randint", attrs={"low": -3, "high": 7, "shape": (6,)}, id="sim"),
    OpCase("_random_uniform_like", shapes=[(2, 3)], id="sim"),
    OpCase("_random_normal_like", shapes=[(2, 3)], attrs={"scale": 0.5}, id="sim"),
    OpCase("_sample_uniform", make=lambda rng, dt: [np.zeros(3, dt), np.full(3, 2, dt)],
           attrs={"shape": (4,)}, id="sim"),
    OpCase("_sample_normal", make=lambda rng, dt: [np.zeros(3, dt), np.full(3, 2, dt)],
           attrs={"shape": (2, 2)}, id="sim"),
    OpCase("_shuffle", shapes=[(5, 3)], id="sim"),
    *[OpCase(f"_random_{d}", attrs={"shape": (3, 4)}, id="sim") for d in _DISTRIBUTIONS],
    *[OpCase(f"_random_{d}_like", shapes=[(2, 3)], id="sim") for d in _DISTRIBUTIONS],
    *[OpCase(f"_sample_{d}", attrs={"shape": (2,)}, id="sim",
             make=lambda rng, dt, n=n: [np.full(3, 0.5, dt)] * n)
      for d, n in _DISTRIBUTIONS.items()],
    OpCase("_sample_multinomial", make=lambda rng, dt: [np.array([[0.2, 0.8], [1, 0]], dt)],
           attrs={"shape": (3,), "get_prob": True}, id="sim"),
    *[OpCase(name, make=lambda rng, dt: [np.array(_POLES, dt)], id="sim-poles")
      for name in ("gamma", "gammaln")],
    OpCase("_backward_take", attrs={"axis": 1, "mode": "raise"}, id="sim-raise",
           make=lambda rng, dt: [rng.standard_normal((3, 4)).astype(dt),
                                 np.array([2, 0, 1, 1], np.int32),
                                 rng.standard_normal((3, 4)).astype(dt)]),
]
_EXTRA_CASES = [OpCase(**{**c.__dict__, "grad": False, "dtypes": ("float32", "float64")})
                for c in _EXTRA_CASES]
CASES = collect_cases() + _EXTRA_CASES
GRAD_CASES = [c for c in CASES if c.grad and c.opdef.differentiable]

# Ops whose compute reads device values on the host, and why (each declares OpDef.host_sync).
HOST_SYNCS = {
    "take": "mode='raise' checks on the host that every index lies in [0, n), as MXNet raises",
    "_backward_take": "mode='raise': the same range check as take",
    "gather_nd": "checks on the host that every index tuple is in range, as MXNet raises",
    "_backward_gather_nd": "the same range check as gather_nd",
    "_histogram": "with a bins input: checks on the host that the edges increase, as MXNet "
                  "raises",
    "_contrib_box_nms": "sorts and suppresses the boxes on the host (x.get())",
    "_contrib_adamw_update": "reads rescale_grad on the host: the step is skipped when it is "
                             "NaN, infinite or 0, as MXNet does",
    "_contrib_mp_adamw_update": "the same rescale_grad check as _contrib_adamw_update",
    "_multi_adamw_update": "the same rescale_grad check, once for all weights",
    "_multi_mp_adamw_update": "the same rescale_grad check, once for all weights",
    "_backward_contrib_box_nms": "its boolean-mask indexing reads the result size on the host",
    "_contrib_bipartite_matching": "matches greedily, best score first, on the host",
    "_image_random_color_jitter": "draws the order of its three jitters and reads it on the "
                                  "host, as MXNet's Python does",
    "_contrib_ROIAlign": "sample_ratio <= 0: reads the largest adaptive sample grid on the "
                         "host, which sizes the sample axis",
    "_backward_ROIAlign": "the same adaptive grid read as _contrib_ROIAlign",
}


def _parsed(case):
    return case.opdef.parse_attrs(case.attrs, len(case.make_inputs(case.dtypes[0]))
                                  if case.opdef.variadic else None)


# -- tests ----------------------------------------------------------------------------------

# Defects the guard found in ops of other changes, reported to their owners: the case fails
# until the op is fixed (strict: a fixed op makes its entry fail, so the entry goes).
KNOWN_DEFECTS = {}


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True,
                                                        reason=KNOWN_DEFECTS[c.name])]
                 if c.name in KNOWN_DEFECTS else []) for c in CASES])
def test_compute_runs_on_the_device_guard(case):
    for dtype in case.dtypes:
        simulate(case.opdef, case.make_inputs(dtype), _parsed(case), case.is_train, case.seed)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in GRAD_CASES])
def test_gradient_computes_run_on_the_device_guard(case):
    seen = set()
    for op, arrays, attrs, is_train in gradient_calls(case):
        key = (op.name, repr(attrs), is_train, tuple((a.shape, a.dtype.str) for a in arrays))
        if key not in seen:
            seen.add(key)
            simulate(op, arrays, attrs, is_train, case.seed)


# Ops whose compute is not array code, and why.
_NOT_SIMULATED = {
    "Custom": "calls the user's CustomOp (Python, on NDArrays of the op's context)",
    "_backward_Custom": "calls the user's CustomOp.backward, as Custom does",
}


def test_every_op_is_simulated():
    covered = {c.opdef.name for c in CASES} | set(_NOT_SIMULATED)
    assert not [op.name for op in ops.all_ops() if op.name not in covered]


def test_host_sync_list_matches_the_registry():
    declared = {op.name for op in ops.all_ops() if op.host_sync}
    assert declared == set(HOST_SYNCS), (
        f"ops declaring host_sync: {sorted(declared)}; listed here: {sorted(HOST_SYNCS)}")


@pytest.mark.parametrize("name", sorted(HOST_SYNCS))
def test_listed_host_syncs_happen(name):
    """Each listed op reads the host in one of its cases, so the list is not stale."""
    cases = [c for c in CASES if c.opdef.name == name and c.opdef.needs_host_sync(_parsed(c))]
    assert cases, f"{name}: no case with attributes that need the host sync"
    syncs = [s for c in cases for s in simulate(c.opdef, c.make_inputs(c.dtypes[0]), _parsed(c),
                                                c.is_train, c.seed)]
    assert syncs, f"{name} declares host_sync but none of its cases read the host"


# -- the guard catches the mistakes it is for ------------------------------------------------

def _stride_view(xp, x):
    return np.lib.stride_tricks.as_strided(x, shape=(2,), strides=(x.itemsize,))


def _scatter_int64(xp, x):
    import cupyx

    cupyx.scatter_add(xp.zeros(3, dtype=np.int64), xp.asarray([0, 0]), xp.ones(2, np.int64))


_MISTAKES = {
    "np.add.at": (lambda xp, x: np.add.at(x, xp.asarray([0, 0]), 1.0), DirectNumpyCallError),
    "np.where": (lambda xp, x: np.where(x > 0, x, 0.0), DirectNumpyCallError),
    "np.exp": (lambda xp, x: np.exp(x), DirectNumpyCallError),
    "np.maximum-scalar-first": (lambda xp, x: np.maximum(x.dtype.type(0), x), DirectNumpyCallError),
    "np.vectorize": (lambda xp, x: np.vectorize(lambda v: v + 1)(x), DirectNumpyCallError),
    "np.array-of-elements": (lambda xp, x: np.array([v * 2 for v in x]), ElementLoopError),
    "np.asarray": (lambda xp, x: np.asarray(x) * 2, HostConversionError),
    "stride_tricks": (_stride_view, HostConversionError),
    "float(x)": (lambda xp, x: xp.ones(3) * float(x.sum()), HostSyncError),
    "math.erf-on-element": (lambda xp, x: math.erf(x[0]), HostSyncError),
    "tolist": (lambda xp, x: xp.asarray(x.tolist()), HostSyncError),
    "bool-branch": (lambda xp, x: x if (x > 0).all() else -x, HostSyncError),
    "mask-indexing": (lambda xp, x: x[x > 0], HostSyncError),
    "bincount": (lambda xp, x: xp.bincount(xp.asarray([0, 1])), HostSyncError),
    "host-constant": (lambda xp, x: x * np.arange(x.shape[-1]), HostArrayMixError),
    "missing-function": (lambda xp, x: xp.errstate(all="ignore"), MissingInCupyError),
    "missing-method": (lambda xp, x: x.searchsorted(0.5), MissingInCupyError),
    "sort-kind": (lambda xp, x: xp.argsort(x, kind="quicksort"), UnsupportedSignatureError),
    "take-mode": (lambda xp, x: xp.take(x, xp.asarray([0]), mode="clip"),
                  UnsupportedSignatureError),
    "scatter_add-int64": (_scatter_int64, UnsupportedSignatureError),
}


@pytest.mark.parametrize("name", sorted(_MISTAKES))
def test_guard_catches(name):
    fn, error = _MISTAKES[name]
    x = np.ndarray.view(np.linspace(-1.0, 1.0, 4), DeviceArray)
    with device_session(f"mistake {name}") as session, pytest.raises(error):
        fn(DEVICE, x)
    assert session.misuses


def _clean(xp, x):
    """Device-safe code the guard must accept: xp calls, operators with NumPy scalars on
    either side, in-place updates, views, fancy indexing, cupyx and special functions."""
    import cupyx
    from cupyx.scipy import special

    y = np.float32(2) * x + x.dtype.type(1) - (np.float64(0.5) < x)
    y += xp.where(x > 0, x, 0.0)
    view = xp.moveaxis(y.reshape(2, 2), 0, 1)
    view[..., xp.asarray([0]), xp.asarray([1])] = 7.0
    out = xp.zeros(3)
    cupyx.scatter_add(out, xp.asarray([0, 0, 2]), xp.ones(3))
    return y.sum(), out, special.erf(x), xp.argsort(x), xp.linalg.inv(xp.eye(2) * 2)


def test_guard_accepts_device_code():
    x = np.ndarray.view(np.linspace(-1.0, 1.0, 4), DeviceArray)
    with device_session("clean") as session:
        results = _clean(DEVICE, x)
    assert all(isinstance(r, DeviceArray) for r in results) and not session.syncs
    assert results[0].shape == () and float(results[1][0]) == 2.0
    with device_session("sync allowed", allow_sync=True) as session:
        assert bool((x < 2).all())
    assert session.syncs == ["bool(x)"]


def test_the_virtual_gpu_offers_every_function_the_guard_allows():
    """Code that passes this guard also runs on the virtual GPU (hybridgpu.vgpu), which CI's
    second pass uses for every gpu-marked test."""
    from hybridgpu import vgpu
    from hybridgpu.vgpu.functions import RandomState

    xp = vgpu.module(1)
    assert not sorted(n for n in _CUPY_FUNCTIONS if not hasattr(xp, n))
    assert not sorted(n for n in _CUPY_LINALG if not hasattr(xp.linalg, n))
    assert DeviceRandomState.METHODS <= RandomState.METHODS
