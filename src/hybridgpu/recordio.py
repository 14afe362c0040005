"""``mx.recordio``: MXNet's RecordIO files (``.rec``, with ``.idx`` indexes), read and written
byte for byte as MXNet (dmlc-core) does.

A record is the magic word ``0xced7230a``, a 32-bit word holding a 3-bit continuation flag and a
29-bit length, then the data padded with zeros to 4 bytes. Data containing the magic word at a
4-byte boundary is split into parts there (flags 1, 2..., 3) and joined back on reading. ``pack``
and ``unpack`` add and read MXNet's image-record header (``IRHeader``: flag, label, id, id2);
``pack_img``/``unpack_img`` encode and decode images with Pillow (in OpenCV's BGR channel order,
as MXNet's cv2-based functions).

Example:
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.rec")
    >>> writer = MXRecordIO(path, "w")
    >>> writer.write(pack(IRHeader(0, 3.0, 7, 0), b"payload"))
    >>> writer.close()
    >>> reader = MXRecordIO(path, "r")
    >>> unpack(reader.read())
    (HEADER(flag=0, label=3.0, id=7, id2=0), b'payload')
    >>> reader.read() is None
    True
"""

from __future__ import annotations

import io
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import MXNetError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LENGTH_MASK = (1 << 29) - 1


class MXRecordIO:
    """Sequential reader (``flag='r'``) or writer (``flag='w'``) of a ``.rec`` file."""

    def __init__(self, uri, flag):
        if flag not in ("r", "w"):
            raise ValueError(f"Invalid flag {flag}")
        self.uri = os.fspath(uri)
        self.flag = flag
        self.handle = None
        self.open()

    @property
    def writable(self):
        return self.flag == "w"

    def open(self):
        """Open the file (done by the constructor; again after ``close``)."""
        try:
            self.handle = open(self.uri, "wb" if self.writable else "rb")  # noqa: SIM115
        except OSError as err:
            raise MXNetError(f"MXRecordIO: cannot open {self.uri!r}: {err.strerror}") from None
        self.is_open = True

    def close(self):
        """Close the file (flushing a writer)."""
        if getattr(self, "handle", None) is not None:
            self.handle.close()
            self.handle = None
        self.is_open = False

    def __del__(self):
        self.close()

    def __getstate__(self):  # picklable for DataLoader workers: reopened on unpickling
        state = dict(self.__dict__)
        state["handle"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if state.get("is_open") and not self.writable:  # a writer is never reopened
            self.open()

    def reset(self):
        """Back to the first record (reopens the file)."""
        self.close()
        self.open()

    def _require(self, writing):
        if self.handle is None:
            raise MXNetError(f"MXRecordIO {self.uri!r} is closed")
        if writing != self.writable:
            raise MXNetError(f"MXRecordIO {self.uri!r} was opened with flag "
                             f"{self.flag!r}; it cannot {'write' if writing else 'read'}")

    def write(self, buf):
        """Append one record holding ``buf`` (bytes)."""
        self._require(writing=True)
        if not isinstance(buf, (bytes, bytearray, memoryview)):
            raise TypeError(f"MXRecordIO.write: buf must be bytes, got {type(buf).__name__}")
        self.handle.write(_encode_record(bytes(buf)))

    def read(self):
        """The next record's bytes, or None at the end of the file."""
        self._require(writing=False)
        return _read_record(self.handle, self.uri)

    def tell(self):
        """The byte offset of the next record."""
        self._require(writing=self.writable)
        return self.handle.tell()


def _encode_part(data, cflag):
    pad = (-len(data)) % 4
    return _MAGIC_BYTES + struct.pack("<I", (cflag << 29) | len(data)) + data + b"\0" * pad


def _encode_record(data):
    """The bytes of one record: split where the magic word sits at a 4-byte boundary."""
    cuts = [i for i in range(0, len(data) - 3, 4) if data[i:i + 4] == _MAGIC_BYTES]
    if len(data) > _LENGTH_MASK:
        raise MXNetError(f"MXRecordIO: a record of {len(data)} bytes is too long (at most "
                         f"{_LENGTH_MASK})")
    if not cuts:
        return _encode_part(data, 0)
    starts = [0] + [c + 4 for c in cuts]
    ends = cuts + [len(data)]
    flags = [1] + [2] * (len(cuts) - 1) + [3]
    return b"".join(_encode_part(data[s:e], f) for s, e, f in zip(starts, ends, flags))


def _read_part(handle, uri):
    offset = handle.tell()
    head = handle.read(8)
    if not head:
        return None, None
    if len(head) < 8:
        raise MXNetError(f"Invalid RecordIO file {uri!r}: truncated record header at byte "
                         f"{offset}")
    magic, word = struct.unpack("<II", head)
    if magic != _MAGIC:
        raise MXNetError(f"Invalid RecordIO file {uri!r}: bad magic number {magic:#x} at byte "
                         f"{offset}")
    length, cflag = word & _LENGTH_MASK, word >> 29
    data = handle.read(length + (-length) % 4)
    if len(data) < length + (-length) % 4:
        raise MXNetError(f"Invalid RecordIO file {uri!r}: the record at byte {offset} needs "
                         f"{length} bytes, the file ends first")
    return cflag, data[:length]


def _read_record(handle, uri):
    cflag, data = _read_part(handle, uri)
    if cflag is None or cflag == 0:
        return data
    if cflag != 1:
        raise MXNetError(f"Invalid RecordIO file {uri!r}: a record continues without a start")
    parts = [data]
    while True:
        cflag, data = _read_part(handle, uri)
        if cflag not in (2, 3):
            raise MXNetError(f"Invalid RecordIO file {uri!r}: a split record is not finished")
        parts.append(data)
        if cflag == 3:
            return _MAGIC_BYTES.join(parts)


class MXIndexedRecordIO(MXRecordIO):
    """A ``.rec`` file with an ``.idx`` index (lines ``key<TAB>byte offset``) for random
    access: ``write_idx(key, buf)``, ``read_idx(key)``, ``seek(key)``, ``keys``.

    Example:
        >>> import os, tempfile
        >>> d = tempfile.mkdtemp()
        >>> rec = MXIndexedRecordIO(os.path.join(d, "a.idx"), os.path.join(d, "a.rec"), "w")
        >>> for i in (5, 2):
        ...     rec.write_idx(i, b"record %d" % i)
        >>> rec.close()
        >>> rec = MXIndexedRecordIO(os.path.join(d, "a.idx"), os.path.join(d, "a.rec"), "r")
        >>> rec.keys, rec.read_idx(2)
        ([5, 2], b'record 2')
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.key_type = key_type
        self.idx = {}
        self.keys = []
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx, self.keys = {}, []
        if self.writable:
            self.fidx = open(self.idx_path, "w")  # noqa: SIM115  (closed by close())
            return
        with open(self.idx_path) as f:
            for number, line in enumerate(f, 1):
                fields = line.strip().split("\t")
                if not line.strip():
                    continue
                if len(fields) != 2:
                    raise MXNetError(f"Invalid index file {self.idx_path!r}: line {number} is "
                                     f"{line.strip()!r}, expected 'key<TAB>offset'")
                key = self.key_type(fields[0])
                self.idx[key] = int(fields[1])
                self.keys.append(key)

    def close(self):
        if getattr(self, "fidx", None) is not None:
            self.fidx.close()
            self.fidx = None
        super().close()

    def seek(self, idx):
        """Move the reader to the record with key ``idx``."""
        self._require(writing=False)
        if idx not in self.idx:
            raise KeyError(f"MXIndexedRecordIO {self.idx_path!r}: no record with key {idx!r}")
        self.handle.seek(self.idx[idx])

    def read_idx(self, idx):
        """The record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Append a record under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


# -- image-record header ----------------------------------------------------------------------

IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = ("The header of an image record: ``flag`` (0, or the number of labels), "
                    "``label`` (a float, or an array of ``flag`` floats), ``id``, ``id2``.")
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """``header`` (an ``IRHeader``) and the bytes ``s`` as one record's bytes; a label that
    is a list or array is stored after the header (and ``flag`` becomes its length)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        head = struct.pack(_IR_FORMAT, header.flag, header.label, header.id, header.id2)
        return head + bytes(s)
    label = np.asarray(header.label, dtype=np.float32)
    head = struct.pack(_IR_FORMAT, label.size, 0.0, header.id, header.id2)
    return head + label.tobytes() + bytes(s)


def unpack(s):
    """``(IRHeader, payload bytes)`` of a record written by ``pack``."""
    if len(s) < _IR_SIZE:
        raise MXNetError(f"recordio.unpack: a record of {len(s)} bytes is shorter than the "
                         f"{_IR_SIZE}-byte header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError(f"recordio.unpack: the header announces {header.flag} labels, "
                             f"the record holds {len(s) // 4}")
        label = np.frombuffer(s, np.float32, header.flag).copy()
        header = header._replace(label=label)
        s = s[4 * header.flag:]
    return header, s


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise ImportError("recordio.pack_img/unpack_img need Pillow: pip install pillow") \
            from None
    return Image


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """``pack`` of ``img`` (an HxW or HxWx3 uint8 array in BGR order, as OpenCV and MXNet use)
    encoded as JPEG (``quality``) or PNG (``img_fmt='.png'``)."""
    Image = _pillow()
    fmt = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG"}.get(img_fmt.lower())
    if fmt is None:
        raise ValueError(f"pack_img: img_fmt must be '.jpg' or '.png', got {img_fmt!r}")
    array = np.asarray(img, dtype=np.uint8)
    if array.ndim == 3:
        array = array[:, :, ::-1]  # BGR -> RGB
    buf = io.BytesIO()
    options = {"quality": int(quality)} if fmt == "JPEG" else {}
    Image.fromarray(np.ascontiguousarray(array)).save(buf, format=fmt, **options)
    return pack(header, buf.getvalue())


def unpack_img(s, iscolor=-1):
    """``(IRHeader, image)``: the image decoded to a uint8 array in BGR order (``iscolor``: 1
    color, 0 grayscale, -1 as stored)."""
    Image = _pillow()
    header, payload = unpack(s)
    image = Image.open(io.BytesIO(payload))
    if iscolor == 0:
        return header, np.asarray(image.convert("L"))
    if iscolor == 1 or image.mode not in ("L",):
        return header, np.asarray(image.convert("RGB"))[:, :, ::-1].copy()
    return header, np.asarray(image)
