"""The compiler passes and pipeline: each pass on hand-built graphs (golden printed graphs
before and after), the memory plan checked by simulation, the pipeline's bookkeeping and debug
verification, a differential hypothesis test (random graphs: reference interpreter on the
traced graph vs the compiled Executable vs imperative ``nd.*``), and replays of a compiled MLP
that grow no memory and never overwrite earlier outputs."""

from __future__ import annotations

import shutil
import subprocess
import tracemalloc
from typing import NamedTuple

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hybridgpu as mx
from hybridgpu import nd, ops, sym
from hybridgpu.base import MXNetError
from hybridgpu.compiler import compile_graph, passes, pipeline
from hybridgpu.compiler.passes import FusedOp, constant_value
from hybridgpu.compiler.passes.fuse_elementwise import Member
from hybridgpu.gluon import nn
from hybridgpu.graph import Entry, Graph, Node, evaluate, infer_shapes, infer_types

CPU = mx.cpu()
INTERPRET = {"executor": "interpreter", "debug": True}


def typed(out, shapes, dtype="float32"):
    """The Graph of Symbol ``out`` with shapes and dtypes inferred from the inputs'."""
    g = Graph(out._outputs)
    infer_types(g, {name: dtype for name in shapes})
    infer_shapes(g, shapes)
    return g


def lines(*rows):
    return "\n".join(rows)


def fused_nodes(graph):
    return [n for n in graph.nodes if isinstance(n.op, FusedOp)]


# -- dce ------------------------------------------------------------------------------------

def test_dce_skips_identities_but_keeps_one_that_is_an_output():
    x = sym.var("x")
    y = sym.relu(sym.identity(x))
    g = typed(sym.Group([sym.BlockGrad(y), sym.exp(sym.Cast(y, dtype="float32"))]),
              {"x": (2,)})
    before = str(g)
    assert str(passes.dce(g)) == lines(
        "%0 = var x : (2,) float32",
        "%1 = relu(%0) : (2,) float32",
        "%2 = BlockGrad(%1) : (2,) float32",
        "%3 = exp(%1) : (2,) float32",
        "return %2, %3")
    assert str(g) == before  # the input graph is untouched


def test_dce_keeps_a_cast_that_changes_the_dtype_and_copies_next_to_in_place_writes():
    x = sym.var("x")
    g = typed(sym.exp(sym.Cast(x, dtype="float64")), {"x": (2,)})
    assert "Cast" in str(passes.dce(g))
    mean = sym.var("m")
    out = sym.BatchNorm(x, sym.var("g"), sym.var("b"), mean, sym.var("v"), name="bn")
    g = typed(sym.Group([out, sym.identity(mean) * 1]), {"x": (2, 3)})
    kept = passes.dce(g)
    assert "_copy" in str(kept)  # BatchNorm writes m in training: the copy must stay


# -- fold -----------------------------------------------------------------------------------

def test_fold_computes_constant_subgraphs_once_and_leaves_random_ops():
    x = sym.var("x")
    g = typed(x * sym.exp(sym.zeros((2,)) + 1) + sym.random_uniform(shape=(2,)), {"x": (2,)})
    assert str(passes.fold(g)) == lines(
        "%0 = var x : (2,) float32",
        "%1 = _constant() value=[2.718282 2.718282] : (2,) float32",
        "%2 = elemwise_mul(%0, %1) : (2,) float32",
        "%3 = _random_uniform() shape=(2,) : (2,) float32",
        "%4 = elemwise_add(%2, %3) : (2,) float32",
        "return %4")


def test_constant_nodes_hold_arrays_the_interpreter_runs():
    x = sym.var("x")
    g = typed(x + sym.arange(0, 3) * 2, {"x": (3,)})
    folded = passes.fold(g)
    const = [n for n in folded.nodes if constant_value(n) is not None]
    assert len(const) == 1 and const[0].op.creation and not const[0].op.random
    np.testing.assert_array_equal(constant_value(const[0]), [0, 2, 4])
    out = evaluate(folded, {"x": np.ones(3, np.float32)}, np)[0]
    np.testing.assert_array_equal(out, [1, 3, 5])


def test_fold_keeps_big_values_and_values_written_in_place():
    x = sym.var("x")
    g = typed(x + sym.ones((4, 4)), {"x": (4, 4)})
    assert "_ones" in str(passes.fold(g, max_size=8))
    g = typed(sym.BatchNorm(x, sym.var("g"), sym.var("b"), sym.zeros((3,)), sym.ones((3,))),
              {"x": (2, 3)})
    printed = str(passes.fold(g))
    assert "_zeros" in printed and "_ones" in printed  # fresh each call: BatchNorm writes them


def test_constant_outputs_are_copied_so_callers_cannot_change_them():
    exe = compile_graph(typed(sym.ones((2,)) * 3, {}), CPU, False, INTERPRET)
    first = exe({})[0]
    first[:] = 0
    np.testing.assert_array_equal(exe({})[0], [3, 3])


# -- cse ------------------------------------------------------------------------------------

def test_cse_merges_duplicates_in_cascade():
    x = sym.var("x")
    a = sym.sigmoid(x) * sym.exp(x)
    g = typed(sym.Group([a, sym.exp(x) * sym.sigmoid(x) + (sym.sigmoid(x) * sym.exp(x))]),
              {"x": (2,)})
    assert str(passes.cse(g)) == lines(
        "%0 = var x : (2,) float32",
        "%1 = sigmoid(%0) : (2,) float32",
        "%2 = exp(%0) : (2,) float32",
        "%3 = elemwise_mul(%1, %2) : (2,) float32",
        "%4 = elemwise_mul(%2, %1) : (2,) float32",
        "%5 = elemwise_add(%4, %3) : (2,) float32",
        "return %3, %5")


def test_cse_never_merges_random_or_mode_dependent_ops():
    x = sym.var("x")
    g = typed(sym.Dropout(x, p=0.5) + sym.Dropout(x, p=0.5)
              + sym.random_uniform(shape=(2,)) + sym.random_uniform(shape=(2,)), {"x": (2,)})
    merged = passes.cse(g)
    assert str(merged).count("Dropout") == 2 and str(merged).count("_random_uniform") == 2


def test_cse_merges_equal_constants():
    x = sym.var("x")
    g = passes.fold(typed(x * sym.ones((2,)) + x * sym.ones((2,)), {"x": (2,)}))
    assert len(passes.cse(g)) == 4  # x, one constant, one product, the sum


# -- decompose ------------------------------------------------------------------------------

def test_inference_batchnorm_becomes_scale_and_shift_and_fuses():
    x = sym.var("x")
    g = typed(sym.relu(sym.BatchNorm(x, fix_gamma=False, eps=1e-5, name="bn")), {"x": (2, 3, 4)})
    out = passes.fuse_elementwise(passes.decompose(g))
    assert str(out) == lines(
        "%0 = var x : (2, 3, 4) float32",
        "%1 = var bn_moving_mean : (3,) float32",
        "%2 = Reshape(%1) shape=(1, 3, 1) : (1, 3, 1) float32",
        "%3 = var bn_moving_var : (3,) float32",
        "%4 = var bn_gamma : (3,) float32",
        "%5 = _fused(%3, %4) members=[t0 = _plus_scalar(in0, scalar=1e-05, is_int=False); "
        "t1 = rsqrt(t0); t2 = broadcast_mul(in1, t1)] : (3,) float32",
        "%6 = Reshape(%5) shape=(1, 3, 1) : (1, 3, 1) float32",
        "%7 = var bn_beta : (3,) float32",
        "%8 = Reshape(%7) shape=(1, 3, 1) : (1, 3, 1) float32",
        "%9 = _fused(%0, %2, %6, %8) members=[t0 = broadcast_sub(in0, in1); "
        "t1 = broadcast_mul(t0, in2); t2 = broadcast_add(t1, in3); t3 = relu(t2)] "
        ": (2, 3, 4) float32",
        "return %9")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fix_gamma", [True, False])
def test_decomposed_batchnorm_matches_the_op_bit_for_bit(dtype, fix_gamma):
    rng = np.random.default_rng(0)
    x = sym.var("x")
    g = typed(sym.BatchNorm(x, fix_gamma=fix_gamma, axis=-1, name="bn"), {"x": (4, 2, 5)}, dtype)
    arrays = {"x": rng.normal(size=(4, 2, 5)), "bn_gamma": rng.normal(size=5),
              "bn_beta": rng.normal(size=5), "bn_moving_mean": rng.normal(size=5),
              "bn_moving_var": rng.uniform(0.5, 2, size=5)}
    arrays = {k: v.astype(dtype) for k, v in arrays.items()}
    want = evaluate(g, arrays, np)[0]
    got = evaluate(passes.decompose(g), arrays, np)[0]
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fix_gamma", [True, False])
def test_float16_batchnorm_with_float32_statistics_decomposes_bit_for_bit(fix_gamma):
    """``net.cast('float16')`` keeps BatchNorm's parameters float32: the pieces run in float32
    between two Casts, as the op computes, instead of the op staying whole (eager on gpu)."""
    rng = np.random.default_rng(1)
    x = sym.var("x")
    g = Graph(sym.BatchNorm(x, fix_gamma=fix_gamma, name="bn")._outputs)
    params = ("bn_gamma", "bn_beta", "bn_moving_mean", "bn_moving_var")
    infer_types(g, {"x": "float16", **dict.fromkeys(params, "float32")})
    infer_shapes(g, {"x": (2, 3, 4)})
    arrays = {"x": rng.normal(size=(2, 3, 4)).astype(np.float16),
              "bn_gamma": rng.normal(size=3), "bn_beta": rng.normal(size=3),
              "bn_moving_mean": rng.normal(size=3), "bn_moving_var": rng.uniform(0.5, 2, 3)}
    arrays = {k: v if k == "x" else v.astype(np.float32) for k, v in arrays.items()}
    split = passes.decompose(g)
    assert "BatchNorm" not in str(split) and str(split).count("Cast") == 2
    got, want = evaluate(split, arrays, np)[0], evaluate(g, arrays, np)[0]
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_training_batchnorm_stays_unless_it_uses_global_stats():
    x = sym.var("x")
    g = typed(sym.BatchNorm(x, name="bn"), {"x": (2, 3)})
    assert passes.decompose(g, is_train=True) is g
    g = typed(sym.BatchNorm(x, use_global_stats=True, name="bn"), {"x": (2, 3)})
    assert "BatchNorm" not in str(passes.decompose(g, is_train=True))
    g = typed(sym.BatchNorm(x, output_mean_var=True, name="bn")[1], {"x": (2, 3)})
    assert passes.decompose(g) is g  # its mean output is read


def test_gemm_bias_and_activation_become_one_fused_epilogue():
    x = sym.var("x")
    g = typed(sym.Activation(sym.FullyConnected(x, num_hidden=2, name="fc"), act_type="relu"),
              {"x": (1, 3)})
    assert str(passes.fuse_elementwise(passes.decompose(g))) == lines(
        "%0 = var x : (1, 3) float32",
        "%1 = var fc_weight : (2, 3) float32",
        "%2 = FullyConnected(%0, %1) num_hidden=2 no_bias=True : (1, 2) float32",
        "%3 = var fc_bias : (2,) float32",
        "%4 = _fused(%2, %3) members=[t0 = broadcast_add(in0, in1); "
        "t1 = Activation(t0, act_type=relu)] : (1, 2) float32",
        "return %4")


def test_convolution_bias_is_added_along_the_channels():
    x = sym.var("x")
    conv = sym.Convolution(x, kernel=(1, 1), num_filter=2, name="c")
    g = typed(sym.relu(conv), {"x": (1, 3, 2, 2)})
    out = passes.decompose(g)
    assert "Reshape(%3) shape=(2, 1, 1)" in str(out)
    rng = np.random.default_rng(1)
    arrays = {"x": rng.normal(size=(1, 3, 2, 2)), "c_weight": rng.normal(size=(2, 3, 1, 1)),
              "c_bias": rng.normal(size=2)}
    arrays = {k: v.astype(np.float32) for k, v in arrays.items()}
    np.testing.assert_array_equal(evaluate(out, arrays, np)[0], evaluate(g, arrays, np)[0])


def test_a_gemm_whose_output_is_not_read_by_an_elementwise_op_keeps_its_bias():
    x = sym.var("x")
    g = typed(sym.FullyConnected(x, num_hidden=2, name="fc"), {"x": (1, 3)})
    assert passes.decompose(g) is g


# -- fuse_elementwise -----------------------------------------------------------------------

def test_fusion_never_makes_a_group_a_path_leaves_and_reenters():
    x = sym.var("x")
    a = sym.exp(x, name="a")
    b = sym.FullyConnected(a, num_hidden=3, no_bias=True, name="fc")
    d = sym.elemwise_add(a, sym.relu(b, name="c"), name="d")
    g = typed(d, {"x": (2, 3)})
    assert str(passes.fuse_elementwise(g)) == lines(
        "%0 = var x : (2, 3) float32",
        "%1 = exp(%0) : (2, 3) float32",
        "%2 = var fc_weight : (3, 3) float32",
        "%3 = FullyConnected(%1, %2) num_hidden=3 no_bias=True : (2, 3) float32",
        "%4 = _fused(%3, %1) members=[t0 = relu(in0); t1 = elemwise_add(in1, t0)] "
        ": (2, 3) float32",
        "return %4")


def test_a_value_read_outside_its_group_is_an_output_of_the_fused_node():
    x = sym.var("x")
    a = sym.exp(x)
    g = typed(sym.Group([sym.relu(a) * 2, sym.sum(a)]), {"x": (2, 3)})
    fused = passes.fuse_elementwise(g)
    (node,) = fused_nodes(fused)
    assert node.num_outputs == 2 and node.op.outputs == (0, 2)
    assert node.op.cuda is None  # two outputs: statements only
    assert node.op.cuda_body.splitlines()[-2:] == ["out0 = t0;", "out1 = t2;"]
    arrays = {"x": np.random.default_rng(2).normal(size=(2, 3)).astype(np.float32)}
    for got, want in zip(evaluate(fused, arrays, np), evaluate(g, arrays, np)):
        np.testing.assert_array_equal(got, want)


def test_groups_have_one_shape_and_one_dtype():
    x, y = sym.var("x"), sym.var("y")
    g = typed(sym.broadcast_add(sym.exp(x), y), {"x": (3, 1), "y": (1, 4)})
    assert passes.fuse_elementwise(g) is g  # (3, 1) then (3, 4): nothing to fuse
    g = typed(sym.exp(sym.Cast(sym.relu(x), dtype="float64")), {"x": (2,)})
    assert passes.fuse_elementwise(g) is g  # the Cast changes the dtype


def test_random_and_mode_dependent_ops_are_not_fused():
    x = sym.var("x")
    g = typed(sym.relu(sym.Dropout(sym.exp(x), p=0.5)), {"x": (2,)})
    assert passes.fuse_elementwise(g) is g


def test_the_fused_cuda_expression_composes_the_members():
    x = sym.var("x")
    g = typed(sym.clip(sym.LeakyReLU(x, act_type="leaky", slope=0.25) * 2, 0, 1) + 1,
              {"x": (2,)})
    fused = passes.fuse_elementwise(g)
    ops_ = [m.op.name for n in fused_nodes(fused) for m in n.op.members]
    assert ops_ == ["_mul_scalar", "clip", "_plus_scalar"]  # LeakyReLU is mode-dependent
    (node,) = fused_nodes(fused)
    assert node.op.cuda == ("(((in0 * ((T)(2))) > (T)(1.0) ? (T)(1.0) : ((in0 * ((T)(2))) < "
                            "(T)(0.0) ? (T)(0.0) : (in0 * ((T)(2)))))) + ((T)(1))")


def test_a_failing_member_is_named():
    add = ops.get("broadcast_add")
    op = FusedOp([Member(add, {}, (("in", 0), ("in", 1)), "plus7", {})], [0])
    with pytest.raises(MXNetError, match="fused member 'plus7' .broadcast_add."):
        op.compute(np, np.ones(2), np.ones(3))


def _kernel(k, op, attrs, count):
    """A CUDA kernel computing relu(op(inputs)) both ways: the composed expression into o0, the
    statements (two outputs) into o1, o2."""
    relu = ops.get("relu")
    members = [Member(op, attrs, tuple(("in", j) for j in range(count)), "a", {}),
               Member(relu, {}, (("t", 0),), "b", {})]
    one, two = FusedOp(members, [1]), FusedOp(members, [0, 1])
    args = "".join(f"const float* a{j}, " for j in range(count))
    loads = " ".join(f"T in{j} = a{j}[i];" for j in range(count))
    body = "\n  ".join(two.cuda_body.splitlines())
    return (f'extern "C" __global__ void k{k}({args}float* o0, float* o1, float* o2) {{\n'
            f"  typedef float T; int i = threadIdx.x; {loads} T out0, out1;\n"
            f"  o0[i] = {one.cuda};\n  {body}\n  o1[i] = out0; o2[i] = out1;\n}}")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc (the CUDA toolkit)")
def test_fused_cuda_of_every_elementwise_op_compiles_with_nvcc(tmp_path):
    kernels = []
    for op in ops.all_ops():
        if not op.elementwise or op.cuda is None:
            continue
        for key in (list(op.cuda) if isinstance(op.cuda, dict) else [None]):
            given = {op.cuda_key: key} if key else {}
            given.update({k: v for k, v in {"scalar": 1.5, "a_min": float("-inf"),
                                             "a_max": 3.0, "dtype": "float32"}.items()
                          if k in op.attrs})
            attrs = op.parse_attrs(given, num_inputs=len(op.inputs))
            kernels.append(_kernel(len(kernels), op, attrs, len(op.input_names(attrs))))
    source = tmp_path / "fused.cu"
    source.write_text("\n".join(kernels))
    done = subprocess.run(["nvcc", "-c", "-o", str(tmp_path / "fused.o"), str(source),
                           "-diag-suppress", "550,177"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert len(kernels) > 100


# -- plan_memory ----------------------------------------------------------------------------

def assert_plan_sound(graph, plan):
    """An independent simulation: no buffer holds two live values, except a value written
    over an input that dies at its node (in place); inputs and outputs are never planned."""
    last = {}
    for i, node in enumerate(graph.nodes):
        for e in node.inputs:
            last[graph.key(e)] = i
    outputs = {graph.key(e) for e in graph.outputs}
    by_buffer = {}
    for key, buf in plan.storage.items():
        assert not graph.nodes[key[0]].is_variable and key not in outputs
        by_buffer.setdefault(buf, []).append((key[0], last.get(key, key[0]), key))
    for values in by_buffer.values():
        values.sort()
        for (_, end, key), (start, _, nxt) in zip(values, values[1:]):
            assert start > end or (start == end and plan.inplace.get(nxt) == key), (key, nxt)
    for key in plan.pinned & set(plan.storage):
        assert len(by_buffer[plan.storage[key]]) == 1
    assert plan.fresh == {k for k in outputs if not graph.nodes[k[0]].is_variable
                          and constant_value(graph.nodes[k[0]]) is None}


def seed_mlp(batch=1):
    """The hybridize seed's network (Dense 256 relu, Dense 128 relu, Dense 2), traced."""
    net = nn.HybridSequential()
    net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    net.initialize()
    net.hybridize()
    x = nd.random.normal(shape=(batch, 512))
    net(x)
    trace = net._last_trace
    values = {name: p.data(CPU)._data for name, p in trace.params}
    return net, trace.graph, values, x


def test_memory_plan_of_the_seed_mlp_reuses_buffers():
    _, graph, _, _ = seed_mlp(batch=64)
    exe = compile_graph(graph, CPU, False, INTERPRET)
    plan = exe.plan
    assert_plan_sound(exe.graph, plan)
    assert plan.planned_bytes < 0.8 * plan.naive_bytes
    assert plan.fresh == {exe.graph.key(exe.graph.outputs[0])}


def test_memory_plan_of_resnet18_saves_most_bytes_and_stays_correct():
    from hybridgpu.gluon.model_zoo import vision

    net = vision.resnet18_v1()
    net.initialize()
    net.hybridize()
    x = nd.random.uniform(shape=(1, 3, 32, 32))
    net(x)
    trace = net._last_trace
    snapshot = [(n, list(n.inputs), dict(n.attrs)) for n in trace.graph.nodes]
    printed = str(trace.graph)
    exe = compile_graph(trace.graph, CPU, False, INTERPRET)
    assert "BatchNorm" not in str(exe.graph) and len(fused_nodes(exe.graph)) >= 20
    assert str(trace.graph) == printed  # the traced graph and its nodes are untouched
    assert all(n.inputs == ins and n.attrs == attrs for n, ins, attrs in snapshot)
    assert_plan_sound(exe.graph, exe.plan)
    assert exe.plan.planned_bytes < 0.5 * exe.plan.naive_bytes
    values = {name: p.data(CPU)._data for name, p in trace.params}
    values["data"] = x._data
    np.testing.assert_allclose(exe(values)[0], evaluate(trace.graph, values, np)[0],
                               rtol=1e-5, atol=1e-6)


def test_values_written_in_place_get_a_buffer_of_their_own():
    x = sym.var("x")
    mean = sym.zeros((3,)) + 0
    g = typed(sym.relu(sym.BatchNorm(sym.exp(x), sym.var("g"), sym.var("b"), mean,
                                     sym.ones((3,)) * 1)), {"x": (2, 3)})
    plan = passes.plan_memory(g)
    assert plan.pinned and plan.pinned <= set(plan.storage)
    assert_plan_sound(g, plan)
    plan.check()


def test_outputs_that_are_inputs_or_repeated_are_copied():
    x = sym.var("x")
    y = sym.relu(x)
    g = typed(sym.Group([x, y, y]), {"x": (2,)})
    assert passes.plan_memory(g).output_copies == [0, 2]
    exe = compile_graph(g, CPU, False, INTERPRET)
    arr = np.array([-1.0, 1.0], np.float32)
    a, b, c = exe({"x": arr})
    assert a is not arr and b is not c
    np.testing.assert_array_equal(b, c)


# -- pipeline -------------------------------------------------------------------------------

def test_pipeline_records_its_passes_and_prints_the_optimized_graph():
    x = sym.var("x")
    exe = compile_graph(typed(sym.relu(x + 1) * 2, {"x": (2,)}), CPU, False, INTERPRET)
    assert exe.passes == ["infer_shape", "infer_type", "dce", "fold", "cse", "decompose",
                          "fuse_elementwise", "plan_memory"]
    assert set(exe.pass_stats) == set(exe.passes)
    assert str(exe.graph) == lines(
        "%0 = var x : (2,) float32",
        "%1 = _fused(%0) members=[t0 = _plus_scalar(in0, scalar=1); t1 = relu(t0); "
        "t2 = _mul_scalar(t1, scalar=2)] : (2,) float32",
        "return %1")
    bare = compile_graph(typed(sym.relu(x + 1) * 2, {"x": (2,)}), CPU, False,
                         {"passes": (), "executor": "interpreter"})
    assert bare.passes == ["plan_memory"] and "_fused" not in str(bare.graph)


def test_debug_mode_verifies_after_each_pass_and_names_the_pass(monkeypatch):
    def broken(graph, ctx, is_train):
        bad = Node(ops.get("elemwise_add"), "bad", {}, [graph.outputs[0]])
        return Graph([Entry(bad, 0)])

    monkeypatch.setitem(pipeline._STEPS, "cse", broken)
    x = sym.var("x")
    g = typed(sym.relu(x), {"x": (2,)})
    with pytest.raises(MXNetError, match="after compiler pass 'cse'.*takes 2 inputs"):
        compile_graph(g, CPU, False, {"debug": True})
    monkeypatch.setenv("HYBRIDGPU_DEBUG", "1")
    assert pipeline.debug_enabled() and not pipeline.debug_enabled({"debug": False})
    with pytest.raises(MXNetError, match="unknown compiler pass 'nope'"):
        compile_graph(g, CPU, False, {"passes": ("nope",)})


def test_graphs_without_shapes_compile_and_run():
    x = sym.var("x")
    g = Graph((sym.relu(x) * 2)._outputs)  # nothing inferred: passes that need types skip
    exe = compile_graph(g, CPU, False, INTERPRET)
    np.testing.assert_array_equal(exe({"x": np.array([-1.0, 2.0])})[0], [0, 4])


def test_hybridized_training_updates_batchnorm_statistics_like_imperative():
    def make():
        mx.random.seed(3)
        net = nn.HybridSequential()
        net.add(nn.Dense(4, in_units=3), nn.BatchNorm(in_channels=4), nn.Activation("relu"))
        net.initialize()
        return net

    x = nd.random.normal(shape=(5, 3))
    results = []
    for hybrid in (False, True):
        net = make()
        if hybrid:
            net.hybridize()
        with mx.autograd.train_mode():
            out = net(x)
        stats = [p.data().asnumpy() for k, p in net.collect_params().items() if "running" in k]
        results.append((out.asnumpy(), stats, net(x).asnumpy()))
    (a, sa, ia), (b, sb, ib) = results
    np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for u, v in zip(sa, sb):
        np.testing.assert_allclose(v, u, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(ib, ia, rtol=1e-5, atol=1e-6)


# -- differential: random graphs ------------------------------------------------------------

UNARY = ("relu", "tanh", "sigmoid", "abs", "negative", "square", "sin", "exp", "identity",
         "BlockGrad")
BINARY = ("broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum",
          "broadcast_minimum")
REDUCE = ("sum", "mean", "max")
KINDS = ("unary", "unary", "binary", "binary", "scalar", "reduce", "shape", "const", "repeat")


class Program(NamedTuple):
    dtype: str
    inputs: list
    steps: list
    outputs: list


def _reduced(shape, axis, keepdims):
    op = ops.get("sum")
    return op.infer_shape(op.parse_attrs({"axis": axis, "keepdims": keepdims}), [shape])[1][0]


def _step(draw, kind, shapes, steps):
    """One step (a tuple the runner reads) and its output shape."""
    pick = st.integers(0, len(shapes) - 1)
    if kind == "unary":
        a = draw(pick)
        return ("unary", draw(st.sampled_from(UNARY)), a), shapes[a]
    if kind == "binary":
        a = draw(pick)
        ok = [b for b, s in enumerate(shapes) if _broadcasts(shapes[a], s)]
        b = draw(st.sampled_from(ok))
        return ("binary", draw(st.sampled_from(BINARY)), a, b), np.broadcast_shapes(
            shapes[a], shapes[b])
    if kind == "scalar":
        a = draw(pick)
        return ("scalar", draw(st.sampled_from("+-*r")), a,
                draw(st.sampled_from([0.5, 2.0, -1.5]))), shapes[a]
    if kind == "reduce":
        a = draw(pick)
        axis = draw(st.integers(0, len(shapes[a]) - 1))
        keep = draw(st.booleans())
        return ("reduce", draw(st.sampled_from(REDUCE)), a, axis, keep), _reduced(
            shapes[a], axis, keep)
    if kind == "shape":
        a = draw(pick)
        how = draw(st.sampled_from(["transpose", "expand_dims", "flatten"]))
        s = shapes[a]
        out = {"transpose": s[::-1], "expand_dims": (1, *s),
               "flatten": (int(np.prod(s)),)}[how]
        return ("shape", how, a), tuple(out)
    if kind == "const":
        s = shapes[draw(pick)]
        return ("const", draw(st.sampled_from([1.0, 0.25, -2.0])), s), s
    k = draw(st.integers(0, len(steps) - 1)) if steps else None
    if k is None:
        return _step(draw, "unary", shapes, steps)
    return steps[k][0], steps[k][1]


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


@st.composite
def programs(draw):
    dtype = draw(st.sampled_from(["float32", "float64"]))
    rank = draw(st.integers(1, 3))
    base = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    inputs = []
    for _ in range(draw(st.integers(1, 3))):
        skip = draw(st.integers(0, rank - 1))
        ones = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
        inputs.append(tuple(1 if o else d for d, o in zip(base, ones))[skip:])
    shapes, steps = list(inputs), []
    for _ in range(draw(st.integers(1, 8))):
        step, shape = _step(draw, draw(st.sampled_from(KINDS)), shapes, steps)
        steps.append((step, tuple(shape)))
        shapes.append(tuple(shape))
    extra = draw(st.lists(st.integers(0, len(shapes) - 1), max_size=2))
    return Program(dtype, inputs, [s for s, _ in steps], sorted({len(shapes) - 1, *extra}))


def _apply(F, step, values, dtype):
    kind, name = step[0], step[1]
    if kind == "unary":
        return getattr(F, name)(values[step[2]])
    if kind == "binary":
        return getattr(F, name)(values[step[2]], values[step[3]])
    if kind == "scalar":
        a, c = values[step[2]], step[3]
        return {"+": lambda: a + c, "-": lambda: a - c, "*": lambda: a * c,
                "r": lambda: c - a}[name]()
    if kind == "reduce":
        return getattr(F, name)(values[step[2]], axis=step[3], keepdims=step[4])
    if kind == "shape":
        a = values[step[2]]
        if name == "transpose":
            return F.transpose(a)
        return F.expand_dims(a, axis=0) if name == "expand_dims" else F.reshape(a, (-1,))
    return F.full(step[2], name, dtype=dtype)  # const: name is the fill value


def _run(program, F, inputs):
    values = list(inputs)
    for step in program.steps:
        values.append(_apply(F, step, values, program.dtype))
    return [values[k] for k in program.outputs]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs(), st.integers(0, 2**31 - 1))
def test_compiled_graphs_match_the_interpreter_and_imperative_execution(program, seed):
    rng = np.random.default_rng(seed)
    names = [f"x{k}" for k in range(len(program.inputs))]
    arrays = {n: rng.uniform(-2, 2, size=s).astype(program.dtype)
              for n, s in zip(names, program.inputs)}
    graph = typed(sym.Group(_run(program, sym, [sym.var(n) for n in names])),
                  dict(zip(names, program.inputs)), program.dtype)
    with np.errstate(all="ignore"):
        want = evaluate(graph, {k: v.copy() for k, v in arrays.items()}, np)
        exe = compile_graph(graph, CPU, False, {"debug": True})
        got = exe(dict(arrays))
        again = exe(dict(arrays))
        eager = _run(program, nd, [nd.array(arrays[n], dtype=program.dtype) for n in names])
    assert_plan_sound(exe.graph, exe.plan)
    for w, g, a, e in zip(want, got, again, eager):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(a, w, rtol=1e-5, atol=1e-6, equal_nan=True)
        np.testing.assert_allclose(e.asnumpy(), w, rtol=1e-5, atol=1e-6, equal_nan=True)


# -- replays --------------------------------------------------------------------------------

def test_ten_thousand_replays_grow_no_memory_and_never_change_earlier_outputs():
    _, graph, values, x = seed_mlp()
    exe = compile_graph(graph, CPU, False)
    values = dict(values, data=x._data)
    first = exe(values)[0]
    kept = first.copy()
    other = dict(values, data=np.ones_like(x._data))
    for _ in range(100):
        exe(other)
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(10_000):
            out = exe(other)
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024, f"{grown} bytes grew over 10,000 replays"
    np.testing.assert_array_equal(first, kept)
    assert not np.array_equal(out[0], first)


def test_hybridized_seed_mlp_outputs_survive_later_calls():
    net, _, _, x = seed_mlp()
    a = net(x)
    kept = a.asnumpy().copy()
    for _ in range(3):
        net(nd.ones((1, 512)))
    np.testing.assert_array_equal(a.asnumpy(), kept)


def test_fused_groups_are_capped():
    from hybridgpu.compiler.passes.fuse_elementwise import MAX_GROUP_MEMBERS

    x = mx.sym.var("x")
    y = x
    for _ in range(2 * MAX_GROUP_MEMBERS + 10):
        y = mx.sym.relu(y) * 1.0
    g = Graph(y._outputs)
    infer_shapes(g, {"x": (4,)})
    infer_types(g, {"x": "float32"})
    fused = passes.fuse_elementwise(g)
    sizes = [len(n.op.members) for n in fused.nodes if isinstance(n.op, FusedOp)]
    assert max(sizes) == MAX_GROUP_MEMBERS and len(sizes) == 5  # 2*(2*64+10) = 276 nodes
    got = compile_graph(g, mx.cpu(), is_train=False)({"x": np.array([-1, 2, 3, -4], "f4")})
    np.testing.assert_array_equal(got[0], [0, 2, 3, 0])
