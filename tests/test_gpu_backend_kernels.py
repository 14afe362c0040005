"""The GPU backend's text, without a GPU: generated kernels, the program as data, safety of the
generated source against hostile names, and (when NVRTC is installed) that every generated
kernel compiles for sm_90 without register spills."""

from __future__ import annotations

import os

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.compiler import compile_graph
from hybridgpu.compiler.codegen.cuda import CudaSource, ident, numbered, safe_comment
from hybridgpu.compiler.codegen.cuda.elementwise import ElementwiseSpec, coalesce, generate
from hybridgpu.compiler.passes import plan_memory
from hybridgpu.compiler.passes.cuda_expr import c_literal
from hybridgpu.executor.gpu import Copy, Eager, Gemm, Launch, lower
from hybridgpu.executor.gpu.policy import GpuMemoryPolicy
from hybridgpu.executor.gpu.runtime import GpuExecutable
from hybridgpu.gluon import nn
from hybridgpu.graph import Graph, infer_shapes, infer_types


def optimized(outputs, shapes, dtype="float32", is_train=False, dtypes=None):
    """The graph the gpu backend receives: the (shared) passes run through the cpu pipeline,
    which needs no device. ``dtypes`` overrides ``dtype`` for some variables."""
    g = Graph(outputs._outputs if hasattr(outputs, "_outputs") else outputs)
    infer_types(g, {**{n: dtype for n in shapes}, **(dtypes or {})})
    infer_shapes(g, shapes)
    return compile_graph(g, mx.cpu(), is_train, {"executor": "interpreter"}).graph


def program_of(graph, staged=("data",), is_train=False):
    return lower(graph, plan_memory(graph, policy=GpuMemoryPolicy()), staged, is_train)


def seed_mlp_graph(batch=1, features=20):
    net = nn.HybridSequential(prefix="mlp_")
    with net.name_scope():
        net.add(nn.Dense(256, activation="relu"), nn.Dense(128, activation="relu"), nn.Dense(2))
    net.initialize()
    net(mx.nd.zeros((batch, features)))
    return optimized(net(mx.sym.var("data")), {"data": (batch, features)})


# -- the source builder -----------------------------------------------------------------------

def test_ident_accepts_only_the_fixed_alphabet():
    assert ident("k", 12, "fused") == "k12_fused"
    assert ident("k", 3) == "k3"
    for bad in ("a b", "x;", "*/", "", "é", "k-1"):
        with pytest.raises(ValueError, match="unsafe CUDA identifier"):
            ident("k", bad)
    with pytest.raises(ValueError):
        ident(3, "k")  # must start with a letter


def test_safe_comment_is_one_printable_line_without_delimiters():
    text = safe_comment("a*/b\n#include <evil>\x00/* c // d" + "x" * 500)
    assert "\n" not in text and "*/" not in text and "/*" not in text and "//" not in text
    assert all(" " <= c <= "~" for c in text) and len(text) <= 120


def test_builder_indents_blocks_and_refuses_multiline_lines():
    src = CudaSource()
    with src.block("void f()"), src.block("if (1)"):
        src.line("x = 1;")
    assert src.text() == "void f() {\n  if (1) {\n    x = 1;\n  }\n}\n"
    with pytest.raises(ValueError):
        src.line("a;\nb;")
    assert numbered("a\nb").splitlines() == ["1 | a", "2 | b"]


def test_hostile_names_never_reach_the_cuda_source():
    evil = 'x*/ #include "/etc/passwd" /*'
    x = mx.sym.var(evil)
    y = mx.sym.relu(mx.sym.exp(x, name="e*/ system(1); /*"), name="r\nasm(trap)")
    prog = program_of(optimized(y, {evil: (4, 4)}), staged=(evil,))
    assert prog.kernels
    for fragment in ("passwd", "system", "asm", "#include \"", "e*/"):
        assert fragment not in prog.source
    assert "#include" not in prog.source  # float32 only: no header needed
    half = program_of(optimized(mx.sym.exp(x), {evil: (4,)}, "float16"), staged=(evil,))
    assert half.source.startswith("#include <cuda_fp16.h>\n")


# -- elementwise kernels ------------------------------------------------------------------------

def test_coalesce_merges_contiguous_and_broadcast_runs():
    assert coalesce((2, 3, 4, 5), [(2, 3, 4, 5)]) == ([120], [[1]])
    assert coalesce((8, 16), [(8, 16), (16,)]) == ([8, 16], [[16, 1], [0, 1]])
    assert coalesce((2, 3, 4, 5), [(1, 3, 1, 1)]) == ([2, 3, 20], [[0, 1, 0]])
    assert coalesce((4, 1, 5), [(4, 1, 5), (1,)]) == ([20], [[1], [0]])


def test_vector_path_only_when_sizes_allow():
    def vec(shape, inputs, dtype="float32"):
        return generate(ElementwiseSpec(shape, dtype, [(s, dtype) for s in inputs], [dtype],
                                        "out0 = in0;"), "k0").vector

    assert vec((8, 16), [(8, 16), (16,)])
    assert vec((2, 8, 4, 4), [(1, 8, 1, 1)])          # per-channel: one value per 4 lanes
    assert not vec((5, 7), [(5, 7)])                  # 35 elements
    assert not vec((4, 6), [(4, 1)])                  # inner broadcast of 6: not a multiple of 4
    assert not vec((8, 16), [(8, 16)], "float64")


def test_float16_computes_in_float32():
    k = generate(ElementwiseSpec((6,), "float16", [((6,), "float16")], ["float16"],
                                 "T t0 = exp(in0);\nout0 = t0;"), "k1_ew")
    assert "__half2float(i0[i])" in k.source and "__float2half_rn(r0)" in k.source
    assert "typedef float T;" in k.source and k.params == ("__half*", "const __half*", "int")


def test_infinite_and_nan_literals_use_bit_patterns():
    assert c_literal(float("-inf")) == "-__int_as_float(0x7f800000)"
    assert "NAN" not in c_literal(float("nan"))
    g = optimized(mx.sym.clip(mx.sym.var("data"), a_min=float("-inf"), a_max=1.0),
                  {"data": (4,)})
    assert "INFINITY" not in program_of(g).source


def test_identical_groups_share_one_kernel():
    x = mx.sym.var("data")
    y = mx.sym.relu(x + 1) * 3
    z = mx.sym.relu(mx.sym.sort(y) + 1) * 3
    prog = program_of(optimized(z, {"data": (16,)}))
    launches = [s for s in prog.steps if isinstance(s, Launch)]
    assert len(launches) == 2 and len(prog.kernels) == 1
    assert launches[0].kernel == launches[1].kernel == prog.kernels[0].name


# -- the program as data --------------------------------------------------------------------------

def test_seed_mlp_at_batch_1_is_three_gemv_kernels_with_their_epilogues():
    prog = program_of(seed_mlp_graph(batch=1))
    assert [type(s).__name__ for s in prog.steps] == ["Launch"] * 3
    assert all(s.kernel.endswith("gemv") for s in prog.steps)
    assert prog.workspace is None and prog.segments() == [("graph", [0, 1, 2])]
    first = prog.kernels[0].source
    assert "__shfl_xor_sync" in first and "(t0 > (T)0 ? t0 : (T)0)" in first  # bias + relu
    assert "out0 = in0 + in1;" in prog.kernels[2].source  # the last layer: its bias alone


def test_seed_mlp_at_larger_batch_is_gemms_and_fused_epilogues():
    prog = program_of(seed_mlp_graph(batch=16))
    kinds = [type(s).__name__ for s in prog.steps]
    assert kinds.count("Gemm") == 3 and "Eager" not in kinds
    assert prog.segments() == [("graph", list(range(len(prog.steps))))]
    gemm = next(s for s in prog.steps if isinstance(s, Gemm))
    # data (16, 20) x weight (256, 20)^T, column-major: m=256, n=16, k=20, weight transposed
    assert (gemm.m, gemm.n, gemm.k, gemm.transa, gemm.transb) == (256, 16, 20, 1, 0)
    assert prog.workspace is not None and prog.workspace + (4 << 20) <= prog.arena_bytes
    text = str(prog)
    assert text.startswith("gpu program: ") and "gemm    float32 TN m=256 n=16 k=20" in text
    assert "in      data -> arena[" in text


def test_in_place_kernels_drop_restrict():
    prog = program_of(seed_mlp_graph(batch=16))
    launch = next(s for s in prog.steps if isinstance(s, Launch))
    assert launch.args[0].ref == launch.args[1].ref  # bias + relu over the GEMM's result
    kernel = next(k for k in prog.kernels if k.name == launch.kernel)
    assert "__restrict__" not in kernel.source


def test_arena_regions_are_aligned_and_disjoint():
    prog = program_of(seed_mlp_graph(batch=3))
    regions = []
    for step in prog.steps:
        for a in getattr(step, "args", ()):
            if hasattr(a, "ref") and a.ref.kind == "arena":
                regions.append((a.ref.offset, a.count * np.dtype(a.dtype).itemsize))
    for offset, nbytes in regions:
        assert offset % 256 == 0 and offset + nbytes <= prog.arena_bytes
    out_ref = prog.outputs[0][0]
    staged = prog.inputs["data"][0]
    assert out_ref.kind == "arena" and out_ref.offset != staged


def test_ops_without_kernels_split_segments():
    x = mx.sym.var("data")
    y = mx.sym.exp(mx.sym.sort(mx.sym.relu(x) + 1))
    prog = program_of(optimized(y, {"data": (4, 8)}))
    kinds = [kind for kind, _ in prog.segments()]
    assert kinds == ["graph", "eager", "graph"]
    assert any(isinstance(s, Eager) and s.op.name == "sort" for s in prog.steps)
    assert "2 captured segments around 1 eager step" in str(prog)


def test_reshapes_become_copies():
    x = mx.sym.var("data")
    y = mx.sym.exp(mx.sym.Flatten(mx.sym.relu(x) * 2))
    prog = program_of(optimized(y, {"data": (2, 3, 4)}))
    assert [type(s).__name__ for s in prog.steps] == ["Launch", "Copy", "Launch"]
    copy = prog.steps[1]
    assert isinstance(copy, Copy) and copy.nbytes == 2 * 12 * 4


def test_transposes_are_gathers_not_copies():
    y = mx.sym.transpose(mx.sym.relu(mx.sym.var("data")))
    prog = program_of(optimized(y, {"data": (2, 3)}))
    gather = prog.steps[-1]
    assert isinstance(gather, Launch) and gather.kernel.endswith("gather")
    table = prog.constants[gather.args[1].ref.name]
    assert table.dtype == np.int32 and table.tolist() == [0, 3, 1, 4, 2, 5]


def test_gather_probes_find_movements_and_refuse_value_dependent_ops():
    from hybridgpu import ops
    from hybridgpu.compiler.codegen.cuda.gather import gather_tables

    def tables(name, shapes, **attrs):
        op = ops.get(name)
        return gather_tables(op, op.parse_attrs(attrs, len(shapes)), shapes)

    concat = tables("Concat", [(2, 2), (2, 1)], dim=1)
    assert [t.tolist() for t in concat] == [[0, 1, 4, 2, 3, 5]]
    split = tables("SliceChannel", [(4, 2)], num_outputs=2, axis=0)
    assert [t.tolist() for t in split] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert tables("slice_axis", [(3, 4)], axis=1, begin=1, end=3)[0].tolist() == [
        1, 2, 5, 6, 9, 10]
    for name, shapes, attrs in [("sort", [(5,)], {}), ("where", [(4,), (4,), (4,)], {}),
                                ("max", [(3, 4)], {"axis": 1}), ("cumsum", [(6,)], {}),
                                ("topk", [(6,)], {"k": 2, "ret_typ": "value"})]:
        if ops.exists(name):
            assert tables(name, shapes, **attrs) is None, name


def test_parameters_are_bound_and_data_staged():
    prog = program_of(seed_mlp_graph())
    assert set(prog.inputs) == {"data"}
    assert "mlp_dense0_weight" in prog.bound and "data" not in prog.bound


def test_aux_states_updated_in_place_are_never_staged():
    net = nn.BatchNorm(in_channels=3)
    net.initialize()
    g = optimized(net(mx.sym.var("data")), {"data": (2, 3, 4)}, is_train=True)
    names = [n.name for n in g.variables]
    prog = lower(g, plan_memory(g, policy=GpuMemoryPolicy()), names, is_train=True)
    assert not any("running" in n for n in prog.inputs)
    assert any("running_mean" in n for n in prog.bound)


def test_dump_writes_the_source_under_a_hash(tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_DUMP_CUDA", str(tmp_path))
    g = optimized(mx.sym.relu(mx.sym.var("data")) * 2, {"data": (8,)})
    exe = GpuExecutable.build(g, None, mx.gpu(0), False, {"data_inputs": ("data",)})
    files = os.listdir(tmp_path)
    assert len(files) == 1 and files[0].endswith(".cu") and len(files[0]) == 19
    assert (tmp_path / files[0]).read_text() == exe.source


# -- NVRTC: every kernel the tests generate compiles for sm_90 without spills ---------------------

def _graphs_for_nvrtc():
    x = mx.sym.var("data")
    yield seed_mlp_graph(batch=1), False
    yield seed_mlp_graph(batch=16), False
    yield optimized(mx.sym.Activation(x * 2 + 1, act_type="softrelu") / 3, {"data": (5, 7)}), False
    yield optimized(mx.sym.clip(mx.sym.exp(x), 0, float("inf")), {"data": (64,)}, "float16"), False
    yield optimized(mx.sym.Cast(mx.sym.sqrt(mx.sym.abs(x)), dtype="float16"), {"data": (8,)},
                    "float64"), False
    b = mx.sym.var("b")
    yield optimized(mx.sym.broadcast_mul(mx.sym.sigmoid(x), b) - mx.sym.tanh(x),
                    {"data": (2, 8, 4, 4), "b": (1, 8, 1, 1)}), False
    yield optimized(mx.sym.Group([mx.sym.softmax(x), mx.sym.log_softmax(x, axis=0),
                                  mx.sym.max(x, axis=1), mx.sym.mean(x)]),
                    {"data": (6, 10)}, "float64"), False
    yield optimized(mx.sym.Dropout(x, p=0.3), {"data": (40,)}, is_train=True), True
    w, bias = mx.sym.var("w"), mx.sym.var("bias")
    fc = mx.sym.relu(mx.sym.FullyConnected(x, w, bias, num_hidden=8))  # a float16 GEMV
    yield optimized(fc, {"data": (2, 20), "w": (8, 20), "bias": (8,)}, "float16"), False
    index = mx.sym.var("index")
    picked = mx.sym.pick(x, index, axis=1, mode="wrap")
    yield optimized(mx.sym.Group([picked, mx.sym._backward_pick(picked, index, x, axis=1)]),
                    {"data": (4, 6), "index": (4,)}), False
    yield optimized(mx.sym.LayerNorm(x, mx.sym.var("g"), mx.sym.var("b")),
                    {"data": (4, 32), "g": (32,), "b": (32,)}, "float16"), False
    w = mx.sym.var("w")
    conv = mx.sym.Convolution(x, w, kernel=(3, 3), pad=(1, 1), num_filter=4, no_bias=True)
    dw = mx.sym.Convolution(conv, mx.sym.var("w2"), kernel=(3, 3), num_group=4, num_filter=4,
                            no_bias=True)
    pooled = mx.sym.Pooling(mx.sym.Pooling(dw, kernel=(2, 2), stride=(2, 2), pool_type="avg"),
                            global_pool=True, kernel=(1, 1), pool_type="max")
    yield optimized(pooled, {"data": (2, 3, 8, 8), "w": (4, 3, 3, 3), "w2": (4, 1, 3, 3)}), False
    yield training_graph(), True
    yield training_graph("float16"), True  # im2col, col2im, GemmEx operands, pooling
    yield float16_batchnorm_graph(), False  # Casts inside the fused kernel (absorb_casts)
    yield longest_fused_group(), False


def float16_batchnorm_graph():
    """Inference BatchNorm on float16 data with float32 statistics, then relu: after
    ``absorb_casts`` one kernel with both Casts inside."""
    from hybridgpu.compiler.passes import absorb_casts

    data, gamma, beta, mean, var = (mx.sym.var(n) for n in ("data", "g", "b", "m", "v"))
    out = mx.sym.relu(mx.sym.BatchNorm(data, gamma, beta, mean, var, fix_gamma=False))
    shapes = {"data": (2, 4, 3, 3), "g": (4,), "b": (4,), "m": (4,), "v": (4,)}
    graph = absorb_casts(optimized(out, shapes, "float16",
                                   dtypes=dict.fromkeys("gbmv", "float32")))
    assert "Cast" in str(graph) and "Cast(%" not in str(graph)  # members only
    return graph


def longest_fused_group():
    """A chain long enough to fill the fuser's largest group (its cap), several inputs and
    transcendental ops in it: the kernel the cap must keep free of spills."""
    from hybridgpu.compiler.passes.fuse_elementwise import MAX_GROUP_MEMBERS

    x, b = mx.sym.var("data"), mx.sym.var("b")
    y = x
    for k in range(MAX_GROUP_MEMBERS):
        y = mx.sym.broadcast_add([mx.sym.tanh, mx.sym.exp, mx.sym.sigmoid, mx.sym.sqrt][k % 4](y),
                                 b if k % 3 == 0 else x)
    return optimized(y, {"data": (4, 256), "b": (256,)})


def training_graph(dtype="float32"):
    """Kernels of training: BatchNorm with batch statistics and its backward, the weight
    gradient and the transposed convolution of a convolution, the pooling gradient."""
    x, w, g = mx.sym.var("data"), mx.sym.var("w"), mx.sym.var("g")
    gamma, beta, mean, var = (mx.sym.var(n) for n in ("gamma", "beta", "mean", "var"))
    geom = {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1)}
    bn = mx.sym.BatchNorm(x, gamma, beta, mean, var, output_mean_var=True, fix_gamma=False)
    dbn = mx.sym._backward_BatchNorm(x, x, gamma, bn[1], bn[2], fix_gamma=False)
    dw = mx.sym._backward_Convolution_weight(g, dbn[0], num_filter=4, **geom)
    dx = mx.sym.Deconvolution(g, w, num_filter=3, adj=(1, 1), **geom)
    pool = mx.sym.Pooling(dx, kernel=(2, 2), stride=(2, 2), pool_type="max")
    dpool = mx.sym._backward_Pooling(dx, pool, pool, kernel=(2, 2), stride=(2, 2),
                                     pool_type="max")
    shapes = {"data": (2, 3, 8, 8), "w": (4, 3, 3, 3), "g": (2, 4, 4, 4), "gamma": (3,),
              "beta": (3,), "mean": (3,), "var": (3,)}
    statistics = dict.fromkeys(("gamma", "beta", "mean", "var"), "float32")  # as cast() keeps
    return optimized(mx.sym.Group([bn[0], dw, dpool]), shapes, dtype, is_train=True,
                     dtypes=statistics)


def test_generated_kernels_compile_with_nvrtc_for_sm90_without_spills():
    nvrtc_check = pytest.importorskip("hybridgpu.vgpu.nvrtc_check")
    if not nvrtc_check.available():
        pytest.skip("needs pip cuda-bindings and nvidia-cuda-nvrtc (CUDA 13)")
    for graph, train in _graphs_for_nvrtc():
        prog = program_of(graph, is_train=train)
        assert "Eager" not in [type(s).__name__ for s in prog.steps], str(prog)
        report = nvrtc_check.compile_for_sm90(prog.source)
        assert {k.name for k in prog.kernels} <= set(report.kernels)
        spills = {name: k.spill_bytes for name, k in report.kernels.items() if k.spill_bytes}
        assert not spills, spills
