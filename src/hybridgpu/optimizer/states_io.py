"""Optimizer states as bytes, without pickle: MXNet's NDArray file format plus JSON.

``Updater.get_states`` (and ``gluon.Trainer.save_states``) write one file in the ``.params``
format of ``nd.save``: every state array under the name ``state:<k>``, and a JSON document, as
a uint8 array named ``__optimizer_states__.json``, that says which arrays make up the state of
which index (states may be None, arrays, or tuples/lists of them) and, with
``dump_optimizer=True``, the optimizer's own attributes (learning rate, ``num_update``, per-index
update counts, hyperparameters) and its ``lr_scheduler``'s. JSON keeps the types Python needs
with tags: ``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": [[key, value], ...]}`` and
``{"array": k}``. Reading validates the structure and refuses pickled MXNet files (nothing is
ever unpickled).

MXNet pickles ``(states, optimizer)`` instead; its files cannot be read here and this format is
not MXNet's. ``nd.load`` (of either library) does read these files as a dict of arrays.

Example:
    >>> import hybridgpu as mx
    >>> arrays = []
    >>> tree = pack_state((mx.nd.ones(2), None), arrays)
    >>> tree, len(arrays)
    ({'tuple': [{'array': 0}, None]}, 1)
    >>> unpack_state(tree, arrays)[0].asnumpy().tolist()
    [1.0, 1.0]
"""

from __future__ import annotations

import copy
import inspect
import json
import warnings

import numpy as np

from .. import lr_scheduler as lr_scheduler_module
from ..base import MXNetError
from ..ndarray import NDArray
from ..ndarray.utils import load_frombuffer
from ..serialization import ndarray_file

__all__ = ["FORMAT", "META_NAME", "encode_value", "decode_value", "pack_state", "unpack_state",
           "dumps_states", "loads_states", "restore_optimizer", "check_state"]

FORMAT = "hybridgpu.optimizer_states"
VERSION = 1
META_NAME = "__optimizer_states__.json"
_SKIP_ATTRS = ("param_dict", "lr_scheduler", "_index_update_count")


class _NotEncodableError(TypeError):
    pass


def encode_value(value):
    """``value`` (None, bool, int, float, str, or tuples/lists/dicts of them) as tagged JSON."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, tuple):
        return {"tuple": [encode_value(v) for v in value]}
    if isinstance(value, list):
        return {"list": [encode_value(v) for v in value]}
    if isinstance(value, dict):
        return {"dict": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    raise _NotEncodableError(type(value).__name__)


def _tag(obj, tags):
    if not isinstance(obj, dict) or len(obj) != 1 or next(iter(obj)) not in tags:
        raise MXNetError(f"optimizer states file: unexpected JSON value {str(obj)[:80]!r}")
    return next(iter(obj.items()))


def decode_value(obj):
    """The inverse of ``encode_value``."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    tag, body = _tag(obj, ("tuple", "list", "dict"))
    if tag == "dict":
        return {_hashable(decode_value(k)): decode_value(v) for k, v in _pairs(body)}
    items = [decode_value(v) for v in _items(body)]
    return tuple(items) if tag == "tuple" else items


def _items(body):
    if not isinstance(body, list):
        raise MXNetError("optimizer states file: a tagged container must hold a JSON list")
    return body


def _pairs(body):
    pairs = _items(body)
    if not all(isinstance(p, list) and len(p) == 2 for p in pairs):
        raise MXNetError("optimizer states file: a dict must hold [key, value] pairs")
    return pairs


def _hashable(key):
    try:
        hash(key)
    except TypeError:
        raise MXNetError(f"optimizer states file: invalid dict key {key!r}") from None
    return key


def pack_state(state, arrays):
    """``state`` as tagged JSON, its NDArrays appended to ``arrays`` (``{"array": k}``)."""
    if isinstance(state, NDArray):
        arrays.append(state)
        return {"array": len(arrays) - 1}
    if isinstance(state, (tuple, list)):
        return {type(state).__name__: [pack_state(s, arrays) for s in state]}
    if isinstance(state, dict):
        return {"dict": [[encode_value(k), pack_state(v, arrays)] for k, v in state.items()]}
    return encode_value(state)


def unpack_state(obj, arrays):
    """The inverse of ``pack_state``: ``{"array": k}`` becomes ``arrays[k]``."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    tag, body = _tag(obj, ("array", "tuple", "list", "dict"))
    if tag == "array":
        if not isinstance(body, int) or isinstance(body, bool) or not 0 <= body < len(arrays):
            raise MXNetError(f"optimizer states file: array reference {body!r} is not one of "
                             f"the {len(arrays)} arrays in the file")
        return arrays[body]
    if tag == "dict":
        return {_hashable(decode_value(k)): unpack_state(v, arrays) for k, v in _pairs(body)}
    items = [unpack_state(v, arrays) for v in _items(body)]
    return tuple(items) if tag == "tuple" else items


# -- whole files -----------------------------------------------------------------------------
def state_records(states, optimizer=None):
    """(records, names) for ``ndarray_file.save``/``dumps``: the arrays of ``states`` (index ->
    state) and the JSON document, with ``optimizer``'s attributes when given."""
    arrays = []
    meta = {"format": FORMAT, "version": VERSION,
            "states": [[encode_value(idx), pack_state(s, arrays)] for idx, s in states.items()]}
    if optimizer is not None:
        meta["optimizer"] = _optimizer_config(optimizer)
    blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    records = [_record(a) for a in arrays] + [ndarray_file.ArrayRecord.from_numpy(blob)]
    names = [f"state:{k}" for k in range(len(arrays))] + [META_NAME]
    return records, names


def dumps_states(states, optimizer=None):
    """The bytes of ``state_records``."""
    return ndarray_file.dumps(*state_records(states, optimizer))


def _record(array):
    ctx = array.context
    return ndarray_file.ArrayRecord(array.shape, np.dtype(array.dtype), array.asnumpy,
                                    ctx.device_typeid, ctx.device_id)


def loads_states(blob):
    """(states dict, optimizer config or None) from bytes written by ``dumps_states``."""
    blob = bytes(blob)
    if blob[:1] == b"\x80":
        raise MXNetError("this optimizer-states data looks like a Python pickle (as MXNet "
                         "writes); hybridgpu never unpickles data, which could run arbitrary "
                         "code. Save the states again with hybridgpu")
    loaded = load_frombuffer(blob)
    if not isinstance(loaded, dict) or META_NAME not in loaded:
        raise MXNetError(f"not a hybridgpu optimizer-states file: no {META_NAME!r} entry")
    try:
        return _decode_file(loaded)
    except RecursionError:
        raise MXNetError("optimizer states file: the metadata is nested too deeply") from None


def _decode_file(loaded):
    try:
        meta = json.loads(loaded[META_NAME].asnumpy().tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise MXNetError(f"optimizer states file: unreadable metadata ({err})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise MXNetError("not a hybridgpu optimizer-states file (wrong format tag)")
    if meta.get("version") != VERSION:
        raise MXNetError(f"optimizer states file version {meta.get('version')!r} is not "
                         f"supported (this hybridgpu reads version {VERSION})")
    count = len(loaded) - 1
    arrays = [loaded.get(f"state:{k}") for k in range(count)]
    if any(a is None for a in arrays):
        raise MXNetError("optimizer states file: state arrays are missing or misnamed")
    states = {_hashable(decode_value(k)): unpack_state(v, arrays)
              for k, v in _pairs(meta.get("states"))}
    config = meta.get("optimizer")
    if config is not None and not isinstance(config, dict):
        raise MXNetError("optimizer states file: the optimizer entry must be a JSON object")
    return states, config


# -- the optimizer's own attributes ------------------------------------------------------------
def _attrs_of(obj, skip=()):
    attrs, skipped = {}, []
    for name, value in vars(obj).items():
        if name in skip:
            continue
        try:
            attrs[name] = encode_value(value)
        except _NotEncodableError:
            skipped.append(name)
    if skipped:
        warnings.warn(f"{type(obj).__name__}: attributes {skipped} are not plain values and "
                      "are not saved with the optimizer states", stacklevel=4)
    return attrs


def _optimizer_config(optimizer):
    current = [dev for dev, counts in optimizer._all_index_update_counts.items()
               if counts is optimizer._index_update_count]
    scheduler = optimizer.lr_scheduler
    return {"class": type(optimizer).__name__,
            "attrs": _attrs_of(optimizer, _SKIP_ATTRS),
            "current_device": encode_value(current[0] if current else None),
            "lr_scheduler": None if scheduler is None else {
                "class": type(scheduler).__name__, "attrs": _attrs_of(scheduler)}}


def restore_optimizer(optimizer, config):
    """Set the attributes saved in ``config`` on ``optimizer``, which must be of the class that
    saved them (MXNet replaces the optimizer object; hybridgpu keeps it, and its
    ``param_dict``)."""
    if config.get("class") != type(optimizer).__name__:
        raise MXNetError(f"the optimizer states were saved by optimizer "
                         f"{config.get('class')!r}, but this one is {type(optimizer).__name__!r}"
                         "; create the Trainer with the same optimizer to load them")
    _set_attrs(optimizer, config.get("attrs"))
    device = decode_value(config.get("current_device"))
    if device is not None and (not isinstance(device, int) or isinstance(device, bool)):
        raise MXNetError(f"optimizer states file: current_device {device!r} is not a device "
                         "id")
    optimizer._index_update_count = optimizer._all_index_update_counts.setdefault(
        device if device is not None else 0, {})
    optimizer.lr_scheduler = _restored_scheduler(optimizer.lr_scheduler,
                                                 config.get("lr_scheduler"))


def _set_attrs(obj, attrs, defaults=None):
    """Set saved plain-data attributes; names of methods, properties and other class
    attributes that are not plain data are refused (a plain-data class default, such as
    ``fused_updates``, may be overridden by the instance, as when it was saved), and so is a
    value whose kind differs from the attribute's current one (``lr="abc"``)."""
    decoded = {}
    for name, value in _dict_body(attrs):
        if not name.isidentifier() or name.startswith("__") or not _plain_default(obj, name):
            raise MXNetError(f"optimizer states file: {name!r} cannot be restored as an "
                             f"attribute of {type(obj).__name__}")
        decoded[name] = decode_value(value)
        _check_kind(obj, name, decoded[name], defaults or {})
    if "_all_index_update_counts" in decoded:
        _check_update_counts(decoded["_all_index_update_counts"])
    for name, value in decoded.items():
        setattr(obj, name, value)


def _kind(value):
    """The kind an attribute's value must keep: number, bool, str, tuple/list, dict."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, (tuple, list)):
        return "sequence"
    return type(value).__name__


def _check_kind(obj, name, value, defaults):
    """MXNetError when ``value`` cannot stand for ``obj.name`` (another kind of value than
    the current one, or than ``defaults[name]`` for an object not yet initialized; None
    only where None is current; numbers finite unless current is not)."""
    current = vars(obj).get(name, defaults.get(name, inspect.getattr_static(
        type(obj), name, _ABSENT)))
    where = f"optimizer states file: {type(obj).__name__}.{name}"
    if current is _ABSENT or value is None and current is None:
        return
    if current is None:
        if _kind(value) != "number":
            raise MXNetError(f"{where} = {value!r}: expected a number or None")
        return
    if _kind(value) != _kind(current):
        raise MXNetError(f"{where} = {str(value)[:60]!r}: expected a {_kind(current)} like "
                         f"the current {current!r}")
    if _kind(value) == "number" and not np.isfinite(value) and np.isfinite(current):
        raise MXNetError(f"{where} = {value!r}: expected a finite number")


def _check_update_counts(counts):
    """``_all_index_update_counts``: {device: {index: count}} with counts >= 0 ints."""
    ok = isinstance(counts, dict) and all(
        isinstance(per, dict) and all(
            isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in per.values())
        for per in counts.values())
    if not ok:
        raise MXNetError("optimizer states file: _all_index_update_counts must map each device "
                         f"to {{index: update count}}, got {str(counts)[:80]!r}")


def check_state(index, state, expected):
    """MXNetError naming ``index`` when a loaded ``state`` does not have the structure,
    shapes and dtypes of ``expected`` (what the optimizer creates for the weight now).

    Example:
        >>> import hybridgpu as mx
        >>> check_state(0, mx.nd.zeros(2), mx.nd.zeros(2))
        >>> check_state(3, [[mx.nd.zeros(2)]], mx.nd.zeros(2))
        Traceback (most recent call last):
        ...
        hybridgpu.base.MXNetError: optimizer states: the state of index 3 is a list, but ...
    """
    problem = _mismatch(state, expected, "")
    if problem is not None:
        raise MXNetError(f"optimizer states: the state of index {index!r}{problem}; the "
                         "states were saved for other parameters or another optimizer")


def _describe(value):
    if isinstance(value, NDArray):
        return f"an array of shape {value.shape} {np.dtype(value.dtype).name}"
    return "None" if value is None else f"a {type(value).__name__}"


def _mismatch(state, expected, path):
    if isinstance(expected, NDArray):
        same = (isinstance(state, NDArray) and state.shape == expected.shape
                and np.dtype(state.dtype) == np.dtype(expected.dtype))
    elif isinstance(expected, (tuple, list)):
        if isinstance(state, (tuple, list)) and len(state) == len(expected):
            for k, (s, e) in enumerate(zip(state, expected)):
                problem = _mismatch(s, e, f"{path}[{k}]")
                if problem is not None:
                    return problem
            return None
        same = False
    else:
        same = _kind(state) == _kind(expected) or expected is None and state is None
    if same:
        return None
    return (f"{path} is {_describe(state)}, but the optimizer keeps "
            f"{_describe(expected)}" + (f" of {len(expected)}" if isinstance(
                expected, (tuple, list)) else "") + " there")


def _plain_default(obj, name):
    """True when ``type(obj)`` has no attribute ``name`` or a plain-data one."""
    found = inspect.getattr_static(type(obj), name, _ABSENT)
    return found is _ABSENT or isinstance(found, (bool, int, float, str, type(None)))


_ABSENT = object()


def _dict_body(attrs):
    if not isinstance(attrs, dict):
        raise MXNetError("optimizer states file: optimizer attributes must be a JSON object")
    return [[k, v] for k, v in attrs.items()]


def _restored_scheduler(current, config):
    if config is None:
        return None
    if not isinstance(config, dict):
        raise MXNetError("optimizer states file: the lr_scheduler entry must be a JSON object")
    name = config.get("class")
    if current is not None and type(current).__name__ == name:
        scheduler = current
    elif name in lr_scheduler_module.__all__:
        klass = getattr(lr_scheduler_module, name)
        scheduler = klass.__new__(klass)
        _set_attrs(scheduler, config.get("attrs"), _init_defaults(klass))
        _probe_scheduler(scheduler, name)
        return scheduler
    else:
        warnings.warn(f"lr_scheduler {name!r} saved with the optimizer states is unknown here; "
                      "keeping the optimizer's current scheduler", stacklevel=3)
        return current
    _set_attrs(scheduler, config.get("attrs"))
    _probe_scheduler(scheduler, name)
    return scheduler


def _init_defaults(klass):
    """``{parameter: default}`` of ``klass.__init__`` (what a fresh instance would hold;
    required parameters, such as a step that may be a number or a list, are left to the
    trial run)."""
    return {p.name: p.default for p in inspect.signature(klass.__init__).parameters.values()
            if p.default is not p.empty}


def _probe_scheduler(scheduler, name):
    """Run a copy of the restored scheduler once, so fields it cannot use fail now, at load,
    and not at the next step."""
    try:
        trial = copy.deepcopy(scheduler)
        rate = trial(int(getattr(trial, "count", 0) or 0) + 1)
        float(rate)
    except Exception as err:  # noqa: BLE001 - any failure is a bad file, said as MXNetError
        raise MXNetError(f"optimizer states file: the saved lr_scheduler {name!r} cannot run "
                         f"with its saved fields ({type(err).__name__}: {err})") from None
