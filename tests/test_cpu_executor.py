"""The CPU executor: generated straight-line NumPy programs against the reference interpreter
and against each op's own ``compute``.

* every op case of the registry, compiled as a one-node graph, equals the interpreter;
* every lowering rule equals its op's ``compute`` (bit for bit) over attribute combinations;
* whole models (the seed MLP, a conv net with BatchNorm in train and predict mode, resnet18_v1
  at 32x32) equal the interpreter, auxiliary states included;
* outputs are fresh arrays, buffers never alias live values, the source is valid and readable.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.compiler.codegen import build_cpu_executable, generate
from hybridgpu.executor import CpuExecutable
from hybridgpu.gluon import nn
from hybridgpu.graph import Entry, Graph, Node, evaluate, infer_shapes, infer_types

from op_harness import collect_cases


def _one_node(op, attrs, arrays, outputs=None):
    """A graph of ``op`` over variables in0, in1, ... (every output unless ``outputs``)."""
    inputs = [Node.variable(f"in{i}") for i in range(len(arrays))]
    node = Node(op, "op", attrs, [Entry(v, 0) for v in inputs])
    graph = Graph([Entry(node, k) for k in (outputs or range(node.num_outputs))])
    given = {f"in{i}": a for i, a in enumerate(arrays)}
    try:
        infer_types(graph, {k: a.dtype.name for k, a in given.items()})
        infer_shapes(graph, {k: a.shape for k, a in given.items()})
    except MXNetError:
        pass  # the program then calls compute, which raises as the interpreter does
    return graph, given


def _compile(graph, is_train=False):
    return build_cpu_executable(graph, None, mx.cpu(), is_train)


def _copies(values):
    return {k: np.array(v, copy=True) for k, v in values.items()}


def _assert_same(got, want, what):
    assert len(got) == len(want), what
    for k, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (what, k, g.shape, w.shape)
        np.testing.assert_array_equal(g, w, err_msg=f"{what}: output {k}")


# -- the registry's op cases ------------------------------------------------------------------

REGISTRY = collect_cases()


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in REGISTRY])
def test_registry_case_matches_the_interpreter(case):
    """Each op case as a one-node program equals the reference interpreter, bit for bit,
    auxiliary states (updated in place) included."""
    arrays = case.make_inputs(case.dtypes[0])
    attrs = case.opdef.parse_attrs(case.attrs, len(arrays) if case.opdef.variadic else None)
    graph, given = _one_node(case.opdef, attrs, arrays)
    mine, reference = _copies(given), _copies(given)
    want = evaluate(graph, reference, np, is_train=case.is_train,
                    rng=np.random.RandomState(case.seed))
    got = _compile(graph, case.is_train)(mine, rng=np.random.RandomState(case.seed))
    _assert_same(got, want, case.name)
    for name in given:
        np.testing.assert_array_equal(mine[name], reference[name], err_msg=f"input {name}")


# -- every lowering rule against its op's compute -------------------------------------------

_POS = (0.25, 2.0)
_UNIT = (-0.9, 0.9)


def _lowering_cases():
    """(op, attrs, input shapes, domain, is_train) rows covering every rule."""
    rows = []
    binary = ["add", "sub", "mul", "div", "mod", "power", "maximum", "minimum", "hypot",
              "equal", "not_equal", "greater", "greater_equal", "lesser", "lesser_equal",
              "logical_and", "logical_or", "logical_xor"]
    elemwise = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
                "div": "elemwise_div"}
    scalar = {"add": "_plus_scalar", "sub": "_minus_scalar"}
    for key in binary:
        dom = _POS if key == "power" else (-2.0, 2.0)
        rows.append((elemwise.get(key, f"_{key}"), {}, [(3, 4), (3, 4)], dom, False))
        rows.append((f"broadcast_{key}", {}, [(3, 1), (1, 4)], dom, False))
        rows.append((f"broadcast_{key}", {}, [(2, 3, 4), (4,)], dom, False))
        for s in (2, -1.5, 0.5):
            rows.append((scalar.get(key, f"_{key}_scalar"), {"scalar": s}, [(3, 4)], dom,
                         False))
    for name in ("_rminus_scalar", "_rdiv_scalar", "_rmod_scalar", "_rpower_scalar"):
        rows += [(name, {"scalar": s}, [(3, 4)], (-2.0, 2.0), False) for s in (2, 0.5)]
    unary = {"log": _POS, "log2": _POS, "log10": _POS, "sqrt": _POS, "rsqrt": _POS,
             "log1p": _POS, "arccosh": (1.1, 3.0), "arcsin": _UNIT, "arccos": _UNIT,
             "arctanh": _UNIT}
    for name in ("tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt",
                 "square", "negative", "abs", "floor", "ceil", "trunc", "fix", "sin", "cos",
                 "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "arcsinh", "arccosh",
                 "arctanh", "degrees", "radians", "relu", "rsqrt", "rcbrt", "reciprocal",
                 "sigmoid", "softsign", "logical_not", "_copy", "BlockGrad", "zeros_like",
                 "ones_like"):
        rows.append((name, {}, [(2, 5)], unary.get(name, (-3.0, 3.0)), False))
    rows += [("clip", {"a_min": -0.5, "a_max": 0.8}, [(4, 5)], (-2.0, 2.0), False),
             ("clip", {"a_min": 0.0, "a_max": 0.1}, [(4, 5)], (-2.0, 2.0), False),
             ("hard_sigmoid", {}, [(4, 5)], (-4.0, 4.0), False),
             ("hard_sigmoid", {"alpha": 0.3, "beta": 0.1}, [(4, 5)], (-4.0, 4.0), False)]
    rows += [("Activation", {"act_type": t}, [(3, 6)], (-30.0, 30.0), False)
             for t in ("relu", "sigmoid", "tanh", "softrelu", "softsign")]
    return rows + _layer_cases()


def _layer_cases():
    fc, bn, conv = "FullyConnected", "BatchNorm", "Convolution"
    rows = [(fc, {"num_hidden": 4}, [(3, 5), (4, 5), (4,)], None, False),
            (fc, {"num_hidden": 4}, [(1, 5), (4, 5), (4,)], None, False),
            (fc, {"num_hidden": 4, "no_bias": True}, [(2, 3, 2, 2), (4, 12)], None, False),
            (fc, {"num_hidden": 4, "flatten": False}, [(2, 3, 5), (4, 5), (4,)], None, False)]
    for attrs in ({}, {"axis": 1}, {"axis": (0, 2), "keepdims": True},
                  {"axis": 1, "exclude": True}, {"axis": -1}):
        rows += [(name, attrs, [(2, 3, 4)], (0.5, 1.5), False)
                 for name in ("sum", "mean", "max", "min", "prod")]
    rows += [("Pooling", {"global_pool": True, "pool_type": t, "kernel": (1, 1)},
              [(2, 3, 4, 5)], None, False) for t in ("max", "avg", "sum")]
    rows += [("Pooling", {"global_pool": True, "pool_type": "avg", "kernel": (1,)},
              [(2, 3, 4)], None, False)]
    vec = [(2, 3, 4, 4), (3,), (3,), (3,), (3,)]
    rows += [(bn, {}, vec, None, False), (bn, {"fix_gamma": False}, vec, None, False),
             (bn, {"fix_gamma": False, "output_mean_var": True}, vec, None, False),
             (bn, {"fix_gamma": False, "axis": -1, "eps": 1e-5},
              [(2, 4, 3), (3,), (3,), (3,), (3,)], None, False),
             (bn, {"use_global_stats": True, "fix_gamma": False}, vec, None, True)]
    rows += [("Reshape", {"shape": (0, -1)}, [(2, 3, 4)], None, False),
             ("Reshape", {"shape": (-1,)}, [(2, 3, 4)], None, False),
             ("Flatten", {}, [(2, 3, 4)], None, False),
             ("expand_dims", {"axis": 1}, [(2, 3)], None, False),
             ("add_n", {}, [(2, 3)], None, False),
             ("add_n", {}, [(2, 3)] * 2, None, False),
             ("add_n", {}, [(2, 3)] * 4, None, False),
             ("Dropout", {"p": 0.5}, [(3, 4)], None, False),
             ("Dropout", {"p": 0.0}, [(3, 4)], None, True)]
    base = {"kernel": (3, 3), "num_filter": 4}
    for attrs, x in (({"pad": (1, 1)}, (1, 3, 6, 6)), ({"stride": (2, 2)}, (2, 3, 7, 7)),
                     ({"dilate": (2, 2), "pad": (2, 1)}, (1, 2, 7, 6)),
                     ({"num_group": 2, "pad": (1, 1)}, (2, 4, 5, 5)),
                     ({"kernel": (1, 1)}, (1, 4, 3, 3)),
                     ({"kernel": (1, 1), "num_group": 2}, (1, 4, 3, 3)),
                     ({"kernel": (1, 1), "stride": (2, 2), "no_bias": True}, (2, 4, 5, 5)),
                     ({"kernel": (3,), "pad": (1,)}, (2, 3, 8)),
                     ({"kernel": (2, 2, 2), "stride": (1, 2, 1)}, (1, 2, 4, 5, 4))):
        attrs = {**base, **attrs}
        groups, kernel = attrs.get("num_group", 1), attrs["kernel"]
        shapes = [x, (4, x[1] // groups, *kernel)] + ([] if attrs.get("no_bias") else [(4,)])
        rows.append((conv, attrs, shapes, None, False))
    return rows


LOWERING_CASES = _lowering_cases()


def _case_id(row):
    name, attrs, shapes, _, is_train = row
    text = ",".join(f"{k}={v}" for k, v in attrs.items())
    return f"{name}[{text}]{shapes[0]}{'-train' if is_train else ''}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("row", LOWERING_CASES, ids=[_case_id(r) for r in LOWERING_CASES])
def test_lowering_equals_the_ops_compute(row, dtype):
    """The lowered NumPy calls give what the op's ``compute`` gives, bit for bit, and leave
    the inputs alone."""
    name, given_attrs, shapes, domain, is_train = row
    op = ops.get(name)
    rng = np.random.RandomState(7)
    low, high = domain or (-2.0, 2.0)
    arrays = [rng.uniform(low, high, size=s).astype(dtype) for s in shapes]
    if name == "BatchNorm":
        arrays[4] = np.abs(arrays[4]) + 0.5  # a variance
    attrs = op.parse_attrs(given_attrs, len(arrays) if op.variadic else None)
    graph, given = _one_node(op, attrs, arrays)
    exe = _compile(graph, is_train)
    assert exe.program.lowered == ["op"], exe.source
    extra = {"is_train": is_train} if op.mode_dependent else {}
    if op.random:
        extra["rng"] = np.random.RandomState(0)
    want = op.compute(np, *_copies(given).values(), **attrs, **extra)
    with np.errstate(all="ignore"):
        got = exe(_copies(given))
    _assert_same(got, want if isinstance(want, tuple) else (want,), _case_id(row))
    again = exe(given)
    _assert_same(again, got, "second call")
    for a, (key, b) in zip(arrays, given.items()):
        np.testing.assert_array_equal(a, b, err_msg=f"{key} was written")


def test_every_lowering_rule_is_tested():
    lowerings = {op.name for op in ops.all_ops() if op.lowering_for("array") is not None}
    tested = {ops.get(row[0]).name for row in LOWERING_CASES} | {"_fused"}  # see below
    assert lowerings <= tested, sorted(lowerings - tested)


@pytest.mark.parametrize("name, attrs, shapes, is_train", [
    ("clip", {"a_min": 1.0, "a_max": -1.0}, [(3,)], False),     # MXNet's reversed bounds
    ("Dropout", {"p": 0.5}, [(3,)], True),                         # random in training
    ("BatchNorm", {}, [(2, 3), (3,), (3,), (3,), (3,)], True),     # batch statistics
    ("Pooling", {"kernel": (2, 2), "pool_type": "max"}, [(1, 1, 4, 4)], False),
    ("_plus_scalar", {"scalar": 2}, [(3,)], False),                # int32 below
])
def test_rules_decline_what_they_do_not_cover(name, attrs, shapes, is_train):
    op = ops.get(name)
    dtype = "int32" if name == "_plus_scalar" else "float32"
    arrays = [np.ones(s, dtype) for s in shapes]
    graph, given = _one_node(op, op.parse_attrs(attrs), arrays, outputs=[0])
    exe = _compile(graph, is_train)
    assert exe.program.fallback == ["op"] and "op_compute(" in exe.source



# -- fused elementwise groups -----------------------------------------------------------------

def _fused_cases():
    x, b = mx.sym.var("x"), mx.sym.var("b")
    fc = mx.sym.FullyConnected(x, mx.sym.var("w"), num_hidden=4, no_bias=True)
    chain = x
    for _ in range(3):
        chain = mx.sym.tanh(chain * 1.5 + 0.5)
    shared = mx.sym.relu(mx.sym.broadcast_add(x, b))
    inner = mx.sym.relu(fc * 2 + 1)           # reads a buffer that dies at the group
    return {
        "chain": mx.sym.sqrt(mx.sym.abs(chain) + x * x),
        "two-outputs": mx.sym.Group([shared * 2, mx.sym.sum(shared), mx.sym.exp(shared)]),
        "member-without-rule": mx.sym.sign(x * 2 - 0.5) + mx.sym.round(x),
        "softsign-inside": mx.sym.softsign(x * 2) * 3 - x,
        "in-place": mx.sym.FullyConnected(inner, mx.sym.var("w2"), num_hidden=2, no_bias=True),
        "int32": (x * 2 + 1) * x,
    }


FUSED = _fused_cases()


@pytest.mark.parametrize("name", list(FUSED))
def test_fused_groups_run_their_members_into_buffers(name):
    """A ``_fused`` node's members become NumPy calls into the node's output buffers (or a
    reused scratch buffer), in place where a member allows it; the result is its compute's."""
    from hybridgpu.compiler.passes import fuse_elementwise

    dtype = "int32" if name == "int32" else "float32"
    out = FUSED[name]
    shapes = {"x": (3, 4), "b": (4,), "w": (4, 4), "w2": (2, 4)}
    graph = Graph(out._outputs)
    shapes = {k: v for k, v in shapes.items() if k in out.list_arguments()}
    infer_types(graph, {k: dtype for k in shapes})
    infer_shapes(graph, shapes)
    fused = fuse_elementwise(graph)
    assert any(n.op is not None and n.op.name == "_fused" for n in fused.nodes)
    rng = np.random.RandomState(0)
    values = {k: (rng.uniform(-2, 2, s) * (5 if dtype == "int32" else 1)).astype(dtype)
              for k, s in shapes.items()}
    exe = _compile(fused)
    lowered = [n for n in exe.program.lowered if n.endswith("_fused")]
    assert bool(lowered) == (dtype != "int32"), exe.source
    _assert_same(exe(_copies(values)), evaluate(fused, _copies(values), np), name)
    _assert_same(exe(_copies(values)), evaluate(graph, _copies(values), np), name)
    if name == "chain":
        assert exe.source.count("np.empty(") == 2  # the output, and one scratch for x * x
    if name == "in-place":
        assert "# in place" in exe.source

# -- whole models -----------------------------------------------------------------------------

def _model_graph(net, x):
    """The graph of an initialized ``net`` on ``x`` (through ``net(sym.var)``), and its
    inputs: the data and every parameter's array."""
    out = net(mx.sym.var("data"))
    graph = Graph(out._outputs)
    params = {p.name: p.data().asnumpy() for p in net.collect_params().values()}
    values = {"data": x, **params}
    infer_types(graph, {k: v.dtype.name for k, v in values.items()})
    infer_shapes(graph, {k: v.shape for k, v in values.items()})
    return graph, values


def _check_model(net, x, is_train):
    """The generated program equals the interpreter on the traced graph, and on the graph
    the pipeline's passes optimized (fused groups, decomposed BatchNorm)."""
    from hybridgpu.compiler import compile_graph

    graph, values = _model_graph(net, x)
    exe = _compile(graph, is_train)
    optimized = compile_graph(graph, mx.cpu(), is_train)
    interpreted = compile_graph(graph, mx.cpu(), is_train, {"executor": "interpreter"})
    assert isinstance(optimized, CpuExecutable)
    runs = [(exe, lambda v: evaluate(graph, v, np, is_train=is_train,
                                     rng=np.random.RandomState(3))),
            (optimized, lambda v: interpreted(v, rng=np.random.RandomState(3)))]
    for program, reference in runs:
        mine, theirs = _copies(values), _copies(values)
        _assert_same(program(mine, rng=np.random.RandomState(3)), reference(theirs), "model")
        for name in values:  # moving statistics updated in place, as the interpreter does
            np.testing.assert_array_equal(mine[name], theirs[name], err_msg=name)
    return exe, values, mine


def _seed_mlp(batch):
    from hybridgpu.bench import seed_mlp

    net = seed_mlp()
    net.initialize()
    x = np.random.RandomState(0).randn(batch, 512).astype(np.float32)
    net(mx.nd.array(x))
    return net, x


@pytest.mark.parametrize("batch", [1, 5])
def test_seed_mlp_matches_the_interpreter(batch):
    net, x = _seed_mlp(batch)
    exe, _, _ = _check_model(net, x, is_train=False)
    assert exe.program.fallback == []  # every node is NumPy calls into buffers


def _conv_net():
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
                nn.MaxPool2D(), nn.Conv2D(8, 3, strides=2, groups=2, use_bias=False),
                nn.BatchNorm(), nn.Activation("sigmoid"), nn.Conv2D(4, 1),
                nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(10), nn.Dropout(0.5))
    net.initialize(mx.init.Xavier())
    x = np.random.RandomState(1).rand(2, 3, 12, 12).astype(np.float32)
    net(mx.nd.array(x))
    for p in net.collect_params().values():  # non-trivial moving statistics
        if p.name.endswith(("running_mean", "running_var", "gamma", "beta")):
            p.set_data(mx.nd.array(np.random.RandomState(2).uniform(0.5, 1.5, p.shape)))
    return net, x


def test_conv_net_with_batchnorm_in_predict_mode():
    net, x = _conv_net()
    exe, _, _ = _check_model(net, x, is_train=False)
    assert not any("conv" in name or "batchnorm" in name for name in exe.program.fallback)


def test_conv_net_with_batchnorm_in_train_mode_updates_moving_statistics():
    net, x = _conv_net()
    exe, values, mine = _check_model(net, x, is_train=True)  # Dropout draws from one seed
    moved = [k for k in values if k.endswith("running_mean")]
    assert moved and all(not np.array_equal(values[k], mine[k]) for k in moved)


def test_resnet18_v1_matches_the_interpreter():
    from hybridgpu.gluon.model_zoo import vision

    net = vision.resnet18_v1()
    net.initialize(mx.init.Xavier())
    x = np.random.RandomState(0).rand(1, 3, 32, 32).astype(np.float32)
    net(mx.nd.array(x))
    exe, _, _ = _check_model(net, x, is_train=False)
    assert [n for n in exe.program.fallback if "pool" not in n] == []


# -- outputs, buffers and aliasing ------------------------------------------------------------

def _sym_graph(out, **shapes):
    graph = Graph(out._outputs)
    infer_types(graph, {k: "float32" for k in shapes})
    infer_shapes(graph, shapes)
    return graph


def test_outputs_are_fresh_arrays():
    """A later call never changes an earlier result; outputs share memory with no input,
    buffer or other output (a variable, a repeated value, a view of a buffer)."""
    x = mx.sym.var("x")
    h = mx.sym.relu(x * 2)
    flat = mx.sym.Flatten(h * 3)         # a view of a preallocated buffer
    same = mx.sym.exp(h)
    out = mx.sym.Group([same, x, same, flat, mx.sym.Reshape(x, shape=(-1,)), h])
    exe = _compile(_sym_graph(out, x=(2, 3)))
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    first = exe({"x": a})
    kept = [o.copy() for o in first]
    second = exe({"x": a + 1})
    for k, (f, w) in enumerate(zip(first, kept)):
        np.testing.assert_array_equal(f, w, err_msg=f"output {k} changed by a later call")
    arrays = [a, *first, *second]
    for i, p in enumerate(arrays):
        for q in arrays[i + 1:]:
            assert not np.shares_memory(p, q)


def test_views_keep_their_buffer_alive():
    """A reshape (a view) of a buffer outlives the buffer's value: nothing else may reuse
    the buffer while the view is read; a compute result that may be a view counts too."""
    x = mx.sym.var("x")
    a = x * 2
    view = mx.sym.Reshape(a, shape=(3, 2))
    b = mx.sym.exp(x) + 1                        # would reuse a's buffer without the view
    c = mx.sym.transpose(mx.sym.sqrt(mx.sym.abs(b)))  # compute: a transposed view
    out = view + mx.sym.Reshape(c, shape=(3, 2)) + mx.sym.Reshape(b, shape=(3, 2))
    graph = _sym_graph(mx.sym.Group([out, mx.sym.relu(c)]), x=(2, 3))
    values = {"x": np.random.RandomState(0).randn(2, 3).astype(np.float32)}
    _assert_same(_compile(graph)(values), evaluate(graph, values, np), "aliasing")


def test_elementwise_chains_run_in_place():
    x = mx.sym.var("x")
    y = x
    for _ in range(6):
        y = mx.sym.tanh(y * 1.5 + 0.5)
    exe = _compile(_sym_graph(mx.sym.sqrt(mx.sym.abs(y)), x=(64,)))
    assert exe.source.count("np.empty(") == 2  # one buffer for the chain, one for the output
    values = {"x": np.linspace(-1, 1, 64, dtype=np.float32)}
    graph = exe.graph
    _assert_same(exe(values), evaluate(graph, values, np), "chain")


def test_batchnorm_training_writes_the_passed_auxiliary_arrays():
    data, mean, var = mx.sym.var("data"), mx.sym.var("mean"), mx.sym.var("var")
    out = mx.sym.BatchNorm(data, mx.sym.var("gamma"), mx.sym.var("beta"), mean, var,
                           momentum=0.5)
    graph = _sym_graph(out, data=(4, 3), gamma=(3,), beta=(3,), mean=(3,), var=(3,))
    values = {"data": np.arange(12, dtype=np.float32).reshape(4, 3),
              "gamma": np.ones(3, np.float32), "beta": np.zeros(3, np.float32),
              "mean": np.zeros(3, np.float32), "var": np.ones(3, np.float32)}
    moving = values["mean"]
    _compile(graph, is_train=True)(values)
    assert values["mean"] is moving
    np.testing.assert_allclose(moving, [2.25, 2.75, 3.25])


# -- the source -------------------------------------------------------------------------------

GOLDEN = '''\
# hybridgpu cpu program, predict mode: 3 nodes (3 as NumPy calls with out=, 0 calling compute)
# 1 buffer (32 B) preallocated and reused; outputs are allocated fresh each call
# from the builder: np; bind(op, **attrs) = op.compute with np and attrs fixed;
#   owned(x, *others) = x, or a copy if it may share memory with others; op_<Name> = OpDefs

f32_0 = np.float32(0)

slot0 = np.empty(8, np.float32)  # 32 B, 2 values
fc1 = slot0.reshape((2, 4))
fc1_relu = fc1  # in place


def forward(inputs, rng):
    x = inputs['x']  # %0 : (2, 3) float32
    w = inputs['w']  # %1 : (4, 3) float32
    b = inputs['b']  # %2 : (4,) float32
    # %3 = FullyConnected(%0, %1, %2) num_hidden=4 : (2, 4) float32
    np.dot(x, w.T, out=fc1)
    np.add(fc1, b, out=fc1)
    # %4 = Activation(%3) act_type=relu : (2, 4) float32
    np.maximum(fc1, f32_0, out=fc1_relu)
    # %5 = sum(%4) axis=1 : (2,) float32
    total = np.empty((2,), np.float32)
    np.sum(fc1_relu, axis=(1,), dtype=np.float32, keepdims=False, out=total)
    return [total]
'''


def test_source_of_a_tiny_graph():
    """Pinned: node names become variable names, each node's line of ``print(graph)`` heads
    its lines, buffers are module-level and reused in place."""
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    h = mx.sym.Activation(mx.sym.FullyConnected(x, w, b, num_hidden=4, name="fc1"),
                          act_type="relu", name="fc1_relu")
    graph = _sym_graph(mx.sym.sum(h, axis=1, name="total"), x=(2, 3))
    assert _compile(graph).source == GOLDEN


def test_source_is_valid_python_with_safe_unique_names():
    x = mx.sym.var("in-put")  # not an identifier
    a = mx.sym.relu(x, name="class")             # a keyword
    b = mx.sym.exp(a, name="np")                 # the builder's name
    c = mx.sym.elemwise_add(a, b, name="class")  # a duplicate node name
    graph = _sym_graph(mx.sym.Group([c, mx.sym.sort(c, name="sorted")]), **{"in-put": (3,)})
    program = generate(graph)
    compile(program.source, "<test>", "exec")
    for line in str(graph).splitlines()[1:-1]:   # every op node's printed line
        assert f"# {line}" in program.source
    assert "class_1 = " in program.source and "np_1 = " in program.source
    assert program.fallback == ["sorted"]
    values = {"in-put": np.array([0.5, -1.0, 2.0], np.float32)}
    _assert_same(_compile(graph)(values), evaluate(graph, values, np), "names")


# -- errors, threads, Gluon -------------------------------------------------------------------

def test_errors_name_the_input_or_the_node():
    x, w = mx.sym.var("x"), mx.sym.var("w")
    graph = Graph(mx.sym.FullyConnected(x, w, num_hidden=2, no_bias=True, name="fc")._outputs)
    exe = _compile(graph)  # no shapes: every node calls compute
    with pytest.raises(MXNetError, match="no value for input 'w'"):
        exe({"x": np.ones((1, 3))})
    with pytest.raises(MXNetError, match=r"node %2 'fc'.*weight shape \(2, 4\)"):
        exe({"x": np.ones((1, 3)), "w": np.ones((2, 4))})


def test_concurrent_calls_do_not_share_buffers():
    net, x = _seed_mlp(2)
    graph, values = _model_graph(net, x)
    exe = _compile(graph)
    want = exe(values)[0]
    errors = []

    def run(scale):
        mine = dict(values, data=values["data"] * scale)
        expected = evaluate(graph, mine, np)[0]
        for _ in range(200):
            if not np.array_equal(exe(mine)[0], expected):
                errors.append(scale)
                return

    threads = [threading.Thread(target=run, args=(s,)) for s in (1.0, -1.0, 2.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and np.array_equal(exe(values)[0], want)
    assert exe.instances >= 1


def test_a_hybridized_block_replays_the_generated_program():
    net, x = _seed_mlp(3)
    want = net(mx.nd.array(x)).asnumpy()
    net.hybridize()
    first = net(mx.nd.array(x))
    assert isinstance(net._last_trace.executable, CpuExecutable)
    np.testing.assert_allclose(first.asnumpy(), want, rtol=1e-6, atol=1e-6)
    net(mx.nd.array(x * 2))
    np.testing.assert_allclose(first.asnumpy(), want, rtol=1e-6, atol=1e-6)


def test_no_in_place_write_into_an_input_read_through_a_view():
    """``u * 2 + view(u)`` fused, with ``view`` an op whose compute returns a transposed
    view: writing the product over ``u`` would corrupt what the group reads afterwards."""
    from hybridgpu.compiler.passes import fuse_elementwise
    from hybridgpu.ops.opdef import OpDef
    from hybridgpu.ops.rules import same_shape

    view = OpDef("_test_view", compute=lambda xp, x: x.T, infer_shape=same_shape)
    u = Node(ops.get("FullyConnected"), "u", ops.get("FullyConnected").parse_attrs(
        {"num_hidden": 3, "no_bias": True}), [Entry(Node.variable("x"), 0),
                                              Entry(Node.variable("w"), 0)])
    t = Node(view, "t", {}, [Entry(u, 0)])
    twice = Node(ops.get("_mul_scalar"), "twice", {"scalar": 2, "is_int": True}, [Entry(u, 0)])
    total = Node(ops.get("elemwise_add"), "total", {}, [Entry(twice, 0), Entry(t, 0)])
    graph = Graph([Entry(Node(ops.get("sum"), "s", ops.get("sum").parse_attrs({}),
                              [Entry(total, 0)]), 0)])
    infer_types(graph, {"x": "float32", "w": "float32"})
    infer_shapes(graph, {"x": (3, 3), "w": (3, 3)})
    fused = fuse_elementwise(graph)
    assert "_fused(%2, %3)" in str(fused)  # reads u and its transposed view
    values = {"x": np.arange(9, dtype=np.float32).reshape(3, 3) / 9,
              "w": np.eye(3, dtype=np.float32) + 1}
    _assert_same(_compile(fused)(values), evaluate(fused, values, np), "view of an input")
