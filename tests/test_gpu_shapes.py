"""Shapes and memory on the GPU backend, as a user meets them (marked gpu: the virtual GPU in
CI): a block that keeps seeing new batch sizes switches to kernels taking their sizes as
arguments (no new kernel compile per shape, results equal to cpu), each compiled signature
reports its arena, and an arena that does not fit names the block, the signature and the
size."""

from __future__ import annotations

import collections

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.compiler import compile_graph
from hybridgpu.compiler.codegen.cuda import ElementwiseSpec
from hybridgpu.compiler.codegen.cuda.shaped import generate_shaped, shape_arguments
from hybridgpu.executor.gpu import runtime
from hybridgpu.executor.gpu.runtime import GpuExecutable
from hybridgpu.gluon import HybridBlock, hybrid_block, nn
from hybridgpu.graph import Graph, infer_shapes, infer_types
from test_gpu_backend import elementwise_graphs

from optional_hypothesis import HealthCheck, given, settings, st

pytestmark = pytest.mark.gpu

BATCHES = [3, 5, 2, 7, 4, 9, 1, 6]  # 8 distinct batch sizes


class Elementwise(HybridBlock):
    """An elementwise-heavy block: a channel scale and shift, activations, a residual."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.scale = self.params.get("scale", shape=(1, 6, 1), init=mx.init.Uniform(1.0))
            self.shift = self.params.get("shift", shape=(5,), init=mx.init.Uniform(1.0))

    def hybrid_forward(self, F, x, scale, shift):
        y = F.relu(F.broadcast_mul(x, scale) - 0.5)
        z = F.tanh(F.broadcast_add(y, shift)) * 2 + F.sigmoid(x)
        return F.exp(-F.abs(z)) + x


def make_block(ctx):
    mx.random.seed(3)
    net = Elementwise(prefix="ew_")
    net.initialize(ctx=mx.cpu())
    net.collect_params().reset_ctx(ctx)
    net.hybridize()
    return net


def count_kernel_builds(monkeypatch):
    """The sources the device compiles (the virtual GPU's g++ step, or CuPy's RawModule)."""
    sources = []
    xp = mx.gpu(0).xp
    if getattr(xp, "is_virtual", False):
        from hybridgpu.vgpu import compiler

        real = compiler.build

        def build(source, macros=()):
            sources.append(source)
            return real(source, macros)

        monkeypatch.setattr(compiler, "build", build)
    else:
        real_module = xp.RawModule

        def module(*args, **kwargs):
            sources.append(kwargs.get("code"))
            return real_module(*args, **kwargs)

        monkeypatch.setattr(xp, "RawModule", module)
    return sources


def test_new_batch_sizes_reuse_one_compiled_module_after_k_shapes(monkeypatch, tmp_path):
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path))
    monkeypatch.setattr(runtime, "_SHAPED_MODULES", collections.OrderedDict())
    sources = count_kernel_builds(monkeypatch)
    cpu_net, gpu_net = make_block(mx.cpu()), make_block(mx.gpu(0))
    rng = np.random.default_rng(0)
    built_after = []
    for batch in BATCHES:
        data = rng.standard_normal((batch, 6, 5)).astype(np.float32)
        want = cpu_net(mx.nd.array(data)).asnumpy()
        for _ in range(2):  # eager first call, then a replay of the capture
            got = gpu_net(mx.nd.array(data, ctx=mx.gpu(0))).asnumpy()
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        built_after.append(len(set(sources)))
    k = hybrid_block.SHAPE_ARGS_AFTER
    # the first K shapes compile a module each (sizes as constants) ...
    assert built_after[:k] == list(range(1, k + 1))
    # ... the next compiles the one module with sizes as arguments, and no later shape compiles
    assert built_after[k:] == [k + 1] * (len(BATCHES) - k)
    signatures = gpu_net.compiled_signatures()
    assert [s.inputs[0][0][0] for s in signatures] == BATCHES
    assert [s.shape_args for s in signatures] == [False] * k + [True] * (len(BATCHES) - k)
    shaped = [gpu_net._traces[key].executable for key in list(gpu_net._traces)[k:]]
    assert all(exe.program.shaped and not exe.program.module_sources()[0] for exe in shaped)
    assert len({exe.program.module_sources()[1] for exe in shaped}) == 1


def shaped_program(out, shapes, dtype="float32"):
    g = Graph(out._outputs)
    infer_types(g, {n: dtype for n in shapes})
    infer_shapes(g, shapes)
    cpu = compile_graph(g, mx.cpu(), False)
    gpu = compile_graph(g, mx.gpu(0), False, {"data_inputs": tuple(shapes), "shape_args": True})
    assert isinstance(gpu, GpuExecutable) and gpu.program.shaped
    return cpu, gpu


@pytest.mark.parametrize("shapes", [
    {"x": (2, 8, 4, 4), "m": (1, 8, 1, 1)},   # channel broadcast, vector path
    {"x": (3, 5, 7), "m": (7,)},              # odd sizes: the scalar loop
    {"x": (1, 6, 1), "m": (4, 1, 3)},         # both inputs broadcast
    {"x": (), "m": (5,)},                     # a scalar input
])
def test_shaped_kernels_match_cpu(shapes):
    x, m = mx.sym.var("x"), mx.sym.var("m")
    out = mx.sym.broadcast_mul(mx.sym.relu(mx.sym.broadcast_mul(x - 1, m) + 0.5), x)
    cpu, gpu = shaped_program(out, shapes)
    rng = np.random.default_rng(1)
    inputs = {n: rng.standard_normal(s).astype(np.float32) for n, s in shapes.items()}
    want = cpu(inputs)[0]
    for _ in range(2):
        got = gpu({n: mx.gpu(0).xp.asarray(v) for n, v in inputs.items()})[0]
        np.testing.assert_allclose(mx.gpu(0).xp.asnumpy(got), want, rtol=1e-6, atol=1e-7)


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(elementwise_graphs(), st.sampled_from(["float16", "float32", "float64"]),
       st.integers(0, 2 ** 16))
def test_random_elementwise_graphs_with_shape_arguments_agree_with_cpu(case, dtype, seed):
    out, shapes = case
    cpu, gpu = shaped_program(out, shapes, dtype)
    rng = np.random.default_rng(seed)
    inputs = {n: rng.uniform(-2, 2, s).astype(dtype) for n, s in shapes.items()}
    want = cpu(inputs)[0].astype(np.float64)
    tol = 2e-3 if dtype == "float16" else 1e-5
    for _ in range(2):
        got = gpu({n: mx.gpu(0).xp.asarray(a) for n, a in inputs.items()})[0]
        np.testing.assert_allclose(mx.gpu(0).xp.asnumpy(got).astype(np.float64), want,
                                   rtol=tol, atol=tol)


def test_shaped_dense_uses_cublas_not_a_gemv_kernel():
    net = nn.HybridSequential(prefix="mlp_")
    with net.name_scope():
        net.add(nn.Dense(16, activation="relu", in_units=8), nn.Dense(3, in_units=16))
    net.initialize()
    g = Graph(net(mx.sym.var("data"))._outputs)
    infer_types(g, {"data": "float32"})
    infer_shapes(g, {"data": (2, 8)})
    cpu = compile_graph(g, mx.cpu(), False)
    gpu = compile_graph(g, mx.gpu(0), False, {"data_inputs": ("data",), "shape_args": True})
    assert "gemv" not in gpu.source and "taking shapes as arguments" in str(gpu)
    params = {k: v.data() for k, v in net.collect_params().items()}
    data = np.random.default_rng(2).standard_normal((2, 8)).astype(np.float32)
    inputs = {"data": data, **{k: v.asnumpy() for k, v in params.items()}}
    got = gpu({k: mx.gpu(0).xp.asarray(v) for k, v in inputs.items()})[0]
    np.testing.assert_allclose(mx.gpu(0).xp.asnumpy(got), cpu(inputs)[0], rtol=1e-5,
                               atol=1e-6)


def test_shape_arguments_are_int64_and_the_source_has_no_sizes():
    body = "T t0 = in0 + in1;\nout0 = t0;"
    small = ElementwiseSpec((2, 3), "float32", [((2, 3), "float32"), ((3,), "float32")],
                            ["float32"], body)
    large = ElementwiseSpec((1000, 3), "float32", [((1000, 3), "float32"), ((3,), "float32")],
                            ["float32"], body)
    kernel = generate_shaped(small, "k1_ew")
    assert kernel.source == generate_shaped(large, "k1_ew").source
    assert "1000" not in kernel.source
    work, vector, args = shape_arguments(large, kernel)
    assert all(a.dtype == np.int64 for a in args) and int(args[0]) == 3000
    assert (work, vector) == (750, True)
    assert shape_arguments(small, kernel)[:2] == (6, False)  # 6 % 4: the scalar loop


def test_compiled_signatures_report_the_arena_of_each(monkeypatch):
    net = make_block(mx.gpu(0))
    assert net.compiled_signatures() == []
    for batch in (2, 8):
        net(mx.nd.ones((batch, 6, 5), ctx=mx.gpu(0)))
    small, large = net.compiled_signatures()
    assert small.inputs == (((2, 6, 5), "float32"),) and small.context == mx.gpu(0)
    assert small.training is False and small.shape_args is False
    exe = list(net._traces.values())[1].executable
    assert large.arena_bytes == exe.arena_bytes == exe.program.arena_bytes
    assert 0 < small.arena_bytes < large.arena_bytes
    cpu_net = make_block(mx.cpu())
    cpu_net(mx.nd.ones((2, 6, 5)))
    assert cpu_net.compiled_signatures()[0].arena_bytes is None


def test_out_of_memory_names_the_block_the_signature_and_the_arena(monkeypatch):
    xp = mx.gpu(0).xp
    if not getattr(xp, "is_virtual", False):
        pytest.skip("forces the virtual GPU's device memory limit")
    from hybridgpu.vgpu import devices, memory

    net = make_block(mx.gpu(0))
    data = mx.nd.ones((64, 6, 5), ctx=mx.gpu(0))
    used = memory._used.get(0, 0)
    monkeypatch.setattr(devices, "TOTAL_MEMORY", used + 1024)  # the arena needs more
    with pytest.raises(mx.base.MXNetError) as err:
        net(data)
    message = str(err.value)
    assert "HybridBlock 'ew'" in message and "inputs data (64, 6, 5)" in message
    assert "out of memory allocating its arena of" in message and "on gpu(0)" in message
    assert "out of memory allocating" in message.split("): ")[-1]  # the device's own words
    monkeypatch.undo()
    assert net(data).shape == (64, 6, 5)  # memory back: the same signature now runs
    needed = net.compiled_signatures()[0].arena_bytes
    assert f"arena of {needed} bytes" in message


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_shaped_kernels_compile_with_nvrtc_for_sm90_without_spills(dtype):
    nvrtc_check = pytest.importorskip("hybridgpu.vgpu.nvrtc_check")
    if not nvrtc_check.available():
        pytest.skip("needs pip cuda-bindings and nvidia-cuda-nvrtc (CUDA 13)")
    from hybridgpu.compiler.passes import fuse_elementwise, plan_memory
    from hybridgpu.executor.gpu import lower

    x, m = mx.sym.var("x"), mx.sym.var("m")
    g = Graph((mx.sym.tanh(mx.sym.broadcast_mul(x, m)) + mx.sym.exp(x))._outputs)
    infer_types(g, {"x": dtype, "m": dtype})
    infer_shapes(g, {"x": (4, 3, 5, 2), "m": (1, 3, 1, 1)})
    g = fuse_elementwise(g)
    program = lower(g, plan_memory(g), staged={"x"}, shape_args=True)
    assert program.shaped and not program.module_sources()[0]
    report = nvrtc_check.compile_for_sm90(program.source)
    assert report.kernels and all(k.spill_bytes == 0 for k in report.kernels.values())


def conv_net():
    mx.random.seed(5)
    net = nn.HybridSequential(prefix="cnn_")
    with net.name_scope():
        net.add(nn.Conv2D(8, 3, padding=1, in_channels=3), nn.BatchNorm(in_channels=8),
                nn.Activation("relu"), nn.MaxPool2D(2),
                nn.Conv2D(8, 3, padding=1, groups=8, in_channels=8),       # direct kernel
                nn.Conv2DTranspose(4, 2, strides=2, in_channels=8),        # GEMM + col2im
                nn.AvgPool2D(2), nn.Conv2D(6, 1, in_channels=4),           # 1x1: no im2col
                nn.GlobalAvgPool2D(), nn.Flatten(), nn.Dense(5, in_units=6))
    net.initialize(mx.init.Xavier())
    return net


def test_conv_pool_and_reduce_kernels_take_the_batch_size_as_an_argument():
    net = conv_net()
    out = mx.sym.softmax(net(mx.sym.var("data")))
    params = {k: v.data().asnumpy() for k, v in net.collect_params().items()}
    rng = np.random.default_rng(4)
    sources = set()
    for batch in (1, 3, 2):
        cpu, gpu = shaped_program(out, {"data": (batch, 3, 8, 8)})
        static, shaped = gpu.program.module_sources()
        assert not static
        kinds = {k.name.split("_", 1)[1] for k in gpu.program.kernels}
        assert {"im2col", "conv", "col2im", "pool", "red"} <= kinds
        sources.add(shaped)
        inputs = {"data": rng.standard_normal((batch, 3, 8, 8)).astype(np.float32), **params}
        want = cpu(inputs)[0]
        for _ in range(2):
            got = gpu({k: mx.gpu(0).xp.asarray(v) for k, v in inputs.items()})[0]
            np.testing.assert_allclose(mx.gpu(0).xp.asnumpy(got), want, rtol=1e-5, atol=1e-6)
    assert len(sources) == 1  # one module for every batch size


def test_shaped_window_and_reduce_kernels_compile_with_nvrtc_without_spills():
    nvrtc_check = pytest.importorskip("hybridgpu.vgpu.nvrtc_check")
    if not nvrtc_check.available():
        pytest.skip("needs pip cuda-bindings and nvidia-cuda-nvrtc (CUDA 13)")
    _, gpu = shaped_program(mx.sym.softmax(conv_net()(mx.sym.var("data"))),
                            {"data": (2, 3, 8, 8)})
    report = nvrtc_check.compile_for_sm90(gpu.program.module_sources()[1])
    assert set(report.kernels) == {k.name for k in gpu.program.kernels}
    assert all(k.spill_bytes == 0 for k in report.kernels.values())


def test_shaped_module_cache_keeps_the_most_recently_used(monkeypatch):
    """Past ``MAX_SHAPED_MODULES`` sources the least recently used module is dropped (a
    block's executables keep the functions they already got)."""
    monkeypatch.setattr(runtime, "_SHAPED_MODULES", collections.OrderedDict())
    monkeypatch.setattr(runtime, "MAX_SHAPED_MODULES", 2)
    ctx = mx.gpu(0)
    sources = [f'extern "C" __global__ void k{n}(float* x) {{ x[0] = {n}.0f; }}\n'
               for n in range(3)]
    first = runtime._shaped_module(ctx.xp, ctx, sources[0])
    runtime._shaped_module(ctx.xp, ctx, sources[1])
    assert runtime._shaped_module(ctx.xp, ctx, sources[0]) is first  # used again: kept
    runtime._shaped_module(ctx.xp, ctx, sources[2])
    assert [key[2] for key in runtime._SHAPED_MODULES] == [sources[0], sources[2]]
