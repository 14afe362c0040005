"""MXNet's binary NDArray-list format: ``.params`` files, ``nd.save`` and ``nd.load``.

This module works on host (NumPy) arrays only; ``hybridgpu.ndarray.utils`` wraps it for NDArrays.
Everything is little-endian and nothing is padded or aligned.

File layout::

    u64  list magic, 0x112
    u64  reserved (MXNet writes 0 and ignores the value when reading; so does this module)
    u64  number of arrays N, then N array records (below)
    u64  number of names: 0 (the file holds a list) or N (a dict)
    N x  (u64 byte length, UTF-8 bytes of the name)

An array record starts with a u32 that says its version:

- ``0xF993FAC9`` (V2, what MXNet 1.x writes): i32 storage type (0 dense, 1 row_sparse, 2 csr;
  sparse records carry extra shapes and index arrays, which hybridgpu refuses), the shape as
  i32 ndim followed by ndim i64 dims, then i32 device type (1 cpu, 2 gpu, 3 cpu_pinned,
  5 cpu_shared), i32 device id, i32 dtype flag and the elements in C order. An ndim of 0 marks an
  unallocated ("none") array and ends the record right there, so a V2 record cannot hold a 0-d
  array (MXNet writes 0-d arrays that way anyway, and cannot read them back).
- ``0xF993FACA`` (V3, written by MXNet in numpy-shape mode, ``npx.set_np()``): as V2, but ndim 0
  is a real 0-d array with one element and ndim -1 marks a "none" array.
- ``0xF993FAC8`` (V1, older MXNet): no storage type; shape, device, dtype flag and data as V2,
  and ndim 0 is a 0-d array.
- anything else (MXNet before V1): the u32 is the ndim, followed by ndim u32 dims, then device,
  dtype flag and data as V1.

Zero-size arrays (a 0 among the dims) keep their device and dtype fields and have no data bytes.
The dtype flags are 0 float32, 1 float64, 2 float16, 3 uint8, 4 int32, 5 int8, 6 int64, 7 bool
(12 is MXNet's bfloat16, which NumPy cannot hold).

Writing follows MXNet 1.9 byte for byte: V2 records, with the device the array lives on. The one
exception is a 0-d array, which goes in a V1 record, the only kind MXNet 1.9 reads back as a 0-d
array outside numpy-shape mode. Reading accepts all four versions, mixed in one file, whatever
mode MXNet would have needed for them.

Reading is strict where MXNet is lax or crashes: every count, length, ndim, dim, dtype flag and
device is checked against the bytes left before anything is allocated, and trailing bytes after
the names, duplicate or non-UTF-8 names, unknown devices and "none" arrays are errors (MXNet
ignores trailing bytes, keeps the last of duplicate names and loads unknown devices to cpu).
Every problem raises ``MXNetError`` naming the source, the array and the offset. Nothing is ever
unpickled.

Saving writes a temporary file beside the target and renames it over the target, so a failure
midway leaves the previous file as it was and no temporary file behind.

Example:
    >>> import numpy as np
    >>> blob = dumps([np.arange(3, dtype=np.float32)], names=["w"])
    >>> blob[:8].hex(), len(blob)
    ('1201000000000000', 85)
    >>> records, names = loads(blob)
    >>> names, records[0].data.tolist(), records[0].device_type
    (['w'], [0.0, 1.0, 2.0], 1)
"""

from __future__ import annotations

import io
import math
import os
import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..base import DTYPE_TO_FLAG, MXNetError
from ..util import is_np_shape
from .files import atomic_write, read_regular

__all__ = ["LIST_MAGIC", "V1_MAGIC", "V2_MAGIC", "V3_MAGIC", "DTYPE_FLAGS", "ArrayRecord",
           "LoadedArray", "save", "dumps", "load", "loads"]

LIST_MAGIC = 0x112
V1_MAGIC = 0xF993FAC8
V2_MAGIC = 0xF993FAC9
V3_MAGIC = 0xF993FACA

#: MXNet dtype flag -> NumPy dtype, for every dense dtype MXNet 1.9 stores.
DTYPE_FLAGS = {flag: np.dtype(name) for name, flag in DTYPE_TO_FLAG.items()}
_FLAG_OF_DTYPE = {dtype: flag for flag, dtype in DTYPE_FLAGS.items()}
# Flags MXNet knows (or later versions define) that have no NumPy dtype here.
_UNSUPPORTED_FLAGS = {8: "int16", 9: "uint16", 10: "uint32", 11: "uint64", 12: "bfloat16"}
_STORAGE_TYPES = {0: "default", 1: "row_sparse", 2: "csr"}
_DEVICE_TYPES = {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
_MAX_NDIM = 32  # NumPy's classic limit; far above anything MXNet writes
_MIN_RECORD_BYTES = 12  # the smallest record: a V2 "none" array (magic, storage type, ndim)
_MAX_ARRAY_BYTES = 2 ** 62  # above this NumPy cannot describe even a zero-size array


@dataclass(frozen=True)
class ArrayRecord:
    """One array to save: its shape and dtype (checked before anything is written), where it
    lives, and ``fetch()``, called once while writing, returning the host data.

    Example:
        >>> x = np.ones((2, 2), np.float16)
        >>> rec = ArrayRecord.from_numpy(x)
        >>> rec.shape, rec.dtype, rec.device_type, rec.fetch() is x
        ((2, 2), dtype('float16'), 1, True)
    """

    shape: tuple
    dtype: np.dtype
    fetch: Callable[[], np.ndarray]
    device_type: int = 1
    device_id: int = 0

    @classmethod
    def from_numpy(cls, array, device_type=1, device_id=0):
        """A record for a NumPy array (saved as living on ``device_type``/``device_id``)."""
        array = np.asarray(array)
        return cls(tuple(array.shape), array.dtype, lambda: array, device_type, device_id)


@dataclass(frozen=True)
class LoadedArray:
    """One array read from a file: host ``data`` (a fresh, writable NumPy array), the device
    type and id it was saved from (1 cpu, 2 gpu, 3 cpu_pinned, 5 cpu_shared) and the record
    version (0 to 3).

    Example:
        >>> rec = LoadedArray(np.zeros(2), 2, 1, 2)
        >>> rec.device, rec.data.shape
        (('gpu', 1), (2,))
    """

    data: np.ndarray
    device_type: int
    device_id: int
    version: int

    @property
    def device(self):
        """``(device type name, device id)``, e.g. ``('gpu', 0)``."""
        return _DEVICE_TYPES[self.device_type], self.device_id


# -- writing -------------------------------------------------------------------------------------
def _as_record(item):
    return item if isinstance(item, ArrayRecord) else ArrayRecord.from_numpy(item)


def _check_records(records, names):
    """Validate everything cheap before a byte is written; return the encoded names."""
    for index, rec in enumerate(records):
        what = f"array {index}" + (f" ({names[index]!r})" if names else "")
        if np.dtype(rec.dtype) not in _FLAG_OF_DTYPE:
            raise MXNetError(f"{what}: dtype {np.dtype(rec.dtype).name} cannot be saved in "
                             f"MXNet's format; MXNet 1.x stores only "
                             f"{', '.join(d.name for d in DTYPE_FLAGS.values())}")
        if len(rec.shape) > _MAX_NDIM:
            raise MXNetError(f"{what}: {len(rec.shape)} dims; at most {_MAX_NDIM} can be saved")
        if rec.device_type not in _DEVICE_TYPES or rec.device_id < 0:
            raise MXNetError(f"{what}: invalid device ({rec.device_type}, {rec.device_id})")
    if names is None:
        return []
    if len(names) != len(records):
        raise MXNetError(f"{len(names)} names for {len(records)} arrays")
    encoded = []
    for index, name in enumerate(names):
        if not isinstance(name, str):
            raise TypeError(f"array names must be str, got {type(name).__name__} for array "
                            f"{index}")
        try:
            encoded.append(name.encode("utf-8"))
        except UnicodeEncodeError as err:
            raise MXNetError(f"array {index}: name {name!r} is not valid UTF-8 ({err})") from None
    return encoded


def _record_header(shape, dtype, device_type, device_id, np_shape=False):
    """The bytes of a dense record up to its data: V2, or V1 for a 0-d array; V3 (0-d too)
    when written with NumPy shape semantics on, as MXNet does after ``npx.set_np()``."""
    if np_shape:
        head = struct.pack("<Iii", V3_MAGIC, 0, len(shape))
    elif len(shape) == 0:
        head = struct.pack("<Ii", V1_MAGIC, 0)
    else:
        head = struct.pack("<Iii", V2_MAGIC, 0, len(shape))
    dims = struct.pack(f"<{len(shape)}q", *shape)
    tail = struct.pack("<iii", device_type, device_id, _FLAG_OF_DTYPE[np.dtype(dtype)])
    return head + dims + tail


def _host_data(rec, index):
    """Fetch a record's data and check it against what the record declared."""
    data = np.asarray(rec.fetch())
    if tuple(data.shape) != tuple(rec.shape) or data.dtype != np.dtype(rec.dtype):
        raise MXNetError(f"array {index}: fetched data has shape {data.shape} and dtype "
                         f"{data.dtype}, but {tuple(rec.shape)} {np.dtype(rec.dtype)} was "
                         f"declared")
    little = data.dtype.newbyteorder("<")
    return np.ascontiguousarray(data, dtype=little).reshape(-1).view(np.uint8)


def _write_body(stream, records, encoded_names):
    np_shape = is_np_shape()  # MXNet in NumPy mode writes, and then reads, only V3 records
    stream.write(struct.pack("<QQQ", LIST_MAGIC, 0, len(records)))
    for index, rec in enumerate(records):
        stream.write(_record_header(tuple(rec.shape), rec.dtype, rec.device_type,
                                    rec.device_id, np_shape))
        data = _host_data(rec, index)
        if data.size:
            stream.write(data)
    stream.write(struct.pack("<Q", len(encoded_names)))
    for name in encoded_names:
        stream.write(struct.pack("<Q", len(name)))
        stream.write(name)


def dumps(records, names=None):
    """The bytes of a file holding ``records`` (``ArrayRecord``s or NumPy arrays) and, for a
    dict, their ``names``.

    Example:
        >>> len(dumps([np.zeros(2, np.int8)]))
        66
    """
    records = [_as_record(r) for r in records]
    encoded = _check_records(records, names)
    buffer = io.BytesIO()
    _write_body(buffer, records, encoded)
    return buffer.getvalue()


def save(fname, records, names=None):
    """Write ``records`` (``ArrayRecord``s or NumPy arrays), named by ``names`` for a dict, to
    ``fname`` (str or ``os.PathLike``) atomically: a temporary file in the same directory is
    renamed over ``fname`` once complete.

    Example:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.params")
        >>> save(path, [np.arange(4, dtype=np.int32)], names=["x"])
        >>> loads(open(path, "rb").read())[1]
        ['x']
    """
    path = _path(fname)
    records = [_as_record(r) for r in records]
    encoded = _check_records(records, names)
    atomic_write(path, lambda stream: _write_body(stream, records, encoded))


def _path(fname):
    if isinstance(fname, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(fname))
    raise TypeError(f"fname must be a str or os.PathLike, got {type(fname).__name__}")


# -- reading -------------------------------------------------------------------------------------
class _Reader:
    """A cursor over the bytes of one file that refuses to read past the end."""

    def __init__(self, buf, source):
        self.buf = memoryview(buf).cast("B")
        self.pos = 0
        self.source = source
        self.where = "header"

    @property
    def remaining(self):
        return len(self.buf) - self.pos

    def fail(self, message, at=None):
        offset = self.pos if at is None else at
        raise MXNetError(f"cannot load {self.source}: {self.where}: {message} "
                         f"(byte offset {offset})")

    def take(self, nbytes, what):
        start = self.pos
        if start + nbytes > len(self.buf):
            self.fail(f"truncated file: {what} needs {nbytes} bytes but {self.remaining} "
                      f"remain")
        self.pos = start + nbytes
        return self.buf[start:self.pos]

    def unpack(self, fmt, what):
        layout = _STRUCTS.get(fmt)
        if layout is None:
            layout = _STRUCTS[fmt] = struct.Struct(fmt)
        start = self.pos
        if start + layout.size > len(self.buf):
            self.fail(f"truncated file: {what} needs {layout.size} bytes but "
                      f"{self.remaining} remain")
        self.pos = start + layout.size
        return layout.unpack_from(self.buf, start)


_STRUCTS: dict = {}  # format -> struct.Struct, made once


def _read_dims(reader, version, ndim):
    """Read ``ndim`` dims (u32 in V0 records, i64 otherwise), each a size >= 0."""
    if ndim < 0 or ndim > _MAX_NDIM:
        reader.fail(f"ndim {ndim} is out of range (0 to {_MAX_NDIM})")
    width = 4 if version == 0 else 8
    if ndim * width > reader.remaining:
        reader.fail(f"truncated file: a shape of {ndim} dims needs {ndim * width} bytes but "
                    f"{reader.remaining} remain")
    at = reader.pos
    dims = reader.unpack(f"<{ndim}{'I' if version == 0 else 'q'}", "the shape")
    if any(d < 0 for d in dims):
        reader.fail(f"shape {dims} has a negative dim", at)
    return tuple(int(d) for d in dims)


def _read_shape(reader, magic):
    """Read a record's version, storage type and shape; None shape means a "none" array."""
    if magic in (V2_MAGIC, V3_MAGIC):
        version = 2 if magic == V2_MAGIC else 3
        at = reader.pos
        (stype,) = reader.unpack("<i", "the storage type")
        if stype != 0:
            name = _STORAGE_TYPES.get(stype)
            reader.fail(f"storage type {name} (sparse) is not supported by hybridgpu" if name
                        else f"unknown storage type {stype}", at)
        (ndim,) = reader.unpack("<i", "the ndim")
        if (version == 2 and ndim == 0) or (version == 3 and ndim == -1):
            return version, None
        return version, _read_dims(reader, version, ndim)
    if magic == V1_MAGIC:
        (ndim,) = reader.unpack("<i", "the ndim")
        return 1, _read_dims(reader, 1, ndim)
    if magic > _MAX_NDIM:
        reader.fail(f"unknown record magic 0x{magic:08X} (not V1/V2/V3, and too large to be "
                    f"the ndim of a pre-V1 record)", reader.pos - 4)
    return 0, _read_dims(reader, 0, magic)


_V2_HEAD = struct.Struct("<Iii")          # magic, storage type, ndim
_V2_DIMS = {n: struct.Struct(f"<{n}q") for n in range(1, 9)}
_V2_TAIL = struct.Struct("<iii")          # device type, device id, dtype flag


def _read_plain_v2(reader):
    """The common record (V2, dense, 1 to 8 dims, a known device and dtype, every byte
    present) read in a few steps, or None for anything else, which ``_read_array`` then reads
    field by field and explains. Keeps loading linear and cheap for files of many small
    arrays."""
    buf, pos = reader.buf, reader.pos
    size = len(buf)
    if pos + 12 > size:
        return None
    magic, stype, ndim = _V2_HEAD.unpack_from(buf, pos)
    if magic != V2_MAGIC or stype != 0 or not 0 < ndim <= 8 or pos + 24 + 8 * ndim > size:
        return None
    dims = _V2_DIMS[ndim].unpack_from(buf, pos + 12)
    device_type, device_id, flag = _V2_TAIL.unpack_from(buf, pos + 12 + 8 * ndim)
    dtype = DTYPE_FLAGS.get(flag)
    if dtype is None or device_type not in _DEVICE_TYPES or device_id < 0 or min(dims) < 1:
        return None  # zero-size arrays too: the careful path checks what their dims describe
    count = math.prod(dims)
    start = pos + 24 + 8 * ndim
    if start + count * dtype.itemsize > size:
        return None
    reader.pos = start + count * dtype.itemsize
    if dtype == np.bool_:
        data = np.frombuffer(buf, np.uint8, count, start) != 0
    else:
        data = np.frombuffer(buf, _LITTLE[dtype], count, start).astype(dtype)
    return LoadedArray(data.reshape(dims), device_type, device_id, 2)


def _read_array(reader):
    """Read one array record (the reader's ``where`` names it) into a LoadedArray."""
    plain = _read_plain_v2(reader)
    if plain is not None:
        return plain
    (magic,) = reader.unpack("<I", "the record magic")
    version, shape = _read_shape(reader, magic)
    if shape is None:
        why = ("; MXNet also writes a 0-d array saved outside numpy-shape mode this way, and "
               "cannot read it back either" if version == 2 else "")
        reader.fail(f"a V{version} 'none' record (an unallocated MXNet array{why}) has no data "
                    f"to load")
    at = reader.pos
    device_type, device_id, flag = reader.unpack("<iii", "the device and dtype flag")
    if device_type not in _DEVICE_TYPES:
        reader.fail(f"unknown device type {device_type}", at)
    if device_id < 0:
        reader.fail(f"negative device id {device_id}", at)
    dtype = DTYPE_FLAGS.get(flag)
    if dtype is None:
        known = _UNSUPPORTED_FLAGS.get(flag)
        reader.fail(f"dtype {known} (flag {flag}) is not supported by hybridgpu" if known
                    else f"unknown dtype flag {flag}", at + 8)
    nonzero = math.prod(d for d in shape if d)
    if nonzero * dtype.itemsize > _MAX_ARRAY_BYTES:
        reader.fail(f"shape {shape} {dtype.name} is too large to describe")
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > reader.remaining:
        shown = f"{nbytes:.3g}" if nbytes >= 10 ** 12 else str(nbytes)
        reader.fail(f"shape {shape} {dtype.name} needs {shown} bytes but "
                    f"{reader.remaining} bytes remain")
    start = reader.pos
    reader.pos += nbytes
    count = nbytes // dtype.itemsize
    if dtype == np.bool_:
        data = np.frombuffer(reader.buf, np.uint8, count, start) != 0
    else:
        data = np.frombuffer(reader.buf, _LITTLE[dtype], count, start).astype(dtype)
    return LoadedArray(data.reshape(shape), device_type, device_id, version)


_LITTLE = {dtype: dtype.newbyteorder("<") for dtype in DTYPE_FLAGS.values()}


def _read_names(reader, count):
    reader.where = "names"
    (num_names,) = reader.unpack("<Q", "the number of names")
    if num_names not in (0, count):
        reader.fail(f"{num_names} names for {count} arrays (must be 0 or {count})",
                    reader.pos - 8)
    if num_names * 8 > reader.remaining:
        reader.fail(f"truncated file: {num_names} names need at least {num_names * 8} bytes "
                    f"but {reader.remaining} remain")
    names, seen = [], {}
    buf, size = reader.buf, len(reader.buf)
    for index in range(num_names):
        pos = reader.pos
        if pos + 8 <= size:  # the common case, without the careful reader's calls
            (length,) = _U64.unpack_from(buf, pos)
            if pos + 8 + length <= size:
                reader.pos = at = pos + 8
                raw = bytes(buf[at:at + length])
                reader.pos = at + length
                _add_name(reader, index, raw, at, names, seen)
                continue
        reader.where = f"name of array {index}"
        (length,) = reader.unpack("<Q", "the name length")
        at = reader.pos
        raw = bytes(reader.take(length, f"a name of {length} bytes"))
        _add_name(reader, index, raw, at, names, seen)
    return names


_U64 = struct.Struct("<Q")


def _add_name(reader, index, raw, at, names, seen):
    """Append the name ``raw`` (bytes at offset ``at``) of array ``index``, checked."""
    try:
        name = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        reader.where = f"name of array {index}"
        reader.fail(f"name {raw[:40]!r} is not valid UTF-8 ({err.reason} at byte "
                    f"{err.start})", at)
    if name in seen:
        reader.where = f"name of array {index}"
        reader.fail(f"duplicate name {name!r} (also the name of array {seen[name]})", at)
    seen[name] = index
    names.append(name)


def loads(buf, source="<buffer>"):
    """Parse the bytes of a file: ``(list of LoadedArray, list of names)``, with no names for a
    list. ``source`` names the data in error messages.

    Example:
        >>> recs, names = loads(dumps([np.array(7, np.int64)]))
        >>> recs[0].data, recs[0].version, names
        (array(7), 1, [])
    """
    if isinstance(buf, str):
        raise TypeError("buf must be bytes-like (bytes, bytearray, memoryview), got str")
    try:
        reader = _Reader(buf, source)
    except TypeError:
        raise TypeError(f"buf must be bytes-like, got {type(buf).__name__}") from None
    magic, _reserved, count = reader.unpack("<QQQ", "the file header")
    if magic != LIST_MAGIC:
        reader.fail(f"bad file magic 0x{magic:X} (expected 0x{LIST_MAGIC:X}): not an MXNet "
                    f"NDArray file", 0)
    if count * _MIN_RECORD_BYTES + 8 > reader.remaining:
        reader.fail(f"{count} arrays need at least {count * _MIN_RECORD_BYTES + 8} bytes but "
                    f"{reader.remaining} remain", 16)
    records = []
    for index in range(count):
        reader.where = f"array {index}"
        records.append(_read_array(reader))
    names = _read_names(reader, count)
    if reader.remaining:
        reader.where = "end of file"
        reader.fail(f"{reader.remaining} unexpected bytes after the names")
    return records, names


def load(fname):
    """Read a file written by ``save`` or by MXNet: ``(list of LoadedArray, list of names)``.

    Example:
        >>> import tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "b.params")
        >>> save(path, [np.float64(2.5)])
        >>> load(path)[0][0].data
        array(2.5)
    """
    path = _path(fname)
    blob = read_regular(path, "parameter file", 24, lambda head, size: _check_header(
        head, size, path))
    return loads(blob, source=path)


def _check_header(head, size, source):
    """Refuse a file whose header is wrong before the rest of it is read."""
    if len(head) < 24:
        return  # ``loads`` says how it is truncated
    magic, _reserved, count = struct.unpack("<QQQ", head)
    if magic != LIST_MAGIC:
        raise MXNetError(f"cannot load {source}: header: bad file magic 0x{magic:X} (expected "
                         f"0x{LIST_MAGIC:X}): not an MXNet NDArray file (byte offset 0)")
    if count * _MIN_RECORD_BYTES + 8 > size - 24:
        raise MXNetError(f"cannot load {source}: header: {count} arrays need at least "
                         f"{count * _MIN_RECORD_BYTES + 8} bytes but {size - 24} remain "
                         "(byte offset 16)")
