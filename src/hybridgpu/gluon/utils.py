"""``mx.gluon.utils``: splitting batches across devices, global-norm gradient clipping, and
file helpers (``check_sha1``, ``download``, ``replace_file``).

``split_data``/``split_and_load`` slice a batch as MXNet 1.9 does (an uneven split gives the
first ``size % num_slice`` slices one extra row, like ``numpy.array_split``).
``clip_global_norm`` scales arrays in place and returns the total norm (a NumPy scalar, or a
one-element NDArray with ``check_isfinite=False``).

hybridgpu never uses the network: ``download`` copies ``file://`` URLs (and returns a file that
is already in place, as MXNet does); any other URL raises ``ConnectionError`` saying where to
put the file by hand.

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu import nd
    >>> x = nd.arange(10).reshape(5, 2)
    >>> [s.shape for s in split_data(x, 2, even_split=False)]
    [(3, 2), (2, 2)]
    >>> [s.context for s in split_and_load(x, [mx.cpu(0), mx.cpu(1)], even_split=False)]
    [cpu(0), cpu(1)]
    >>> grads = [nd.array([3.0, 4.0]), nd.array([[12.0]])]
    >>> float(clip_global_norm(grads, 1.0))
    13.0
    >>> [round(v, 4) for v in grads[0].asnumpy().tolist()]
    [0.2308, 0.3077]
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import urllib.parse
import urllib.request
import uuid
import warnings

import numpy as np

from .. import ndarray as nd
from ..context import Context
from ..ndarray import NDArray
from .block import HookHandle

__all__ = ["split_data", "split_and_load", "clip_global_norm", "check_sha1", "download",
           "replace_file", "shape_is_known", "HookHandle", "ArgumentError"]


class ArgumentError(ValueError, AssertionError):
    """A bad argument where MXNet uses ``assert``: catch it as ``ValueError`` or, as with MXNet,
    as ``AssertionError``.

    Example:
        >>> issubclass(ArgumentError, AssertionError), issubclass(ArgumentError, ValueError)
        (True, True)
    """


def _batch_axis(shape, batch_axis):
    ndim = len(shape)
    if not -ndim <= batch_axis < ndim:
        raise IndexError(f"batch_axis {batch_axis} is out of range for data with shape {shape}")
    return batch_axis % ndim


def _slice_along(data, axis, begin, end):
    if axis == 0:
        return data[begin:end]
    # A copy, as MXNet's split/slice_axis give, rather than a strided view.
    return data[(slice(None),) * axis + (slice(begin, end),)].copy()


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """Split ``data`` (an NDArray or NumPy array) into ``num_slice`` slices along
    ``batch_axis``.

    With ``even_split=True`` the size must be a multiple of ``num_slice`` (ValueError
    otherwise); with ``False`` the first ``size % num_slice`` slices get one extra element and
    slices can be empty when ``num_slice > size``. Slices along axis 0 are views, as in MXNet.

    Example:
        >>> from hybridgpu import nd
        >>> [s.asnumpy().tolist() for s in split_data(nd.arange(7), 3, even_split=False)]
        [[0.0, 1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
    """
    if isinstance(num_slice, bool) or not isinstance(num_slice, (int, np.integer)) \
            or num_slice < 1:
        raise ValueError(f"num_slice must be a positive integer, got {num_slice!r}")
    axis = _batch_axis(tuple(data.shape), batch_axis)
    size = data.shape[axis]
    if even_split and size % num_slice != 0:
        raise ValueError(
            f"data with shape {data.shape} cannot be evenly split into {num_slice} slices "
            f"along axis {batch_axis}. Use a batch size that's multiple of {num_slice} or set "
            "even_split=False to allow uneven partitioning of data.")
    if num_slice == 1:
        return [data]
    base, extra = divmod(size, num_slice)
    slices, begin = [], 0
    for i in range(num_slice):
        end = begin + base + (1 if i < extra else 0)
        slices.append(_slice_along(data, axis, begin, end))
        begin = end
    return slices


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """Split ``data`` along ``batch_axis`` into one slice per context of ``ctx_list`` and move
    slice ``i`` to ``ctx_list[i]``.

    Non-NDArray data (NumPy arrays, lists) is first made an NDArray with ``nd.array`` (float32,
    as in MXNet). With one context the whole array is returned (itself when already there).

    Example:
        >>> import hybridgpu as mx
        >>> parts = split_and_load([[1, 2], [3, 4]], [mx.cpu(1), mx.cpu(0)])
        >>> [(p.asnumpy().tolist(), p.context) for p in parts]
        [([[1.0, 2.0]], cpu(1)), ([[3.0, 4.0]], cpu(0))]
    """
    if isinstance(ctx_list, Context):
        ctx_list = [ctx_list]
    ctx_list = list(ctx_list)
    if not ctx_list:
        raise ValueError("split_and_load: ctx_list is empty; give at least one context")
    if not isinstance(data, NDArray):
        data = nd.array(data, ctx=ctx_list[0])
    if len(ctx_list) == 1:
        return [data.as_in_context(ctx_list[0])]
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [piece.as_in_context(ctx) for piece, ctx in zip(slices, ctx_list)]


def _check_clip_arrays(arrays):
    if isinstance(arrays, NDArray):
        raise TypeError("clip_global_norm: arrays must be a list of NDArrays, got one NDArray; "
                        "wrap it in a list")
    arrays = list(arrays)
    if not arrays:
        raise ArgumentError("clip_global_norm: arrays is empty")
    for i, arr in enumerate(arrays):
        if not isinstance(arr, NDArray):
            raise TypeError(f"clip_global_norm: arrays[{i}] is a {type(arr).__name__}, not an "
                            "NDArray")
        if not np.issubdtype(np.dtype(arr.dtype), np.floating):
            raise TypeError(f"clip_global_norm: arrays[{i}] has dtype "
                            f"{np.dtype(arr.dtype).name}; only floating-point arrays can be "
                            "clipped")
    return arrays


def _norm_dtype(arrays):
    """float64 when any array is float64, else float32 (float16 is summed in float32)."""
    if any(np.dtype(a.dtype) == np.float64 for a in arrays):
        return np.dtype(np.float64)
    return np.dtype(np.float32)


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Rescale the NDArrays in ``arrays`` in place so that the 2-norm of all of them together
    is at most ``max_norm``; return that total norm (before scaling).

    The scale is ``max_norm / (total_norm + 1e-8)`` when that is below 1. With
    ``check_isfinite=True`` the norm is returned as a NumPy scalar and a NaN/inf norm warns
    (``UserWarning``); with ``False`` nothing waits for the device and the norm is returned as
    a one-element NDArray on the first array's context.

    Example:
        >>> from hybridgpu import nd
        >>> grads = [nd.array([3.0, 4.0])]
        >>> float(clip_global_norm(grads, 10.0)), grads[0].asnumpy().tolist()
        (5.0, [3.0, 4.0])
    """
    arrays = _check_clip_arrays(arrays)
    ctx, dtype = arrays[0].context, _norm_dtype(arrays)
    squares = []
    for arr in arrays:
        flat = arr.reshape(-1).astype(dtype, copy=False)
        squares.append(nd.dot(flat, flat).as_in_context(ctx))
    total = squares[0] if len(squares) == 1 else nd.add_n(*squares)
    total_norm = nd.sqrt(total)
    if check_isfinite:
        value = total_norm.asnumpy().reshape(())[()]
        if not np.isfinite(value):
            warnings.warn("nan or inf is detected. Clipping results will be undefined.",
                          UserWarning, stacklevel=2)
        scale = dtype.type(max_norm) / (value + dtype.type(1e-8))
        if not scale >= 1.0:  # also scales by NaN, as MXNet does
            for arr in arrays:
                arr *= float(scale)
        return value
    scale = nd.minimum(max_norm / (total_norm + 1e-8), nd.ones_like(total_norm))
    for arr in arrays:
        arr *= scale.as_in_context(arr.context).astype(arr.dtype, copy=False)
    return total_norm


def check_sha1(filename, sha1_hash):
    """True when the SHA-1 of file ``filename`` is ``sha1_hash`` (the full lowercase hex
    digest, compared exactly, as in MXNet).

    Example:
        >>> import hashlib, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> with open(path, "wb") as f:
        ...     _ = f.write(b"hello")
        >>> check_sha1(path, hashlib.sha1(b"hello").hexdigest()), check_sha1(path, "0" * 40)
        (True, False)
    """
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Move ``src`` over ``dst`` atomically (``os.replace``); on failure ``src`` is removed and
    ``OSError`` raised, as in MXNet."""
    try:
        os.replace(src, dst)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.remove(src)
        raise OSError(f"Moving downloaded temp file - {src}, to {dst} failed. "
                      "Please retry the download.") from err


def _download_target(url, path):
    if path is None:
        fname = url.split("/")[-1]
        if not fname:
            raise ArgumentError("Can't construct file-name from this URL. Please set the `path` "
                                "option manually.")
        return fname
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        return os.path.join(path, url.split("/")[-1])
    return path


def _copy_local(url, fname):
    source = urllib.request.url2pathname(urllib.parse.urlparse(url).path)
    if not os.path.isfile(source):
        raise FileNotFoundError(f"download: {url} names no file ({source} does not exist)")
    dirname = os.path.dirname(os.path.abspath(fname))
    os.makedirs(dirname, exist_ok=True)
    temp = f"{fname}.{uuid.uuid4()}"
    shutil.copyfile(source, temp)
    replace_file(temp, fname)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Put the file at ``url`` at ``path`` (a file name, or a folder to keep the URL's file
    name in; default: the URL's file name in the current folder) and return its path.

    hybridgpu never uses the network. A file already at the destination is returned as is
    (unless ``overwrite`` or its SHA-1 differs from ``sha1_hash``), as in MXNet; a ``file://``
    URL is copied; any other URL raises ``ConnectionError`` saying where to place the file.
    ``retries`` and ``verify_ssl`` are accepted for MXNet's signature.

    Example:
        >>> import os, pathlib, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> src = os.path.join(folder, "data.bin")
        >>> with open(src, "wb") as f:
        ...     _ = f.write(b"abc")
        >>> out = download(pathlib.Path(src).as_uri(), path=os.path.join(folder, "copy.bin"))
        Downloading ...copy.bin from file://...data.bin...
        >>> open(out, "rb").read()
        b'abc'
    """
    fname = _download_target(url, path)
    if isinstance(retries, bool) or not isinstance(retries, (int, np.integer)) or retries < 0:
        raise ArgumentError(f"Number of retries should be at least 0, currently it's {retries}")
    if not overwrite and os.path.exists(fname) and (
            not sha1_hash or check_sha1(fname, sha1_hash)):
        return fname
    if urllib.parse.urlparse(url).scheme != "file":
        raise ConnectionError(
            f"hybridgpu does not download files (no network access): cannot fetch {url}. "
            f"Download it yourself and place it at {os.path.abspath(fname)}"
            + (f" (sha1 {sha1_hash})" if sha1_hash else "") + ", or pass a file:// URL.")
    print(f"Downloading {fname} from {url}...")
    _copy_local(url, fname)
    if sha1_hash and not check_sha1(fname, sha1_hash):
        raise UserWarning(f"File {fname} is downloaded but the content hash does not match. "
                          "The repo may be outdated or download may be incomplete.")
    return fname


def shape_is_known(shape):
    """True when every dimension of ``shape`` is known (MXNet 1.x's legacy convention: ``0``
    is unknown, and ``None`` or ``()`` is an unknown shape).

    Example:
        >>> shape_is_known((2, 3)), shape_is_known((2, 0)), shape_is_known(None)
        (True, False, False)
    """
    if not shape:
        return False
    for dim in shape:
        if dim == 0:
            return False
        if dim < 0:
            raise ArgumentError(f"shape dimension size cannot be less than 0, while received "
                                f"{dim}")
    return True


# Where MXNet's hosted files live, which GluonNLP's and GluonCV's downloaders ask (issue 21)
_DEFAULT_REPO = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"


def _get_repo_url():
    """The base URL of MXNet's hosted datasets and models: ``$MXNET_GLUON_REPO`` or MXNet's
    default, always ending in ``/``.

    Example:
        >>> _get_repo_url().endswith("/")
        True
    """
    url = os.environ.get("MXNET_GLUON_REPO", _DEFAULT_REPO)
    return url if url.endswith("/") else url + "/"


def _get_repo_file_url(namespace, filename):
    """The URL of ``filename`` under ``namespace`` in that repository.

    Example:
        >>> _get_repo_file_url("gluon/models", "x.zip").rsplit("/", 3)[1:]
        ['gluon', 'models', 'x.zip']
    """
    return f"{_get_repo_url()}{namespace}/{filename}"
