"""``Module``: MXNet 1.x's ``mx.mod.Module``, a symbol bound to one context for training and
inference, on top of the symbol ``Executor`` (``symbol/executor.py``) and the optimizers.

A Module keeps its parameters twice, as MXNet does: the executor's arrays (which the
optimizer updates) and cpu copies (``get_params``) refreshed from them when needed.
``update`` applies the optimizer locally (``kvstore`` 'local'/'device'/None on one context)
or, given a ``KVStore`` object, pushes each gradient and pulls the updated weight.

Differences from MXNet 1.9.1: one context per Module (a list of several raises; use Gluon
for data parallelism); ``install_monitor`` is not supported; errors for steps called out of
order are ``RuntimeError`` naming the missing step (MXNet asserts).

Example:
    >>> import hybridgpu as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    >>> mod = Module(net, label_names=None)
    >>> mod.bind(data_shapes=[("data", (1, 3))], for_training=False)
    >>> mod.init_params(mx.init.One())
    >>> mod.forward(mx.io.DataBatch([mx.nd.array([[1., 2., 3.]])]))
    >>> mod.get_outputs()[0].asnumpy().tolist()
    [[6.0, 6.0]]
"""

from __future__ import annotations

import logging
import warnings

from .. import ndarray as nd
from .. import optimizer as opt
from ..base import MXNetError
from ..context import Context, cpu
from ..initializer import InitDesc, Uniform
from ..io import DataDesc
from ..kvstore import KVStore
from ..kvstore import create as create_kvstore
from ..model import load_checkpoint, save_checkpoint, split_params
from ..serialization import ndarray_file
from ..serialization.files import read_regular
from ..symbol.executor import Executor, simple_bind
from .base_module import BaseModule

__all__ = ["Module"]


def _check_names(symbol, names, kind, strict):
    arguments = symbol.list_arguments()
    for name in names:
        if name in arguments:
            continue
        candidates = [a for a in arguments if not a.endswith(("_weight", "_bias", "_gamma",
                                                                "_beta"))]
        msg = (f"You created Module with Module(..., {kind}_names={list(names)}) but input "
               f"with name {name!r} is not found in symbol.list_arguments(). Did you mean "
               f"one of: {candidates}?")
        if strict:
            raise ValueError(msg)
        warnings.warn(msg, stacklevel=3)


def _descs(shapes, names, kind):
    """``DataDesc`` list from ``DataDesc``s or ``(name, shape)`` pairs, checked against the
    Module's ``names``."""
    descs = [s if isinstance(s, DataDesc) else DataDesc(*s) for s in shapes or []]
    given = [d.name for d in descs]
    if sorted(given) != sorted(names):
        raise ValueError(f"bind: the {kind} shapes name {given}, but the Module's "
                         f"{kind}_names are {list(names)}; they must match")
    return descs


def _one_context(context):
    contexts = context if isinstance(context, (list, tuple)) else [context]
    if len(contexts) != 1:
        raise NotImplementedError(f"Module: one context per Module is supported by "
                                  f"hybridgpu, got {list(contexts)}; use gluon.Trainer for "
                                  f"several devices")
    return Context(contexts[0])


class Module(BaseModule):
    """A symbol with data and label inputs, trained or run on one context.

    Example:
        >>> import hybridgpu as mx
        >>> out = mx.sym.SoftmaxOutput(mx.sym.var("data"), name="softmax")
        >>> mod = Module(out)
        >>> mod.data_names, mod.label_names, mod.output_names
        (['data'], ['softmax_label'], ['softmax_output'])
    """

    def __init__(self, symbol, data_names=("data",), label_names=("softmax_label",),
                 logger=logging, context=None, work_load_list=None, fixed_param_names=None,
                 state_names=None, group2ctxs=None, compression_params=None):
        super().__init__(logger=logger)
        self._context = _one_context(cpu() if context is None else context)
        self._symbol = symbol
        self._data_names = list(data_names or [])
        self._label_names = list(label_names or [])
        self._state_names = list(state_names or [])
        self._fixed_param_names = list(fixed_param_names or [])
        _check_names(symbol, self._data_names, "data", True)
        _check_names(symbol, self._label_names, "label", False)
        _check_names(symbol, self._state_names, "state", True)
        _check_names(symbol, self._fixed_param_names, "fixed_param", True)
        inputs = set(self._data_names + self._label_names + self._state_names)
        self._param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self._aux_names = symbol.list_auxiliary_states()
        self._output_names = symbol.list_outputs()
        self._compression_params = compression_params
        self._arg_params = self._aux_params = None
        self._params_dirty = False
        self._exec = None
        self._data_shapes = self._label_shapes = None
        self._optimizer = self._kvstore = self._updater = None
        self._update_on_kvstore = False
        self._preload_opt_states = None

    # -- checkpoints ----------------------------------------------------------------------
    @staticmethod
    def load(prefix, epoch, load_optimizer_states=False, **kwargs):
        """A Module of checkpoint ``epoch`` (symbol and parameters; ``kwargs`` go to
        ``Module``); bind it (and ``init_optimizer``) before use."""
        symbol, args, auxs = load_checkpoint(prefix, epoch)
        mod = Module(symbol=symbol, **kwargs)
        mod._arg_params, mod._aux_params = args, auxs
        mod.params_initialized = True
        if load_optimizer_states:
            mod._preload_opt_states = f"{prefix}-{int(epoch):04d}.states"
        return mod

    def save_checkpoint(self, prefix, epoch, save_optimizer_states=False,
                        remove_amp_cast=True):
        """Write ``prefix-symbol.json`` and ``prefix-%04d.params`` (and ``.states`` with
        ``save_optimizer_states``)."""
        arg_params, aux_params = self.get_params()
        save_checkpoint(prefix, epoch, self._symbol, arg_params, aux_params,
                        remove_amp_cast=remove_amp_cast)
        if save_optimizer_states:
            self.save_optimizer_states(f"{prefix}-{int(epoch):04d}.states")
            logging.info('Saved optimizer state to "%s-%04d.states"', prefix, epoch)

    def save_params(self, fname):
        """Save the parameters to ``fname`` (keys ``arg:<name>``/``aux:<name>``)."""
        arg_params, aux_params = self.get_params()
        records = {f"arg:{k}": v.as_in_context(cpu()) for k, v in arg_params.items()}
        records.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in aux_params.items()})
        nd.save(fname, records)

    def load_params(self, fname):
        """Load parameters saved by ``save_params`` (or an MXNet checkpoint's file)."""
        arg_params, aux_params = split_params(nd.load(fname), fname)
        self.set_params(arg_params, aux_params)

    # -- names and shapes -----------------------------------------------------------------
    @property
    def data_names(self):
        """Names of the data inputs."""
        return self._data_names

    @property
    def label_names(self):
        """Names of the label inputs."""
        return self._label_names

    @property
    def output_names(self):
        """Names of the outputs (``symbol.list_outputs()``)."""
        return self._output_names

    @property
    def data_shapes(self):
        """``DataDesc`` of each data input, once bound."""
        self._require(1)
        return self._data_shapes

    @property
    def label_shapes(self):
        """``DataDesc`` of each label input (None without labels), once bound."""
        self._require(1)
        return self._label_shapes

    @property
    def output_shapes(self):
        """``[(name, shape)]`` of the outputs, once bound."""
        self._require(1)
        return [(n, o.shape) for n, o in zip(self._output_names, self._exec.outputs)]

    # -- binding --------------------------------------------------------------------------
    def _grad_reqs(self, for_training, inputs_need_grad, grad_req):
        reqs = {}
        for name in self._symbol.list_arguments():
            if not for_training:
                reqs[name] = "null"
            elif name in self._param_names:
                reqs[name] = "null" if name in self._fixed_param_names else (
                    grad_req.get(name, "write") if isinstance(grad_req, dict) else grad_req)
            elif name in self._data_names:
                reqs[name] = grad_req if inputs_need_grad and isinstance(grad_req, str) else (
                    "write" if inputs_need_grad else "null")
            else:
                reqs[name] = "null"
        return reqs

    def bind(self, data_shapes, label_shapes=None, for_training=True, inputs_need_grad=False,
             force_rebind=False, shared_module=None, grad_req="write"):
        """Allocate the executor for inputs of ``data_shapes`` (and ``label_shapes``):
        ``DataDesc`` objects or ``(name, shape)`` pairs."""
        if force_rebind:
            self._exec, self.binded = None, False
        if self.binded:
            self.logger.warning("Already bound, ignoring bind()")
            return
        self.for_training, self.inputs_need_grad = for_training, inputs_need_grad
        self._data_shapes = _descs(data_shapes, self._data_names, "data")
        self._label_shapes = (_descs(label_shapes, self._label_names, "label")
                              if label_shapes else None)
        descs = self._data_shapes + (self._label_shapes or [])
        reqs = self._grad_reqs(for_training, inputs_need_grad, grad_req)
        self._exec = simple_bind(self._symbol, self._context, grad_req=reqs,
                                 type_dict={d.name: d.dtype for d in descs},
                                 shapes={d.name: d.shape for d in descs})
        if shared_module is not None:
            self._share_params(shared_module)
        self.binded = True
        if self.params_initialized:  # loaded (Module.load) or shared: copy in
            self._exec.copy_params_from(self._arg_params, self._aux_params)
        else:
            self._arg_params = {n: nd.zeros(self._exec.arg_dict[n].shape,
                                            dtype=self._exec.arg_dict[n].dtype)
                                for n in self._param_names}
            self._aux_params = {n: nd.zeros(a.shape, dtype=a.dtype)
                                for n, a in self._exec.aux_dict.items()}

    def _share_params(self, shared_module):
        """Use ``shared_module``'s parameter arrays (and gradients) in this executor."""
        shared_module._require(2)
        other = shared_module._exec
        args = [other.arg_dict[n] if n in self._param_names else a
                for n, a in zip(self._symbol.list_arguments(), self._exec.arg_arrays)]
        grads = [other.grad_dict.get(n) if n in self._param_names else g
                 for n, g in zip(self._symbol.list_arguments(), self._exec.grad_arrays)]
        self._exec = Executor(self._symbol, self._context, args, grads,
                              list(self._exec.grad_req.values()), list(other.aux_arrays))
        self._arg_params, self._aux_params = shared_module.get_params()
        self.params_initialized = True

    def reshape(self, data_shapes, label_shapes=None):
        """Re-bind for new input shapes, keeping the parameters."""
        self._require(1)
        self._data_shapes = _descs(data_shapes, self._data_names, "data")
        self._label_shapes = (_descs(label_shapes, self._label_names, "label")
                              if label_shapes else None)
        shapes = {d.name: d.shape for d in self._data_shapes + (self._label_shapes or [])}
        self._exec = self._exec.reshape(partial_shaping=True, allow_up_sizing=True, **shapes)

    # -- parameters -----------------------------------------------------------------------
    def init_params(self, initializer=None, arg_params=None, aux_params=None,
                    allow_missing=False, force_init=False, allow_extra=False):
        """Give every parameter its value: from ``arg_params``/``aux_params`` by name, else
        from ``initializer`` (default ``Uniform(0.01)``; missing names raise unless
        ``allow_missing`` when dicts are given)."""
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "init_params call ignored.", stacklevel=2)
            return
        self._require(1)
        if initializer is None and arg_params is None and aux_params is None:
            initializer = Uniform(0.01)
        attrs = self._symbol.attr_dict()
        for own, given in ((self._arg_params, arg_params), (self._aux_params, aux_params)):
            for name in sorted(own):
                self._init_one(name, own[name], given, initializer, allow_missing,
                               attrs.get(name))
        self.params_initialized = True
        self._params_dirty = False
        self._exec.copy_params_from(self._arg_params, self._aux_params)

    @staticmethod
    def _init_one(name, array, given, initializer, allow_missing, attrs):
        if given is not None and name in given:
            value = given[name]
            if tuple(value.shape) != array.shape:
                raise MXNetError(f"init_params: {name!r} has shape {tuple(value.shape)}, but "
                                 f"the Module's parameter has shape {array.shape}")
            if value is not array:
                array[:] = value.as_in_context(array.context) if hasattr(
                    value, "as_in_context") else value
            return
        if given is not None and not allow_missing:
            raise RuntimeError(f"{name} is not presented (in the given parameters; pass "
                               f"allow_missing=True to initialize it with the initializer)")
        if initializer is not None:
            initializer(InitDesc(name, attrs), array)

    def set_params(self, arg_params, aux_params, allow_missing=False, force_init=True,
                   allow_extra=False):
        """Set the parameters from ``arg_params``/``aux_params``; every parameter must be
        there unless ``allow_missing``."""
        if not allow_missing:  # names the Module lacks are ignored, as in MXNet
            self.init_params(initializer=None, arg_params=arg_params, aux_params=aux_params,
                             allow_missing=allow_missing, force_init=force_init)
            return
        if self.params_initialized and not force_init:
            warnings.warn("Parameters already initialized and force_init=False. "
                          "set_params call ignored.", stacklevel=2)
            return
        self._exec.copy_params_from(arg_params, aux_params, allow_extra_params=allow_extra)
        self._params_dirty = True
        self.params_initialized = True

    def get_params(self):
        """``(arg_params, aux_params)``: the parameters as cpu NDArrays by name."""
        self._require(2)
        if self._params_dirty:
            self._sync_params_from_devices()
        return self._arg_params, self._aux_params

    def _sync_params_from_devices(self):
        for name, array in self._arg_params.items():
            array[:] = self._exec.arg_dict[name].as_in_context(array.context)
        for name, array in self._aux_params.items():
            array[:] = self._exec.aux_dict[name].as_in_context(array.context)
        self._params_dirty = False

    # -- optimizer ------------------------------------------------------------------------
    def init_optimizer(self, kvstore="local", optimizer="sgd",
                       optimizer_params=(("learning_rate", 0.01),), force_init=False):
        """Install ``optimizer`` (a name, with ``optimizer_params``, or an ``Optimizer``);
        ``rescale_grad`` defaults to ``1 / batch_size``."""
        self._require(2)
        if self.optimizer_initialized and not force_init:
            self.logger.warning("optimizer already initialized, ignoring...")
            return
        if self._params_dirty:
            self._sync_params_from_devices()
        kv = self._make_kvstore(kvstore)
        rescale_grad = 1.0 / self._data_shapes[0].shape[
            max(DataDesc.get_batch_axis(self._data_shapes[0].layout), 0)]
        idx2name = dict(enumerate(self._param_names))
        if isinstance(optimizer, str):
            params = dict(optimizer_params)
            params.setdefault("rescale_grad", rescale_grad)
            optimizer = opt.create(optimizer, sym=self._symbol, param_idx2name=idx2name,
                                   **params)
        elif isinstance(optimizer, opt.Optimizer):
            if optimizer.rescale_grad != rescale_grad:
                warnings.warn(f"Optimizer created manually outside Module but rescale_grad is "
                              f"not normalized to 1.0/batch_size/num_workers "
                              f"({optimizer.rescale_grad} vs. {rescale_grad}). Is this "
                              f"intended?", stacklevel=2)
            if not optimizer.idx2name:
                optimizer.idx2name = idx2name.copy()
        else:
            raise TypeError(f"init_optimizer: optimizer must be a name or an "
                            f"mx.optimizer.Optimizer, got {type(optimizer).__name__}")
        self._optimizer, self._kvstore = optimizer, kv
        self._update_on_kvstore = kv is not None
        self._updater = None
        if kv is not None:
            kv.set_optimizer(optimizer)
            for name in self._param_names:
                kv.init(name, self._arg_params[name])
        else:
            self._updater = opt.get_updater(optimizer)
        self.optimizer_initialized = True
        if self._preload_opt_states is not None:
            self.load_optimizer_states(self._preload_opt_states)
            self._preload_opt_states = None

    @staticmethod
    def _make_kvstore(kvstore):
        """The KVStore to update through: a given KVStore object, else None (one context:
        updates run locally, as MXNet does)."""
        if kvstore is None or isinstance(kvstore, KVStore):
            return kvstore
        if not isinstance(kvstore, str):
            raise TypeError(f"kvstore must be KVStore, str or None, got "
                            f"{type(kvstore).__name__}")
        create_kvstore(kvstore)  # validates the name: distributed types raise
        return None

    def borrow_optimizer(self, shared_module):
        """Use ``shared_module``'s optimizer, kvstore and updater."""
        shared_module._require(3)
        self._optimizer = shared_module._optimizer
        self._kvstore = shared_module._kvstore
        self._update_on_kvstore = shared_module._update_on_kvstore
        self._updater = shared_module._updater
        self.optimizer_initialized = True

    def save_optimizer_states(self, fname):
        """Save the optimizer states (hybridgpu's pickle-free format) to ``fname``."""
        self._require(3)
        if self._update_on_kvstore:
            self._kvstore.save_optimizer_states(fname)
        else:
            ndarray_file.save(fname, *self._updater._state_records())

    def load_optimizer_states(self, fname):
        """Load optimizer states written by ``save_optimizer_states``."""
        self._require(3)
        if self._update_on_kvstore:
            self._kvstore.load_optimizer_states(fname)
        else:
            self._updater.set_states(read_regular(fname, "optimizer states file"))
            self._check_loaded_states()

    def _check_loaded_states(self):
        """Loaded states must fit this module's parameters (index = parameter position),
        checked now rather than at the next ``update()``."""
        weights = {i: self._exec.arg_dict[n] for i, n in enumerate(self._param_names)}
        extra = [i for i in self._updater.states if i not in weights]
        if extra:
            raise MXNetError(f"load_optimizer_states: the file holds states for indices "
                             f"{extra[:5]}, but this module has {len(weights)} parameters "
                             f"(indices 0 to {len(weights) - 1})")
        self._updater.check_states(weights)

    # -- computation ----------------------------------------------------------------------
    def forward(self, data_batch, is_train=None):
        """Run the symbol on ``data_batch`` (re-binding first if its shapes differ);
        ``is_train`` defaults to ``for_training``."""
        self._require(2)
        if is_train is None:
            is_train = self.for_training
        new_shapes = tuple(d.shape for d in data_batch.data)
        if new_shapes != tuple(d.shape for d in self._data_shapes):
            self.reshape(*self._batch_descs(data_batch, new_shapes))
        values = dict(zip(self._data_names, data_batch.data))
        if self._label_shapes and data_batch.label:
            values.update(zip([d.name for d in self._label_shapes], data_batch.label))
        self._exec.forward(is_train=is_train, **values)

    def _batch_descs(self, data_batch, new_shapes):
        data_descs = getattr(data_batch, "provide_data", None) or [
            DataDesc(d.name, shape, d.dtype, d.layout)
            for d, shape in zip(self._data_shapes, new_shapes)]
        label_descs = getattr(data_batch, "provide_label", None)
        labels = getattr(data_batch, "label", None)  # any object with .data is a batch
        if not label_descs and labels and self._label_shapes:
            label_descs = [DataDesc(d.name, lb.shape, d.dtype, d.layout)
                           for d, lb in zip(self._label_shapes, labels)]
        return data_descs, label_descs or None

    def backward(self, out_grads=None):
        """Gradients of the parameters (and inputs, with ``inputs_need_grad``) for the last
        training forward; ``out_grads`` unless the outputs are loss ops."""
        self._require(2)
        self._exec.backward(out_grads=out_grads)

    def update(self):
        """Apply the optimizer to every parameter with a gradient."""
        self._require(3)
        self._params_dirty = True
        names = [n for n in self._param_names if self._exec.grad_dict.get(n) is not None]
        weights = [self._exec.arg_dict[n] for n in names]
        grads = [self._exec.grad_dict[n] for n in names]
        if self._update_on_kvstore:
            for index, (name, weight, grad) in enumerate(zip(names, weights, grads)):
                self._kvstore.pushpull(name, grad, out=weight, priority=-index)
            return
        position = {n: i for i, n in enumerate(self._param_names)}
        indices = [position[n] for n in names]
        if indices:
            self._updater(indices, grads, weights)

    def get_outputs(self, merge_multi_context=True):
        """The outputs of the last forward (one NDArray each; a list of one-element lists
        without ``merge_multi_context``)."""
        self._require(2)
        outputs = list(self._exec.outputs)
        return outputs if merge_multi_context else [[o] for o in outputs]

    def get_input_grads(self, merge_multi_context=True):
        """The gradients of the data inputs (bind with ``inputs_need_grad=True``)."""
        self._require(2)
        if not self.inputs_need_grad:
            raise RuntimeError("get_input_grads: bind the Module with inputs_need_grad=True")
        grads = [self._exec.grad_dict[n] for n in self._data_names]
        return grads if merge_multi_context else [[g] for g in grads]

    def get_states(self, merge_multi_context=True):
        """The arrays of the state inputs (``state_names``)."""
        self._require(2)
        states = [self._exec.arg_dict[n] for n in self._state_names]
        return states if merge_multi_context else [[s] for s in states]

    def set_states(self, states=None, value=None):
        """Set the state inputs from ``states`` (arrays) or to the number ``value``."""
        self._require(2)
        for i, name in enumerate(self._state_names):
            self._exec.arg_dict[name][:] = value if states is None else states[i]

    def update_metric(self, eval_metric, labels, pre_sliced=False):
        """Update ``eval_metric`` with ``labels`` and the last outputs, by name."""
        label_names = [d.name for d in self._label_shapes or []]
        eval_metric.update_dict(dict(zip(label_names, labels or [])),
                                dict(zip(self._output_names, self._exec.outputs)))

    def install_monitor(self, mon):
        """Not supported by hybridgpu."""
        raise NotImplementedError("Module.install_monitor: mx.mon.Monitor is not supported "
                                  "by hybridgpu")
