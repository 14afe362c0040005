"""``mx.test_utils``' checks of a Symbol through ``bind``: its forward outputs, its backward
gradients, its gradients against finite differences, and one symbol's agreement across
contexts and dtypes.

Random draws (the projection of the outputs, the dirt put in gradient buffers before a
backward pass, the inputs of ``check_consistency``) come from ``numpy.random`` in MXNet
1.9.1's order, so a test seeded as in MXNet sees the same values.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> a, b = mx.sym.var("a"), mx.sym.var("b")
    >>> x, y = np.array([[1.0, 2.0]]), np.array([[3.0, 5.0]])
    >>> _ = check_symbolic_forward(a * b, [x, y], [x * y])
    >>> _ = check_symbolic_backward(a * b, [x, y], [np.ones((1, 2))], [y, x])
    >>> check_numeric_gradient(a * b, [x, y])
"""

from __future__ import annotations

import numpy as np

from ..ndarray import NDArray
from ..ndarray import array as nd_array
from ..ndarray import empty as nd_empty
from ..symbol import Symbol, make_loss, var
from .compare import (
    assert_almost_equal,
    default_context,
    get_tolerance,
    get_tols,
)
from .helpers import default_numeric_eps

__all__ = ["simple_forward", "numeric_grad", "check_numeric_gradient",
           "check_symbolic_forward", "check_symbolic_backward", "check_consistency"]

_FLOATS = (np.float16, np.float32, np.float64)
_GRAD_REQS = ("write", "add", "null")


def _check_dtype(dtype, where, allow_asnumpy=True):
    if (allow_asnumpy and isinstance(dtype, str) and dtype == "asnumpy") or \
            (not isinstance(dtype, str) and dtype in _FLOATS):
        return
    allowed = "'asnumpy', " if allow_asnumpy else ""
    raise ValueError(f"{where}: dtype must be {allowed}np.float16, np.float32 or np.float64, "
                     f"got {dtype!r}")


def _to_nd(value, ctx, dtype):
    """A numpy value as an NDArray on ``ctx`` (its own dtype when ``dtype`` is 'asnumpy');
    an NDArray is kept as it is."""
    if not isinstance(value, np.ndarray):
        return value
    return nd_array(value, ctx=ctx, dtype=value.dtype if _is_asnumpy(dtype) else dtype)


def _is_asnumpy(dtype):
    return isinstance(dtype, str) and dtype == "asnumpy"


def _named(values, names, what, where):
    """``values`` (a list in ``names`` order or a dict that names every one) as a dict."""
    if isinstance(values, dict):
        if set(values) != set(names):
            raise ValueError(f"{where}: the symbol's {what} {sorted(names)} and the names "
                             f"given {sorted(values)} do not match")
        return dict(values)
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"{where}: {what} must be a list or a dict, got "
                        f"{type(values).__name__}")
    return dict(zip(names, values))


def _parse_location(sym, location, ctx, dtype, where):
    values = _named(location, sym.list_arguments(), "arguments", where)
    return {k: _to_nd(v, ctx, dtype) for k, v in sorted(values.items())}


def _parse_aux_states(sym, aux_states, ctx, dtype, where):
    if aux_states is None:
        return None
    values = _named(aux_states, sym.list_auxiliary_states(), "auxiliary states", where)
    return {k: _to_nd(np.asarray(v) if not isinstance(v, NDArray) else v, ctx, dtype)
            for k, v in values.items()}


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """Run ``sym`` once on numpy ``inputs`` (by argument name); numpy result(s) back.

    Example:
        >>> import numpy as np
        >>> import hybridgpu as mx
        >>> simple_forward(mx.sym.var("x") * 2, x=np.array([1.0, 2.0])).tolist()
        [2.0, 4.0]
    """
    ctx = ctx or default_context()
    exe = sym.bind(ctx, args={k: nd_array(v, ctx=ctx) for k, v in inputs.items()})
    exe.forward(is_train=is_train)
    outputs = [out.asnumpy() for out in exe.outputs]
    return outputs[0] if len(outputs) == 1 else outputs


def _set(executor_array, value, dtype):
    executor_array[:] = nd_array(value, dtype=dtype, ctx=executor_array.context)


def _output_sum(executor, aux_states, use_forward_train, dtype):
    """Reset the auxiliary states, run forward, sum the first output."""
    if aux_states is not None:
        for key, value in aux_states.items():
            _set(executor.aux_dict[key], value, dtype)
    executor.forward(is_train=use_forward_train)
    return executor.outputs[0].asnumpy()


def numeric_grad(executor, location, aux_states=None, eps=1e-4, use_forward_train=True,
                 dtype=np.float32):
    """Central finite differences of ``sum(outputs[0])`` with respect to every floating-point
    argument in ``location`` ({name: numpy array}), one element at a time; ``{name: grad}``."""
    _check_dtype(dtype, "numeric_grad", allow_asnumpy=False)
    location = {k: np.array(v, order="C", copy=True) for k, v in location.items()}
    grads = {k: np.zeros(v.shape, dtype=dtype) for k, v in location.items()}
    for k, v in location.items():
        _set(executor.arg_dict[k], v, dtype)
    for k, v in location.items():
        if v.dtype.kind != "f":
            continue
        flat = v.reshape(-1)  # a view: changes show in v
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps / 2.0
            _set(executor.arg_dict[k], v, dtype)
            plus = _output_sum(executor, aux_states, use_forward_train, dtype)
            flat[i] = old - eps / 2.0
            _set(executor.arg_dict[k], v, dtype)
            minus = _output_sum(executor, aux_states, use_forward_train, dtype)
            grads[k].reshape(-1)[i] = (plus - minus).sum() / eps
            flat[i] = old
        _set(executor.arg_dict[k], v, dtype)
    return grads


def _grad_nodes(sym, grad_nodes):
    """``(names, {name: grad_req})`` of the arguments whose gradient is checked."""
    if grad_nodes is None:
        names = sym.list_arguments()
        return names, {k: "write" for k in names}
    if isinstance(grad_nodes, (list, tuple)):
        return list(grad_nodes), {k: "write" for k in grad_nodes}
    if isinstance(grad_nodes, dict):
        return list(grad_nodes), dict(grad_nodes)
    raise TypeError(f"check_numeric_gradient: grad_nodes must be None, a list of names or a "
                    f"dict {{name: grad_req}}, got {type(grad_nodes).__name__}")


def _compare_grad(name, req, expected, got, before, rtol, atol, names, equal_nan=False):
    """Compare a gradient buffer after backward with what ``req`` says it must hold."""
    got = got.asnumpy() if isinstance(got, NDArray) else got
    if req == "write":
        assert_almost_equal(expected, got, rtol, atol, names, equal_nan=equal_nan)
    elif req == "add":
        assert_almost_equal(expected, got - before, rtol, atol, names, equal_nan=equal_nan)
    elif req == "null":
        assert_almost_equal(before, got, rtol, atol, names, equal_nan=equal_nan)
    else:
        raise ValueError(f"invalid grad_req {req!r} for argument {name!r}; expected one of "
                         f"{_GRAD_REQS}")


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=np.float32):
    """Assert that ``sym``'s backward pass matches central finite differences.

    The first output is multiplied by a fixed random projection and the gradient of its sum
    is checked, for each argument in ``grad_nodes`` (all by default; a dict gives each its
    grad_req: 'write', 'add' or 'null'). ``location`` holds every argument's value (a list
    in ``list_arguments()`` order or a dict); ``numeric_eps`` defaults to
    ``default_numeric_eps()`` of the output dtype.
    """
    where = "check_numeric_gradient"
    _check_dtype(dtype, where, allow_asnumpy=False)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype, where)
    location_np = {k: v.asnumpy() for k, v in location.items()}
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, where)
    aux_np = None if aux is None else {k: v.asnumpy() for k, v in aux.items()}
    nodes, grad_req = _grad_nodes(sym, grad_nodes)
    _, out_shapes, _ = sym.infer_shape(**{k: v.shape for k, v in location.items()})
    proj_shape = out_shapes[0]
    loss = make_loss(sym * var("__random_proj"))
    # a projection with no tiny entries, so the finite differences keep their precision
    location["__random_proj"] = nd_array(np.random.rand(*proj_shape) + 0.1, ctx=ctx,
                                         dtype=dtype)
    before = {k: np.random.normal(0, 0.01, size=location[k].shape) for k in nodes}
    before["__random_proj"] = np.random.normal(0, 0.01, size=proj_shape)
    args_grad = {k: nd_array(v, ctx=ctx, dtype=dtype) for k, v in before.items()}
    if grad_stype_dict:
        _sparse_grads(args_grad, grad_stype_dict)
    executor = loss.bind(ctx, args=location, args_grad=args_grad, grad_req=grad_req,
                         aux_states=aux)
    executor.forward(is_train=True)
    eps = get_tolerance(executor.outputs[0], numeric_eps, default_numeric_eps())
    if dtype in (np.float16, np.float32) and eps < 1e-5:
        raise ValueError(f"{where}: numeric_eps={eps} is too small for {np.dtype(dtype).name} "
                         f"finite differences (at least 1e-5)")
    executor.backward()
    numeric = numeric_grad(executor, location_np, aux_np, eps=eps,
                           use_forward_train=use_forward_train, dtype=dtype)
    for name in nodes:
        _compare_grad(name, grad_req[name], numeric[name], executor.grad_dict[name],
                      before[name], rtol, atol, (f"NUMERICAL_{name}", f"BACKWARD_{name}"))


def _sparse_grads(args_grad, grad_stype_dict):
    for name, stype in grad_stype_dict.items():
        if name in args_grad and stype not in (None, "default"):
            raise NotImplementedError(f"check_numeric_gradient: gradient storage {stype!r} "
                                      f"for {name!r} is not supported by hybridgpu")


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=np.float32):
    """Bind ``sym`` at ``location``, run forward (not training) and assert every output is
    close to ``expected`` (a list in output order or a dict by output name). Returns the
    outputs."""
    where = "check_symbolic_forward"
    _check_dtype(dtype, where)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype, where)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, where)
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    grads = {k: nd_empty(v.shape, ctx=ctx, dtype=v.dtype if _is_asnumpy(dtype) else dtype)
             for k, v in location.items()}
    executor = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux)
    for g in executor.grad_arrays:
        if g is not None:
            g[:] = 0
    executor.forward(is_train=False)
    for name, want, got in zip(sym.list_outputs(), expected, executor.outputs):
        assert_almost_equal(want, got, rtol, atol, (f"EXPECTED_{name}", f"FORWARD_{name}"),
                            equal_nan=equal_nan)
    return executor.outputs


def _out_grads(out_grads, ctx, dtype):
    if out_grads is None:
        return None
    if isinstance(out_grads, (list, tuple)):
        return [_to_nd(g, ctx, dtype) for g in out_grads]
    if isinstance(out_grads, dict):
        return {k: _to_nd(g, ctx, dtype) for k, g in out_grads.items()}
    if isinstance(out_grads, (np.ndarray, NDArray)):
        return [_to_nd(out_grads, ctx, dtype)]
    raise TypeError(f"check_symbolic_backward: out_grads must be None, a list or a dict, got "
                    f"{type(out_grads).__name__}")


def _backward_reqs(sym, grad_req):
    names = sym.list_arguments()
    if isinstance(grad_req, str):
        return {k: grad_req for k in names}
    if isinstance(grad_req, (list, tuple)):
        return dict(zip(names, grad_req))
    return dict(grad_req)


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=np.float32):
    """Bind ``sym`` at ``location``, run forward (training) and backward with ``out_grads``,
    and assert the gradients are ``expected`` (a list in argument order or a dict by name).

    Gradient buffers start with random values, so ``grad_req='add'`` is checked as "the
    buffer grew by ``expected``" and ``'null'`` as "the buffer is untouched". Returns the
    gradient buffers ``{name: NDArray}``.
    """
    where = "check_symbolic_backward"
    _check_dtype(dtype, where)
    ctx = ctx or default_context()
    location = _parse_location(sym, location, ctx, dtype, where)
    aux = _parse_aux_states(sym, aux_states, ctx, dtype, where)
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    before = {k: np.random.normal(size=np.shape(v)) for k, v in sorted(expected.items())}
    grads = {}
    for k, v in before.items():
        if grad_stypes and grad_stypes.get(k) not in (None, "default"):
            raise NotImplementedError(f"{where}: gradient storage {grad_stypes[k]!r} for "
                                      f"{k!r} is not supported by hybridgpu")
        want = np.dtype(expected[k].dtype) if _is_asnumpy(dtype) else dtype
        grads[k] = nd_array(v, ctx=ctx, dtype=want)
    reqs = _backward_reqs(sym, grad_req)
    executor = sym.bind(ctx=ctx, args=location, args_grad=grads, aux_states=aux,
                        grad_req=reqs)
    executor.forward(is_train=True)
    executor.backward(_out_grads(out_grads, ctx, dtype))
    for name in expected:
        _compare_grad(name, reqs[name], expected[name], grads[name], before[name], rtol, atol,
                      (f"EXPECTED_{name}", f"BACKWARD_{name}"), equal_nan=equal_nan)
    return grads


def _smaller_dtype(dt1, dt2):
    """The less precise of two dtypes (``dt1`` when ``dt2`` is None)."""
    if dt2 is None or np.dtype(dt1).itemsize < np.dtype(dt2).itemsize:
        return dt1
    return dt2


def _consistency_inputs(exe, arg_params, aux_params, scale, use_uniform, rand_type):
    arg_params = {} if arg_params is None else arg_params
    aux_params = {} if aux_params is None else aux_params
    for name, arr in sorted(exe.arg_dict.items()):
        if name not in arg_params:
            if use_uniform:
                value = np.random.uniform(low=-0.92 * scale, high=0.92 * scale, size=arr.shape)
            else:
                value = np.random.normal(size=arr.shape, scale=scale)
            arg_params[name] = value.astype(rand_type)
    for name in exe.aux_dict:
        aux_params.setdefault(name, 0)
    return arg_params, aux_params


def _compare_or_report(arr, gtarr, rtol, atol, equal_nan, raise_on_err, what):
    try:
        assert_almost_equal(arr, gtarr, rtol=rtol, atol=atol, equal_nan=equal_nan)
    except AssertionError as err:
        if raise_on_err:
            raise AssertionError(f"{what}: {err}") from err
        print(f"{what}: {err}")


def check_consistency(sym, ctx_list, scale=1.0, grad_req="write", arg_params=None,
                      aux_params=None, rtol=None, atol=None, raise_on_err=True,
                      ground_truth=None, equal_nan=False, use_uniform=False,
                      rand_type=np.float64):
    """Assert that ``sym`` (or one symbol per entry) gives the same outputs and gradients
    under each entry of ``ctx_list`` (``simple_bind`` keyword arguments: ``ctx``, shapes by
    argument name, ``type_dict``). The most precise output dtype is the reference unless
    ``ground_truth`` is given; returns the reference ``{name: NDArray}``."""
    if len(ctx_list) < 2:
        raise ValueError("check_consistency: ctx_list needs at least two entries to compare")
    syms = [sym] * len(ctx_list) if isinstance(sym, Symbol) else list(sym)
    if len(syms) != len(ctx_list):
        raise ValueError(f"check_consistency: {len(syms)} symbols for {len(ctx_list)} contexts")
    out_names, arg_names = syms[0].list_outputs(), syms[0].list_arguments()
    exes = [s.simple_bind(grad_req=grad_req, **spec) for s, spec in zip(syms, ctx_list)]
    arg_params, aux_params = _consistency_inputs(exes[0], arg_params, aux_params, scale,
                                                 use_uniform, rand_type)
    for exe in exes:
        for name, arr in exe.arg_dict.items():
            arr[:] = arg_params[name]
        for name, arr in exe.aux_dict.items():
            arr[:] = aux_params[name]
        if grad_req == "add":
            for arr in exe.grad_arrays:
                if arr is not None:
                    arr[:] = 0
    dtypes = [np.dtype(exe.outputs[0].dtype) for exe in exes]
    gt_idx = int(np.argmax(dtypes))
    gt = ground_truth
    if gt is None:
        gt = dict(exes[gt_idx].output_dict)
        if grad_req != "null":
            gt.update(exes[gt_idx].grad_dict)
    for exe in exes:
        exe.forward(is_train=False)
    for i, exe in enumerate(exes):
        if i != gt_idx:
            for name, arr in zip(out_names, exe.outputs):
                _compare_or_report(arr, gt[name], rtol, atol, equal_nan, raise_on_err,
                                   f"predict: ctx {i} vs ctx {gt_idx} at {name}")
    if grad_req != "null":
        _consistency_backward(exes, dtypes, gt, gt_idx, out_names + arg_names, rtol, atol,
                              equal_nan, raise_on_err)
    return gt


def _consistency_backward(exes, dtypes, gt, gt_idx, names, rtol, atol, equal_nan,
                          raise_on_err):
    for exe in exes:
        exe.forward(is_train=True)
    least = [out.dtype for out in exes[0].outputs]
    for exe in exes:
        least = [_smaller_dtype(out.dtype, dt) for out, dt in zip(exe.outputs, least)]
    golden = [out.astype(dt).asnumpy() for out, dt in zip(exes[0].outputs, least)]
    for exe in exes:
        exe.backward([nd_array(g, ctx=out.context, dtype=out.dtype)
                      for g, out in zip(golden, exe.outputs)])
    for i, exe in enumerate(exes):
        if i == gt_idx:
            continue
        for name, arr in zip(names, exe.outputs + exe.grad_arrays):
            if gt[name] is None:
                if arr is not None:
                    raise AssertionError(f"train: ctx {i} has a gradient for {name}, the "
                                         f"reference has none")
                continue
            rt, at = rtol, atol
            small_arr = _smaller_dtype(arr.dtype, dtypes[i])
            small_gt = _smaller_dtype(gt[name].dtype, dtypes[gt_idx])
            if small_arr != arr.dtype or small_gt != gt[name].dtype:
                rt, at = get_tols(arr.astype(small_arr), gt[name].astype(small_gt), rtol, atol)
            _compare_or_report(arr, gt[name], rt, at, equal_nan, raise_on_err,
                               f"train: ctx {i} vs ctx {gt_idx} at {name}")

