"""What one ``dist_sync`` collective is, as a fixed-size descriptor every rank all-gathers
before the collective runs, and the check that the ranks' descriptors agree.

A descriptor holds the collective's sequence number on its communicator, the operation
(``init``, ``push``, ``barrier``, ``broadcast``), the key, and the dtype and shape of the buffer
it moves: 16 int64 fields compared bit for bit, then ``TEXT_BYTES`` of the key's text, kept for
the error message only. Ranks that disagree would otherwise reduce mismatched buffers (wrong
numbers, or MPI reading past a buffer); with the check, every rank sees the same table and
raises the same ``DistributedError`` naming the ranks and the fields that differ.

Example:
    >>> import numpy as np
    >>> a = describe(7, "push", 1, np.zeros((2, 3), np.float32))
    >>> b = describe(7, "push", 2, np.zeros((2, 3), np.float64))
    >>> disagreement(np.stack([a, a])) is None
    True
    >>> print(disagreement(np.stack([a, b])))
    rank 0 calls push of key 1 (float32, shape (2, 3)), rank 1 calls ...: they differ in key, dtype
"""

from __future__ import annotations

import hashlib

import numpy as np

from ..base import MXNetError

__all__ = ["DistributedError", "describe", "disagreement", "DESCRIPTOR_BYTES"]

OPERATIONS = ("init", "push", "barrier", "broadcast")
_VERSION = 0x4B56_4147_0001  # 'KVAG' 1: a peer running another layout differs here
_INTS = 16
_DIMS = 8  # dims stored one by one; any shape is also covered by its digest
TEXT_BYTES = 48
DESCRIPTOR_BYTES = _INTS * 8 + TEXT_BYTES
# int fields
_F_VERSION, _F_SEQ, _F_OP, _F_KEY_KIND, _F_KEY, _F_DTYPE, _F_NDIM, _F_SHAPE = range(8)
_KEY_KINDS = {type(None): 0, int: 1, str: 2}


class DistributedError(MXNetError):
    """Workers of a distributed kvstore disagree, or one stopped answering (a subclass)."""


def _digest(text):
    """A signed 64-bit digest of ``text``."""
    raw = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(raw, "little", signed=True)


def _dtype_code(dtype):
    name = np.dtype(dtype).str.encode()
    if len(name) > 8:
        return _digest(name.decode())
    return int.from_bytes(name.ljust(8, b"\0"), "little", signed=True)


def _dtype_name(code):
    raw = int(code).to_bytes(8, "little", signed=True).rstrip(b"\0")
    try:
        return np.dtype(raw.decode("ascii")).name
    except (UnicodeDecodeError, TypeError, ValueError):
        return f"dtype #{code:x}"


def describe(seq, operation, key=None, array=None, text=None):
    """The descriptor (uint8, ``DESCRIPTOR_BYTES``) of collective number ``seq``:
    ``operation`` on ``key`` (int, str or None) moving ``array`` (a NumPy array or None).
    ``text`` is what messages call the key (default: its repr)."""
    ints = np.zeros(_INTS, np.int64)
    ints[_F_VERSION], ints[_F_SEQ] = _VERSION, seq
    ints[_F_OP] = OPERATIONS.index(operation)
    ints[_F_KEY_KIND] = _KEY_KINDS[type(key)]
    ints[_F_KEY] = key if isinstance(key, int) else (_digest(key) if key is not None else 0)
    ints[_F_NDIM] = -1
    if array is not None:
        ints[_F_DTYPE] = _dtype_code(array.dtype)
        ints[_F_NDIM] = array.ndim
        ints[_F_SHAPE] = _digest(repr(tuple(array.shape)))
        dims = array.shape[:_DIMS]
        ints[_F_SHAPE + 1:_F_SHAPE + 1 + len(dims)] = dims
    label = (repr(key) if text is None else text).encode("utf-8", "backslashreplace")
    out = np.zeros(DESCRIPTOR_BYTES, np.uint8)
    out[:_INTS * 8] = ints.view(np.uint8)
    out[_INTS * 8:_INTS * 8 + min(len(label), TEXT_BYTES)] = np.frombuffer(
        label[:TEXT_BYTES], np.uint8)
    return out


def _fields(row):
    """The readable fields of one descriptor."""
    ints = row[:_INTS * 8].copy().view(np.int64)
    text = bytes(row[_INTS * 8:]).rstrip(b"\0").decode("utf-8", "ignore")
    op = int(ints[_F_OP])
    fields = {"version": int(ints[_F_VERSION]), "sequence number": int(ints[_F_SEQ]),
              "operation": OPERATIONS[op] if 0 <= op < len(OPERATIONS) else f"op #{op}",
              "key": (int(ints[_F_KEY_KIND]), int(ints[_F_KEY])), "text": text}
    ndim = int(ints[_F_NDIM])
    if ndim >= 0:
        fields["dtype"] = _dtype_name(ints[_F_DTYPE])
        dims = tuple(int(d) for d in ints[_F_SHAPE + 1:_F_SHAPE + 1 + min(ndim, _DIMS)])
        fields["shape"] = (dims, int(ints[_F_SHAPE]), ndim)
    return fields


def _what(fields):
    """``push of key 1 (float32, shape (2, 3))``, as one rank called it."""
    words = fields["operation"]
    if fields["key"][0]:
        words += f" of key {fields['text']}"
    if "shape" in fields:
        dims, _, ndim = fields["shape"]
        shape = repr(dims) if ndim <= _DIMS else f"a {ndim}-d shape {dims[:_DIMS]}..."
        words += f" ({fields['dtype']}, shape {shape})"
    if fields["version"] != _VERSION:
        words += " [another hybridgpu version's descriptor]"
    return words


def disagreement(table):
    """None when every row of ``table`` (ranks x ``DESCRIPTOR_BYTES``) describes the same
    collective, else a message naming the first rank that differs from rank 0 and how."""
    ints = table[:, :_INTS * 8]
    differing = np.flatnonzero((ints != ints[0]).any(axis=1))
    if differing.size == 0:
        return None
    rank = int(differing[0])
    first, other = _fields(table[0]), _fields(table[rank])
    names = [name for name in ("version", "sequence number", "operation", "key", "dtype",
                               "shape") if first.get(name) != other.get(name)]
    message = (f"rank 0 calls {_what(first)}, rank {rank} calls {_what(other)}: they differ "
               f"in {', '.join(names)}")
    if "sequence number" in names:
        message += (f" (rank 0 is at collective {first['sequence number']}, rank {rank} at "
                    f"{other['sequence number']}: one rank ran more collectives)")
    if differing.size > 1:
        message += f" (ranks {', '.join(map(str, differing.tolist()))} differ from rank 0)"
    return message
