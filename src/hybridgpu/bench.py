"""The main job: ``python -m hybridgpu bench`` times each model imperatively and hybridized,
beside the same math written by hand in NumPy/CuPy (the ``by hand`` column: one call per op
into buffers allocated once, ``out=``, constants folded by hand, no framework), on gpu(0) if
there is one, else cpu(0), and prints a table that says what it measured and where.

Workloads: the example MLP (Dense 256 relu, Dense 128 relu, Dense 2 on 512 features) at batch 1
and 64; a chain of 8 elementwise ops (2^24 float32 on gpu, 2^20 on cpu); resnet18_v1 at batch 1
(224x224 on gpu, 64x64 on cpu so that the cpu run stays short); and one training step of the
MLP at batch 1 (``mlp-train``: the Gluon loop before ``hybridize()`` vs ``gluon.TrainStep`` on
the hybridized net, one CUDA graph on gpu). Each time is the median, over
``--repeat`` timed repeats, of the mean time of many calls (after a warm-up); the min and max of
the repeats show the spread. On cpu the BLAS thread count is fixed with threadpoolctl (default 1:
on a small shared machine more threads oversubscribe the cores and the numbers swing).

Example:
    >>> rows = run_table(quick=True, workloads=[("mlp", 1)], progress=False)
    >>> rows[0]["workload"], rows[0]["hybridized_us"] > 0, len(rows[0]["hybridized_spread_us"])
    ('mlp-batch1', True, 2)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time

import numpy as np

from . import autograd, gluon, nd
from .bench_env import blas_limit, device_choice, environment
from .context import cpu

__all__ = ["run_table", "format_table", "main", "MODELS", "measure", "loop_step"]


def _sync(ctx):
    if ctx.is_gpu:
        nd.waitall()


def measure(fn, ctx, repeat=7, quick=False):
    """``(median, min, max)`` seconds per call of ``fn``: each of ``repeat`` timed repeats runs
    ``fn`` many times (enough for ~0.2 s, ~0.02 s when ``quick``) after a warm-up call; on gpu
    each repeat ends with a device sync."""
    fn()
    _sync(ctx)
    start = time.perf_counter()
    fn()
    _sync(ctx)
    single = max(time.perf_counter() - start, 1e-7)
    number = max(1, min(10000, int((0.02 if quick else 0.2) / single)))
    samples = []
    for _ in range(max(1, repeat)):
        start = time.perf_counter()
        for _ in range(number):
            fn()
        _sync(ctx)
        samples.append((time.perf_counter() - start) / number)
    return statistics.median(samples), min(samples), max(samples)


def seed_mlp():
    """The example MLP of the README and the benchmarks: Dense(256, relu), Dense(128, relu),
    Dense(2) (on 512 features)."""
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(256, activation="relu"), gluon.nn.Dense(128, activation="relu"),
                gluon.nn.Dense(2))
    return net


def _mlp(ctx, batch):
    net = seed_mlp()
    net.initialize(ctx=ctx)
    x = nd.array(np.random.RandomState(0).randn(batch, 512).astype(np.float32), ctx=ctx)
    net(x)
    raw = [(d.weight.data(ctx).handle, d.bias.data(ctx).handle) for d in net]
    return net, x, _mlp_by_hand(ctx.xp, raw, x.handle)


def _mlp_by_hand(xp, params, x):
    """The MLP's forward by hand: per layer one GEMM, one bias add and one relu, each writing
    into a buffer allocated here once (``out=``); returns its output buffer."""
    bufs = [xp.empty((x.shape[0], w.shape[0]), dtype=x.dtype) for w, _ in params]
    last = len(params) - 1

    def by_hand():
        h = x
        for i, ((w, b), out) in enumerate(zip(params, bufs)):
            xp.dot(h, w.T, out=out)
            xp.add(out, b, out=out)
            if i < last:
                xp.maximum(out, 0, out=out)
            h = out
        return h

    return by_hand


class _Chain8(gluon.HybridBlock):
    """Eight elementwise ops: the fusion benchmark."""

    def hybrid_forward(self, F, x):
        y = F.relu(x * 2.0 + 1.0 - 1.5)
        y = F.exp(y * -1.0) * 3.0
        return F.sqrt(y + x * x)


def _chain(ctx, batch):
    n = (1 << 24) if ctx.is_gpu else (1 << 20)
    x = nd.array(np.random.RandomState(0).rand(n).astype(np.float32), ctx=ctx)
    return _Chain8(), x, _chain_by_hand(ctx.xp, x.handle)


def _chain_by_hand(xp, x):
    """``_Chain8`` by hand: ``sqrt(3 exp(-relu(2x - 0.5)) + x^2)`` with the scalars folded,
    into two buffers allocated here once (``out=``); returns the output buffer."""
    y, sq = xp.empty_like(x), xp.empty_like(x)

    def by_hand():
        xp.multiply(x, 2.0, out=y)
        xp.subtract(y, 0.5, out=y)
        xp.maximum(y, 0, out=y)
        xp.negative(y, out=y)
        xp.exp(y, out=y)
        xp.multiply(y, 3.0, out=y)
        xp.multiply(x, x, out=sq)
        xp.add(y, sq, out=y)
        return xp.sqrt(y, out=y)

    return by_hand


def _resnet(ctx, batch):
    from .gluon.model_zoo import vision

    size = 224 if ctx.is_gpu else 64
    net = vision.resnet18_v1()
    net.initialize(ctx=ctx)
    x = nd.array(np.random.RandomState(0).rand(batch, 3, size, size).astype(np.float32),
                 ctx=ctx)
    return net, x, None


def _momentum_sgd_by_hand(xp, params, x, label, lr=1e-3, momentum=0.9):
    """One training step of the MLP by hand in ``xp`` (NumPy or CuPy): forward, softmax
    cross-entropy's gradient, backward, SGD with momentum over ``params`` (``[(weight,
    bias)]`` raw arrays, updated in place). Every value has a buffer allocated here once and
    each op writes into it (``out=``)."""
    batch = x.shape[0]
    acts = [x] + [xp.empty((batch, w.shape[0]), dtype=x.dtype) for w, _ in params]
    grads = [xp.empty_like(a) for a in acts]  # grads[i]: the loss gradient at acts[i]
    masks = [xp.empty(a.shape, dtype=bool) for a in acts]
    moms = [(xp.zeros_like(w), xp.zeros_like(b)) for w, b in params]
    steps = [(xp.empty_like(w), xp.empty_like(b)) for w, b in params]
    onehot = xp.eye(params[-1][0].shape[0], dtype=x.dtype)[label.astype(np.int64)]
    row = xp.empty((batch, 1), dtype=x.dtype)
    last = len(params) - 1

    def softmax_grad(z, out):
        xp.max(z, axis=1, keepdims=True, out=row)
        xp.subtract(z, row, out=out)
        xp.exp(out, out=out)
        xp.sum(out, axis=1, keepdims=True, out=row)
        xp.divide(out, row, out=out)
        xp.subtract(out, onehot, out=out)

    def step():
        for i, (w, b) in enumerate(params):
            xp.dot(acts[i], w.T, out=acts[i + 1])
            xp.add(acts[i + 1], b, out=acts[i + 1])
            if i < last:
                xp.maximum(acts[i + 1], 0, out=acts[i + 1])
        softmax_grad(acts[-1], grads[-1])
        for i in range(last, -1, -1):
            (w, b), (gw, gb), g = params[i], steps[i], grads[i + 1]
            xp.dot(g.T, acts[i], out=gw)
            xp.sum(g, axis=0, out=gb)
            if i:
                xp.dot(g, w, out=grads[i])
                xp.greater(acts[i], 0, out=masks[i])
                xp.multiply(grads[i], masks[i], out=grads[i])
            for value, change, mom in ((w, gw, moms[i][0]), (b, gb, moms[i][1])):
                xp.multiply(mom, momentum, out=mom)
                xp.multiply(change, lr / batch, out=change)
                xp.subtract(mom, change, out=mom)
                xp.add(value, mom, out=value)

    step.params = params
    return step


def loop_step(net, loss_fn, trainer):
    """The Gluon training loop's step as a function of ``(x, y)``: record, forward, loss,
    ``backward``, ``trainer.step(len(x))``; returns the loss (what ``gluon.TrainStep`` is
    compared with).

    Example:
        >>> import hybridgpu as mx
        >>> net = gluon.nn.Dense(1, in_units=1)
        >>> net.initialize(mx.init.One())
        >>> step = loop_step(net, gluon.loss.L2Loss(), gluon.Trainer(net.collect_params(), "sgd"))
        >>> step(nd.ones((1, 1)), nd.zeros((1, 1))).asnumpy().tolist()  # 0.5 * (1 + 0) ** 2
        [0.5]
    """
    def step(x, y):
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        return loss

    return step


def _mlp_train(ctx, batch):
    net, x, _ = _mlp(ctx, batch)
    label = nd.array(np.random.RandomState(1).randint(0, 2, batch).astype(np.float32), ctx=ctx)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 1e-3,
                                                          "momentum": 0.9})
    loop = loop_step(net, loss_fn, trainer)

    def imperative():
        loop(x, label)

    def hybridized():
        net.hybridize()
        work.train_step = gluon.TrainStep(net, loss_fn, trainer)
        return lambda: work.train_step(x, label)

    raw = [(d.weight.data(ctx).handle.copy(), d.bias.data(ctx).handle.copy()) for d in net]
    by_hand = _momentum_sgd_by_hand(ctx.xp, raw, x.handle, label.handle)
    work = Workload(imperative, hybridized, by_hand, x.shape)
    work.net = net
    return work


class Workload:
    """What a row times: ``imperative()``, ``hybridized()`` (called once, after the
    imperative timing: returns the hybridized callable), the same math ``by_hand`` (or None)
    and the input's ``shape``."""

    def __init__(self, imperative, hybridized, by_hand, shape):
        self.imperative, self.hybridized, self.by_hand = imperative, hybridized, by_hand
        self.shape = tuple(shape)


def _forward(builder):
    """A builder of ``(net, x, by_hand)`` as a builder of the Workload timing ``net(x)``."""
    def build(ctx, batch):
        net, x, by_hand = builder(ctx, batch)

        def hybridized():
            net.hybridize()
            return lambda: net(x)

        return Workload(lambda: net(x), hybridized, by_hand, x.shape)

    return build


#: model -> (builder(ctx, batch) -> Workload, default batches, row name)
MODELS = {
    "mlp": (_forward(_mlp), (1, 64), "mlp-batch{batch}"),
    "chain8": (_forward(_chain), (None,), "chain8-elementwise"),
    "resnet18_v1": (_forward(_resnet), (1,), "resnet18_v1-batch{batch}"),
    "mlp-train": (_mlp_train, (1,), "mlp-train-batch{batch}"),
}


def workloads_for(models=None, batch=None):
    """``[(model, batch)]`` to run: every model (or those named) at its default batches, or at
    ``batch`` where given (the elementwise chain has no batch)."""
    out = []
    for model in models or MODELS:
        if model not in MODELS:
            raise ValueError(f"unknown model {model!r}; choose from {sorted(MODELS)}")
        defaults = MODELS[model][1]
        batches = defaults if batch is None or defaults == (None,) else (batch,)
        out.extend((model, b) for b in batches)
    return out


def _time_row(model, batch, ctx, repeat, quick):
    build, _, row_name = MODELS[model]
    work = build(ctx, batch or 1)
    t_hand = measure(work.by_hand, ctx, repeat, quick) if work.by_hand else None
    t_imp = measure(work.imperative, ctx, repeat, quick)
    t_hyb = measure(work.hybridized(), ctx, repeat, quick)
    us = 1e6
    return {"workload": row_name.format(batch=batch), "device": str(ctx),
            "input_shape": list(work.shape), "repeats": repeat,
            "by_hand_us": None if t_hand is None else t_hand[0] * us,
            "by_hand_spread_us": None if t_hand is None else [t_hand[1] * us, t_hand[2] * us],
            "imperative_us": t_imp[0] * us, "imperative_spread_us": [t_imp[1] * us, t_imp[2] * us],
            "hybridized_us": t_hyb[0] * us, "hybridized_spread_us": [t_hyb[1] * us, t_hyb[2] * us],
            "speedup": t_imp[0] / t_hyb[0]}


def run_table(ctx=None, quick=False, workloads=None, progress=True, repeat=None):
    """Time each ``(model, batch)`` of ``workloads`` (default: all at their default batches) on
    ``ctx`` (default: gpu(0) if any, else cpu(0)); one dict a row. A workload that raises
    gives a row with its ``error`` instead of times, and the others still run."""
    ctx = ctx or device_choice()[0]
    repeat = repeat or (3 if quick else 7)
    rows = []
    for model, batch in workloads or workloads_for():
        what = MODELS[model][2].format(batch=batch)
        if progress:
            print(f"[bench] {what} on {ctx} ...", file=sys.stderr, flush=True)
        try:
            rows.append(_time_row(model, batch, ctx, repeat, quick))
        except Exception as err:  # one broken workload must not hide the others' numbers
            rows.append({"workload": what, "device": str(ctx),
                         "error": f"{type(err).__name__}: {err}"})
    return rows


def _cell(median, spread):
    if median is None:
        return "-"
    return f"{median:.1f} ({spread[0]:.1f}-{spread[1]:.1f})"


def format_table(rows):
    """The rows as a fixed-width text table, followed by the workloads that failed and what
    each column means."""
    failed = [r for r in rows if "error" in r]
    rows = [r for r in rows if "error" not in r]
    cells = [(r["workload"], "x".join(map(str, r["input_shape"])),
              _cell(r["by_hand_us"], r["by_hand_spread_us"]),
              _cell(r["imperative_us"], r["imperative_spread_us"]),
              _cell(r["hybridized_us"], r["hybridized_spread_us"]), f"{r['speedup']:.2f}x")
             for r in rows]
    head = ("workload", "input", "by hand us", "imperative us", "hybridized us", "speedup")
    widths = [max(len(str(c[i])) for c in [head, *cells]) for i in range(len(head))]
    align = ["<", "<", ">", ">", ">", ">"]
    lines = ["  ".join(f"{v:{a}{w}}" for v, a, w in zip(line, align, widths))
             for line in [head, *cells]]
    lines.insert(1, "-" * len(lines[0]))
    repeats = rows[0]["repeats"] if rows else 0
    lines += [f"{r['workload']}: FAILED, {r['error']}" for r in failed]
    lines += [
        "",
        f"Microseconds per call: median of {repeats} timed repeats (each the mean of many calls "
        "after a warm-up),",
        "min-max of the repeats in brackets. Columns:",
        "  input       the input's shape (resnet18_v1 runs at 64x64 on cpu to stay short, 224x224 "
        "on gpu)",
        "  by hand     the same math written by hand in NumPy (CuPy on gpu), no framework: one "
        "call per op into",
        "              buffers allocated once (out=), scalars folded; what the framework's "
        "overhead is measured",
        "              against on cpu. On gpu it launches one kernel per op, so fused kernels "
        "and a captured",
        "              CUDA graph can beat it ('-': no hand-written version)",
        "  imperative  net(x) before hybridize(): hybrid_forward runs op by op",
        "  hybridized  net(x) after hybridize(): traced once, compiled (cpu: one generated NumPy "
        "function), replayed",
        "  mlp-train   one training step (record, forward, softmax cross-entropy, backward, SGD "
        "momentum):",
        "              imperative = the Gluon loop before hybridize(); hybridized = "
        "gluon.TrainStep on the",
        "              hybridized net (one compiled program; on gpu one CUDA graph with the "
        "update)",
        "  speedup     imperative median / hybridized median (above 1x: hybridizing is faster)",
    ]
    return "\n".join(lines)


def format_header(env):
    """Lines that say what ran where: versions, commit, device and why, BLAS threads."""
    return "\n".join([
        f"hybridgpu {env['hybridgpu']} bench (commit {env['commit']}): python {env['python']}, "
        f"numpy {env['numpy']}, cupy {env['cupy'] or 'not installed'}",
        f"device: {env['device']}: {env['device_reason']}",
        f"BLAS: {env['blas']}",
    ])


def _parser():
    from . import __version__

    parser = argparse.ArgumentParser(
        prog="python -m hybridgpu",
        description="hybridgpu: MXNet 1.x Gluon's hybrid programming model on NumPy and CuPy.")
    parser.add_argument("--version", action="version", version=f"hybridgpu {__version__}")
    sub = parser.add_subparsers(dest="command")
    bench = sub.add_parser(
        "bench", help="time models imperatively and hybridized (the README's first command)",
        description="Time each model imperatively and hybridized beside the same math "
                    "written by hand in NumPy/CuPy.")
    bench.add_argument("--model", action="append", choices=sorted(MODELS),
                       help="model to time (repeatable; default: all)")
    bench.add_argument("--batch", type=int, help="batch size for mlp and resnet18_v1 "
                       "(default: mlp at 1 and 64, resnet18_v1 at 1)")
    bench.add_argument("--repeat", type=int, help="timed repeats per cell (default 7; 3 with "
                       "--quick); the median and min-max are shown")
    bench.add_argument("--threads", type=int, default=1, help="BLAS threads on cpu, fixed with "
                       "threadpoolctl (default 1; 0 leaves the library's own setting)")
    bench.add_argument("--json", help="also save the rows and the environment to this path")
    bench.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    bench.add_argument("--cpu", action="store_true", help="run on cpu(0) even with a GPU")
    sub.add_parser("gpucheck", add_help=False,
                   help="on a GPU machine: run the gpu tests, time the GPU targets beside "
                        "PyTorch, write the JSON (see python -m hybridgpu gpucheck --help)")
    return parser


def main(argv=None):
    """Entry point of ``python -m hybridgpu`` (and of the ``hybridgpu`` script)."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.batch is not None and args.batch < 1 or args.repeat is not None and args.repeat < 1:
        parser.error("--batch and --repeat must be at least 1")
    ctx, reason = (cpu(0), "asked for with --cpu") if args.cpu else device_choice()
    with contextlib.ExitStack() as stack:
        blas = stack.enter_context(blas_limit(args.threads))
        env = environment(ctx, reason, blas)
        print(format_header(env), flush=True)
        rows = run_table(ctx, quick=args.quick, repeat=args.repeat,
                         workloads=workloads_for(args.model, args.batch))
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({**env, "rows": rows}, f, indent=2)
    return 1 if any("error" in r for r in rows) else 0
