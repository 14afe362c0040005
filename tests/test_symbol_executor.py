"""Values of graphs: ``Symbol.eval``, ``bind``, ``simple_bind``, the Executor's forward and
backward, and the symbolic backward graph of ``symbol/gradient.py``.

Gradients are checked three ways: against central finite differences (float64, small shapes),
against each op's eager gradient (``op.grad(mx.nd, ...)``), and, where the real MXNet 1.9.1 is
installed in ``.oracle/``, against MXNet's executor on the same numbers (``oracle`` marker).
Executor API behaviour (persistent outputs, ``grad_dict`` with None, error texts) was checked
against MXNet 1.9.1 by hand; the differences on purpose are listed in ``executor.py``.
"""

from __future__ import annotations

import pathlib
import subprocess

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import modes, ops
from hybridgpu.base import MXNetError
from hybridgpu.symbol.gradient import build_gradient, gradient_symbol, plan_backward

ORACLE = pathlib.Path(__file__).resolve().parent.parent / ".oracle" / "bin" / "python"
RNG = np.random.RandomState(11)


def _nd(a, dtype="float64", ctx=None):
    return mx.nd.array(np.asarray(a), ctx=ctx, dtype=dtype)


def _mlp():
    x = mx.sym.var("data")
    h = mx.sym.FullyConnected(x, num_hidden=5, name="fc1")
    h = mx.sym.Activation(h, act_type="tanh", name="act1")
    return mx.sym.FullyConnected(h, num_hidden=3, name="fc2")


def _convnet(batchnorm=False):
    x = mx.sym.var("data")
    h = mx.sym.Convolution(x, num_filter=3, kernel=(3, 3), pad=(1, 1), name="conv")
    if batchnorm:
        h = mx.sym.BatchNorm(h, fix_gamma=False, name="bn")
    h = mx.sym.Activation(h, act_type="sigmoid", name="act")
    h = mx.sym.Pooling(h, kernel=(2, 2), stride=(2, 2), pool_type="avg", name="pool")
    return mx.sym.FullyConnected(mx.sym.Flatten(h, name="flat"), num_hidden=4, name="fc")


def _random_values(symbol, dtype="float64", **shapes):
    """Random arrays (numpy) for every argument and auxiliary state, by name."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(**shapes)
    values = {n: RNG.uniform(-1, 1, s).astype(dtype)
              for n, s in zip(symbol.list_arguments(), arg_shapes)}
    values.update({n: RNG.uniform(0.5, 1.5, s).astype(dtype)
                   for n, s in zip(symbol.list_auxiliary_states(), aux_shapes)})
    return values


def _bind(symbol, values, grad_req="write", dtype="float64", ctx=None):
    ctx = ctx or mx.cpu()
    args = {n: _nd(values[n], dtype, ctx) for n in symbol.list_arguments()}
    grads = {n: mx.nd.zeros(a.shape, ctx=ctx, dtype=dtype) for n, a in args.items()}
    aux = {n: _nd(values[n], dtype, ctx) for n in symbol.list_auxiliary_states()}
    return symbol.bind(ctx, args, args_grad=grads, grad_req=grad_req, aux_states=aux)


def _numeric_grads(symbol, values, head, is_train, eps=1e-6):
    """Central differences of ``sum(output * head)`` for every argument (float64)."""
    def loss(vals):
        exe = _bind(symbol, vals, grad_req="null")
        return float((exe.forward(is_train=is_train)[0].asnumpy() * head).sum())

    grads = {}
    for name in symbol.list_arguments():
        g = np.zeros_like(values[name])
        for idx in np.ndindex(*values[name].shape):
            plus, minus = dict(values), dict(values)
            plus[name] = values[name].copy()
            minus[name] = values[name].copy()
            plus[name][idx] += eps
            minus[name][idx] -= eps
            g[idx] = (loss(plus) - loss(minus)) / (2 * eps)
        grads[name] = g
    return grads


def _executor_grads(symbol, values, head, is_train):
    exe = _bind(symbol, values)
    exe.forward(is_train=is_train)
    exe.backward(_nd(head))
    return {n: g.asnumpy() for n, g in exe.grad_dict.items()}


# -- eval ------------------------------------------------------------------------------

def _mlp_numpy(v):
    h = np.tanh(v["data"] @ v["fc1_weight"].T + v["fc1_bias"])
    return h @ v["fc2_weight"].T + v["fc2_bias"]


def test_eval_returns_a_list_of_ndarrays_equal_to_numpy():
    sym = _mlp()
    values = _random_values(sym, data=(4, 6))
    out = sym.eval(ctx=mx.cpu(), **{k: _nd(v) for k, v in values.items()})
    assert isinstance(out, list) and len(out) == 1
    assert isinstance(out[0], mx.nd.NDArray) and out[0].dtype == np.float64
    np.testing.assert_allclose(out[0].asnumpy(), _mlp_numpy(values), rtol=1e-12)


def test_eval_of_a_group_gives_every_output():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    outs = mx.sym.Group([a + b, a * b]).eval(a=mx.nd.array([2.0]), b=mx.nd.array([5.0]))
    assert [o.asnumpy().tolist() for o in outs] == [[7.0], [10.0]]


def test_eval_names_the_missing_argument():
    with pytest.raises(ValueError, match=r"key `fc1_weight` is missing"):
        _mlp().eval(data=mx.nd.ones((2, 6)))


def test_eval_takes_auxiliary_states_and_runs_in_predict_mode():
    x = mx.sym.var("x")
    bn = mx.sym.BatchNorm(x, fix_gamma=False, eps=1e-5, name="bn")
    v = _random_values(bn, x=(4, 3))
    out = bn.eval(**{k: _nd(val) for k, val in v.items()})[0].asnumpy()
    want = ((v["x"] - v["bn_moving_mean"]) / np.sqrt(v["bn_moving_var"] + 1e-5)
            * v["bn_gamma"] + v["bn_beta"])
    np.testing.assert_allclose(out, want, rtol=1e-10)


# -- bind -------------------------------------------------------------------------------

def test_bind_positional_and_dict_forms_agree():
    sym = _mlp()
    values = _random_values(sym, data=(2, 6))
    by_name = {n: _nd(values[n]) for n in sym.list_arguments()}
    in_order = [by_name[n] for n in sym.list_arguments()]
    out_dict = sym.bind(mx.cpu(), by_name).forward()[0].asnumpy()
    out_list = sym.bind(mx.cpu(), in_order).forward()[0].asnumpy()
    np.testing.assert_array_equal(out_dict, out_list)
    exe = sym.bind(mx.cpu(), in_order)
    assert exe.arg_arrays[0] is in_order[0] and exe.arg_dict["fc1_weight"] is in_order[1]


def test_bind_missing_argument_in_dict_form_names_it():
    sym = _mlp()
    args = {n: mx.nd.ones((1,)) for n in sym.list_arguments() if n != "fc2_bias"}
    with pytest.raises(ValueError, match=r"key `fc2_bias` is missing in `args`"):
        sym.bind(mx.cpu(), args)


@pytest.mark.parametrize("count", [3, 5])
def test_bind_wrong_count_in_positional_form(count):
    with pytest.raises(ValueError, match=rf"Length of args .*got {count}, the symbol has 4"):
        (mx.sym.var("a") * mx.sym.var("b") + mx.sym.var("c") - mx.sym.var("d")).bind(
            mx.cpu(), [mx.nd.ones(1)] * count)


@pytest.mark.parametrize("form", ["dict", "list"])
def test_bind_wrong_shape_names_argument_expected_and_got(form):
    sym = _mlp()
    shapes = dict(zip(sym.list_arguments(), sym.infer_shape(data=(2, 6))[0]))
    shapes["fc2_weight"] = (3, 7)  # fc1 gives 5 features
    args = {n: mx.nd.ones(s) for n, s in shapes.items()}
    if form == "list":
        args = [args[n] for n in sym.list_arguments()]
    with pytest.raises(MXNetError, match=r"'fc2_weight' has shape \(3, 7\), but the other "
                                         r"inputs imply \(3, 5\)"):
        sym.bind(mx.cpu(), args)


def test_bind_rejects_non_ndarrays_and_bad_grad_arrays():
    sym = mx.sym.var("a") * 2
    with pytest.raises(TypeError, match=r"args\['a'\] must be an NDArray"):
        sym.bind(mx.cpu(), {"a": np.ones(2)})
    with pytest.raises(MXNetError, match=r"args_grad\['a'\] has shape \(3,\), but the argument "
                                         r"has shape \(2,\)"):
        sym.bind(mx.cpu(), {"a": mx.nd.ones(2)}, args_grad={"a": mx.nd.ones(3)})
    with pytest.raises(ValueError, match=r"grad_req 'sum' for argument 'a'"):
        sym.bind(mx.cpu(), {"a": mx.nd.ones(2)}, args_grad=[mx.nd.ones(2)], grad_req="sum")


def test_bind_needs_auxiliary_states_with_their_shapes():
    bn = mx.sym.BatchNorm(mx.sym.var("x"), name="bn")
    args = {"x": mx.nd.ones((4, 3)), "bn_gamma": mx.nd.ones(3), "bn_beta": mx.nd.ones(3)}
    with pytest.raises(ValueError, match=r"Length of aux_states .*got 0, the symbol has 2"):
        bn.bind(mx.cpu(), args)
    with pytest.raises(ValueError, match=r"key `bn_moving_var` is missing in `aux_states`"):
        bn.bind(mx.cpu(), args, aux_states={"bn_moving_mean": mx.nd.zeros(3)})
    with pytest.raises(MXNetError, match=r"auxiliary state 'bn_moving_mean' has shape \(4,\)"):
        bn.bind(mx.cpu(), args, aux_states=[mx.nd.zeros(4), mx.nd.ones(3)])


# -- simple_bind ------------------------------------------------------------------------

def test_simple_bind_allocates_zero_arrays_of_inferred_shapes():
    sym = _convnet(batchnorm=True)
    exe = sym.simple_bind(mx.cpu(), data=(2, 2, 4, 4))
    want = dict(zip(sym.list_arguments(), sym.infer_shape(data=(2, 2, 4, 4))[0]))
    assert {n: a.shape for n, a in exe.arg_dict.items()} == want
    assert {n: a.shape for n, a in exe.grad_dict.items()} == want
    assert {n: a.shape for n, a in exe.aux_dict.items()} == {"bn_moving_mean": (3,),
                                                             "bn_moving_var": (3,)}
    arrays = [*exe.arg_arrays, *exe.grad_arrays, *exe.aux_arrays, *exe.outputs]
    assert all(a.dtype == np.float32 and not a.asnumpy().any() for a in arrays)
    assert exe.outputs[0].shape == (2, 4)
    assert list(exe.output_dict) == ["fc_output"]


def test_simple_bind_type_dict_flows_to_parameters():
    exe = _mlp().simple_bind(mx.cpu(), type_dict={"data": "float64"}, data=(2, 6))
    assert {a.dtype for a in exe.arg_arrays} == {np.float64}


def test_simple_bind_names_variables_whose_shape_is_unknown():
    sym = mx.sym.broadcast_add(mx.sym.var("a") * mx.sym.var("b"), mx.sym.var("c"))
    with pytest.raises(MXNetError, match=r"cannot infer the shapes of \['c'\]"):
        sym.simple_bind(mx.cpu(), a=(2, 3))
    with pytest.raises(MXNetError, match=r"'fc1_weight' has shape \(7, 6\).*imply \(5, 6\)"):
        _mlp().simple_bind(mx.cpu(), data=(2, 6), fc1_weight=(7, 6))


@pytest.mark.parametrize(("grad_req", "expected"), [
    ("null", [None, None, None]),
    ({"data": "write"}, ["write", None, None]),
    (["add", "null", "write"], ["add", None, "write"]),
])
def test_simple_bind_grad_req_forms(grad_req, expected):
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    exe = sym.simple_bind(mx.cpu(), grad_req=grad_req, data=(1, 3))
    got = [None if g is None else exe.grad_req[n] for n, g in exe.grad_dict.items()]
    assert got == expected


# -- forward ----------------------------------------------------------------------------

def test_forward_updates_arguments_and_persistent_outputs():
    sym = _mlp()
    values = _random_values(sym, "float32", data=(2, 6))
    exe = sym.simple_bind(mx.cpu(), data=(2, 6))
    exe.copy_params_from({k: _nd(v, "float32") for k, v in values.items() if k != "data"})
    first = exe.forward(data=values["data"])
    assert first is exe.outputs
    held = first[0]
    np.testing.assert_allclose(held.asnumpy(), _mlp_numpy(values), rtol=1e-5)
    exe.forward(data=mx.nd.array(values["data"] * 2))
    values["data"] = values["data"] * 2
    np.testing.assert_allclose(held.asnumpy(), _mlp_numpy(values), rtol=1e-5)
    np.testing.assert_array_equal(exe.arg_dict["data"].asnumpy(), values["data"])


def test_forward_rejects_unknown_names_and_wrong_shapes():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    with pytest.raises(TypeError, match=r"Unknown argument label"):
        exe.forward(label=np.ones(2))
    with pytest.raises(ValueError, match=r"Argument data, need: \(2, 6\), received: \(3, 6\)"):
        exe.forward(data=np.ones((3, 6)))


def test_copy_params_from_checks_names_and_shapes():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    exe.copy_params_from({"fc2_bias": mx.nd.array([1, 2, 3])})
    assert exe.arg_dict["fc2_bias"].asnumpy().tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match=r'Find name "fc3_bias" that is not in the arguments'):
        exe.copy_params_from({"fc3_bias": mx.nd.ones(3)})
    exe.copy_params_from({"fc3_bias": mx.nd.ones(3)}, allow_extra_params=True)
    with pytest.raises(MXNetError, match=r"'fc2_bias' has shape \(4,\)"):
        exe.copy_params_from({"fc2_bias": mx.nd.ones(4)})


def test_reshape_shares_unchanged_arrays():
    exe = _mlp().simple_bind(mx.cpu(), data=(4, 6))
    small = exe.reshape(data=(2, 6))
    assert small.arg_dict["fc1_weight"] is exe.arg_dict["fc1_weight"]
    assert small.arg_dict["data"].shape == (2, 6) and small.outputs[0].shape == (2, 3)
    with pytest.raises(MXNetError, match=r"larger than original.*allow_up_sizing=True"):
        exe.reshape(data=(8, 6))
    assert exe.reshape(allow_up_sizing=True, data=(8, 6)).outputs[0].shape == (8, 3)


# -- backward: values ---------------------------------------------------------------------

def _sliced():
    parts = mx.sym.SliceChannel(mx.sym.var("data"), num_outputs=3, axis=1, name="sl")
    return mx.sym.Concat(parts[2] * parts[0],
                         mx.sym.LeakyReLU(parts[0], act_type="leaky", slope=0.1), dim=1)


def _normed():
    y = mx.sym.LayerNorm(mx.sym.var("data"), name="ln")
    return mx.sym.log_softmax(mx.sym.Reshape(mx.sym.transpose(y, axes=(1, 0)), shape=(-1, 2)))


def _reduced():
    x = mx.sym.var("data")
    y = mx.sym.broadcast_mul(mx.sym.dot(x, mx.sym.var("w")), mx.sym.mean(x, axis=1,
                                                                          keepdims=True))
    return mx.sym.sum(y, axis=0)


def _deconv():
    y = mx.sym.Convolution(mx.sym.var("data"), num_filter=2, kernel=(2, 2), no_bias=True,
                           name="c")
    y = mx.sym.Pooling(y, kernel=(2, 2), pool_type="max", global_pool=True)
    return mx.sym.Deconvolution(y, num_filter=2, kernel=(2, 2), name="d")


@pytest.mark.parametrize(("make", "shapes", "is_train"), [
    (_mlp, {"data": (3, 4)}, True),
    (_convnet, {"data": (2, 2, 4, 4)}, True),
    (lambda: _convnet(batchnorm=True), {"data": (2, 2, 4, 4)}, True),
    (lambda: _convnet(batchnorm=True), {"data": (2, 2, 4, 4)}, False),
    (_sliced, {"data": (2, 6)}, True),
    (_normed, {"data": (4, 3)}, True),
    (_reduced, {"data": (3, 4), "w": (4, 2)}, True),
    (_deconv, {"data": (1, 2, 4, 4)}, True),
], ids=["mlp", "convnet", "convnet_bn_train", "convnet_bn_predict", "slice_concat",
        "layernorm_reshape", "dot_reduce", "conv_pool_deconv"])
def test_backward_equals_finite_differences(make, shapes, is_train):
    sym = make()
    values = _random_values(sym, **shapes)
    head = RNG.uniform(-1, 1, sym.infer_shape(**shapes)[1][0])
    got = _executor_grads(sym, values, head, is_train)
    want = _numeric_grads(sym, values, head, is_train)
    for arg in sym.list_arguments():
        np.testing.assert_allclose(got[arg], want[arg], rtol=1e-5, atol=1e-7, err_msg=arg)


def test_value_used_twice_sums_its_gradients():
    x = mx.sym.var("x")
    y = mx.sym.elemwise_mul(x, x) + mx.sym.sin(x) + x
    exe = y.bind(mx.cpu(), [_nd([0.5, -2.0])], args_grad=[mx.nd.zeros(2, dtype="float64")])
    exe.forward(is_train=True)
    exe.backward(_nd([1.0, 3.0]))
    want = (2 * np.array([0.5, -2.0]) + np.cos([0.5, -2.0]) + 1) * [1.0, 3.0]
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), want, rtol=1e-12)


def test_internal_output_in_a_group_adds_its_head_gradient():
    x = mx.sym.var("x")
    h = mx.sym.exp(x, name="h")
    exe = mx.sym.Group([h, h * 3]).bind(mx.cpu(), [_nd([0.0, 1.0])],
                                        args_grad=[mx.nd.zeros(2, dtype="float64")])
    exe.forward(is_train=True)
    exe.backward([_nd([1.0, 1.0]), _nd([2.0, 0.0])])
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.exp([0.0, 1.0]) * [7.0, 1.0])


@pytest.mark.parametrize(("op_name", "inputs", "attrs", "is_train"), [
    ("FullyConnected", [(3, 4), (2, 4), (2,)], {"num_hidden": 2}, False),
    ("FullyConnected", [(2, 3, 4), (5, 4)], {"num_hidden": 5, "no_bias": True,
                                             "flatten": False}, False),
    ("Convolution", [(1, 2, 5, 5), (3, 2, 3, 3), (3,)],
     {"num_filter": 3, "kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}, False),
    ("Pooling", [(1, 2, 4, 4)], {"kernel": (2, 2), "stride": (2, 2), "pool_type": "max"},
     False),
    ("Activation", [(2, 3)], {"act_type": "softrelu"}, False),
    ("BatchNorm", [(4, 3, 2), (3,), (3,), (3,), (3,)], {"fix_gamma": False}, True),
    ("BatchNorm", [(4, 3, 2), (3,), (3,), (3,), (3,)], {"fix_gamma": False}, False),
    ("broadcast_mul", [(2, 1, 3), (4, 1)], {}, False),
    ("softmax", [(2, 5)], {"axis": -1}, False),
])
def test_symbolic_backward_equals_the_ops_eager_gradient(op_name, inputs, attrs, is_train):
    op = ops.get(op_name)
    parsed = op.parse_attrs(attrs)
    arrays = [RNG.uniform(0.5, 1.5, s) if i >= 3 and op.aux else RNG.uniform(-1, 1, s)
              for i, s in enumerate(inputs)]
    names = list(op.input_names(parsed))
    sym = getattr(mx.sym, op_name)(*[mx.sym.var(n) for n in names], **attrs, name="op")
    values = dict(zip(names, arrays))
    out_shape = sym.infer_shape(**{n: a.shape for n, a in values.items()})[1][0]
    head = RNG.uniform(-1, 1, out_shape)
    got = _executor_grads(sym, values, head, is_train)
    # The eager gradient: op.grad with F = mx.nd on the op's own outputs (every output).
    copies = [a.copy() for a in arrays]  # BatchNorm updates its moving stats in place
    extra = {"is_train": is_train} if op.mode_dependent else {}
    outs = op.compute(np, *copies, **parsed, **extra)
    outs = outs if isinstance(outs, tuple) else (outs,)
    out_grads = [_nd(head)] + [mx.nd.zeros(o.shape, dtype="float64") for o in outs[1:]]
    with modes.training(is_train):
        eager = op.grad(mx.nd, [_nd(a) for a in arrays], [_nd(o) for o in outs], out_grads,
                        **parsed)
    for name, g in zip(names, eager):
        if name in op.aux:
            continue
        want = np.zeros_like(values[name]) if g is None else g.asnumpy()
        np.testing.assert_allclose(got[name], want, rtol=1e-10, atol=1e-12, err_msg=name)


def test_dropout_backward_uses_the_forward_mask():
    x = mx.sym.var("x")
    y = mx.sym.Dropout(x, p=0.5)
    exe = y.simple_bind(mx.cpu(), x=(50,))
    data = RNG.uniform(1, 2, 50).astype(np.float32)
    out = exe.forward(is_train=True, x=data)[0].asnumpy()
    exe.backward(mx.nd.ones(50))
    kept = out != 0
    assert 0 < kept.sum() < 50
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), kept * 2.0)
    exe.forward(is_train=False)
    exe.backward(mx.nd.ones(50))
    np.testing.assert_allclose(exe.grad_dict["x"].asnumpy(), np.ones(50))


def test_random_ops_draw_from_the_seeded_generator():
    y = mx.sym.Dropout(mx.sym.var("x"), p=0.5)
    masks = []
    for _ in range(2):
        mx.random.seed(123)
        exe = y.simple_bind(mx.cpu(), x=(40,))
        masks.append(exe.forward(is_train=True, x=np.ones(40))[0].asnumpy())
    np.testing.assert_array_equal(masks[0], masks[1])


# -- backward: BatchNorm's auxiliary states -------------------------------------------------

def test_batchnorm_training_updates_aux_dict_in_place_once_per_forward():
    bn = mx.sym.BatchNorm(mx.sym.var("x"), momentum=0.9, fix_gamma=False, name="bn")
    exe = bn.simple_bind(mx.cpu(), x=(4, 3))
    mean_array = exe.aux_dict["bn_moving_mean"]
    assert exe.aux_arrays[0] is mean_array
    exe.aux_dict["bn_moving_var"][:] = 1.0
    data = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    exe.forward(is_train=True, x=data)
    want_mean = 0.1 * data.mean(axis=0)
    want_var = 0.9 + 0.1 * data.var(axis=0)
    np.testing.assert_allclose(mean_array.asnumpy(), want_mean, rtol=1e-6)
    np.testing.assert_allclose(exe.aux_dict["bn_moving_var"].asnumpy(), want_var, rtol=1e-6)
    exe.backward(mx.nd.ones((4, 3)))  # backward reads the saved statistics: no second update
    exe.forward(is_train=False)
    np.testing.assert_allclose(mean_array.asnumpy(), want_mean, rtol=1e-6)
    exe.forward(is_train=True)
    np.testing.assert_allclose(mean_array.asnumpy(), 0.9 * want_mean + 0.1 * data.mean(axis=0),
                               rtol=1e-6)


# -- backward: grad_req and head gradients --------------------------------------------------

def test_grad_req_add_accumulates_and_null_leaves_no_gradient():
    sym = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    exe = sym.simple_bind(mx.cpu(), grad_req={"fc_weight": "add", "fc_bias": "write"},
                          data=(3, 4))
    assert exe.grad_dict["data"] is None and exe.grad_arrays[0] is None
    exe.forward(is_train=True, data=np.ones((3, 4)))
    for _ in range(3):
        exe.backward(mx.nd.ones((3, 2)))
    np.testing.assert_allclose(exe.grad_dict["fc_weight"].asnumpy(), np.full((2, 4), 9.0))
    np.testing.assert_allclose(exe.grad_dict["fc_bias"].asnumpy(), [3.0, 3.0])


def test_backward_without_out_grads_needs_a_loss_output():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match=r"output 'fc2_output' needs a head gradient.*"
                                         r"head_gradient is required"):
        exe.backward()
    so = mx.sym.SoftmaxOutput(_mlp(), mx.sym.var("label"), name="so")
    exe = so.simple_bind(mx.cpu(), data=(2, 6), label=(2,))
    values = _random_values(_mlp(), "float32", data=(2, 6))
    exe.copy_params_from({k: mx.nd.array(v) for k, v in values.items()})
    probs = exe.forward(is_train=True, label=np.array([0, 2]))[0].asnumpy()
    exe.backward()
    onehot = np.eye(3)[[0, 2]]
    np.testing.assert_allclose(exe.grad_dict["fc2_bias"].asnumpy(), (probs - onehot).sum(0),
                               rtol=1e-5, atol=1e-6)
    assert not exe.grad_dict["label"].asnumpy().any()


def test_backward_checks_out_grads():
    exe = _mlp().simple_bind(mx.cpu(), data=(2, 6))
    exe.forward(is_train=True)
    with pytest.raises(MXNetError, match=r"got 2 out_grads for 1 outputs"):
        exe.backward([mx.nd.ones((2, 3))] * 2)
    with pytest.raises(MXNetError, match=r"out_grads\[0\] for output 'fc2_output' has shape "
                                         r"\(2, 4\), but the output has shape \(2, 3\)"):
        exe.backward(mx.nd.ones((2, 4)))


# -- the gradient symbol ------------------------------------------------------------------

def test_gradient_symbol_inputs_outputs_and_zero_gradients():
    x, w, u = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("unused")
    y = mx.sym.Group([mx.sym.elemwise_mul(x, w, name="mul"), mx.sym.BlockGrad(u, name="bg")])
    g = gradient_symbol(y, ["w", "x", "unused"])
    assert len(g) == 3
    assert set(g.list_arguments()) == {"x", "w", "unused", "mul_output_head_grad"}
    dw, dx, du = g.eval(x=_nd([1.0, 2.0]), w=_nd([3.0, 4.0]), unused=_nd([5.0]),
                        mul_output_head_grad=_nd([10.0, 100.0]))
    assert dw.asnumpy().tolist() == [10.0, 200.0] and dx.asnumpy().tolist() == [30.0, 400.0]
    assert du.asnumpy().tolist() == [0.0]
    with pytest.raises(MXNetError, match=r"'z' is not an argument of the symbol"):
        gradient_symbol(y, ["z"])


def test_loss_output_needs_no_head_gradient_and_backward_reads_saved_values():
    so = mx.sym.SoftmaxOutput(_mlp(), mx.sym.var("label"), name="so")
    gradient = build_gradient(so, shapes={"data": (2, 6), "label": (2,)})
    assert gradient.needed_heads() == []
    plan = plan_backward(gradient)
    assert plan.needed_heads == [] and plan.saved_names
    fwd_ops = {n.op.name for n in plan.forward.nodes if not n.is_variable}
    bwd_ops = {n.op.name for n in plan.backward.nodes if not n.is_variable}
    assert "FullyConnected" in fwd_ops and not bwd_ops & {"FullyConnected", "SoftmaxOutput"}


def test_gradient_symbol_leaves_the_forward_symbol_untouched():
    sym = _mlp()
    before = sym.tojson()
    gradient_symbol(sym, shapes={"data": (2, 6)}, dtypes={"data": "float64"})
    assert sym.tojson() == before


def test_gradient_symbol_reads_shapes_from_variables_or_asks_for_them():
    def make(**shape):
        return mx.sym.FullyConnected(mx.sym.var("x", **shape), num_hidden=3, name="fc")

    with pytest.raises(MXNetError, match=r"gradient of node 'fc' \(FullyConnected\).*"
                                         r"pass shapes="):
        gradient_symbol(make())
    traced = gradient_symbol(make(shape=(2, 4)), ["x"])
    given = gradient_symbol(make(), ["x"], shapes={"x": (2, 4)})
    values = {"x": _nd(RNG.uniform(-1, 1, (2, 4))), "fc_weight": _nd(RNG.uniform(-1, 1, (3, 4))),
              "fc_bias": _nd(np.zeros(3)), "fc_output_head_grad": _nd(np.ones((2, 3)))}
    want = np.ones((2, 3)) @ values["fc_weight"].asnumpy()
    for g in (traced, given):
        np.testing.assert_allclose(g.eval(**values)[0].asnumpy(), want, rtol=1e-12)


# -- devices and the oracle -----------------------------------------------------------------

@pytest.mark.gpu
def test_gpu_forward_backward_equal_cpu(gpu_available):
    sym = _convnet(batchnorm=True)
    values = _random_values(sym, "float32", data=(2, 2, 4, 4))
    head = RNG.uniform(-1, 1, (2, 4)).astype(np.float32)
    results = []
    for ctx in (mx.cpu(), gpu_available):
        exe = _bind(sym, values, dtype="float32", ctx=ctx)
        out = exe.forward(is_train=True)[0].asnumpy()
        exe.backward(mx.nd.array(head, ctx=ctx))
        results.append((out, {n: g.asnumpy() for n, g in exe.grad_dict.items()},
                        {n: a.asnumpy() for n, a in exe.aux_dict.items()}))
    (out_c, grads_c, aux_c), (out_g, grads_g, aux_g) = results
    np.testing.assert_allclose(out_g, out_c, rtol=1e-4, atol=1e-5)
    for name in grads_c:
        np.testing.assert_allclose(grads_g[name], grads_c[name], rtol=1e-4, atol=1e-5)
    for name in aux_c:
        np.testing.assert_allclose(aux_g[name], aux_c[name], rtol=1e-5, atol=1e-6)


_ORACLE_SCRIPT = r"""
import json, sys
import numpy as np
import mxnet as mx
sym = mx.sym.load_json(open(sys.argv[1]).read())
data = np.load(sys.argv[2])
args = {n: mx.nd.array(data[n], dtype="float64") for n in sym.list_arguments()}
aux = {n: mx.nd.array(data[n], dtype="float64") for n in sym.list_auxiliary_states()}
grads = {n: mx.nd.zeros(a.shape, dtype="float64") for n, a in args.items()}
exe = sym.bind(mx.cpu(), args, args_grad=grads, aux_states=aux)
out = exe.forward(is_train=True)[0].asnumpy()
exe.backward(mx.nd.array(data["__head__"], dtype="float64"))
saved = {n: g.asnumpy() for n, g in exe.grad_dict.items()}
saved.update({"__aux__" + n: a.asnumpy() for n, a in exe.aux_dict.items()})
np.savez(sys.argv[3], __out__=out, **saved)
"""


@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
@pytest.mark.parametrize(("make", "shape"), [
    (_mlp, (3, 4)), (_convnet, (2, 2, 4, 4)), (lambda: _convnet(batchnorm=True), (2, 2, 4, 4)),
], ids=["mlp", "convnet", "convnet_batchnorm"])
def test_forward_backward_equal_mxnet(make, shape, tmp_path):
    """Outputs, gradients and (after forward and backward) BatchNorm's moving statistics
    equal MXNet's; MXNet updates the statistics in backward, hybridgpu in forward."""
    sym = make()
    values = _random_values(sym, data=shape)
    head = RNG.uniform(-1, 1, sym.infer_shape(data=shape)[1][0])
    (tmp_path / "sym.json").write_text(sym.tojson())
    np.savez(tmp_path / "in.npz", __head__=head, **values)
    (tmp_path / "run.py").write_text(_ORACLE_SCRIPT)
    subprocess.run([str(ORACLE), str(tmp_path / "run.py"), str(tmp_path / "sym.json"),
                    str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
                   check=True, capture_output=True, timeout=300)
    want = np.load(tmp_path / "out.npz")
    exe = _bind(sym, values)
    np.testing.assert_allclose(exe.forward(is_train=True)[0].asnumpy(), want["__out__"],
                               rtol=1e-10)
    exe.backward(_nd(head))
    for name, grad in exe.grad_dict.items():
        np.testing.assert_allclose(grad.asnumpy(), want[name], rtol=1e-8, atol=1e-12,
                                   err_msg=name)
    for name, aux in exe.aux_dict.items():
        # MXNet keeps momentum as a C float: agreement to float32 precision
        np.testing.assert_allclose(aux.asnumpy(), want["__aux__" + name], rtol=1e-6,
                                   err_msg=name)
