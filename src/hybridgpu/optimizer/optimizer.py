"""The ``Optimizer`` base class, its registry (``register``, ``create``) and the update seam.

An optimizer turns (weight, gradient, state) into an updated weight, in place. The bookkeeping
follows MXNet 1.9 exactly: ``num_update`` is the largest per-index update count (starting from
``begin_num_update``), the learning rate comes from ``lr_scheduler(num_update)`` when there is
one, and per-parameter ``lr_mult``/``wd_mult`` come from, in order, the Parameter in
``param_dict`` (what ``gluon.Trainer`` passes), ``set_lr_mult``/``set_wd_mult``, the ``sym``'s
``__lr_mult__``/``__wd_mult__`` attributes and the names in ``param_idx2name`` (where, as in
MXNet, names not ending in ``_weight`` or ``_gamma`` get ``wd_mult`` 0).

Built-in optimizers write their rule once, as ``_step(xp, weight, grad, state, lr, wd, t)`` on
the raw numpy/cupy arrays (``xp`` is the array module), updating ``weight`` and ``state`` in
place. ``update`` accepts one index or lists of them, and every list goes through
``step_arrays``: on gpu it updates the weights of the built-in rules with one fused
multi-tensor kernel launch per optimizer family and dtype (``hybridgpu.optimizer.fused``); on
cpu, and for other rules, it loops over the arrays (the per-parameter reference).

A custom optimizer subclasses ``Optimizer`` and overrides ``create_state`` and ``update`` with
NDArray operations, exactly as for MXNet.

Example:
    >>> import hybridgpu as mx
    >>> opt = create("sgd", learning_rate=0.5, momentum=0.9)
    >>> w, g = mx.nd.array([1.0, 2.0]), mx.nd.array([0.2, -0.2])
    >>> state = opt.create_state(0, w)
    >>> opt.update(0, w, g, state)
    >>> [round(x, 6) for x in w.asnumpy().tolist()], opt.num_update
    ([0.9, 2.1], 1)
"""

from __future__ import annotations

import warnings

import numpy as np

from ..ndarray import NDArray

__all__ = ["Optimizer", "register", "create"]


class Optimizer:
    """Base class of every optimizer (MXNet 1.x's ``mx.optimizer.Optimizer``).

    ``learning_rate`` defaults to 0.01 (or the scheduler's ``base_lr``); a ``learning_rate``
    given with an ``lr_scheduler`` overwrites the scheduler's ``base_lr``.

    Example:
        >>> opt = Optimizer(learning_rate=0.1, wd=0.01, param_idx2name={0: "fc_weight",
        ...                                                              1: "fc_bias"})
        >>> opt.set_lr_mult({"fc_bias": 2.0})
        >>> opt._get_lrs([0, 1]), opt._get_wds([0, 1])
        ([0.1, 0.2], [0.01, 0.0])
    """

    #: name (lower case) -> class, filled by ``register``.
    opt_registry: dict = {}
    #: Built-in optimizers define ``_step``; custom ones override ``update`` instead.
    _step = None
    #: multi-precision state layout: (fp32 master, state) here; SGD and NAG put it last.
    _MASTER_FIRST = True
    #: Fuse the gpu updates of built-in rules into one launch a family (``optimizer.fused``).
    fused_updates = True

    def __init__(self, rescale_grad=1.0, param_idx2name=None, wd=0.0, clip_gradient=None,
                 learning_rate=None, lr_scheduler=None, sym=None, begin_num_update=0,
                 multi_precision=False, param_dict=None):
        self.rescale_grad = rescale_grad
        self.lr_scheduler = lr_scheduler
        if lr_scheduler is None and learning_rate is None:
            learning_rate = 0.01
        self.lr = learning_rate
        if (lr_scheduler is not None and learning_rate is not None
                and lr_scheduler.base_lr != learning_rate):
            warnings.warn("learning rate from ``lr_scheduler`` has been overwritten by "
                          "``learning_rate`` in optimizer.", stacklevel=2)
            lr_scheduler.base_lr = learning_rate
        self.wd = wd
        self.lr_mult, self.wd_mult = {}, {}
        self.begin_num_update = begin_num_update
        self.num_update = begin_num_update
        self._all_index_update_counts = {0: {}}
        self._index_update_count = self._all_index_update_counts[0]
        self.clip_gradient = clip_gradient
        self.multi_precision = multi_precision
        self.aggregate_num = 0
        if param_idx2name is None:
            param_idx2name = {}
        if not isinstance(param_idx2name, dict):
            raise TypeError("param_idx2name should be a dict of param indexes to names.")
        self.idx2name = param_idx2name.copy()
        self.sym_info = (sym.attr_dict(), sym.list_arguments()) if sym is not None else ()
        self.param_dict = param_dict if param_dict else {}
        self.set_lr_mult({})
        self.set_wd_mult({})

    # -- registry -----------------------------------------------------------------------
    @staticmethod
    def register(klass):
        """Register ``klass`` under its lower-case class name (a decorator)."""
        if not isinstance(klass, type):
            raise TypeError(f"register expects a class, got {klass!r}")
        name = klass.__name__.lower()
        old = Optimizer.opt_registry.get(name)
        if old is not None and old is not klass:
            warnings.warn(f"WARNING: New optimizer {klass.__module__}.{klass.__name__} is "
                          f"overriding existing optimizer {old.__module__}.{old.__name__}",
                          stacklevel=2)
        Optimizer.opt_registry[name] = klass
        return klass

    @staticmethod
    def create_optimizer(name, **kwargs):
        """An instance of the optimizer registered as ``name`` (case-insensitive)."""
        klass = Optimizer.opt_registry.get(str(name).lower())
        if klass is None:
            raise ValueError(f"Cannot find optimizer {name!r}; available optimizers: "
                             f"{', '.join(sorted(Optimizer.opt_registry))}")
        return klass(**kwargs)

    # -- learning rate ------------------------------------------------------------------
    @property
    def learning_rate(self):
        """The current learning rate (the scheduler's value at ``num_update`` if any)."""
        if self.lr_scheduler is not None:
            return self.lr_scheduler(self.num_update)
        return self.lr

    def set_learning_rate(self, lr):
        """Set the learning rate; not allowed when an ``lr_scheduler`` drives it."""
        if self.lr_scheduler is not None:
            raise UserWarning("LRScheduler of the optimizer has already been defined. Note "
                              "that set_learning_rate can mutate the value of the learning "
                              "rate of the optimizer only when the LRScheduler of the "
                              "optimizer is undefined.")
        self.lr = lr

    def set_lr_scale(self, args_lrscale):
        """Deprecated in MXNet: use ``set_lr_mult``."""
        raise DeprecationWarning("set_lr_scale is deprecated; use set_lr_mult")

    def set_lr_mult(self, args_lr_mult):
        """Learning-rate multipliers by parameter name or index (``sym``'s ``__lr_mult__``
        attributes first, then ``args_lr_mult``)."""
        self.lr_mult = {}
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__lr_mult__" in attr[name]:
                    self.lr_mult[name] = float(attr[name]["__lr_mult__"])
        self.lr_mult.update(args_lr_mult)

    def set_wd_mult(self, args_wd_mult):
        """Weight-decay multipliers by name or index: 0 for names in ``param_idx2name`` that
        end neither in ``_weight`` nor ``_gamma``, then ``sym``'s ``__wd_mult__``, then
        ``args_wd_mult``."""
        self.wd_mult = {}
        for name in self.idx2name.values():
            if not (name.endswith("_weight") or name.endswith("_gamma")):
                self.wd_mult[name] = 0.0
        if self.sym_info:
            attr, arg_names = self.sym_info
            for name in arg_names:
                if name in attr and "__wd_mult__" in attr[name]:
                    self.wd_mult[name] = float(attr[name]["__wd_mult__"])
        self.wd_mult.update(args_wd_mult)

    # -- bookkeeping --------------------------------------------------------------------
    def _set_current_context(self, device_id):
        """Count updates separately per device (one updater per device, as MXNet)."""
        self._index_update_count = self._all_index_update_counts.setdefault(device_id, {})

    def _update_count(self, index):
        """Count one more update of ``index`` (an index or a list of them)."""
        for idx in index if isinstance(index, (list, tuple)) else [index]:
            count = self._index_update_count.get(idx, self.begin_num_update) + 1
            self._index_update_count[idx] = count
            self.num_update = max(count, self.num_update)

    def _mults(self, indices, table, attr):
        out = []
        for index in indices:
            if index in self.param_dict:
                out.append(getattr(self.param_dict[index], attr))
            elif index in table:
                out.append(table[index])
            elif index in self.idx2name:
                out.append(table.get(self.idx2name[index], 1.0))
            else:
                out.append(1.0)
        return out

    def _get_lrs(self, indices):
        """The learning rates of ``indices`` (base rate times each ``lr_mult``)."""
        lr = self.lr_scheduler(self.num_update) if self.lr_scheduler is not None else self.lr
        return [lr * m for m in self._mults(indices, self.lr_mult, "lr_mult")]

    def _get_lr(self, index):
        return self._get_lrs([index])[0]

    def _get_wds(self, indices):
        """The weight decays of ``indices`` (``wd`` times each ``wd_mult``)."""
        return [self.wd * m for m in self._mults(indices, self.wd_mult, "wd_mult")]

    def _get_wd(self, index):
        return self._get_wds([index])[0]

    # -- states -------------------------------------------------------------------------
    def create_state(self, index, weight):
        """The auxiliary state of one weight (momentum, moments...); None by default."""
        return None

    def create_state_multi_precision(self, index, weight):
        """``create_state``, plus a float32 master copy for float16 weights when
        ``multi_precision`` is on."""
        if self.multi_precision and weight.dtype == np.float16:
            master = weight.astype(np.float32)
            inner = self.create_state(index, master)
            return (master, inner) if self._MASTER_FIRST else (inner, master)
        if weight.dtype == np.float16:
            warnings.warn("Accumulating with float16 in optimizer can lead to poor accuracy or "
                          "slow convergence. Consider using multi_precision=True option of the "
                          f"{type(self).__name__} optimizer", stacklevel=2)
        return self.create_state(index, weight)

    def _split_master(self, state):
        return (state[0], state[1]) if self._MASTER_FIRST else (state[1], state[0])

    # -- updates ------------------------------------------------------------------------
    def update(self, index, weight, grad, state):
        """Update ``weight`` (an NDArray, or a list with ``index``, ``grad`` and ``state``
        lists) in place using ``grad`` and ``state``."""
        if type(self)._step is None:
            raise NotImplementedError(f"{type(self).__name__} must implement update()")
        self._update_impl(index, weight, grad, state, multi_precision=False)

    def update_multi_precision(self, index, weight, grad, state):
        """``update``, going through the float32 master copy of float16 weights when
        ``multi_precision`` is on."""
        if type(self)._step is not None:
            self._update_impl(index, weight, grad, state, multi_precision=self.multi_precision)
            return
        if self.multi_precision and weight.dtype == np.float16:
            master, inner = self._split_master(state)
            self.update(index, master, grad.astype(np.float32), inner)
            weight[:] = master.astype(weight.dtype)
        else:
            self.update(index, weight, grad, state)

    def _update_impl(self, index, weight, grad, state, multi_precision):
        indices, weights, grads, states = _as_lists(index, weight, grad, state)
        for w, g in zip(weights, grads):
            if not isinstance(w, NDArray) or not isinstance(g, NDArray):
                raise TypeError(f"{type(self).__name__}.update expects NDArrays, got "
                                f"{type(w).__name__} and {type(g).__name__}")
        self._update_count(indices)
        lrs, wds = self._get_lrs(indices), self._get_wds(indices)
        counts = [self._index_update_count[i] for i in indices]
        jobs = [self._job(w, g, s, multi_precision and w.dtype == np.float16)
                for w, g, s in zip(weights, grads, states)]
        self.step_arrays(jobs, lrs, wds, counts)
        for job in jobs:
            if job.low_precision is not None:
                job.low_precision[...] = job.weight.astype(job.low_precision.dtype)

    def _job(self, weight, grad, state, multi_precision):
        if multi_precision:
            master, inner = self._split_master(state)
            return UpdateJob(weight.context, master._data,
                             grad._data.astype(np.float32), raw_state(inner), weight._data)
        return UpdateJob(weight.context, weight._data, grad._data, raw_state(state))

    def step_arrays(self, jobs, lrs, wds, counts):
        """Apply the rule to every ``UpdateJob`` with its learning rate, weight decay and
        update count. On gpu the built-in rules go through one fused multi-tensor kernel
        launch per family and dtype (``optimizer.fused``); every other job, and every job
        when ``fused_updates`` is False, runs the per-parameter rule (the reference)."""
        remaining = range(len(jobs))
        if self.fused_updates and any(job.ctx.is_gpu for job in jobs):
            from .fused import fused_step

            remaining = fused_step(self, jobs, lrs, wds, counts)
        for n in remaining:
            job = jobs[n]
            with job.ctx.scope():
                self._step(job.ctx.xp, job.weight, job.grad, job.state, lrs[n], wds[n],
                           counts[n])

    # -- helpers for rules --------------------------------------------------------------
    def _rescaled(self, grad, dtype):
        """``grad * rescale_grad``, clipped to ``[-clip_gradient, clip_gradient]`` when
        ``clip_gradient`` is set and >= 0 (MXNet's fused update ops)."""
        out = grad * op_scalars(dtype)(self.rescale_grad)
        return clip_op(out, self.clip_gradient)


class UpdateJob:
    """One weight to update: its context, the raw ``weight``, ``grad`` and ``state`` (None, an
    array, or a tuple of them) and, under multi-precision, the float16 array that receives the
    updated float32 ``weight``."""

    __slots__ = ("ctx", "weight", "grad", "state", "low_precision")

    def __init__(self, ctx, weight, grad, state, low_precision=None):
        self.ctx, self.weight, self.grad, self.state = ctx, weight, grad, state
        self.low_precision = low_precision


def op_scalars(dtype):
    """A function making scalars the way MXNet's fused update ops see them: their parameters are
    float32, used in the weight's dtype (it matters for float64 weights)."""
    cast = np.dtype(dtype).type
    return lambda value: cast(np.float32(value))


def clip_op(array, bound):
    """Clip like MXNet's update ops: only when ``bound`` is set, non-zero and >= 0."""
    if bound and bound >= 0:
        array = array.clip(-bound, bound)
    return array


def raw_state(state):
    """The numpy/cupy arrays of a state (None, an NDArray, or a tuple/list of states)."""
    if isinstance(state, NDArray):
        return state._data
    if isinstance(state, (tuple, list)):
        return tuple(raw_state(s) for s in state)
    return state


def _as_lists(index, weight, grad, state):
    if isinstance(index, (list, tuple)):
        if not len(index) == len(weight) == len(grad) == len(state):
            raise ValueError(f"update: {len(index)} indices, {len(weight)} weights, "
                             f"{len(grad)} gradients and {len(state)} states")
        return list(index), list(weight), list(grad), list(state)
    return [index], [weight], [grad], [state]


register = Optimizer.register
create = Optimizer.create_optimizer
