"""``gluon.TrainStep``: a whole training step as one program (cpu: one generated NumPy
program, then ``trainer.step``), on gpu as one captured CUDA graph with the fused update,
whose learning rates, ``1 / batch_size`` and step counts are read from device memory.

The reference is always the loop it stands for (``record``, forward, loss, ``backward``,
``trainer.step``). On cpu the compiled step is bitwise equal to it. On gpu the captured step
is bitwise equal to the same program updated through ``trainer.step`` with per-parameter
updates (``fused_updates = False``), and equal within rtol 1e-5 to cpu.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import autograd, gluon, nd
from hybridgpu.gluon.trainer import StaleGradientError

RULES = {
    "sgd_mom": ("sgd", {"learning_rate": 0.1, "momentum": 0.9, "wd": 1e-3}),
    "nag": ("nag", {"learning_rate": 0.05, "momentum": 0.8}),
    "adam": ("adam", {"learning_rate": 0.01, "wd": 1e-3}),
    "rmsprop": ("rmsprop", {"learning_rate": 0.01, "clip_gradient": 0.5}),
    "adagrad": ("adagrad", {"learning_rate": 0.1}),
}


class TwoInputs(gluon.HybridBlock):
    """A net of two inputs: Dense on the first plus the second."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.fc = gluon.nn.Dense(3, in_units=4)

    def hybrid_forward(self, F, x, shift):
        return F.relu(self.fc(x)) + shift


def _net(ctx, batch_norm=False, dropout=0.0, seed=3):
    mx.random.seed(seed)
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Dense(6, activation="relu", in_units=5))
        if batch_norm:
            net.add(gluon.nn.BatchNorm(in_channels=6))
        if dropout:
            net.add(gluon.nn.Dropout(dropout))
        net.add(gluon.nn.Dense(3, in_units=6))
    net.initialize(mx.init.Xavier(), ctx=ctx)
    net.hybridize()
    return net


def _batches(ctx, count=4, batch=4, seed=0):
    rng = np.random.RandomState(seed)
    return [(nd.array(rng.randn(batch, 5), ctx=ctx), nd.array(rng.randint(0, 3, batch), ctx=ctx))
            for _ in range(count)]


def _trainer(net, rule, fused=True, **extra):
    name, kwargs = RULES[rule]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trainer = gluon.Trainer(net.collect_params(), name, {**kwargs, **extra})
    trainer._optimizer.fused_updates = fused
    return trainer


def _loop(net, trainer, batches, loss_fn):
    losses = []
    for x, y in batches:
        with autograd.record():
            loss = loss_fn(net(x), y)
        loss.backward()
        trainer.step(x.shape[0])
        losses.append(loss.asnumpy())
    return losses


def _stepped(step, batches):
    losses, modes = [], []
    for x, y in batches:
        losses.append(step(x, y).asnumpy())
        modes.append(step.mode)
    return losses, modes


def _params(net):
    return {k[len(net.prefix):]: v.data().asnumpy() for k, v in net.collect_params().items()}


def _assert_params(got, want, rtol=0.0, atol=0.0):
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=rtol, atol=atol, err_msg=key)


# -- cpu: the compiled step ------------------------------------------------------------------

@pytest.mark.parametrize("batch_norm", [False, True])
@pytest.mark.parametrize("rule", sorted(RULES))
def test_compiled_step_is_the_loop_bitwise(rule, batch_norm):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    ref = _net(mx.cpu(), batch_norm)
    want = _loop(ref, _trainer(ref, rule), _batches(mx.cpu()), loss_fn)
    net = _net(mx.cpu(), batch_norm)
    step = gluon.TrainStep(net, loss_fn, _trainer(net, rule))
    got, modes = _stepped(step, _batches(mx.cpu()))
    assert modes == ["compiled"] * 4, step.reason
    _assert_params(_params(net), _params(ref))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _outputs_both_ways(ctx, rule="adam"):
    """The (loss, net output) pairs of the loop and of ``TrainStep(return_outputs=True)``."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    ref, net = _net(ctx, batch_norm=True), _net(ctx, batch_norm=True)
    trainer = _trainer(ref, rule)
    want = []
    for x, y in _batches(ctx, 3):
        with autograd.record():
            out = ref(x)
            loss = loss_fn(out, y)
        loss.backward()
        trainer.step(x.shape[0])
        want.append((loss.asnumpy(), out.asnumpy()))
    step = gluon.TrainStep(net, loss_fn, _trainer(net, rule), return_outputs=True)
    got = [tuple(a.asnumpy() for a in step(x, y)) for x, y in _batches(ctx, 3)]
    return got, want, step


def test_return_outputs_gives_the_nets_output_for_metrics():
    got, want, step = _outputs_both_ways(mx.cpu())
    assert step.mode == "compiled"
    for (g_loss, g_out), (w_loss, w_out) in zip(got, want):
        np.testing.assert_array_equal(g_loss, w_loss)
        np.testing.assert_array_equal(g_out, w_out)
    step.net.hybridize(active=False)  # the loop as written gives the pair too
    loss, out = step(*_batches(mx.cpu(), 1)[0])
    assert step.mode == "imperative" and out.shape == (4, 3) and loss.shape == (4,)


def test_optimizer_bookkeeping_matches_the_loop():
    loss_fn = gluon.loss.L2Loss()
    nets = [_net(mx.cpu()) for _ in range(2)]
    trainers = [_trainer(n, "adam") for n in nets]
    batches = [(x, nd.one_hot(y, 3)) for x, y in _batches(mx.cpu())]
    _loop(nets[0], trainers[0], batches, loss_fn)
    step = gluon.TrainStep(nets[1], loss_fn, trainers[1])
    for x, y in batches:
        step(x, y)
    a, b = trainers[0]._optimizer, trainers[1]._optimizer
    assert (a.num_update, a._index_update_count) == (b.num_update, b._index_update_count)
    assert b.rescale_grad == pytest.approx(1 / 4)


def test_batch_size_argument_and_default():
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    ref = _net(mx.cpu())
    trainer = _trainer(ref, "sgd_mom")
    for x, y in _batches(mx.cpu(), 2):
        with autograd.record():
            loss = loss_fn(ref(x), y)
        loss.backward()
        trainer.step(10)
    net = _net(mx.cpu())
    step = gluon.TrainStep(net, loss_fn, _trainer(net, "sgd_mom"), batch_size=7)
    first, second = _batches(mx.cpu(), 2)
    step(*first, batch_size=10)
    step.batch_size = 10
    step(*second)
    _assert_params(_params(net), _params(ref))


def test_several_inputs_and_shapes_compile_once_each():
    ctx = mx.cpu()
    rng = np.random.RandomState(1)

    def run(use_step):
        mx.random.seed(5)
        net = TwoInputs()
        net.initialize(ctx=ctx)
        net.hybridize()
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        step = gluon.TrainStep(net, gluon.loss.L1Loss(), trainer)
        for batch in (2, 3, 2):
            data = (nd.array(rng.randn(batch, 4)), nd.array(rng.randn(batch, 3)))
            label = nd.array(rng.randn(batch, 3))
            if use_step:
                step(data, label)
                assert step.mode == "compiled", step.reason
            else:
                with autograd.record():
                    loss = gluon.loss.L1Loss()(net(*data), label)
                loss.backward()
                trainer.step(batch)
        return net, step

    rng = np.random.RandomState(1)
    ref, _ = run(False)
    rng = np.random.RandomState(1)
    net, step = run(True)
    _assert_params(_params(net), _params(ref))
    assert len(step._programs) == 2  # batch 2 and 3; the third call reused the first


def _reason_after(step, *args):
    step(*args)
    return step.mode, step.reason


def test_fallbacks_say_why():
    ctx = mx.cpu()
    x, y = _batches(ctx, 1)[0]
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    plain = gluon.nn.Dense(3, in_units=5)
    plain.initialize()
    step = gluon.TrainStep(plain, loss_fn, gluon.Trainer(plain.collect_params(), "sgd"))
    assert _reason_after(step, x, y) == ("imperative",
                                         "the net is not hybridized (call net.hybridize())")
    net = _net(ctx)
    step = gluon.TrainStep(net, lambda out, label: loss_fn(out, label),
                           gluon.Trainer(net.collect_params(), "sgd"))
    assert _reason_after(step, x, y) == ("imperative",
                                         "the loss is a function, not a HybridBlock")
    step = gluon.TrainStep(net, loss_fn, gluon.Trainer(net.collect_params(), "sgd"))
    with autograd.record():
        assert _reason_after(step, x, y) == ("imperative", "autograd is already recording")
    net.collect_params().setattr("grad_req", "add")
    mode, reason = _reason_after(step, x, y)
    assert mode == "imperative" and "grad_req='add'" in reason


def test_deferred_initialization_runs_the_first_step_imperatively():
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(4, activation="relu"), gluon.nn.Dense(3))
    net.initialize()
    net.hybridize()
    step = gluon.TrainStep(net, gluon.loss.SoftmaxCrossEntropyLoss(),
                           gluon.Trainer(net.collect_params(), "sgd"))
    x, y = _batches(mx.cpu(), 1)[0]
    assert _reason_after(step, x, y)[0] == "imperative"
    assert "is not initialized yet" in step.reason
    assert _reason_after(step, x, y) == ("compiled", step.reason)


def test_a_layer_added_later_is_trained_too():
    net = _net(mx.cpu())
    step = gluon.TrainStep(net, gluon.loss.L2Loss(), gluon.Trainer(net.collect_params(), "sgd"))
    x, y = _batches(mx.cpu(), 1)[0]
    step(x, nd.zeros((4, 3)))
    net.add(gluon.nn.Dense(2, in_units=3))   # clears the net's traces: collected again
    net[-1].initialize()
    step.trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    before = net[-1].weight.data().asnumpy()
    step(x, nd.zeros((4, 2)))
    assert step.mode == "compiled", step.reason
    assert not np.array_equal(before, net[-1].weight.data().asnumpy())


def test_several_contexts_run_the_loop():
    ctxs = [mx.cpu(0), mx.cpu(1)]
    net = _net(ctxs)
    step = gluon.TrainStep(net, gluon.loss.SoftmaxCrossEntropyLoss(),
                           gluon.Trainer(net.collect_params(), "sgd"))
    x, y = _batches(mx.cpu(0), 1)[0]
    with pytest.raises(StaleGradientError):  # the loop too: cpu(1)'s copies got no gradient
        step(x, y)
    assert step.mode == "imperative" and "has copies on" in step.reason
    step.ignore_stale_grad = True
    step(x, y)


def test_a_trainer_parameter_the_loss_does_not_reach_is_stale():
    net = _net(mx.cpu())
    extra = gluon.Parameter("unused", shape=(2,))
    extra.initialize()
    params = [*net.collect_params().values(), extra]
    step = gluon.TrainStep(net, gluon.loss.SoftmaxCrossEntropyLoss(),
                           gluon.Trainer(params, "sgd"))
    x, y = _batches(mx.cpu(), 1)[0]
    with pytest.raises(StaleGradientError, match="unused"):
        step(x, y)
    step.ignore_stale_grad = True
    before = net[0].weight.data().asnumpy()
    step(x, y)
    assert step.mode == "compiled"
    assert not np.array_equal(before, net[0].weight.data().asnumpy())


def test_bad_inputs_are_named():
    net = _net(mx.cpu())
    step = gluon.TrainStep(net, gluon.loss.L2Loss(), gluon.Trainer(net.collect_params(), "sgd"))
    with pytest.raises(TypeError, match="input 1 is a ndarray, not an NDArray"):
        step(nd.ones((2, 5)), np.ones((2, 3)))


def test_dropout_draws_a_new_mask_every_step():
    net = _net(mx.cpu(), dropout=0.5)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.0})
    step = gluon.TrainStep(net, gluon.loss.L2Loss(), trainer)
    x = nd.ones((8, 5))
    y = nd.zeros((8, 3))
    losses = [step(x, y).asnumpy() for _ in range(3)]
    assert step.mode == "compiled"
    assert not np.array_equal(losses[1], losses[2])


# -- gpu: the captured step ------------------------------------------------------------------

def _twin_steps(ctx, rule):
    """Two nets with the same weights: a TrainStep that captures its fused update, and one
    that updates per parameter through ``trainer.step`` (the reference)."""
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    nets = [_net(ctx) for _ in range(2)]
    steps = [gluon.TrainStep(n, loss_fn, _trainer(n, rule, fused))
             for n, fused in zip(nets, (True, False))]
    return nets, steps


def _captures(step):
    return [p.executable.captures for p in step._programs.values()]


@pytest.mark.gpu
@pytest.mark.parametrize("rule", sorted(RULES))
def test_captured_step_equals_the_uncaptured_program_bitwise(gpu_available, rule):
    ctx = gpu_available
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    nets = [_net(ctx, batch_norm=True) for _ in range(2)]
    captured = gluon.TrainStep(nets[0], loss_fn, _trainer(nets[0], rule))
    reference = gluon.TrainStep(nets[1], loss_fn, _trainer(nets[1], rule, fused=False))
    got, modes = _stepped(captured, _batches(ctx, 5))
    want, ref_modes = _stepped(reference, _batches(ctx, 5))
    assert modes == ["captured"] * 5 and ref_modes == ["compiled"] * 5
    assert reference.reason.startswith("fused optimizer updates are off")
    assert _captures(captured) == [1]  # captured once, replayed four times
    _assert_params(_params(nets[0]), _params(nets[1]))
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)


def _flat_states(trainer):
    out = []
    stack = list(trainer._updaters[0].states.values())
    while stack:
        item = stack.pop(0)
        if isinstance(item, tuple):
            stack[:0] = list(item)
        elif item is not None:
            out.append(item.asnumpy())
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("rule", ["sgd_mom", "adam", "rmsprop"])
def test_float16_multi_precision_step_is_captured_and_equals_the_reference(gpu_available,
                                                                          rule):
    """``net.cast('float16')`` with ``multi_precision=True``: the captured update runs the
    rule in float32 on the masters, reading the float16 gradients and writing the float16
    weights (kernel ``float16_mp``), bitwise equal to the per-parameter path."""
    ctx = gpu_available
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    runs = []
    for fused in (True, False):
        net = _net(ctx)
        net.cast("float16")
        step = gluon.TrainStep(net, loss_fn, _trainer(net, rule, fused, multi_precision=True))
        for x, y in _batches(ctx, 4):
            step(x.astype("float16"), y.astype("float16"))
        runs.append((net, step))
    (net, step), (ref_net, ref) = runs
    assert step.mode == "captured" and ref.mode == "compiled"
    _assert_params(_params(net), _params(ref_net))
    for got, want in zip(_flat_states(step.trainer), _flat_states(ref.trainer)):
        np.testing.assert_array_equal(got, want)
    assert net[0].weight.data().dtype == np.float16


@pytest.mark.gpu
def test_captured_step_is_one_graph_and_matches_cpu(gpu_available):
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    gpu_net, cpu_net = _net(gpu_available), _net(mx.cpu())
    step = gluon.TrainStep(gpu_net, loss_fn, _trainer(gpu_net, "sgd_mom"))
    _stepped(step, _batches(gpu_available))
    _loop(cpu_net, _trainer(cpu_net, "sgd_mom"), _batches(mx.cpu()), loss_fn)
    state = next(iter(step._programs.values())).executable._state
    assert [kind for kind, _, graph in state.graphs if graph is not None] == ["graph"]
    assert len(state.graphs) == 1  # no eager step: forward, loss, backward, update
    _assert_params(_params(gpu_net), _params(cpu_net), rtol=1e-5, atol=1e-6)


def _schedule(step_or_loop, trainer, batches):
    """Steps with the learning rate set between them and batch sizes given explicitly."""
    for n, (x, y) in enumerate(batches):
        trainer.set_learning_rate(0.1 / (n + 1))
        step_or_loop(x, y, 4 + n)


@pytest.mark.gpu
def test_learning_rate_and_batch_size_changes_reach_the_replay(gpu_available):
    ctx = gpu_available
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    nets = [_net(ctx) for _ in range(2)]
    trainers = [_trainer(n, "adam") for n in nets]
    step = gluon.TrainStep(nets[0], loss_fn, trainers[0])
    _schedule(lambda x, y, b: step(x, y, batch_size=b), trainers[0], _batches(ctx, 5))
    assert step.mode == "captured" and _captures(step) == [1]

    def loop(x, y, batch):
        with autograd.record():
            loss = loss_fn(nets[1](x), y)
        loss.backward()
        trainers[1].step(batch)

    _schedule(loop, trainers[1], _batches(ctx, 5))
    _assert_params(_params(nets[0]), _params(nets[1]), rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_a_scheduler_and_clip_changes_are_seen(gpu_available):
    ctx = gpu_available
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    nets = [_net(ctx) for _ in range(2)]
    steps = []
    for net, fused in zip(nets, (True, False)):
        schedule = mx.lr_scheduler.FactorScheduler(step=1, factor=0.5, base_lr=0.2)
        trainer = _trainer(net, "sgd_mom", fused, lr_scheduler=schedule)
        steps.append(gluon.TrainStep(net, loss_fn, trainer))
    for n, batch in enumerate(_batches(ctx, 6)):
        for step in steps:
            step.trainer._optimizer.clip_gradient = 0.05 if n >= 3 else None
            step(*batch)
    assert steps[0].mode == "captured"
    assert _captures(steps[0]) == [2]  # turning clipping on changes the kernel's flag
    _assert_params(_params(nets[0]), _params(nets[1]))


@pytest.mark.gpu
def test_replaced_parameter_arrays_recapture(gpu_available):
    ctx = gpu_available
    nets, steps = _twin_steps(ctx, "sgd_mom")
    batches = _batches(ctx, 4)
    for n, batch in enumerate(batches):
        if n == 2:
            for net in nets:  # new data and gradient arrays, same values
                net.collect_params().reset_ctx(ctx)
        for step in steps:
            step(*batch)
    assert steps[0].mode == "captured" and _captures(steps[0]) == [2]
    _assert_params(_params(nets[0]), _params(nets[1]))


@pytest.mark.gpu
def test_captured_step_returns_the_nets_output(gpu_available):
    got, want, step = _outputs_both_ways(gpu_available, "sgd_mom")  # Adam magnifies ulps
    assert step.mode == "captured"
    for (g_loss, g_out), (w_loss, w_out) in zip(got, want):
        np.testing.assert_allclose(g_loss, w_loss, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(g_out, w_out, rtol=1e-5, atol=1e-6)


@pytest.mark.gpu
def test_gpu_fallbacks_say_why(gpu_available):
    ctx = gpu_available
    x, y = _batches(ctx, 1)[0]
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    net = _net(ctx)
    net.hybridize(cuda_graph=False)
    step = gluon.TrainStep(net, loss_fn, gluon.Trainer(net.collect_params(), "sgd"))
    assert _reason_after(step, x, y)[0] == "compiled" and "cuda_graph=False" in step.reason
    net = _net(ctx)
    step = gluon.TrainStep(net, loss_fn, gluon.Trainer(net.collect_params(), "signum"))
    assert _reason_after(step, x, y) == (
        "compiled", "weight 0 cannot go through a fused gpu kernel (Signum has no fused kernel)")
    step = gluon.TrainStep(net, loss_fn, gluon.Trainer(net.collect_params(), "sgd",
                                                       kvstore=mx.kv.create("local")))
    assert _reason_after(step, x, y)[0] == "compiled" and "kvstore" in step.reason


@pytest.mark.gpu
def test_captured_dropout_draws_a_new_mask_every_replay(gpu_available):
    net = _net(gpu_available, dropout=0.5)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.0})
    step = gluon.TrainStep(net, gluon.loss.L2Loss(), trainer)
    x, y = nd.ones((8, 5), ctx=gpu_available), nd.zeros((8, 3), ctx=gpu_available)
    losses = [step(x, y).asnumpy() for _ in range(3)]
    assert step.mode == "captured"
    assert not np.array_equal(losses[1], losses[2])


@pytest.mark.gpu
def test_loaded_optimizer_states_are_what_the_replay_updates(gpu_available, tmp_path):
    ctx = gpu_available
    nets, steps = _twin_steps(ctx, "adam")
    batches = _batches(ctx, 5)
    for n, batch in enumerate(batches):
        for k, step in enumerate(steps):
            if n == 2:
                step.trainer.save_states(str(tmp_path / f"{k}.states"))
            if n == 4:  # back to the moments and counts of step 2, into new state arrays
                step.trainer.load_states(str(tmp_path / f"{k}.states"))
            step(*batch)
    assert steps[0].mode == "captured" and _captures(steps[0]) == [2]
    _assert_params(_params(nets[0]), _params(nets[1]))
