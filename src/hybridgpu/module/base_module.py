"""``BaseModule``: the training and evaluation loops of MXNet 1.x's ``mx.mod`` API (``fit``,
``score``, ``predict``, ``iter_predict``), written against the abstract steps a module
implements (``bind``, ``init_params``, ``init_optimizer``, ``forward``, ``backward``,
``update``, ``get_outputs``, ``update_metric``).

``fit`` runs MXNet's loop: per epoch, every batch is ``forward_backward`` then ``update``
then ``update_metric``; batch-end callbacks get a ``BatchEndParam``; at the end of the epoch
it logs ``Epoch[i] Train-<metric>=<value>`` and ``Epoch[i] Time cost=<s>``, calls the
epoch-end callbacks with ``(epoch, symbol, arg_params, aux_params)``, scores ``eval_data``
(``Epoch[i] Validation-<metric>=<value>``) and resets ``train_data``.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> net = mx.sym.SoftmaxOutput(mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2,
    ...                                                  name="fc"), name="softmax")
    >>> x = np.array([[1., 0.], [0., 1.]] * 4, dtype=np.float32)
    >>> y = np.array([0, 1] * 4, dtype=np.float32)
    >>> mod = mx.mod.Module(net)
    >>> mod.fit(mx.io.NDArrayIter(x, y, batch_size=4), num_epoch=20,
    ...         optimizer_params={"learning_rate": 1.0})
    >>> mod.score(mx.io.NDArrayIter(x, y, batch_size=4), "acc")
    [('accuracy', 1.0)]
"""

from __future__ import annotations

import logging
import time

import numpy as np

from .. import metric as metric_mod
from .. import ndarray as nd
from ..initializer import Uniform
from ..io import DataBatch, DataIter
from ..model import BatchEndParam
from ..ndarray import NDArray

__all__ = ["BaseModule"]


def _as_list(obj):
    return obj if isinstance(obj, list) else [obj]


def _call_all(callbacks, *args):
    if callbacks is not None:
        for callback in _as_list(callbacks):
            callback(*args)


class BaseModule:
    """The loops shared by modules; subclasses (``Module``) provide the steps.

    Example:
        >>> BaseModule().binded, BaseModule().params_initialized
        (False, False)
    """

    def __init__(self, logger=logging):
        self.logger = logger
        self.binded = False
        self.for_training = False
        self.inputs_need_grad = False
        self.params_initialized = False
        self.optimizer_initialized = False
        self._symbol = None
        self._total_exec_bytes = 0

    # -- steps a module implements --------------------------------------------------------
    def forward_backward(self, data_batch):
        """``forward`` in training mode, then ``backward``."""
        self.forward(data_batch, is_train=True)
        self.backward()

    def prepare(self, data_batch, sparse_row_id_fn=None):
        """Prepare for ``data_batch`` (nothing to do for dense arrays)."""

    def _require(self, what):
        """Raise unless the module is bound (``what`` >= 1), has parameters (>= 2) and an
        optimizer (3)."""
        steps = [(self.binded, "call bind() first"),
                 (self.params_initialized, "call init_params() (or set_params) first"),
                 (self.optimizer_initialized, "call init_optimizer() first")]
        for done, hint in steps[:what]:
            if not done:
                raise RuntimeError(f"{type(self).__name__}: {hint}")

    # -- evaluation -----------------------------------------------------------------------
    def score(self, eval_data, eval_metric, num_batch=None, batch_end_callback=None,
              score_end_callback=None, reset=True, epoch=0, sparse_row_id_fn=None):
        """Run prediction on ``eval_data`` and return ``eval_metric``'s
        ``[(name, value)]`` (padding examples included, as in MXNet)."""
        self._require(2)
        if reset:
            eval_data.reset()
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        eval_metric.reset()
        actual_num_batch = 0
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            self.update_metric(eval_metric, eval_batch.label)
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            actual_num_batch += 1
        _call_all(score_end_callback,
                  BatchEndParam(epoch, actual_num_batch, eval_metric, locals()))
        return eval_metric.get_global_name_value()

    def iter_predict(self, eval_data, num_batch=None, reset=True, sparse_row_id_fn=None):
        """Yield ``(outputs without padding, batch index, batch)`` for each batch."""
        self._require(2)
        if reset:
            eval_data.reset()
        for nbatch, eval_batch in enumerate(eval_data):
            if num_batch is not None and nbatch == num_batch:
                break
            self.prepare(eval_batch, sparse_row_id_fn=sparse_row_id_fn)
            self.forward(eval_batch, is_train=False)
            pad = eval_batch.pad or 0
            outputs = [out[0:out.shape[0] - pad] for out in self.get_outputs()]
            yield outputs, nbatch, eval_batch

    def predict(self, eval_data, num_batch=None, merge_batches=True, reset=True,
                always_output_list=False, sparse_row_id_fn=None):
        """The outputs over ``eval_data`` (a DataIter, or one NDArray/numpy batch), padding
        removed; with ``merge_batches`` the batches are concatenated (one array when the
        symbol has one output, unless ``always_output_list``)."""
        self._require(2)
        if isinstance(eval_data, (NDArray, np.ndarray)):
            batch = eval_data if isinstance(eval_data, NDArray) else nd.array(eval_data)
            self.forward(DataBatch([batch]))
            return self.get_outputs()[0]
        if not isinstance(eval_data, DataIter):
            raise ValueError(f"predict: eval_data must be a DataIter, an NDArray or a numpy "
                             f"array, got {type(eval_data).__name__}")
        output_list = [[out.copy() for out in outputs] for outputs, _, _ in
                       self.iter_predict(eval_data, num_batch, reset, sparse_row_id_fn)]
        if not output_list or not merge_batches:
            return output_list
        num_outputs = len(output_list[0])
        merged = [nd.concat(*[outs[i] for outs in output_list], dim=0)
                  for i in range(num_outputs)]
        if num_outputs == 1 and not always_output_list:
            return merged[0]
        return merged

    # -- training -------------------------------------------------------------------------
    def fit(self, train_data, eval_data=None, eval_metric="acc", epoch_end_callback=None,
            batch_end_callback=None, kvstore="local", optimizer="sgd",
            optimizer_params=(("learning_rate", 0.01),), eval_end_callback=None,
            eval_batch_end_callback=None, initializer=None, arg_params=None,
            aux_params=None, allow_missing=False, force_rebind=False, force_init=False,
            begin_epoch=0, num_epoch=None, validation_metric=None, monitor=None,
            sparse_row_id_fn=None):
        """Train for epochs ``begin_epoch`` to ``num_epoch - 1`` (binding, initializing
        (default ``Uniform(0.01)``) and installing the optimizer first), as MXNet does."""
        if num_epoch is None:
            raise ValueError("fit: please specify number of epochs (num_epoch)")
        if monitor is not None:
            raise NotImplementedError("fit: monitor (mx.mon.Monitor) is not supported by "
                                      "hybridgpu")
        self.bind(data_shapes=train_data.provide_data, label_shapes=train_data.provide_label,
                  for_training=True, force_rebind=force_rebind)
        self.init_params(initializer=Uniform(0.01) if initializer is None else initializer,
                         arg_params=arg_params, aux_params=aux_params,
                         allow_missing=allow_missing, force_init=force_init)
        self.init_optimizer(kvstore=kvstore, optimizer=optimizer,
                            optimizer_params=optimizer_params)
        if validation_metric is None:
            validation_metric = eval_metric
        if not isinstance(eval_metric, metric_mod.EvalMetric):
            eval_metric = metric_mod.create(eval_metric)
        for epoch in range(begin_epoch, num_epoch):
            tic = time.time()
            name_values = self._fit_epoch(epoch, train_data, eval_metric, batch_end_callback,
                                          sparse_row_id_fn)
            for name, value in name_values:
                self.logger.info("Epoch[%d] Train-%s=%f", epoch, name, value)
            self.logger.info("Epoch[%d] Time cost=%.3f", epoch, time.time() - tic)
            arg_params_now, aux_params_now = self.get_params()
            self.set_params(arg_params_now, aux_params_now)
            _call_all(epoch_end_callback, epoch, self.symbol, arg_params_now, aux_params_now)
            if eval_data:
                res = self.score(eval_data, validation_metric,
                                 score_end_callback=eval_end_callback,
                                 batch_end_callback=eval_batch_end_callback, epoch=epoch)
                for name, value in res:
                    self.logger.info("Epoch[%d] Validation-%s=%f", epoch, name, value)
            train_data.reset()

    def _fit_epoch(self, epoch, train_data, eval_metric, batch_end_callback,
                   sparse_row_id_fn):
        """One pass over ``train_data``; the metric's ``[(name, value)]`` over the epoch."""
        eval_metric.reset()
        data_iter = iter(train_data)
        next_batch = next(data_iter)
        nbatch, end_of_batch, name_values = 0, False, []
        while not end_of_batch:
            data_batch = next_batch
            self.forward_backward(data_batch)
            self.update()
            self.update_metric(eval_metric, data_batch.label)
            try:
                next_batch = next(data_iter)
                self.prepare(next_batch, sparse_row_id_fn=sparse_row_id_fn)
            except StopIteration:
                end_of_batch = True
            if end_of_batch:
                name_values = eval_metric.get_global_name_value()
            _call_all(batch_end_callback, BatchEndParam(epoch, nbatch, eval_metric, locals()))
            nbatch += 1
        return name_values

    # -- properties -----------------------------------------------------------------------
    @property
    def symbol(self):
        """The symbol this module runs."""
        return self._symbol
