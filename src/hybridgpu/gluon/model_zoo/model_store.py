"""MXNet's ``gluon.model_zoo.model_store``: the table of pretrained files' SHA-1 sums (which
GluonNLP and GluonCV extend with their own models) and ``get_model_file``, which finds a
pretrained file under ``root``. hybridgpu never downloads: a file that is not there already
raises an error saying where to put it.

Example:
    >>> import tempfile
    >>> _model_sha1["tiny"] = "0123456789abcdef0123456789abcdef01234567"
    >>> short_hash("tiny")
    '01234567'
    >>> get_model_file("tiny", root=tempfile.mkdtemp())  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    FileNotFoundError: pretrained model file .../tiny-01234567.params is not there...
"""

from __future__ import annotations

import os

from ...base import data_dir
from ..utils import check_sha1

__all__ = ["get_model_file", "purge", "short_hash"]

#: model name -> SHA-1 of its parameter file (empty here: packages add their own)
_model_sha1: dict[str, str] = {}


def short_hash(name):
    """The first 8 hex digits of the SHA-1 of the pretrained file of ``name``."""
    if name not in _model_sha1:
        raise ValueError(f"Pretrained model for {name} is not available.")
    return _model_sha1[name][:8]


def get_model_file(name, root=None):
    """The path of the pretrained file of ``name`` under ``root`` (default
    ``data_dir()/models``): ``{root}/{name}-{short hash}.params``, checked against its SHA-1."""
    root = os.path.expanduser(root or os.path.join(data_dir(), "models"))
    path = os.path.join(root, f"{name}-{short_hash(name)}.params")
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"pretrained model file {path} is not there: hybridgpu never downloads. Save the "
            f"file MXNet downloads for {name!r} there (or build the model with "
            f"pretrained=False and load_parameters your own file)")
    if not check_sha1(path, _model_sha1[name]):
        raise ValueError(f"pretrained model file {path} does not match its SHA-1 "
                         f"{_model_sha1[name]}: the file is damaged or another version")
    return path


def purge(root=None):
    """Delete the ``.params`` files under ``root`` (default ``data_dir()/models``)."""
    root = os.path.expanduser(root or os.path.join(data_dir(), "models"))
    for name in os.listdir(root) if os.path.isdir(root) else ():
        if name.endswith(".params"):
            os.remove(os.path.join(root, name))
