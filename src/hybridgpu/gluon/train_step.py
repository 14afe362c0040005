"""``gluon.TrainStep``: a whole training step (forward, loss, backward, optimizer update) as
one compiled program, and on gpu as one CUDA graph replayed each step.

``step = TrainStep(net, loss_fn, trainer)`` then ``loss = step(data, label)`` does what the
usual Gluon loop does, with the same results::

    with autograd.record():
        loss = loss_fn(net(data), label)
    loss.backward()
    trainer.step(data.shape[0])

How a step runs (``step.mode`` says how the last one ran; ``step.reason`` why it was not
captured):

* ``"captured"`` (gpu): the forward, the loss, the backward (gradients copied into each
  ``Parameter.grad()``) and the fused optimizer update are one program whose launches are
  captured into one CUDA graph on the first call and replayed after that. What changes from
  step to step is read from device memory the graph reads: the staged batch, and one small
  buffer of the update's scalars (``1 / batch_size``, every weight's learning rate after the
  scheduler and ``lr_mult``, its weight decay and Adam's bias correction from its own step
  count), written before each replay. So ``trainer.set_learning_rate``, an ``lr_scheduler``
  and Adam's step counts are seen by the replay, and a new batch size is a new ``rescale``.
  The optimizer's Python bookkeeping (``num_update``, per-weight counts) advances as with
  ``trainer.step``, so ``save_states`` and schedulers see the same values.
* ``"compiled"``: the forward, loss and backward are one compiled program (the generated
  NumPy program on cpu, a captured GPU program on gpu), then ``trainer.step`` updates.
* ``"imperative"``: the loop above, as written.

What makes a step fall back (``step.reason`` names it):

* to ``"imperative"``: ``net`` is not a hybridized ``HybridBlock`` or ``loss_fn`` is not a
  ``HybridBlock``; parameters still waiting for deferred initialization (the first call then
  runs imperatively and finishes it); inputs on several contexts, or trained parameters with
  copies on other contexts than the batch's; ``grad_req='add'``; autograd already recording;
  a net that cannot be traced as a Symbol (the trace's error is in the reason);
* to ``"compiled"`` (gpu only): ``hybridize(cuda_graph=False)``; an optimizer without a fused
  kernel (Signum, AdamW, AdaDelta, FTML, a custom rule), float16 weights without
  ``multi_precision=True`` (with it, the float32 masters are updated in the graph), or
  fused updates turned off (``HYBRIDGPU_FUSED_OPTIMIZER=0``); a ``KVStore`` object or
  ``'dist_sync'`` (gradients are summed on the host side); trainer parameters the loss does
  not reach (their stale gradients are ``trainer.step``'s to report or skip).

A step's program is compiled once per input signature (shapes, dtypes, context) and parameter
shapes; a replaced parameter array (``load_parameters``, ``cast``) is seen on the next call
(re-capture). ``TrainStep`` is hybridgpu's: MXNet 1.x has no such class (its loop above runs
unchanged here too).

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import gluon
    >>> net = gluon.nn.Dense(1, in_units=2)
    >>> net.initialize(mx.init.One()); net.hybridize()
    >>> trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    >>> step = TrainStep(net, gluon.loss.L2Loss(), trainer)
    >>> x, y = mx.nd.array([[1.0, 2.0]]), mx.nd.array([[0.0]])
    >>> loss = step(x, y)                     # 0.5 * (1 + 2 + 0 - 0) ** 2
    >>> loss.asnumpy().tolist(), step.mode
    ([4.5], 'compiled')
    >>> [round(w, 6) for w in net.weight.data().asnumpy()[0].tolist()]  # 1 - 0.3 * [1, 2]
    [0.7, 0.4]
"""

from __future__ import annotations

import collections

import numpy as np

from .. import modes, random_state
from ..autograd import record
from ..base import MXNetError
from ..compiler import compile_graph
from ..graph import Graph, infer_shapes, infer_types
from ..kvstore import KVStore
from ..ndarray import NDArray
from ..optimizer.fused import CapturedUpdate
from ..optimizer.optimizer import UpdateJob, raw_state
from ..symbol import Symbol, var
from ..symbol.gradient import annotate_variables, build_gradient, head_grad_names
from .hybrid_block import HybridBlock

__all__ = ["TrainStep"]

#: Compiled step programs kept per TrainStep (one per input signature), oldest dropped first.
MAX_PROGRAMS = 8


class TrainStep:
    """A training step of ``net`` under ``loss_fn``, updated by ``trainer``; see the module
    docstring. ``step(data, *labels, batch_size=None)`` returns ``loss_fn``'s output (not
    recorded), or with ``return_outputs=True`` the pair ``(loss, net output)`` (for metrics;
    a list of NDArrays for a net of several outputs); ``data`` may be a list or tuple for a
    net of several inputs. ``batch_size``
    (the ``trainer.step`` argument) defaults to this TrainStep's ``batch_size``, else to the
    first input's first dimension.

    Example:
        >>> import hybridgpu as mx
        >>> net = mx.gluon.nn.Dense(1, in_units=1)
        >>> net.initialize()                  # not hybridized: the loop as written
        >>> trainer = mx.gluon.Trainer(net.collect_params(), "sgd")
        >>> step = TrainStep(net, mx.gluon.loss.L1Loss(), trainer)
        >>> _ = step(mx.nd.ones((1, 1)), mx.nd.ones((1, 1)))
        >>> step.mode, step.reason
        ('imperative', 'the net is not hybridized (call net.hybridize())')
    """

    def __init__(self, net, loss_fn, trainer, batch_size=None, ignore_stale_grad=False,
                 return_outputs=False):
        self.net, self.loss_fn, self.trainer = net, loss_fn, trainer
        self.batch_size, self.ignore_stale_grad = batch_size, ignore_stale_grad
        self.return_outputs = return_outputs
        self.mode, self.reason = None, ""
        self._programs = collections.OrderedDict()
        self._collected = None  # (cache token, the Parameters by name, sorted by name)

    def __call__(self, data, *labels, batch_size=None):
        datas = list(data) if isinstance(data, (list, tuple)) else [data]
        inputs = datas + list(labels)
        for n, array in enumerate(inputs):
            if not isinstance(array, NDArray):
                raise TypeError(f"TrainStep: input {n} is a {type(array).__name__}, not an "
                                "NDArray")
        if batch_size is None:
            batch_size = self.batch_size or datas[0].shape[0]
        params = self._all_params()
        why = self._why_imperative(inputs, params)
        if why:
            self.mode, self.reason = "imperative", why
            return self._imperative(datas, labels, batch_size)
        program = self._program(datas, labels, params)
        if isinstance(program, str):
            self.mode, self.reason = "imperative", program
            return self._imperative(datas, labels, batch_size)
        return program.run(self, inputs, batch_size)

    # -- the loop as written ------------------------------------------------------------
    def _imperative(self, datas, labels, batch_size):
        with record():
            out = self.net(*datas)
            loss = self.loss_fn(out, *labels)
        loss.backward()
        self.trainer.step(batch_size, ignore_stale_grad=self.ignore_stale_grad)
        return (loss, out) if self.return_outputs else loss

    def _why_imperative(self, inputs, params):
        """Why this call cannot run compiled ('' when it can)."""
        if not isinstance(self.net, HybridBlock) or not self.net._active:
            return "the net is not hybridized (call net.hybridize())"
        if not isinstance(self.loss_fn, HybridBlock):
            return f"the loss is a {type(self.loss_fn).__name__}, not a HybridBlock"
        if modes.is_recording():
            return "autograd is already recording"
        ctx = inputs[0].context
        if any(a.context != ctx for a in inputs):
            return "the inputs are on several contexts"
        for param in params.values():
            if param._data is None or param._deferred_init:
                return f"Parameter {param.name!r} is not initialized yet"
            if param.grad_req == "add":
                return f"Parameter {param.name!r} has grad_req='add'"
            if param.grad_req != "null" and param.list_ctx() != [ctx]:
                return (f"Parameter {param.name!r} has copies on {param.list_ctx()}, the "
                        f"batch is on {ctx}")
        return ""

    def _all_params(self):
        """The Parameters of the net and the loss, by name (none of what is not a Block);
        collected again whenever either block's trace cache was cleared (a child added, a
        cast, ``hybridize()``), else the last collection."""
        token = tuple(getattr(b, "__dict__", {}).get("_cache_version")
                      for b in (self.net, self.loss_fn))
        if self._collected is not None and self._collected[0] == token:
            return self._collected[1]
        found = {}
        for block in (self.net, self.loss_fn):
            if hasattr(block, "collect_params"):
                found.update((p.name, p) for p in block.collect_params().values())
        self._collected = (token, found, sorted(found.items()))
        return found

    def _program(self, datas, labels, params):
        """The compiled program of this signature (built on first sight), or why none."""
        inputs = datas + list(labels)
        key = (len(datas), tuple((a.shape, a.dtype) for a in inputs), inputs[0].context,
               tuple((n, p.shape, p.dtype, p.grad_req) for n, p in self._collected[2]))
        program = self._programs.get(key)
        if program is None:
            try:
                program = _StepProgram.build(self, datas, labels, params)
            except (MXNetError, TypeError, ValueError, AttributeError) as err:
                program = f"the net and loss cannot be traced as one Symbol ({err})"
            self._programs[key] = program
            while len(self._programs) > MAX_PROGRAMS:
                self._programs.popitem(last=False)
        return program


class _StepProgram:
    """One signature's compiled forward+loss+backward graph, and (gpu) its captured update."""

    @classmethod
    def build(cls, step, datas, labels, params):
        names = [f"data{i}" for i in range(len(datas))] + \
                [f"label{i}" for i in range(len(labels))]
        inputs = datas + list(labels)
        syms = [var(n, shape=a.shape, dtype=np.dtype(a.dtype).name)
                for n, a in zip(names, inputs)]
        with modes.training(True):
            out = step.net(*syms[:len(datas)])
            loss = step.loss_fn(out, *syms[len(datas):])
        if not isinstance(loss, Symbol) or len(loss._outputs) != 1:
            raise MXNetError("the loss must give one Symbol output")
        shown = _entries(out) if step.return_outputs else []
        used = set(loss.list_arguments()) | set(loss.list_auxiliary_states())
        bound = {n: p for n, p in params.items() if n in used}
        wrt = [n for n, p in bound.items() if p.grad_req != "null"]
        shapes = {**{n: a.shape for n, a in zip(names, inputs)},
                  **{n: p.shape for n, p in bound.items()}}
        dtypes = {**{n: np.dtype(a.dtype).name for n, a in zip(names, inputs)},
                  **{n: np.dtype(p.dtype).name for n, p in bound.items()}}
        whole = annotate_variables(Symbol([*loss._outputs, *shown]), shapes, dtypes)
        forward = Symbol(whole._outputs[:1])
        gradients = build_gradient(forward, wrt)  # its nodes are whole's: computed once
        graph = Graph([*whole._outputs, *gradients.gradients._outputs])
        infer_types(graph, dtypes)
        infer_shapes(graph, shapes)
        first = len(whole._outputs)  # outputs: the loss, the net's outputs, the gradients
        flags = {**step.net._flags, "data_inputs": tuple(names), "block": step.net.name,
                 "written_outputs": tuple(range(first, first + len(wrt))),
                 "static_output": False}  # the returned loss must outlive the next step
        executable = compile_graph(graph, inputs[0].context, True, flags)
        loss_key = graph.key(graph.outputs[0])
        program = cls(step, executable, inputs[0].context, names, bound, wrt,
                      (graph.shapes[loss_key], graph.dtypes[loss_key]))
        program.head, program.first_grad = head_grad_names(forward)[0], first
        program.out_format = None if isinstance(out, Symbol) and len(shown) == 1 else len(shown)
        return program

    def __init__(self, step, executable, ctx, names, bound, wrt, loss_type):
        self.executable, self.ctx, self.names = executable, ctx, names
        self.bound, self.wrt = bound, wrt
        self.head, self.first_grad, self.out_format = None, 1, None
        with ctx.scope():
            self.ones = ctx.xp.ones(loss_type[0], dtype=loss_type[1])
        self.update, self.update_reason = None, ""
        self.update_signature, self.update_arrays = None, []
        self._trained_for, self._trained_cache = None, None
        self.capture_reason = self._why_not_captured(step)

    def _why_not_captured(self, step):
        """Why this program's steps cannot be captured with their update ('' if they can)."""
        if not self.ctx.is_gpu:
            return "cpu: no CUDA graph (the update is trainer.step's)"
        if not hasattr(self.executable, "use_graphs") or not self.executable.use_graphs:
            return "hybridize(cuda_graph=False), or the graph did not lower to a gpu program"
        kv = step.trainer._kvstore_params["kvstore"]
        if isinstance(kv, KVStore) or not (kv is None or kv is False or isinstance(kv, str)):
            return "the trainer's kvstore sums gradients on the host (a KVStore object)"
        trained = [p for p in step.trainer._params if p.grad_req != "null"]
        missing = [p.name for p in trained if p.name not in self.wrt]
        if missing:
            return f"the loss does not reach trainer parameter(s) {missing}"
        return ""

    # -- one step -----------------------------------------------------------------------
    def run(self, step, inputs, batch_size):
        values = {n: a._data for n, a in zip(self.names, inputs)}
        weights = {n: p.data(self.ctx) for n, p in self.bound.items()}
        values.update((n, w._data) for n, w in weights.items())
        values[self.head] = self.ones
        grads = {self.first_grad + k: self.bound[n].grad(self.ctx)._data
                 for k, n in enumerate(self.wrt)}
        rng = random_state.generator(self.ctx)
        update = None
        if not self.capture_reason:
            update = self._captured_update(step, batch_size, weights, grads)
        if update is None:
            outs = self.executable.run_into(values, grads, rng)
            for name in self.wrt:
                weights[name]._ag.fresh = True
            step.trainer.step(batch_size, ignore_stale_grad=step.ignore_stale_grad)
            step.mode, step.reason = "compiled", self.capture_reason or self.update_reason
        else:
            outs = self.executable.run_into(values, grads, rng, epilogue=update)
            step.mode, step.reason = "captured", ""
        loss = NDArray(outs[0], self.ctx)
        if not step.return_outputs:
            return loss
        shown = [NDArray(o, self.ctx) for o in outs[1:self.first_grad]]
        return loss, shown[0] if self.out_format is None else shown

    def _captured_update(self, step, batch_size, weights, grads):
        """The optimizer's bookkeeping of one ``trainer.step`` and the fused update holding
        this step's scalars, or None (then ``trainer.step`` updates, uncaptured).
        ``weights``: the NDArrays by name; ``grads``: the gradient arrays by output index."""
        trainer, optimizer = step.trainer, step.trainer._optimizer
        trained, slot = self._trained(trainer)
        indices = [index for index, _ in trained]
        trainer._sync_parameters()
        updater = trainer._updater_for(self.ctx)
        optimizer._set_current_context(self.ctx.device_id)
        jobs = [_job(optimizer, weights[name], grads[slot[name]],
                     _state_of(updater, optimizer, index, weights[name]))
                for index, name in trained]
        arrays = [a for job in jobs
                  for a in (job.weight, job.grad, *_leaves(job.state), job.low_precision)]
        signature = CapturedUpdate.signature(optimizer)
        if (signature != self.update_signature or len(arrays) != len(self.update_arrays)
                or any(a is not b for a, b in zip(arrays, self.update_arrays))):
            # the arrays are kept: an array seen again is the same memory (not a reused id)
            self.update, self.update_reason = CapturedUpdate.plan(optimizer, jobs)
            self.update_signature, self.update_arrays = signature, arrays
        if self.update is None:
            return None
        for _, name in trained:  # consumed, as trainer.step leaves them
            weights[name]._ag.fresh = False
        optimizer.rescale_grad = trainer._scale / batch_size
        optimizer._update_count(indices)
        counts = [optimizer._index_update_count[i] for i in indices]
        self.update.prepare(optimizer._get_lrs(indices), optimizer._get_wds(indices), counts)
        return self.update


    def _trained(self, trainer):
        """``([(optimizer index, name)], {name: gradient output})`` of ``trainer``'s trained
        parameters: fixed for this program (its key holds every ``grad_req``), worked out
        once per Trainer."""
        if self._trained_for is not trainer:
            trained = [(trainer._param2idx[p.name], p.name) for p in trainer._params
                       if p.grad_req != "null"]
            slot = {name: self.first_grad + k for k, name in enumerate(self.wrt)}
            self._trained_for, self._trained_cache = trainer, (trained, slot)
        return self._trained_cache


def _entries(out):
    """The output entries of the net's output: a Symbol, or a list or tuple of them."""
    if isinstance(out, Symbol):
        return list(out._outputs)
    if isinstance(out, (list, tuple)) and all(isinstance(o, Symbol) for o in out):
        return [e for o in out for e in o._outputs]
    raise MXNetError(f"the net gave a {type(out).__name__}, not Symbols")


def _job(optimizer, weight, grad, state):
    """The UpdateJob of ``weight`` (an NDArray) with the raw ``grad``: with
    ``multi_precision`` a float16 weight is updated through its float32 master (the fused
    kernel reads the float16 gradient and writes the float16 weight)."""
    if optimizer.multi_precision and weight.dtype == np.float16:
        master, inner = optimizer._split_master(state)
        return UpdateJob(weight.context, master._data, grad, raw_state(inner), weight._data)
    return UpdateJob(weight.context, weight._data, grad, raw_state(state))


def _state_of(updater, optimizer, index, weight):
    """The updater's state of ``index`` on ``weight``'s context, created or moved there as
    the updater itself would on its first update."""
    if index not in updater.states:
        updater.states[index] = optimizer.create_state_multi_precision(index, weight)
    elif not updater.states_synced.get(index, True):
        updater.states[index] = updater.sync_state_context(updater.states[index],
                                                           weight.context)
    updater.states_synced[index] = True
    return updater.states[index]


def _leaves(state):
    if state is None:
        return ()
    return state if isinstance(state, tuple) else (state,)
