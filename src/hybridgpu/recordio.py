"""``mx.recordio``: MXNet's RecordIO files (``.rec`` and the ``.idx`` index beside them), as
``im2rec`` and ``MXIndexedRecordIO`` write them; records packed with an ``IRHeader``.

``pack_img``/``unpack_img`` encode and decode images with Pillow (MXNet uses OpenCV): arrays
are in OpenCV's BGR channel order, as MXNet's are, so records written by either load in the
other. JPEG bytes differ between encoders (the decoded pixels differ by JPEG's error); PNG
round trips exactly.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> idx, rec = os.path.join(folder, "d.idx"), os.path.join(folder, "d.rec")
    >>> w = MXIndexedRecordIO(idx, rec, "w")
    >>> for i in range(3):
    ...     w.write_idx(i, pack(IRHeader(0, float(i), i, 0), b"payload%d" % i))
    >>> w.close()
    >>> r = MXIndexedRecordIO(idx, rec, "r")
    >>> unpack(r.read_idx(2))
    (HEADER(flag=0, label=2.0, id=2, id2=0), b'payload2')
    >>> r.keys
    [0, 1, 2]
"""

from __future__ import annotations

import contextlib
import io
import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from .base import MXNetError
from .serialization.image_formats import pillow_format
from .serialization.recordio import read_record, write_record

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack", "pack_img",
           "unpack_img"]

IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """A record's header: ``flag`` (0: one float ``label``; n > 0: ``label`` is
n floats stored after the header), ``label``, ``id``, ``id2``."""
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


class MXRecordIO:
    """Reads (``flag='r'``) or writes (``'w'``) the records of one ``.rec`` file in order.

    ``read()`` returns the next record's bytes, or None at the end; ``write(buf)`` appends one;
    ``reset()`` goes back to the start; ``close()``. Like MXNet's, an instance can be pickled
    (it reopens its file where it is unpickled) and is re-opened in a forked process.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        if flag not in ("r", "w"):
            raise ValueError(f"MXRecordIO: flag must be 'r' or 'w', got {flag!r}")
        self.flag = flag
        self.handle = None
        self.is_open = False
        self.open()

    @property
    def writable(self):
        """True for a file opened with ``'w'``."""
        return self.flag == "w"

    def open(self):
        """Open the file (``'w'`` truncates it)."""
        with _io_errors(self.uri, "open"):
            self.handle = open(self.uri, "wb" if self.writable else "rb")  # noqa: SIM115
        self.is_open = True
        self.pid = os.getpid()

    def close(self):
        """Close the file (safe to call twice; a write that fails only now, on a full disk,
        raises MXNetError after the file is closed)."""
        if self.is_open:
            self.is_open = False
            self.pid = None
            with _io_errors(self.uri, "close (writing buffered records)"):
                self.handle.close()

    def __del__(self):
        if getattr(self, "is_open", False):
            with contextlib.suppress(MXNetError):  # nobody to tell: the writer is gone
                self.close()

    def __getstate__(self):
        state = dict(self.__dict__)
        was_open = state.pop("is_open")
        state.pop("handle", None)
        state["_reopen"] = was_open
        return state

    def __setstate__(self, state):
        reopen = state.pop("_reopen")
        self.__dict__.update(state)
        self.handle, self.is_open = None, False
        if reopen:
            self.open()

    def _check_pid(self, allow_reset=False):
        if self.pid != os.getpid():
            if not allow_reset:
                raise MXNetError(f"MXRecordIO {self.uri}: the file was opened in another "
                                 "process; call reset() first")
            self.reset()

    def reset(self):
        """Back to the first record (a writer starts the file again)."""
        self.close()
        self.open()

    def _require(self, mode, what):
        if not self.is_open:
            raise MXNetError(f"MXRecordIO {self.uri}: {what} on a closed file")
        if self.flag != mode:
            raise MXNetError(f"MXRecordIO {self.uri}: {what} needs flag={mode!r}, the file "
                             f"was opened with {self.flag!r}")

    def write(self, buf):
        """Append ``buf`` (bytes) as one record."""
        self._require("w", "write")
        self._check_pid(allow_reset=False)
        with _io_errors(self.uri, "write"):
            write_record(self.handle, buf)

    def read(self):
        """The next record's bytes, or None after the last."""
        self._require("r", "read")
        self._check_pid(allow_reset=True)
        return read_record(self.handle, self.uri)

    def tell(self):
        """Byte offset of the next record."""
        return self.handle.tell()


class MXIndexedRecordIO(MXRecordIO):
    """A ``.rec`` file with its ``.idx`` index (``key<TAB>offset`` lines): random access by key.

    ``read_idx(key)``/``write_idx(key, buf)``; ``seek(key)`` then ``read()``; ``keys`` in file
    order; ``key_type`` converts keys read from the index (default ``int``).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx, self.keys, self.key_type = {}, [], key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx, self.keys = {}, []
        if self.writable:
            with _io_errors(self.idx_path, "open"):
                self.fidx = open(self.idx_path, "w", encoding="utf-8")  # noqa: SIM115
            return
        self.fidx = None
        with open(self.idx_path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                fields = line.strip().split("\t")
                if fields == [""]:
                    continue
                if len(fields) != 2:
                    raise MXNetError(f"{self.idx_path}:{lineno}: expected 'key<TAB>offset', "
                                     f"got {line.rstrip()!r}")
                try:
                    key, offset = self.key_type(fields[0]), int(fields[1])
                except ValueError as err:
                    raise MXNetError(f"{self.idx_path}:{lineno}: {err}") from None
                self.idx[key] = offset
                self.keys.append(key)

    def close(self):
        fidx, self.fidx = self.fidx, None
        try:
            if fidx is not None:
                with _io_errors(self.idx_path, "close (writing the index)"):
                    fidx.close()
        finally:
            super().close()

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("fidx", None)
        return state

    def seek(self, idx):
        """Move to the record of key ``idx`` (reading only)."""
        self._require("r", "seek")
        if idx not in self.idx:
            raise KeyError(f"{self.idx_path}: no record with key {idx!r}")
        self.handle.seek(self.idx[idx])

    def read_idx(self, idx):
        """The record of key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Append ``buf`` as the record of key ``idx`` (and its index line)."""
        key = self.key_type(idx)
        self._require("w", "write_idx")
        offset = self.tell()
        self.write(buf)
        with _io_errors(self.idx_path, "write"):
            self.fidx.write(f"{key}\t{offset}\n")
        self.idx[key] = offset
        self.keys.append(key)


@contextlib.contextmanager
def _io_errors(path, what):
    """An OSError (a full disk, ``ulimit -f``, a missing folder) as MXNetError naming the
    file and the operation, as MXNet reports its stream errors."""
    try:
        yield
    except OSError as err:
        raise MXNetError(f"MXRecordIO {path}: {what} failed: {err.strerror or err}") from err


def pack(header, s):
    """``header`` (an IRHeader) and the bytes ``s`` as one record's bytes.

    Example:
        >>> pack(IRHeader(0, 3.5, 7, 0), b"data").hex()
        '00000000000060400700000000000000000000000000000064617461'
    """
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        head = struct.pack(_IR_FORMAT, 0, header.label, header.id, header.id2)
        return head + bytes(s)
    label = np.asarray(header.label, dtype=np.float32).ravel()
    head = struct.pack(_IR_FORMAT, label.size, 0.0, header.id, header.id2)
    return head + label.tobytes() + bytes(s)


def unpack(s):
    """``(IRHeader, payload bytes)`` of a record made by ``pack``; a multi-float label comes
    back as a float32 NumPy array."""
    s = bytes(s)
    if len(s) < _IR_SIZE:
        raise MXNetError(f"unpack: a packed record has at least {_IR_SIZE} bytes, got {len(s)}")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise MXNetError(f"unpack: the header says {header.flag} labels, the record "
                             f"holds {len(s) // 4}")
        label = np.frombuffer(s[:4 * header.flag], dtype=np.float32).copy()
        header = header._replace(label=label)
        s = s[4 * header.flag:]
    return header, s


def _pillow():
    try:
        from PIL import Image
    except ImportError as err:
        raise MXNetError("image records need Pillow: pip install 'hybridgpu[image]' "
                         f"(or pillow) ({err})") from None
    return Image


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """``pack(header, <img encoded as img_fmt>)``; ``img`` is an (H, W) or (H, W, 3) uint8
    array in BGR order (OpenCV's, as MXNet's)."""
    image_module = _pillow()
    img = np.asarray(img)
    if img.dtype != np.uint8 or img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] != 3):
        raise MXNetError(f"pack_img: expected a uint8 (H, W) or (H, W, 3) image, got "
                         f"{img.dtype} {img.shape}")
    fmt = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG"}.get(img_fmt.lower())
    if fmt is None:
        raise MXNetError(f"pack_img: img_fmt must be '.jpg' or '.png', got {img_fmt!r}")
    pixels = img[:, :, ::-1] if img.ndim == 3 else img
    out = io.BytesIO()
    options = {"quality": int(quality)} if fmt == "JPEG" else {
        "compress_level": min(9, max(0, int(quality)))}
    image_module.fromarray(np.ascontiguousarray(pixels)).save(out, format=fmt, **options)
    return pack(header, out.getvalue())


def unpack_img(s, iscolor=-1):
    """``(IRHeader, image)`` of a record made by ``pack_img``: the image as a uint8 NumPy
    array, BGR (H, W, 3) for colour (``iscolor`` 1, or -1 for colour files), (H, W) for grey
    (``iscolor`` 0, or -1 for grey files). Formats as ``mx.image.imdecode``: others raise
    ``MXNetError`` before any decoder sees the bytes."""
    header, payload = unpack(s)
    image_module = _pillow()
    plugin = pillow_format(payload)  # OpenCV's formats only, as imdecode (docs/security.md)
    try:
        pic = image_module.open(io.BytesIO(payload), formats=(plugin,))
        pic.load()
    except Exception as err:
        raise MXNetError(f"unpack_img: the record does not hold an image Pillow can decode "
                         f"({err})") from None
    grey = iscolor == 0 or (iscolor == -1 and pic.mode in ("L", "1", "I;16"))
    if grey:
        return header, np.asarray(pic.convert("L"))
    return header, np.ascontiguousarray(np.asarray(pic.convert("RGB"))[:, :, ::-1])
