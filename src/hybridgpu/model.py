"""``mx.model``: MXNet 1.x's checkpoint files: ``prefix-symbol.json`` (the symbol) and
``prefix-%04d.params`` (the parameters of one epoch, keys ``arg:<name>`` and ``aux:<name>``).

``save_checkpoint`` writes both (each atomically); ``load_checkpoint`` reads them back as
``(symbol, arg_params, aux_params)``, ``load_params`` only the parameters. Files written by
MXNet 1.x load here and files written here load in MXNet. ``BatchEndParam`` is what
``Module.fit`` hands its batch-end callbacks.

Example:
    >>> import os, tempfile
    >>> import hybridgpu as mx
    >>> net = mx.sym.FullyConnected(mx.sym.var("data"), num_hidden=2, name="fc")
    >>> prefix = os.path.join(tempfile.mkdtemp(), "net")
    >>> save_checkpoint(prefix, 3, net, {"fc_weight": mx.nd.ones((2, 4)),
    ...                                  "fc_bias": mx.nd.zeros(2)}, {})
    >>> sorted(os.listdir(os.path.dirname(prefix)))
    ['net-0003.params', 'net-symbol.json']
    >>> sym, args, auxs = load_checkpoint(prefix, 3)
    >>> sym.list_arguments(), sorted(args), auxs
    (['data', 'fc_weight', 'fc_bias'], ['fc_bias', 'fc_weight'], {})
"""

from __future__ import annotations

import logging
from collections import namedtuple

from . import ndarray as nd
from . import symbol as sym
from .base import MXNetError
from .context import cpu
from .serialization import files

__all__ = ["BatchEndParam", "save_checkpoint", "load_checkpoint", "load_params",
           "checkpoint_paths"]

#: What ``Module.fit`` passes to each batch-end callback.
BatchEndParam = namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])


def checkpoint_paths(prefix, epoch):
    """``(symbol file, parameter file)`` of checkpoint ``epoch`` under ``prefix``.

    Example:
        >>> checkpoint_paths("run/mlp", 12)
        ('run/mlp-symbol.json', 'run/mlp-0012.params')
    """
    return f"{prefix}-symbol.json", f"{prefix}-{int(epoch):04d}.params"


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``symbol`` (unless None) to ``prefix-symbol.json`` and the parameters (on cpu,
    keys ``arg:<name>``/``aux:<name>``) to ``prefix-%04d.params``."""
    symbol_file, param_file = checkpoint_paths(prefix, epoch)
    records = {f"arg:{k}": v.as_in_context(cpu()) for k, v in (arg_params or {}).items()}
    records.update({f"aux:{k}": v.as_in_context(cpu()) for k, v in (aux_params or {}).items()})
    with files.together():  # the old pair or the new pair, never a mix (as export)
        nd.save(param_file, records)
        if symbol is not None:
            symbol.save(symbol_file, remove_amp_cast=remove_amp_cast)
    logging.info('Saved checkpoint to "%s"', param_file)


def split_params(saved, source):
    """``(arg_params, aux_params)`` from a dict with ``arg:``/``aux:`` keys (``source``
    names the file in errors)."""
    if not isinstance(saved, dict):
        raise MXNetError(f"{source}: a checkpoint's parameter file holds named arrays, but "
                         f"this one holds an unnamed list of {len(saved)}")
    arg_params, aux_params = {}, {}
    for key, value in saved.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux"):
            raise MXNetError(f"{source}: key {key!r} is not 'arg:<name>' or 'aux:<name>'; "
                             f"this is not a checkpoint parameter file (a Gluon "
                             f"save_parameters file loads with net.load_parameters)")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def load_params(prefix, epoch):
    """``(arg_params, aux_params)`` of checkpoint ``epoch``."""
    param_file = checkpoint_paths(prefix, epoch)[1]
    return split_params(nd.load(param_file), param_file)


def load_checkpoint(prefix, epoch):
    """``(symbol, arg_params, aux_params)`` of checkpoint ``epoch``."""
    symbol = sym.load(checkpoint_paths(prefix, epoch)[0])
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params
