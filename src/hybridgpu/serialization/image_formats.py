"""The image formats ``mx.image.imdecode`` decodes, told apart by a file's first bytes.

MXNet decodes with OpenCV, which reads a fixed set of formats; Pillow, which hybridgpu decodes
with, has plugins for many more (EPS hands the file to Ghostscript, a separate program). So a
buffer reaches Pillow only when its magic bytes name one of OpenCV's formats, and Pillow is
then told to try that one plugin alone. Accepted: JPEG, PNG, BMP, TIFF (what MXNet 1.9.1's
pip wheel decodes), and PPM/PGM/PBM and WebP (what OpenCV decodes when built with them).
Everything else (GIF, EPS, PDF, JPEG 2000, ICO, ...) raises an ``MXNetError`` naming what the
bytes look like, before any decoder sees them.

Example:
    >>> pillow_format(b"\\x89PNG\\r\\n\\x1a\\n" + bytes(8))
    'PNG'
    >>> pillow_format(b"GIF89a" + bytes(8))
    Traceback (most recent call last):
    ...
    hybridgpu.base.MXNetError: imdecode: the buffer (14 bytes) looks like a GIF image; ...
"""

from __future__ import annotations

from ..base import MXNetError

__all__ = ["ACCEPTED", "pillow_format"]

#: The formats decoded, as named to the user.
ACCEPTED = "JPEG, PNG, BMP, TIFF, PPM/PGM/PBM, WebP"

# (first bytes, Pillow's plugin): checked in order
_SIGNATURES = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)

# first bytes of formats refused, for the error message only
_REFUSED = (
    (b"GIF87a", "GIF image"), (b"GIF89a", "GIF image"), (b"%!PS", "PostScript/EPS file"),
    (b"\xc5\xd0\xd3\xc6", "EPS file"), (b"%PDF", "PDF file"),
    (b"\x00\x00\x00\x0cjP  ", "JPEG 2000 image"), (b"\xffO\xffQ", "JPEG 2000 codestream"),
    (b"\x00\x00\x01\x00", "ICO icon"), (b"\x00\x00\x02\x00", "CUR cursor"),
    (b"DDS ", "DDS texture"), (b"qoif", "QOI image"), (b"8BPS", "Photoshop file"),
    (b"P7", "PAM image"), (b"II+\x00", "BigTIFF image"), (b"MM\x00+", "BigTIFF image"),
    (b"\x01\xda", "SGI image"), (b"\n", "PCX image"), (b"RIFF", "RIFF file (not WebP)"),
)


def _is_pnm(data):
    """Netpbm's P1..P6 (PBM, PGM, PPM; ASCII or binary): 'P', a digit, then white space."""
    return (len(data) >= 3 and data[:1] == b"P" and data[1:2] in b"123456"
            and data[2:3] in b" \t\r\n")


def _looks_like(data):
    for magic, name in _REFUSED:
        if data.startswith(magic):
            return f"looks like a {name}"
    return f"starts with {bytes(data[:8])!r}, which is not an image format MXNet decodes"


def pillow_format(data):
    """The Pillow plugin to decode ``data`` (bytes) with, from its first bytes; raises an
    ``MXNetError`` for an empty buffer or any format outside ``ACCEPTED``.

    Example:
        >>> pillow_format(b"RIFF\\x00\\x00\\x00\\x00WEBPVP8 ")
        'WEBP'
    """
    if not data:
        raise MXNetError("imdecode: Input cannot be an empty buffer")
    for magic, plugin in _SIGNATURES:
        if data.startswith(magic):
            return plugin
    if _is_pnm(data):
        return "PPM"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    raise MXNetError(f"imdecode: the buffer ({len(data)} bytes) {_looks_like(data)}; "
                     f"imdecode decodes {ACCEPTED} (as MXNet's OpenCV) and refuses other "
                     "formats")
