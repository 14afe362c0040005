"""MXNet's RecordIO container (``.rec``), read and written byte for byte as MXNet does.

A record is ``magic (0xced7230a, uint32 LE)``, ``lrecord (uint32 LE: 3 bits of cflag above 29
bits of length)``, the payload, then zero padding to 4 bytes. A payload that contains the magic
number at a 4-byte aligned offset is split there into parts (cflag 1 = first, 2 = middle, 3 =
last; 0 = whole record), the magic itself left out; the reader joins the parts with the magic.

Reading checks every header against the file: a bad magic, a truncated payload or a broken
chain of parts raises ``MXNetError`` with the file and byte offset (nothing is read past the
end, nothing is allocated beyond what the file holds).

Example:
    >>> import io
    >>> f = io.BytesIO()
    >>> write_record(f, b"abc"); write_record(f, MAGIC_BYTES + b"tail")
    >>> f.getvalue().hex()[:32]
    '0a23d7ce03000000616263000a23d7ce'
    >>> _ = f.seek(0)
    >>> read_record(f, "mem"), read_record(f, "mem"), read_record(f, "mem")
    (b'abc', b'\\n#\\xd7\\xcetail', None)
"""

from __future__ import annotations

import struct

from ..base import MXNetError

__all__ = ["MAGIC", "MAGIC_BYTES", "write_record", "read_record", "MAX_RECORD_BYTES",
           "RecordIOError"]

MAGIC = 0xCED7230A
MAGIC_BYTES = struct.pack("<I", MAGIC)
_LENGTH_BITS = 29
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1
#: Longest payload of one part (the format's 29-bit length field).
MAX_RECORD_BYTES = _LENGTH_MASK


class RecordIOError(MXNetError, ValueError):
    """A ``.rec`` file that is not RecordIO, or is truncated or corrupted."""


def _aligned_magics(data):
    """Offsets (multiples of 4) where ``data`` holds the magic number."""
    found, start = [], 0
    while True:
        at = data.find(MAGIC_BYTES, start)
        if at < 0:
            return found
        if at % 4 == 0:
            found.append(at)
            start = at + 4
        else:
            start = at + 1


def _write_part(f, cflag, part):
    if len(part) > MAX_RECORD_BYTES:
        raise MXNetError(f"a RecordIO record part holds at most {MAX_RECORD_BYTES} bytes, "
                         f"got {len(part)}")
    f.write(struct.pack("<II", MAGIC, (cflag << _LENGTH_BITS) | len(part)))
    f.write(part)
    f.write(b"\0" * (-len(part) % 4))


def write_record(f, data):
    """Append ``data`` (bytes) to the open binary file ``f`` as one record."""
    data = bytes(data)
    cuts = _aligned_magics(data)
    if not cuts:
        _write_part(f, 0, data)
        return
    start = 0
    for k, at in enumerate(cuts):
        _write_part(f, 1 if k == 0 else 2, data[start:at])
        start = at + 4
    _write_part(f, 3, data[start:])


def _read_part(f, path):
    where = f.tell()
    header = f.read(8)
    if not header:
        return None
    if len(header) < 8:
        raise RecordIOError(f"{path}: truncated record header at byte {where}")
    magic, lrecord = struct.unpack("<II", header)
    if magic != MAGIC:
        raise RecordIOError(f"{path}: bad magic number 0x{magic:08x} at byte {where} (not a "
                         "RecordIO file, or an offset that is not a record's start)")
    cflag, length = lrecord >> _LENGTH_BITS, lrecord & _LENGTH_MASK
    payload = f.read(length)
    if len(payload) < length:
        raise RecordIOError(f"{path}: truncated record at byte {where}: it says {length} "
                            f"bytes, the file holds {len(payload)}")
    pad = -length % 4
    if len(f.read(pad)) < pad:
        raise RecordIOError(f"{path}: truncated record at byte {where}: its padding is "
                            "missing")
    return cflag, payload, where


def read_record(f, path="<file>"):
    """The next record's payload from the open binary file ``f``, or None at the end."""
    first = _read_part(f, path)
    if first is None:
        return None
    cflag, payload, where = first
    if cflag == 0:
        return payload
    if cflag != 1:
        raise RecordIOError(f"{path}: the record at byte {where} continues a split record "
                         f"(cflag {cflag}) but no record was started")
    parts = [payload]
    while True:
        part = _read_part(f, path)
        if part is None:
            raise RecordIOError(f"{path}: the split record started at byte {where} has no end")
        cflag, payload, at = part
        if cflag not in (2, 3):
            raise RecordIOError(f"{path}: the split record started at byte {where} is broken at "
                             f"byte {at} (cflag {cflag})")
        parts.append(payload)
        if cflag == 3:
            return MAGIC_BYTES.join(parts)
