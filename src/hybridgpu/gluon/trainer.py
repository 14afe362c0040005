"""``gluon.Trainer``: applies an optimizer to a set of Parameters (MXNet 1.x's API).

``step(batch_size)`` sets the optimizer's ``rescale_grad`` to ``1 / batch_size`` (times the
optimizer's own ``rescale_grad``), sums the gradients of each Parameter's copies across contexts
(``allreduce_grads``: every copy's gradient becomes the sum; an NCCL all-reduce when each copy
is on its own GPU, ``kvstore.device_reduce``), then updates every copy with the summed gradient
(``update``). Each context has its own updater, so optimizer states live next to
the copy they update.

Stale gradients: a Parameter whose gradient was not written by ``backward`` since the last
update raises ``StaleGradientError`` (a ``UserWarning``, as MXNet raises), naming it; with
``step(..., ignore_stale_grad=True)`` such copies are skipped instead. Freshness is autograd's
flag ``data._ag.fresh`` on each copy's data array, which ``backward`` sets and the Trainer
clears after updating. Parameters with ``grad_req='null'`` are skipped.

Single process: ``kvstore`` may be ``'device'``, ``'local'``, ``'nccl'`` or None and selects
nothing: gradients are always summed in process, and distributed kvstores raise. A
``KVStore`` object (``mx.kv.create(...)``) sums each Parameter's gradients through its
``pushpull`` (key: the Parameter's index) before the local update. With any kvstore, the first
update starts by giving every copy the first context's value (auxiliary states such as
BatchNorm's statistics included), as MXNet's kvstore initialization does; after that each
device's BatchNorm statistics follow its own batches. The weights
come out as MXNet's, with these differences kept on purpose:

- ``kvstore=None`` with several contexts sums the gradients too (MXNet then updates each copy
  with its own gradient, and the copies drift apart);
- ``update_on_kvstore`` is accepted and has no effect: the gradients hold the sum after ``step``
  (MXNet's default for several contexts leaves each copy's own gradient there), and
  ``allreduce_grads``/``update`` are always allowed (MXNet refuses them when updating on the
  kvstore);
- Parameters need not share one set of contexts (a copy made on a new context after the
  Trainer starts from the optimizer states of the first context);
- ``load_states`` keeps this Trainer's optimizer object (MXNet swaps in the unpickled one) and
  refuses a file saved by another optimizer class or for other parameter shapes.

``save_states``/``load_states`` use hybridgpu's pickle-free states file
(``hybridgpu.optimizer.states_io``), written atomically; MXNet's pickled files are refused.

Example:
    >>> import hybridgpu as mx
    >>> w = mx.gluon.Parameter("w", shape=(2,), init="ones")
    >>> w.initialize(ctx=[mx.cpu(0), mx.cpu(1)])
    >>> trainer = Trainer([w], "sgd", {"learning_rate": 0.1})
    >>> for i, ctx in enumerate(w.list_ctx()):
    ...     w.grad(ctx)[:] = i + 1          # what backward would write on each context
    ...     w.data(ctx)._ag.fresh = True    # ... and the flag it sets
    >>> trainer.step(batch_size=1)
    >>> [round(x, 6) for x in w.data(mx.cpu(1)).asnumpy().tolist()]  # 1 - 0.1 * (1 + 2)
    [0.7, 0.7]
"""

from __future__ import annotations

import warnings

from .. import optimizer as opt
from ..base import MXNetError
from ..kvstore import KVStore, device_reduce
from ..kvstore import create as create_kvstore
from ..kvstore.dist import DIST_TYPES, DistKVStore
from ..ndarray import NDArray
from ..ndarray.ndarray import to_device_array
from ..serialization import files, ndarray_file
from .parameter import Parameter, ParameterDict

__all__ = ["Trainer", "StaleGradientError"]

_LOCAL_KVSTORES = ("device", "local", "nccl")


class StaleGradientError(MXNetError, UserWarning):
    """A Parameter's gradient was not updated by ``backward`` since the last ``step``; MXNet
    raises a ``UserWarning`` here, which ``except UserWarning`` still catches."""


class Trainer:
    """Applies ``optimizer`` (a name or an ``Optimizer``) to ``params`` (a ParameterDict, a
    dict or a list of Parameters; dicts are taken in sorted key order, as MXNet does).

    Example:
        >>> import hybridgpu as mx
        >>> b = mx.gluon.Parameter("b", shape=(1,), init="zeros")
        >>> b.initialize()
        >>> t = Trainer({"b": b}, "adam", {"learning_rate": 0.01})
        >>> t.learning_rate, type(t.optimizer).__name__
        (0.01, 'Adam')
    """

    def __init__(self, params, optimizer, optimizer_params=None, kvstore="device",
                 compression_params=None, update_on_kvstore=None):
        self._params = _param_list(params)
        self._param2idx = {p.name: i for i, p in enumerate(self._params)}
        _check_kvstore(kvstore)
        if isinstance(kvstore, str) and kvstore in DIST_TYPES:
            kvstore = create_kvstore(kvstore)
        self._kvstore_params = {"kvstore": kvstore, "update_on_kvstore": update_on_kvstore}
        self._params_synced = False
        if compression_params:
            warnings.warn("Trainer: compression_params are ignored; hybridgpu sums gradients "
                          "in process, uncompressed", stacklevel=2)
        self._compression_params = compression_params
        self._contexts = []
        for param in self._params:
            self._contexts += [c for c in param.list_ctx() if c not in self._contexts]
        self._init_optimizer(optimizer, optimizer_params or {})
        self._scale = self._optimizer.rescale_grad
        self._sync_parameters(initialized_only=True)

    def _sync_parameters(self, initialized_only=False):
        """Give every copy of every parameter (auxiliary states included) the same value, as
        MXNet's kvstore initialization does before the first update: the first context's
        copy in one process, rank 0's with a distributed kvstore (which also does it at
        creation for initialized parameters). Without a kvstore nothing is copied, as in
        MXNet: BatchNorm's statistics then stay per device from the start."""
        kv = self._kvstore_params["kvstore"]
        if self._params_synced or kv is None or kv is False:
            return
        if isinstance(kv, DistKVStore):
            ready = [p for p in self._params if not initialized_only or p._data is not None]
            kv.broadcast_parameters(ready)
            self._params_synced = len(ready) == len(self._params)
            return
        if initialized_only:
            return
        for param in self._params:
            copies = param.list_data()
            for copy in copies[1:]:
                with copy.context.scope():
                    copy._data[...] = to_device_array(copies[0]._data, copies[0].context,
                                                      copy.context, copy=False)
        self._params_synced = True

    def _init_optimizer(self, optimizer, optimizer_params):
        param_dict = dict(enumerate(self._params))
        if isinstance(optimizer, opt.Optimizer):
            if optimizer_params:
                raise ValueError("optimizer_params must be None if optimizer is an instance of "
                                 "Optimizer instead of str")
            self._optimizer = optimizer
            self._optimizer.param_dict = param_dict
        else:
            self._optimizer = opt.create(optimizer, param_dict=param_dict, **optimizer_params)
        self._updaters = [opt.get_updater(self._optimizer) for _ in self._contexts]

    # -- optimizer and learning rate ----------------------------------------------------
    @property
    def optimizer(self):
        """The Optimizer this Trainer applies."""
        return self._optimizer

    @property
    def learning_rate(self):
        """The optimizer's current learning rate."""
        return self._optimizer.learning_rate

    def set_learning_rate(self, lr):
        """Set the optimizer's learning rate (not allowed with an ``lr_scheduler``)."""
        self._optimizer.set_learning_rate(lr)

    # -- training -----------------------------------------------------------------------
    def step(self, batch_size, ignore_stale_grad=False):
        """One optimization step: gradients are normalized by ``1 / batch_size``, summed
        across contexts and applied to every copy."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self._allreduce_grads()
        self._update(ignore_stale_grad)

    def allreduce_grads(self):
        """Sum each Parameter's gradients over its contexts, into every copy (for gradient
        clipping between this and ``update``)."""
        self._allreduce_grads()

    def update(self, batch_size, ignore_stale_grad=False):
        """The update half of ``step``, for gradients already reduced by
        ``allreduce_grads``."""
        self._optimizer.rescale_grad = self._scale / batch_size
        self._update(ignore_stale_grad)

    def _allreduce_grads(self):
        self._sync_parameters()
        kv = self._kvstore_params["kvstore"]
        trained = [(i, p) for i, p in enumerate(self._params) if p.grad_req != "null"]
        if not isinstance(kv, KVStore):  # one NCCL group for the whole step on GPUs
            device_reduce.sum_into_every_of([p.list_grad() for _, p in trained])
            return
        for index, param in trained:
            _sum_through_kvstore(kv, index, param.list_grad())

    def _update(self, ignore_stale_grad):
        pending = []
        for i, param in enumerate(self._params):
            if param.grad_req == "null":
                continue
            copies = [(data, param.grad(data.context)) for data in param.list_data()]
            for data, _ in copies:
                if not ignore_stale_grad and not _is_fresh(data):
                    raise StaleGradientError(
                        f"Gradient of Parameter `{param.name}` on context {data.context} has "
                        "not been updated by backward since last `step`. This could mean a bug "
                        "in your model that made it only use a subset of the Parameters "
                        "(Blocks) for this iteration. If you are intentionally only using a "
                        "subset, call step with ignore_stale_grad=True to suppress this "
                        "warning and skip updating of Parameters with stale gradient")
            pending += [(i, data, grad) for data, grad in copies if _is_fresh(data)]
        by_ctx = {}
        for item in pending:
            by_ctx.setdefault(item[1].context, []).append(item)
        updaters = {ctx: self._updater_for(ctx) for ctx in by_ctx}  # before any update runs
        for ctx, items in by_ctx.items():
            indices, weights, grads = (list(x) for x in zip(*items))
            updaters[ctx](indices, grads, weights)
        for _, data, _ in pending:
            data._ag.fresh = False

    def _updater_for(self, ctx):
        """The updater of ``ctx``; a context first seen now (a copy made after the Trainer)
        starts from the states and update counts of the first context."""
        if ctx in self._contexts:
            return self._updaters[self._contexts.index(ctx)]
        updater = opt.get_updater(self._optimizer)
        if self._updaters:
            source = self._updaters[0]
            updater.states = {i: source.sync_state_context(s, ctx)
                              for i, s in source.states.items()}
            updater.states_synced = dict.fromkeys(updater.states, True)
            counts = self._optimizer._all_index_update_counts
            first = counts.get(self._contexts[0].device_id, {})
            counts.setdefault(ctx.device_id, dict(first))
        self._contexts.append(ctx)
        self._updaters.append(updater)
        return updater

    # -- states -------------------------------------------------------------------------
    def save_states(self, fname):
        """Save the optimizer states and the optimizer's own attributes (learning rate,
        update counts, scheduler) to ``fname``, atomically."""
        updater = self._updaters[0] if self._updaters else opt.get_updater(self._optimizer)
        ndarray_file.save(fname, *updater._state_records(dump_optimizer=True))

    def load_states(self, fname):
        """Load states written by ``save_states`` (by hybridgpu: MXNet's files are pickles,
        which are never loaded)."""
        blob = files.read_regular(fname, "optimizer states file")
        states, config = opt.states_io.loads_states(blob)
        self._check_loaded_states(fname, states, config)
        for updater in self._updaters or [opt.get_updater(self._optimizer)]:
            updater.set_states(blob)
            updater.optimizer = self._optimizer
        self._optimizer.param_dict = dict(enumerate(self._params))

    def _check_loaded_states(self, fname, states, config):
        if config is not None and config.get("class") != type(self._optimizer).__name__:
            raise MXNetError(f"{fname}: the states were saved by optimizer "
                             f"{config.get('class')!r}, but this Trainer uses "
                             f"{type(self._optimizer).__name__!r}")
        builtin = type(self._optimizer)._step is not None
        for index in states:
            if not isinstance(index, int) or not 0 <= index < len(self._params):
                raise MXNetError(f"{fname}: holds the state of parameter index {index!r}, but "
                                 f"this Trainer has {len(self._params)} parameters")
        for index, state in states.items():
            param = self._params[index]
            known = param.shape is not None and all(d > 0 for d in param.shape)
            for array in _leaves(state) if builtin and known else ():
                if tuple(array.shape) != tuple(param.shape):
                    raise MXNetError(f"{fname}: the state of Parameter {param.name!r} (index "
                                     f"{index}) has shape {tuple(array.shape)}, but the "
                                     f"Parameter has shape {tuple(param.shape)}; the file was "
                                     "saved for other parameters")


def _param_list(params):
    if isinstance(params, (dict, ParameterDict)):
        params = [params[key] for key in sorted(params.keys())]
    if not isinstance(params, (list, tuple)):
        raise ValueError(f"First argument must be a list or dict of Parameters, got "
                         f"{type(params)}.")
    for param in params:
        if not isinstance(param, Parameter):
            raise ValueError(f"First argument must be a list or dict of Parameters, got list "
                             f"of {type(param)}.")
    return list(params)


def _check_kvstore(kvstore):
    if kvstore is None or kvstore is False or isinstance(kvstore, KVStore):
        return
    if not isinstance(kvstore, str):
        raise TypeError(f"kvstore must be a str, a KVStore or None, got "
                        f"{type(kvstore).__name__}")
    if kvstore in DIST_TYPES:
        return
    if kvstore.startswith("dist") or kvstore in ("horovod", "byteps"):
        raise MXNetError(f"kvstore {kvstore!r}: distributed training is not supported by "
                         "hybridgpu except 'dist_sync' over MPI; use 'dist_sync', 'device' or "
                         "'local'")
    if kvstore not in _LOCAL_KVSTORES:
        raise MXNetError(f"Unknown kvstore type {kvstore!r}; hybridgpu accepts "
                         f"{', '.join(map(repr, _LOCAL_KVSTORES))} or None")


def _is_fresh(data):
    info = getattr(data, "_ag", None)
    return bool(info is not None and getattr(info, "fresh", False))


def _sum_through_kvstore(kv, key, grads):
    """Write the sum of ``grads`` into each of them through ``kv`` (initialized on first
    use with the key's shape)."""
    if key not in kv:
        kv.init(key, grads[0])
    kv.pushpull(key, grads, out=grads)


def _leaves(state):
    if isinstance(state, NDArray):
        yield state
    elif isinstance(state, (tuple, list)):
        for item in state:
            yield from _leaves(item)
