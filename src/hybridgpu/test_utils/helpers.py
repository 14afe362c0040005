"""``mx.test_utils``' small helpers: environment variables, stderr, retries, reductions, the
effective dtype of a result, and comparing optimizers.

They behave as MXNet 1.9.1 documents them. There is no C runtime here, so ``environment``
only has ``os.environ`` to set (which is what hybridgpu reads).

Example:
    >>> import os
    >>> with environment("HYBRIDGPU_EXAMPLE", "1"):
    ...     os.environ["HYBRIDGPU_EXAMPLE"]
    '1'
    >>> "HYBRIDGPU_EXAMPLE" in os.environ
    False
    >>> import numpy as np
    >>> np_reduce(np.ones((2, 3, 4)), axis=(0, 2), keepdims=True, numpy_reduce_func=np.sum).shape
    (1, 3, 1)
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import sys

import numpy as np

from .. import random as mx_random
from ..context import num_gpus
from ..ndarray import NDArray, waitall
from .compare import assert_almost_equal, default_context, rand_ndarray, same

__all__ = ["environment", "discard_stderr", "retry", "random_sample", "np_reduce",
           "same_array", "effective_dtype", "default_numeric_eps", "collapse_sum_like",
           "compare_ndarray_tuple", "compare_optimizer", "assert_almost_equal_ignore_nan",
           "same_symbol_structure", "list_gpus", "random_uniform_arrays", "get_etol"]


def _environment_table(args):
    if len(args) == 1 and isinstance(args[0], dict):
        table = args[0]
    elif len(args) == 2:
        table = {args[0]: args[1]}
    else:
        raise TypeError(f"environment() takes one dict {{name: value}} or two arguments "
                        f"(name, value); got {len(args)} argument(s)")
    for name, value in table.items():
        if not isinstance(name, str) or not (value is None or isinstance(value, str)):
            raise TypeError(f"environment(): {name!r}={value!r}: names must be str and values "
                            f"str or None (None unsets the variable)")
    return table


def _set_environ(table):
    for name, value in table.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for the body of a ``with``, then restore them (also when the
    body raises). ``environment(name, value)`` or ``environment({name: value, ...})``; a value
    of None unsets the variable.

    Example:
        >>> import os
        >>> os.environ["HYBRIDGPU_EXAMPLE"] = "old"
        >>> with environment({"HYBRIDGPU_EXAMPLE": None}):
        ...     "HYBRIDGPU_EXAMPLE" in os.environ
        False
        >>> os.environ.pop("HYBRIDGPU_EXAMPLE")
        'old'
    """
    table = _environment_table(args)
    snapshot = {name: os.environ.get(name) for name in table}
    _set_environ(table)
    try:
        yield
    finally:
        waitall()  # work started in the body may still read the variables
        _set_environ(snapshot)


@contextlib.contextmanager
def discard_stderr():
    """Discard error output for the body: file descriptor 2 (what C code and subprocesses
    write) and Python's ``sys.stderr`` both go to ``os.devnull``.

    Example:
        >>> import sys
        >>> with discard_stderr():
        ...     print("hidden", file=sys.stderr)
    """
    with contextlib.suppress(AttributeError, OSError, ValueError):
        sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stderr(sink):
            os.dup2(sink.fileno(), 2)
            try:
                yield
            finally:
                sink.flush()
                os.dup2(saved, 2)
    finally:
        os.close(saved)


def retry(n):
    """Decorator: run a stochastic test up to ``n`` times; it fails only when the last try
    raises ``AssertionError`` (other errors fail at once).

    Example:
        >>> tries = []
        >>> @retry(3)
        ... def flaky():
        ...     tries.append(1)
        ...     assert len(tries) == 2
        >>> flaky(); len(tries)
        2
    """
    if not isinstance(n, int) or n <= 0:
        raise ValueError(f"retry(n): n must be a positive int, got {n!r}")

    def decorate(test):
        @functools.wraps(test)
        def wrapper(*args, **kwargs):
            for attempt in range(n):
                try:
                    return test(*args, **kwargs)
                except AssertionError:
                    if attempt == n - 1:
                        raise
                    waitall()
        return wrapper
    return decorate


def random_sample(population, k):
    """``k`` elements of ``population`` in a random order drawn from ``np.random``.

    Example:
        >>> sorted(random_sample([3, 1, 2], 3))
        [1, 2, 3]
    """
    if not 0 <= k <= len(population):
        raise ValueError(f"random_sample: k={k} must be between 0 and the population's size "
                         f"{len(population)}")
    shuffled = list(population)
    np.random.shuffle(shuffled)
    return shuffled[:k]


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce ``dat`` with ``numpy_reduce_func`` (e.g. ``np.sum``) over ``axis`` (an int, a
    sequence or None for all), one axis at a time, keeping reduced axes as size 1 if asked."""
    if axis is None:
        axes = list(range(dat.ndim))
    elif isinstance(axis, (int, np.integer)):
        axes = [int(axis)]
    else:
        axes = [int(a) for a in axis]
    axes = [a + dat.ndim if a < 0 else a for a in axes]
    out = dat
    for a in sorted(axes, reverse=True):
        out = numpy_reduce_func(out, axis=a)
    if keepdims:
        out = np.reshape(out, tuple(1 if i in axes else d for i, d in enumerate(dat.shape)))
    return out


def same_array(array1, array2):
    """Whether two NDArrays share memory: a change through ``array1`` shows in ``array2``
    (``array1`` is changed and changed back).

    Example:
        >>> import hybridgpu as mx
        >>> x = mx.nd.zeros(3)
        >>> same_array(x, x[:]), same_array(x, x.copy())
        (True, False)
    """
    array1[:] += 1
    seen = same(array1.asnumpy(), array2.asnumpy())
    array1[:] -= 1
    return seen and same(array1.asnumpy(), array2.asnumpy())


def effective_dtype(dat):
    """The dtype whose tolerances fit results like ``dat``: its dtype, but float16 for a
    float32 result on a gpu context while TF32 GEMMs are allowed (``HYBRIDGPU_ALLOW_TF32``),
    since TF32 keeps a float16-sized mantissa.

    Example:
        >>> import hybridgpu as mx
        >>> effective_dtype(mx.nd.ones(2))
        dtype('float32')
    """
    dtype = np.dtype(dat.dtype)
    ctx = getattr(dat, "context", None)
    if dtype == np.float32 and ctx is not None and ctx.device_type == "gpu":
        from ..executor.gpu.cublas import tf32_allowed

        if tf32_allowed():
            return np.dtype(np.float16)
    return dtype


def default_numeric_eps():
    """``{dtype: finite-difference step}``: powers of two, so ``x + eps`` drops no bits."""
    return {np.dtype(np.float16): 1.0 / 2 ** 6, np.dtype(np.float32): 1.0 / 2 ** 9,
            np.dtype(np.float64): 1.0 / 2 ** 14}


def get_etol(etol=None):
    """The tolerated share of mismatching elements (0 unless given)."""
    return 0 if etol is None else etol


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=np.float32):
    """A list of arrays of uniform values in ``[low, high)``, one per shape."""
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def collapse_sum_like(a, shape):
    """Sum ``a`` over the axes along which ``shape`` was broadcast to ``a``'s shape.

    Example:
        >>> import numpy as np
        >>> collapse_sum_like(np.ones((2, 3, 4)), (3, 1)).tolist()
        [[8.0], [8.0], [8.0]]
    """
    shape = tuple(shape)
    lead = a.ndim - len(shape)
    if lead < 0:
        raise ValueError(f"collapse_sum_like: shape {shape} has more axes than a {a.shape}")
    if a.size == 0 or int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=a.dtype)
    axes = list(range(lead))
    for i, size in enumerate(shape):
        if size != a.shape[lead + i]:
            if size != 1:
                raise ValueError(f"collapse_sum_like: shape {shape} does not broadcast to "
                                 f"{a.shape} (axis {i})")
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """``assert_almost_equal`` over two (nested) tuples of arrays; None on either side
    skips the comparison."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for a, b in zip(t1, t2):
            compare_ndarray_tuple(a, b, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def _optimizer_inputs(shape, dtype, w_stype, g_stype):
    """``(w1, w2, g1, g2)``: random weight and gradient, each once per optimizer."""
    ctx = default_context()

    def pair(stype, density):
        if stype == "default":
            b = mx_random.uniform(shape=shape, ctx=ctx, dtype=dtype)
            return b.copyto(ctx), b
        if stype in ("row_sparse", "csr"):
            b = rand_ndarray(shape, stype, density=density, dtype=dtype)
            return b.copyto(ctx).tostype("default"), b
        raise ValueError(f"compare_optimizer: unknown storage type {stype!r}; expected "
                         f"'default', 'row_sparse' or 'csr'")
    w1, w2 = pair(w_stype, 1)
    g1, g2 = pair(g_stype, None)
    return w1, w2, g1, g2


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Run one update of ``opt1`` and ``opt2`` from the same random weight, gradient and
    fresh states; assert their states and weights agree. ``shape`` a list: ``opt2`` updates
    ``ntensors`` tensors in one multi-tensor call, ``opt1`` one at a time.
    """
    if isinstance(shape, list):
        _compare_multi_tensor(opt1, opt2, shape, dtype, rtol, atol, compare_states, ntensors)
        return
    if ntensors != 1:
        raise ValueError(f"compare_optimizer: ntensors={ntensors} needs a list of shapes")
    w1, w2, g1, g2 = _optimizer_inputs(shape, dtype, w_stype, g_stype)
    state1 = opt1.create_state_multi_precision(0, w1)
    state2 = opt2.create_state_multi_precision(0, w2)
    if compare_states:
        compare_ndarray_tuple(state1, state2)
    opt1.update_multi_precision(0, w1, g1, state1)
    opt2.update_multi_precision(0, w2, g2, state2)
    if compare_states:
        compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
    assert_almost_equal(w1, w2, rtol=rtol, atol=atol)


def _compare_multi_tensor(opt1, opt2, shapes, dtype, rtol, atol, compare_states, ntensors):
    ctx = default_context()
    w1, g1 = [], []
    for s in shapes:
        w1.append(mx_random.uniform(shape=s, ctx=ctx, dtype=dtype))
        g1.append(mx_random.uniform(shape=s, ctx=ctx, dtype=dtype))
    w2, g2 = copy.deepcopy(tuple(w1)), copy.deepcopy(tuple(g1))
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """``assert_almost_equal`` where a NaN in either array matches anything."""
    a = np.array(a.asnumpy() if isinstance(a, NDArray) else a, copy=True)
    b = np.array(b.asnumpy() if isinstance(b, NDArray) else b, copy=True)
    nan = np.logical_or(np.isnan(a), np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def same_symbol_structure(sym1, sym2):
    """Whether the two symbols' JSON node lists name the same op at every position."""
    nodes1 = json.loads(sym1.tojson())["nodes"]
    nodes2 = json.loads(sym2.tojson())["nodes"]
    return all(n1["op"] == n2["op"] for n1, n2 in zip(nodes1, nodes2))


def list_gpus():
    """``range`` of the GPU ids available (empty without a GPU)."""
    return range(num_gpus())
