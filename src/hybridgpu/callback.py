"""``mx.callback``: the callbacks of ``Module.fit`` (MXNet 1.x's API).

Batch-end callbacks receive a ``BatchEndParam`` (epoch, nbatch, eval_metric, locals);
epoch-end callbacks receive ``(epoch, symbol, arg_params, aux_params)``. ``Speedometer`` logs
(through ``logging.info``, like MXNet) lines such as
``Epoch[0] Batch [0-50]\\tSpeed: 1234.56 samples/sec\\taccuracy=0.500000``.

Example:
    >>> import logging, os, tempfile
    >>> import hybridgpu as mx
    >>> prefix = os.path.join(tempfile.mkdtemp(), "m")
    >>> save = do_checkpoint(prefix, period=2)
    >>> net = mx.sym.var("data") * 2
    >>> save(0, net, {}, {}); save(1, net, {}, {})   # epochs 1 and 2: saved after the 2nd
    >>> sorted(os.listdir(os.path.dirname(prefix)))
    ['m-0002.params', 'm-symbol.json']
"""

from __future__ import annotations

import logging
import time

from .model import save_checkpoint

__all__ = ["do_checkpoint", "module_checkpoint", "log_train_metric", "Speedometer",
           "ProgressBar", "LogValidationMetricsCallback"]


def do_checkpoint(prefix, period=1):
    """An epoch-end callback that saves a checkpoint every ``period`` epochs (as epoch
    number ``epoch + 1``)."""
    period = int(max(1, period))

    def _callback(iter_no, symbol, arg, aux):
        if (iter_no + 1) % period == 0:
            save_checkpoint(prefix, iter_no + 1, symbol, arg, aux)
    return _callback


def module_checkpoint(mod, prefix, period=1, save_optimizer_states=False):
    """An epoch-end callback that calls ``mod.save_checkpoint`` every ``period`` epochs."""
    period = int(max(1, period))

    def _callback(iter_no, symbol=None, arg=None, aux=None):
        if (iter_no + 1) % period == 0:
            mod.save_checkpoint(prefix, iter_no + 1, save_optimizer_states)
    return _callback


def log_train_metric(period, auto_reset=False):
    """A batch-end callback logging the training metric every ``period`` batches."""

    def _callback(param):
        if param.nbatch % period == 0 and param.eval_metric is not None:
            for name, value in param.eval_metric.get_name_value():
                logging.info("Iter[%d] Batch[%d] Train-%s=%f", param.epoch, param.nbatch,
                             name, value)
            if auto_reset:
                param.eval_metric.reset_local()
    return _callback


class Speedometer:
    """Logs the training speed and metric every ``frequent`` batches; with ``auto_reset``
    the metric is reset after each line, so each line shows the batches since the last.

    Example:
        >>> import hybridgpu as mx
        >>> speed = Speedometer(batch_size=4, frequent=1)
        >>> metric = mx.metric.Accuracy()
        >>> for nbatch in range(2):
        ...     speed(mx.model.BatchEndParam(0, nbatch, metric, None))
        >>> speed.init
        True
    """

    def __init__(self, batch_size, frequent=50, auto_reset=True):
        self.batch_size = batch_size
        self.frequent = frequent
        self.auto_reset = auto_reset
        self.init = False
        self.tic = 0
        self.last_count = 0

    def __call__(self, param):
        count = param.nbatch
        if self.last_count > count:  # a new epoch began
            self.init = False
        self.last_count = count
        if not self.init:
            self.init = True
            self.tic = time.time()
            return
        if count % self.frequent != 0:
            return
        elapsed = time.time() - self.tic
        speed = self.frequent * self.batch_size / elapsed if elapsed > 0 else float("inf")
        self._log(param, count, speed)
        self.tic = time.time()

    def _log(self, param, count, speed):
        if param.eval_metric is None:
            logging.info("Iter[%d] Batch [%d]\tSpeed: %.2f samples/sec", param.epoch, count,
                         speed)
            return
        name_value = param.eval_metric.get_name_value()
        values = [item for pair in name_value for item in pair]
        if self.auto_reset:
            param.eval_metric.reset_local()
            logging.info("Epoch[%d] Batch [%d-%d]\tSpeed: %.2f samples/sec" +
                         "\t%s=%f" * len(name_value), param.epoch, count - self.frequent,
                         count, speed, *values)
        else:
            logging.info("Epoch[%d] Batch [0-%d]\tSpeed: %.2f samples/sec" +
                         "\t%s=%f" * len(name_value), param.epoch, count, speed, *values)


class ProgressBar:
    """Logs a text progress bar of ``length`` characters over ``total`` batches."""

    def __init__(self, total, length=80):
        self.bar_len = length
        self.total = total

    def __call__(self, param):
        filled = int(round(self.bar_len * param.nbatch / float(self.total)))
        percents = int(round(100.0 * param.nbatch / float(self.total)))
        bar = "=" * filled + "-" * (self.bar_len - filled)
        logging.info("[%s] %s%s\r", bar, percents, "%")


class LogValidationMetricsCallback:
    """An eval-end callback logging each validation metric."""

    def __call__(self, param):
        if not param.eval_metric:
            return
        for name, value in param.eval_metric.get_name_value():
            logging.info("Epoch[%d] Validation-%s=%f", param.epoch, name, value)
