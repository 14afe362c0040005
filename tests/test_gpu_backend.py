"""The GPU backend end to end (marked gpu: runs on the virtual GPU in CI, and on a real GPU):
generated kernels agree with the cpu executor, hybridized nets on gpu(0) equal cpu(0), replays
leave earlier outputs alone, parameters written in place are seen by the next replay and
replaced ones make the program recapture."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.compiler import compile_graph
from hybridgpu.executor.gpu import Gemm, Launch
from hybridgpu.executor.gpu.runtime import GpuExecutable
from hybridgpu.gluon import nn
from hybridgpu.graph import Graph, infer_shapes, infer_types

from optional_hypothesis import HealthCheck, given, settings, st

pytestmark = pytest.mark.gpu

UNARY = ["relu", "sigmoid", "tanh", "exp", "negative", "abs", "square", "softsign", "floor"]
BINARY = ["broadcast_add", "broadcast_sub", "broadcast_mul", "broadcast_maximum",
          "broadcast_minimum"]


def to_gpu(array):
    return mx.gpu(0).xp.asarray(array)


def to_host(array):
    return mx.gpu(0).xp.asnumpy(array)


def compile_both(outputs, shapes, dtype="float32"):
    g = Graph(outputs._outputs)
    infer_types(g, {n: dtype for n in shapes})
    infer_shapes(g, shapes)
    return (compile_graph(g, mx.cpu(), False),
            compile_graph(g, mx.gpu(0), False, {"data_inputs": tuple(shapes)}))


@st.composite
def elementwise_graphs(draw):
    """A random chain of unary and broadcasting binary ops over 1-3 inputs."""
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 6), min_size=rank, max_size=rank)))
    names = ["x0"]
    shapes = {"x0": shape}
    values = [mx.sym.var("x0")]
    for _ in range(draw(st.integers(1, 7))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(UNARY))
            values.append(getattr(mx.sym, op)(draw(st.sampled_from(values))))
            continue
        op = draw(st.sampled_from(BINARY))
        if draw(st.booleans()) and len(names) < 3:
            name = f"x{len(names)}"
            sub = tuple(d if draw(st.booleans()) else 1 for d in shape)
            sub = sub[draw(st.integers(0, len(sub) - 1)):]
            names.append(name)
            shapes[name] = sub
            other = mx.sym.var(name)
        else:
            other = draw(st.sampled_from(values))
        values.append(getattr(mx.sym, op)(draw(st.sampled_from(values)), other))
    return values[-1], shapes


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck))
@given(elementwise_graphs(), st.sampled_from(["float32", "float64"]), st.integers(0, 2 ** 16))
def test_random_elementwise_graphs_agree_with_cpu(case, dtype, seed):
    out, shapes = case
    cpu_exe, gpu_exe = compile_both(out, shapes, dtype)
    assert isinstance(gpu_exe, GpuExecutable)
    rng = np.random.default_rng(seed)
    inputs = {n: rng.uniform(-2, 2, s).astype(dtype) for n, s in shapes.items()}
    want = cpu_exe(inputs)[0]
    for _ in range(2):  # the first call runs eagerly, the second replays the capture
        got = to_host(gpu_exe({n: to_gpu(a) for n, a in inputs.items()})[0])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_vector_path_with_channel_broadcast_matches_cpu():
    x, m = mx.sym.var("x"), mx.sym.var("m")
    out = mx.sym.relu(mx.sym.broadcast_mul(x - 1, m) + 0.5)
    cpu_exe, gpu_exe = compile_both(out, {"x": (2, 8, 4, 4), "m": (1, 8, 1, 1)})
    assert any(k.vector for k in gpu_exe.program.kernels)
    rng = np.random.default_rng(1)
    inputs = {"x": rng.standard_normal((2, 8, 4, 4)).astype(np.float32),
              "m": rng.standard_normal((1, 8, 1, 1)).astype(np.float32)}
    got = to_host(gpu_exe({k: to_gpu(v) for k, v in inputs.items()})[0])
    want = cpu_exe(inputs)[0]
    # A GPU contracts p + 0.5, p = (x - 1) * m, into one FMA (NVRTC's --fmad=true): p is not
    # rounded on its own (at most 2^-24 |p| apart), then each side rounds its sum (2^-24 of a
    # value at most |p| + 0.5); relu moves nothing further apart. An index error is far larger.
    p = np.abs((inputs["x"] - np.float32(1)).astype(np.float64) * inputs["m"])
    assert np.all(np.abs(got.astype(np.float64) - want) <= 2.0 ** -24 * (3 * p + 1))


def test_float16_groups_compute_in_float32():
    x = mx.sym.var("x")
    cpu_exe, gpu_exe = compile_both(mx.sym.sigmoid(x) * 3 - x, {"x": (64,)}, "float16")
    data = np.linspace(-4, 4, 64).astype(np.float16)
    got = to_host(gpu_exe({"x": to_gpu(data)})[0])
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), cpu_exe({"x": data})[0].astype(np.float32),
                               rtol=2e-3, atol=2e-3)


def seed_mlp(ctx):
    """The seed MLP with the same weights on every context (initialized on cpu, then moved:
    initializers draw from each device's own generator)."""
    mx.random.seed(7)
    net = nn.HybridSequential()
    with net.name_scope():
        net.add(nn.Dense(256, activation="relu", in_units=20),
                nn.Dense(128, activation="relu", in_units=256), nn.Dense(2, in_units=128))
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.collect_params().reset_ctx(ctx)
    return net


@pytest.mark.parametrize("batch", [1, 5, 12])  # GEMV kernels up to 8 rows, then cuBLAS
def test_seed_mlp_on_gpu_equals_cpu(batch):
    data = np.random.default_rng(batch).standard_normal((batch, 20)).astype(np.float32)
    cpu_net, gpu_net = seed_mlp(mx.cpu()), seed_mlp(mx.gpu(0))
    cpu_net.hybridize()
    gpu_net.hybridize()
    want = cpu_net(mx.nd.array(data)).asnumpy()
    for _ in range(3):
        got = gpu_net(mx.nd.array(data, ctx=mx.gpu(0))).asnumpy()
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    exe = next(iter(gpu_net._traces.values())).executable
    assert isinstance(exe, GpuExecutable) and exe.captures == 1
    assert [k for k, _ in exe.program.segments()] == ["graph"]


def test_replays_leave_earlier_outputs_unchanged():
    net = seed_mlp(mx.gpu(0))
    net.hybridize()
    xs = [np.full((2, 20), v, np.float32) for v in (0.5, -1.0, 2.0, 3.0)]
    outs = [net(mx.nd.array(x, ctx=mx.gpu(0))) for x in xs]
    snapshots = [o.asnumpy() for o in outs]
    later = [net(mx.nd.array(x, ctx=mx.gpu(0))).asnumpy() for x in xs]
    for before, again, out in zip(snapshots, later, outs):
        np.testing.assert_array_equal(out.asnumpy(), before)
        np.testing.assert_allclose(again, before, rtol=1e-6)
    assert not np.allclose(snapshots[0], snapshots[1])


def test_set_data_is_seen_by_the_next_replay_and_replaced_arrays_recapture():
    net = seed_mlp(mx.gpu(0))
    net.hybridize()
    x = mx.nd.array(np.ones((1, 20), np.float32), ctx=mx.gpu(0))
    net(x)
    net(x)
    exe = next(iter(net._traces.values())).executable
    assert exe.captures == 1
    bias = net[2].bias
    bias.set_data(mx.nd.array([10.0, -10.0]))
    reference = seed_mlp(mx.cpu())
    reference.hybridize()
    reference[2].bias.set_data(mx.nd.array([10.0, -10.0]))
    np.testing.assert_allclose(net(x).asnumpy(), reference(mx.nd.ones((1, 20))).asnumpy(),
                               rtol=1e-5)
    assert exe.captures == 1  # written in place: replayed
    net.initialize(mx.init.Zero(), ctx=mx.gpu(0), force_reinit=True)
    np.testing.assert_array_equal(net(x).asnumpy(), np.zeros((1, 2), np.float32))
    assert exe.captures == 2  # new arrays: recaptured, never replayed over freed memory


def test_cuda_graph_false_runs_eagerly_with_the_same_results():
    data = np.random.default_rng(3).standard_normal((3, 20)).astype(np.float32)
    eager, captured = seed_mlp(mx.gpu(0)), seed_mlp(mx.gpu(0))
    eager.hybridize(cuda_graph=False)
    captured.hybridize()
    x = mx.nd.array(data, ctx=mx.gpu(0))
    for _ in range(2):
        np.testing.assert_allclose(eager(x).asnumpy(), captured(x).asnumpy(), rtol=1e-6)
    assert next(iter(eager._traces.values())).executable.captures == 0


def test_static_output_returns_the_arena_buffer():
    net = seed_mlp(mx.gpu(0))
    net.hybridize(static_output=True)
    first = net(mx.nd.array(np.ones((1, 20), np.float32), ctx=mx.gpu(0)))
    kept = first.asnumpy()
    second = net(mx.nd.array(np.zeros((1, 20), np.float32), ctx=mx.gpu(0)))
    assert first._data.data.ptr == second._data.data.ptr
    assert not np.allclose(first.asnumpy(), kept)  # overwritten, as documented


def test_graph_with_an_eager_op_runs_in_segments():
    x = mx.sym.var("x")
    out = mx.sym.exp(mx.sym.sort(mx.sym.relu(x) + 1, axis=-1)) * 2
    cpu_exe, gpu_exe = compile_both(out, {"x": (3, 8)})
    assert [k for k, _ in gpu_exe.program.segments()] == ["graph", "eager", "graph"]
    rng = np.random.default_rng(5)
    for _ in range(3):
        data = rng.standard_normal((3, 8)).astype(np.float32)
        got = to_host(gpu_exe({"x": to_gpu(data)})[0])
        np.testing.assert_allclose(got, cpu_exe({"x": data})[0], rtol=1e-6)


# -- reductions, softmax, pooling, convolution ----------------------------------------------------

def check_against_cpu(out, shapes, kinds, rtol=1e-5, atol=1e-6, dtype="float32", seed=0):
    """Compile ``out`` for cpu and gpu, check the gpu program's step kinds include ``kinds``
    (and no eager step), then compare two calls (eager run, then replay) with cpu."""
    cpu_exe, gpu_exe = compile_both(out, shapes, dtype)
    steps = [type(s).__name__ for s in gpu_exe.program.steps]
    assert "Eager" not in steps and set(kinds) <= set(steps), steps
    rng = np.random.default_rng(seed)
    for _ in range(2):
        inputs = {n: rng.uniform(-1, 1, s).astype(dtype) for n, s in shapes.items()}
        want = cpu_exe(inputs)
        got = gpu_exe({n: to_gpu(a) for n, a in inputs.items()})
        for g, w in zip(got, want):
            np.testing.assert_allclose(to_host(g), w, rtol=rtol, atol=atol)
    return gpu_exe


@pytest.mark.parametrize("op,axis", [("sum", (1, 2)), ("mean", 0), ("max", (0, 2)),
                                     ("min", None), ("prod", 2), ("nansum", -1)])
def test_reductions_match_cpu(op, axis):
    x = mx.sym.var("x")
    out = getattr(mx.sym, op)(mx.sym.relu(x) + 0.5, axis=axis)
    check_against_cpu(out, {"x": (3, 4, 5)}, ["Launch"], rtol=2e-5)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_family_matches_cpu(op, axis):
    x = mx.sym.var("x")
    out = getattr(mx.sym, op)(x * 3, axis=axis, temperature=2.0)
    check_against_cpu(out, {"x": (2, 7, 3)}, ["Launch"])


@pytest.mark.parametrize("attrs", [
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"},
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "avg", "count_include_pad": False,
     "pooling_convention": "full"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "max"},
])
def test_pooling_matches_cpu(attrs):
    out = mx.sym.Pooling(mx.sym.var("x"), **attrs)
    check_against_cpu(out, {"x": (2, 3, 7, 7)}, ["Launch"])


@pytest.mark.parametrize("kernel,stride,pad,groups,channels", [
    ((3, 3), (1, 1), (1, 1), 1, 4),     # im2col + GEMM
    ((3, 3), (2, 2), (1, 1), 1, 3),
    ((1, 1), (1, 1), (0, 0), 1, 6),     # pointwise: GEMM on the input itself
    ((3, 3), (1, 1), (1, 1), 6, 6),     # depthwise: direct kernel
    ((3, 3), (2, 2), (0, 0), 2, 4),     # grouped
])
def test_convolution_matches_cpu(kernel, stride, pad, groups, channels):
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    out = mx.sym.Convolution(x, w, b, kernel=kernel, stride=stride, pad=pad, num_group=groups,
                             num_filter=6)
    shapes = {"x": (2, channels, 6, 6), "w": (6, channels // groups, *kernel), "b": (6,)}
    exe = check_against_cpu(out, shapes, ["Launch"], rtol=1e-4, atol=1e-5)
    gemms = [s for s in exe.program.steps if isinstance(s, Gemm)]
    assert bool(gemms) == (groups == 1)


@pytest.mark.parametrize("name,dtype", [("resnet18_v1", "float32"), ("mobilenet0.25", "float32"),
                                        ("resnet18_v1", "float16")])
def test_zoo_models_run_as_one_captured_segment_and_equal_cpu(name, dtype):
    """float32, and float16 after ``net.cast('float16')`` (GemmEx, float32 sums; BatchNorm's
    float32 statistics decomposed between Casts): one captured segment, equal to cpu."""
    from hybridgpu.gluon.model_zoo import vision

    net = vision.get_model(name, classes=10)
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    net.cast(dtype)
    data = np.random.default_rng(0).uniform(-1, 1, (1, 3, 32, 32)).astype(dtype)
    want = net(mx.nd.array(data, dtype=dtype)).asnumpy().astype(np.float32)
    net.collect_params().reset_ctx(mx.gpu(0))
    net.hybridize()
    x = mx.nd.array(data, ctx=mx.gpu(0), dtype=dtype)
    tol = 1e-4 if dtype == "float32" else 3e-3
    for _ in range(2):
        got = net(x).asnumpy()
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got.astype(np.float32), want, rtol=tol, atol=tol)
    exe = next(iter(net._traces.values())).executable
    assert [k for k, _ in exe.program.segments()] == ["graph"]


# -- dropout under capture: Philox with its counter in device memory ------------------------------

def philox_mask(size, p, salt, seed, run):
    """The mask the dropout kernel must draw, from the reference Philox."""
    from hybridgpu.compiler.codegen.cuda.philox import philox_reference

    mask = np.empty(size, np.float32)
    for i in range(size):
        words = philox_reference((i >> 2, salt, run & 0xFFFFFFFF, run >> 32),
                                 (seed & 0xFFFFFFFF, seed >> 32))
        u = np.float32(words[i & 3] >> 8) * np.float32(2.0 ** -24)
        mask[i] = np.float32(1 / (1 - p)) if u >= np.float32(p) else 0
    return mask


def test_dropout_is_captured_and_draws_fresh_masks_each_replay():
    x = mx.sym.var("x")
    g = Graph(mx.sym.relu(mx.sym.Dropout(x, p=0.25)) ._outputs)
    infer_types(g, {"x": "float32"})
    infer_shapes(g, {"x": (8, 64)})
    exe = compile_graph(g, mx.gpu(0), True, {"data_inputs": ("x",)})
    assert [k for k, _ in exe.program.segments()] == ["graph"]
    data = np.random.default_rng(0).uniform(0.5, 1.5, (8, 64)).astype(np.float32)
    drop = next(s for s in exe.program.steps if s.kernel.endswith("drop"))
    masks = []
    for run in range(3):
        out = to_host(exe({"x": to_gpu(data)})[0])
        state = to_host(exe._state.view(exe.program.steps[-1].args[0].ref, (2,), "uint64"))
        assert int(state[1]) == run + 1  # advanced once per call, eager or replayed
        mask = philox_mask(data.size, 0.25, drop.node, int(state[0]), run).reshape(data.shape)
        np.testing.assert_allclose(out, data * mask, rtol=1e-6)
        masks.append(mask)
    assert exe.captures == 1
    assert not np.array_equal(masks[0], masks[1]) and not np.array_equal(masks[1], masks[2])
    assert 0.65 < (masks[0] > 0).mean() < 0.85


def test_dropout_in_predict_mode_is_the_identity_kernel():
    x = mx.sym.var("x")
    cpu_exe, gpu_exe = compile_both(mx.sym.Dropout(x * 2, p=0.5), {"x": (4, 4)})
    assert all(isinstance(s, Launch) for s in gpu_exe.program.steps)
    data = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_array_equal(to_host(gpu_exe({"x": to_gpu(data)})[0]), data * 2)


@pytest.mark.parametrize("make", [
    lambda x, y: mx.sym.transpose(x, axes=(1, 0, 2)),
    lambda x, y: mx.sym.Concat(x, y * 2, dim=2),
    lambda x, y: mx.sym.SliceChannel(x, num_outputs=3, axis=1)[1] + 1,
    lambda x, y: mx.sym.slice_axis(mx.sym.flip(x, axis=2), axis=2, begin=1, end=3),
    lambda x, y: mx.sym.tile(y, reps=(1, 2, 1)),
])
def test_element_movements_are_gather_kernels(make):
    x, y = mx.sym.var("x"), mx.sym.var("y")
    out = make(x, y)
    shapes = {"x": (2, 3, 4)}
    if "y" in out.list_arguments():
        shapes["y"] = (2, 3, 2)
    check_against_cpu(out, shapes, ["Launch"])


def test_two_threads_calling_one_net_get_their_own_results():
    import threading

    net = seed_mlp(mx.gpu(0))
    net.hybridize()
    inputs = [np.full((2, 20), v, np.float32) for v in (-1.0, 0.5, 1.5, 3.0)]
    want = [net(mx.nd.array(x, ctx=mx.gpu(0))).asnumpy() for x in inputs]
    errors = []

    def work(k):
        try:
            for _ in range(5):
                got = net(mx.nd.array(inputs[k], ctx=mx.gpu(0))).asnumpy()
                np.testing.assert_allclose(got, want[k], rtol=1e-6)
        except Exception as err:  # reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_arena_out_of_memory_names_the_block_and_the_size(monkeypatch):
    net = seed_mlp(mx.gpu(0))
    net.hybridize()
    xp = mx.gpu(0).xp
    real_empty = xp.empty

    def refuse_big(shape, dtype=float, *args, **kwargs):
        if np.dtype(dtype) == np.uint8:  # the arena: bytes
            raise MemoryError("out of memory allocating the arena")
        return real_empty(shape, dtype, *args, **kwargs)

    monkeypatch.setattr(xp, "empty", refuse_big)
    with pytest.raises(mx.base.MXNetError, match=r"HybridBlock 'hybridsequential\d+'.*"
                                                 r"arena of \d+ bytes on gpu\(0\)"):
        net(mx.nd.array(np.ones((1, 20), np.float32), ctx=mx.gpu(0)))
    monkeypatch.undo()
    exe = next(iter(net._traces.values())).executable
    assert exe.arena_bytes == exe.program.arena_bytes > 0
    assert net(mx.nd.array(np.ones((1, 20), np.float32), ctx=mx.gpu(0))).shape == (1, 2)


@pytest.mark.parametrize("axis", [-1, 1])
def test_layer_norm_matches_cpu(axis):
    x, g, b = mx.sym.var("x"), mx.sym.var("g"), mx.sym.var("b")
    out = mx.sym.LayerNorm(x * 2, g, b, axis=axis, eps=1e-5, output_mean_var=True)
    size = (2, 5, 6)[axis]
    check_against_cpu(out, {"x": (2, 5, 6), "g": (size,), "b": (size,)}, ["Launch"],
                      rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fix_gamma", [False, True])
def test_batch_norm_training_updates_moving_statistics_once_per_call(fix_gamma):
    names = ("x", "gamma", "beta", "mm", "mv")
    x, gamma, beta, mm, mv = (mx.sym.var(n) for n in names)
    out = mx.sym.BatchNorm(x * 2, gamma, beta, mm, mv, fix_gamma=fix_gamma, eps=1e-5,
                           momentum=0.8, output_mean_var=True)
    g = Graph(out._outputs)
    shapes = {"x": (4, 3, 5, 5), "gamma": (3,), "beta": (3,), "mm": (3,), "mv": (3,)}
    infer_types(g, dict.fromkeys(shapes, "float32"))
    infer_shapes(g, shapes)
    cpu_exe = compile_graph(g, mx.cpu(), True)
    gpu_exe = compile_graph(g, mx.gpu(0), True, {"data_inputs": ("x",)})
    assert [k for k, _ in gpu_exe.program.segments()] == ["graph"]
    rng = np.random.default_rng(2)
    host = {n: rng.uniform(0.5, 1.5, s).astype(np.float32) for n, s in shapes.items()}
    dev = {n: to_gpu(a) for n, a in host.items()}
    for _ in range(3):  # eager run, then replays: each call updates mm and mv once
        data = rng.standard_normal(shapes["x"]).astype(np.float32)
        host["x"], dev["x"] = data, to_gpu(data)
        want, got = cpu_exe(host), gpu_exe(dev)
        for w, o in zip(want, got):
            np.testing.assert_allclose(to_host(o), w, rtol=2e-5, atol=2e-6)
        for n in ("mm", "mv"):
            np.testing.assert_allclose(to_host(dev[n]), host[n], rtol=2e-6)
    assert gpu_exe.captures == 1


def test_hybridized_training_step_on_gpu_matches_cpu():
    from hybridgpu import autograd, gluon
    from hybridgpu.gluon.model_zoo import vision

    data = np.random.default_rng(4).uniform(-1, 1, (4, 3, 64, 64)).astype(np.float32)
    label = np.array([1, 3, 0, 2], np.float32)
    results = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        mx.random.seed(0)
        net = vision.resnet18_v1(classes=4)
        net.initialize(mx.init.Xavier(), ctx=mx.cpu())
        net.collect_params().reset_ctx(ctx)
        net.hybridize()
        loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
        x, y = mx.nd.array(data, ctx=ctx), mx.nd.array(label, ctx=ctx)
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        grads = [p.grad(ctx).asnumpy() for p in net.collect_params().values()
                 if p.grad_req != "null"]
        stats = [p.data(ctx).asnumpy() for p in net.collect_params().values()
                 if p.grad_req == "null"]
        results.append((loss.asnumpy(), grads, stats))
    (l0, g0, s0), (l1, g1, s1) = results
    np.testing.assert_allclose(l1, l0, rtol=1e-4)
    for a, b in zip(g0 + s0, g1 + s1):
        np.testing.assert_allclose(b, a, rtol=1e-3, atol=1e-4 * np.abs(a).max())


@pytest.mark.parametrize("kernel,stride,pad,adj", [((3, 3), (1, 1), (1, 1), (0, 0)),
                                                   ((3, 3), (2, 2), (1, 1), (1, 1)),
                                                   ((2, 2), (2, 2), (0, 0), (0, 0))])
def test_deconvolution_and_weight_gradient_match_cpu(kernel, stride, pad, adj):
    x, w, b = mx.sym.var("x"), mx.sym.var("w"), mx.sym.var("b")
    deconv = mx.sym.Deconvolution(x, w, b, kernel=kernel, stride=stride, pad=pad, adj=adj,
                                  num_filter=3, no_bias=False)
    check_against_cpu(deconv, {"x": (2, 4, 5, 5), "w": (4, 3, *kernel), "b": (3,)},
                      ["Gemm", "Launch"], rtol=1e-4, atol=1e-5)
    g = mx.sym.var("g")
    conv_out = tuple((5 + 2 * p - k) // s + 1 for k, s, p in zip(kernel, stride, pad))
    wgrad = mx.sym._backward_Convolution_weight(g, x, kernel=kernel, stride=stride, pad=pad,
                                                num_filter=3)
    check_against_cpu(wgrad, {"g": (2, 3, *conv_out), "x": (2, 4, 5, 5)}, ["Gemm", "Launch"],
                      rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("attrs", [
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "max"},
    {"kernel": (2, 2), "stride": (1, 1), "pool_type": "max"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg"},
    {"kernel": (3, 3), "stride": (2, 2), "pad": (1, 1), "pool_type": "avg",
     "count_include_pad": False},
    {"kernel": (2, 2), "stride": (2, 2), "pool_type": "sum", "pooling_convention": "full"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "avg"},
    {"kernel": (1, 1), "global_pool": True, "pool_type": "sum"},
])
def test_pooling_backward_matches_cpu_with_ties(attrs):
    x, g = mx.sym.var("x"), mx.sym.var("g")
    y = mx.sym.Pooling(x, **attrs)
    out = mx.sym._backward_Pooling(x, y, g, **attrs)
    pooled = Graph(y._outputs)
    infer_types(pooled, {"x": "float32"})
    infer_shapes(pooled, {"x": (2, 3, 7, 7)})
    shapes = {"x": (2, 3, 7, 7), "g": pooled.shapes[(1, 0)]}
    cpu_exe, gpu_exe = compile_both(out, shapes)
    assert all(isinstance(s, Launch) for s in gpu_exe.program.steps)
    rng = np.random.default_rng(6)
    for _ in range(2):
        inputs = {"x": rng.integers(0, 3, shapes["x"]).astype(np.float32),  # many ties
                  "g": rng.standard_normal(shapes["g"]).astype(np.float32)}
        got = to_host(gpu_exe({n: to_gpu(a) for n, a in inputs.items()})[0])
        np.testing.assert_allclose(got, cpu_exe(inputs)[0], rtol=1e-5, atol=1e-6)


def test_ten_thousand_replays_grow_no_device_memory():
    """10,000 replays on a real GPU; 1,000 on the virtual one, whose replays run kernels on
    the CPU (about 10 ms each)."""
    import gc

    net = seed_mlp(mx.gpu(0))
    net.hybridize()
    x = mx.nd.array(np.ones((1, 20), np.float32), ctx=mx.gpu(0))
    first = net(x).asnumpy()
    pool = mx.gpu(0).xp.get_default_memory_pool()
    gc.collect()
    before = pool.used_bytes()
    for _ in range(1_000 if getattr(mx.gpu(0).xp, "is_virtual", False) else 10_000):
        out = net(x)
    del out
    gc.collect()
    assert pool.used_bytes() <= before
    np.testing.assert_array_equal(net(x).asnumpy(), first)
    exe = net._last_trace.executable
    assert isinstance(exe, GpuExecutable) and exe.captures == 1


def test_two_forwards_under_one_record_keep_their_own_saved_values():
    """The backward of each call reads what its own forward saved (the arena is reused by the
    next call, so a captured backward must not read the forward's buffers in place)."""
    from hybridgpu import autograd

    rng = np.random.default_rng(6)
    xs = [rng.standard_normal((3, 20)).astype(np.float32) for _ in range(2)]
    grads = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        net = seed_mlp(ctx)
        net.hybridize()
        with autograd.record():
            y1 = net(mx.nd.array(xs[0], ctx=ctx))
            y2 = net(mx.nd.array(xs[1], ctx=ctx))
            loss = (y1 * y1).sum() + (y2 * 3).sum()
        loss.backward()
        grads.append([p.grad(ctx).asnumpy() for p in net.collect_params().values()])
    for want, got in zip(*grads):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("axis,mode,keepdims", [(1, "clip", False), (-1, "wrap", False),
                                                (0, "wrap", True), (2, "clip", True)])
def test_pick_and_its_gradient_are_kernels_equal_to_cpu(axis, mode, keepdims):
    """Indices out of range on both sides, fractional ones (truncated toward zero), through
    clip and wrap: the forward and the gradient as pick kernels, no eager step."""
    data, index, ograd = mx.sym.var("data"), mx.sym.var("index"), mx.sym.var("ograd")
    attrs = {"axis": axis, "mode": mode, "keepdims": keepdims}
    out = mx.sym.Group([mx.sym.pick(data, index, **attrs),
                        mx.sym._backward_pick(ograd, index, data, **attrs)])
    shape = (3, 4, 5)
    kept = list(shape)
    kept[axis] = 1
    picked = tuple(kept) if keepdims else tuple(d for k, d in enumerate(shape)
                                                 if k != axis % 3)
    shapes = {"data": shape, "index": picked, "ograd": picked}
    cpu_exe, gpu_exe = compile_both(out, shapes)
    assert [s.kernel.split("_")[-1] for s in gpu_exe.program.steps] == ["pick", "pick"]
    rng = np.random.default_rng(4)
    inputs = {"data": rng.standard_normal(shape).astype(np.float32),
              "index": rng.uniform(-7.9, 9.9, picked).astype(np.float32),
              "ograd": rng.standard_normal(picked).astype(np.float32)}
    for got, want in zip(gpu_exe({n: to_gpu(a) for n, a in inputs.items()}), cpu_exe(inputs)):
        np.testing.assert_array_equal(to_host(got), want)


def test_written_outputs_go_straight_into_the_callers_arrays():
    """``written_outputs``: the steps write those outputs into the arrays ``run_into`` gets
    (a reshape of a bound input too, by a copy), the others are copied out; a call without
    them is refused, and a new destination array recaptures."""
    x, w = mx.sym.var("x"), mx.sym.var("w")
    out = mx.sym.Group([mx.sym.relu(x) * 2, mx.sym.Flatten(w), x + 1])
    g = Graph(out._outputs)
    infer_types(g, {"x": "float32", "w": "float32"})
    infer_shapes(g, {"x": (3, 4), "w": (2, 2, 2)})
    exe = compile_graph(g, mx.gpu(0), False, {"data_inputs": ("x",),
                                              "written_outputs": (0, 1)})
    assert exe.program.written == {0: "__out0__", 1: "__out1__"}
    rng = np.random.default_rng(2)
    host = {"x": rng.standard_normal((3, 4)).astype(np.float32),
            "w": rng.standard_normal((2, 2, 2)).astype(np.float32)}
    inputs = {n: to_gpu(a) for n, a in host.items()}
    xp = mx.gpu(0).xp
    for _ in range(3):
        into = {0: xp.zeros((3, 4), np.float32), 1: xp.zeros((2, 4), np.float32)}
        outs = exe.run_into(inputs, into)
        assert outs[:2] == [None, None]
        np.testing.assert_array_equal(to_host(into[0]), np.maximum(host["x"], 0) * 2)
        np.testing.assert_array_equal(to_host(into[1]), host["w"].reshape(2, 4))
        np.testing.assert_array_equal(to_host(outs[2]), host["x"] + 1)
    assert exe.captures == 3  # new destination arrays each call
    with pytest.raises(mx.MXNetError, match=r"outputs \[0, 1\] are written straight"):
        exe(inputs)


@pytest.mark.parametrize("batch", [1, 16])
def test_float16_dense_layers_are_kernels_and_gemms_summing_in_float32(batch):
    """A float16 MLP: at batch 1 three GEMV kernels (float32 sums, bias and relu in float32,
    rounded once), at batch 16 cuBLAS GemmEx with CUBLAS_COMPUTE_32F; no eager step, one
    captured segment, equal to cpu (whose float16 dot also sums in float32) within 2e-3."""
    nets = {}
    for ctx in (mx.cpu(), mx.gpu(0)):
        mx.random.seed(0)
        net = nets[ctx.device_type] = seed_mlp(ctx)
        net.cast("float16")
        net.hybridize()
    x = np.random.default_rng(1).standard_normal((batch, 20)).astype(np.float16)
    want = nets["cpu"](mx.nd.array(x, dtype="float16")).asnumpy()
    for _ in range(2):  # eager first call, then the replay
        got = nets["gpu"](mx.nd.array(x, ctx=mx.gpu(0), dtype="float16")).asnumpy()
        assert got.dtype == np.float16
        np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3,
                                   atol=2e-3)
    program = nets["gpu"]._last_trace.executable.program
    kinds = {type(s).__name__ for s in program.steps}
    assert "Eager" not in kinds and [k for k, _ in program.segments()] == ["graph"]
    assert ("Gemm" in kinds) == (batch > 1)


def test_float16_batch_dot_is_a_strided_batched_gemm_ex():
    a, b = mx.sym.var("a"), mx.sym.var("b")
    out = mx.sym.batch_dot(a, b, transpose_b=True)
    exe = check_against_cpu(out, {"a": (3, 4, 5), "b": (3, 6, 5)}, ["Gemm"], rtol=2e-3,
                            atol=2e-3, dtype="float16")
    gemm = next(s for s in exe.program.steps if isinstance(s, Gemm))
    assert (gemm.dtype, gemm.batch) == ("float16", 3)


@pytest.mark.parametrize("kernel,stride,pad,groups,channels", [
    ((3, 3), (2, 2), (1, 1), 1, 3),     # im2col + GemmStridedBatchedEx + bias
    ((3, 3), (1, 1), (1, 1), 6, 6),     # depthwise: direct kernel, float accumulation
])
def test_float16_convolution_and_its_gradients_match_cpu(kernel, stride, pad, groups, channels):
    """float16 convolution, its data gradient (Deconvolution: GEMM + col2im) and its weight
    gradient (im2col + GEMM): kernels and GemmEx summing in float32, no eager step."""
    x, w, b, g = (mx.sym.var(n) for n in ("x", "w", "b", "g"))
    geom = {"kernel": kernel, "stride": stride, "pad": pad, "num_group": groups}
    conv = mx.sym.Convolution(x, w, b, num_filter=6, **geom)
    parts = [conv]
    if groups == 1:
        parts += [mx.sym.Deconvolution(g, w, num_filter=channels, adj=(1, 1), no_bias=True,
                                       **geom),
                  mx.sym._backward_Convolution_weight(g, x, num_filter=6, **geom)]
    shapes = {"x": (2, channels, 6, 6), "w": (6, channels // groups, *kernel), "b": (6,),
              "g": (2, 6, *((3, 3) if stride == (2, 2) else (6, 6)))}
    exe = check_against_cpu(mx.sym.Group(parts), shapes, ["Launch"], rtol=3e-3, atol=3e-3,
                            dtype="float16")
    assert all(s.dtype == "float16" for s in exe.program.steps if isinstance(s, Gemm))


def test_float16_casts_run_inside_the_fused_kernel_bit_for_bit():
    """``absorb_casts``: Cast(float16 -> float32), float32 arithmetic, Cast back is one kernel
    (the Cast to float16 rounds in the kernel), equal to cpu bit for bit on + and *; a
    mid-chain rounding to float16 is kept (the next group sees the rounded value)."""
    x = mx.sym.var("x")
    wide = mx.sym.Cast(x, dtype="float32") * 1.7 + 0.3
    narrow = mx.sym.Cast(wide, dtype="float16")
    out = mx.sym.Cast(mx.sym.Cast(narrow, dtype="float32") * 3.1 - 1.3, dtype="float16")
    cpu_exe, gpu_exe = compile_both(out, {"x": (4, 64)}, dtype="float16")
    steps = gpu_exe.program.steps
    assert [type(s).__name__ for s in steps] == ["Launch", "Launch"], str(gpu_exe)
    assert "Cast" not in {n.op.name for n in gpu_exe.graph.nodes if not n.is_variable}
    host = np.random.default_rng(3).uniform(-4, 4, (4, 64)).astype(np.float16)
    # cpu rounds each product and sum to float32; a GPU fuses x * 1.7 + 0.3 and n * 3.1 - 1.3
    # into FMAs (one rounding each): modelled in float64, exact for a half times a float32
    fused = gpu_fuses_multiply_add()
    model = {f: _casts_model(host, f) for f in (False, True)}
    np.testing.assert_array_equal(cpu_exe({"x": host})[0], model[False])
    for _ in range(2):
        got = to_host(gpu_exe({"x": to_gpu(host)})[0])
        np.testing.assert_array_equal(got, model[fused])


def gpu_fuses_multiply_add():
    """True where gpu(0)'s kernels contract ``a * b + c`` (a GPU; the virtual GPU in its
    default rounding mode on a CPU with FMA)."""
    if not getattr(mx.gpu(0).xp, "is_virtual", False):
        return True
    from hybridgpu.vgpu import rounding

    return rounding.mode() == "gpu" and rounding.fma_flags() is not None


def _casts_model(x, fused):
    def muladd(a, b, c):
        b, c = np.float32(b), np.float32(c)
        if fused:
            return (a.astype(np.float64) * np.float64(b) + np.float64(c)).astype(np.float32)
        return a.astype(np.float32) * b + c

    narrow = muladd(x, 1.7, 0.3).astype(np.float16)
    return muladd(narrow, 3.1, -1.3).astype(np.float16)


def test_float16_batchnorm_inference_is_one_kernel_with_its_casts():
    data, gamma, beta, mean, var = (mx.sym.var(n) for n in ("x", "g", "b", "m", "v"))
    out = mx.sym.relu(mx.sym.BatchNorm(data, gamma, beta, mean, var, fix_gamma=False))
    g = Graph(out._outputs)
    infer_types(g, {"x": "float16", **dict.fromkeys("gbmv", "float32")})
    infer_shapes(g, {"x": (2, 3, 4, 4)})
    exe = compile_graph(g, mx.gpu(0), False, {"data_inputs": ("x",)})
    ops = [n.op.name for n in exe.graph.nodes if not n.is_variable]
    members = [m.op.name for n in exe.graph.nodes if not n.is_variable
               and n.op.name == "_fused" for m in n.op.members]
    assert members.count("Cast") == 2 and "Cast" not in ops
    rng = np.random.default_rng(4)
    inputs = {"x": rng.standard_normal((2, 3, 4, 4)).astype(np.float16),
              "g": rng.uniform(0.5, 2, 3).astype(np.float32),
              "b": rng.standard_normal(3).astype(np.float32),
              "m": rng.standard_normal(3).astype(np.float32),
              "v": rng.uniform(0.5, 2, 3).astype(np.float32)}
    want = compile_graph(g, mx.cpu(), False)(dict(inputs))[0]
    got = to_host(exe({k: to_gpu(v) for k, v in inputs.items()})[0])
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3,
                               atol=2e-3)


def test_a_cast_between_two_groups_is_absorbed_once():
    """Group A (float32) -> Cast to float16 -> group B (float16): A takes the Cast as its
    output cast and B reads A's float16 output (B must not take the same Cast again, which
    would bring A's old form back into the graph)."""
    x = mx.sym.var("x")
    a = mx.sym.Cast(x, dtype="float32") * 2.0 + 1.0
    b = (mx.sym.Cast(a, dtype="float16") + 0.5) * 3.0
    cpu_exe, gpu_exe = compile_both(b, {"x": (8, 32)}, dtype="float16")
    nodes = [n for n in gpu_exe.graph.nodes if not n.is_variable]
    assert [n.op.name for n in nodes] == ["_fused", "_fused"], str(gpu_exe.graph)
    assert [m.op.name for m in nodes[0].op.members].count("Cast") == 2
    assert len(gpu_exe.program.steps) == 2
    host = np.random.default_rng(5).uniform(-8, 8, (8, 32)).astype(np.float16)
    # B is a float16 group: the gpu computes its members in float and rounds once, the cpu
    # rounds after each member (as before this pass), hence a tolerance
    np.testing.assert_allclose(to_host(gpu_exe({"x": to_gpu(host)})[0]).astype(np.float32),
                               cpu_exe({"x": host})[0].astype(np.float32), rtol=2e-3)
