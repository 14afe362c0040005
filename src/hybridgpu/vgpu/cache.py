"""The folder of compiled kernels, safe when others can reach it (issue 20).

The folder is ``$HYBRIDGPU_CACHE/vgpu``, else ``~/.cache/hybridgpu/vgpu``, else (no writable
home) ``$TMPDIR/hybridgpu-vgpu-<uid>``. The file names there depend only on the hybridgpu
version and the kernel source, which another local user can compute, so:

- the folder is created private (mode 0700) and, when it exists, used only if it is a real
  directory (no symlink) owned by this user and not writable by group or others (one merely
  readable is made 0700); its parent must not let others replace it (writable by group or
  others only with the sticky bit, as ``/tmp``). Otherwise ``CacheError`` says why and what to
  do: no file in it is read.
- every file the virtual GPU loads or includes from it (a kernel library, the precompiled
  shim header) has its sha256 recorded beside it (``<name>.sha256``) when this process writes
  it; a file is used only if its digest matches the record, else it is rebuilt.

Example:
    >>> import os, tempfile
    >>> root = tempfile.mkdtemp()
    >>> path = os.path.join(root, "vgpu")
    >>> private_folder(path) == path and oct(os.stat(path).st_mode & 0o777)
    '0o700'
    >>> name = os.path.join(path, "k.so")
    >>> with open(name, "wb") as f:
    ...     _ = f.write(b"library")
    >>> record(name); verified(name)
    True
    >>> with open(name, "ab") as f:
    ...     _ = f.write(b" planted")
    >>> verified(name)
    False
"""

from __future__ import annotations

import hashlib
import os
import stat
import tempfile

from .errors import CacheError

__all__ = ["folder", "private_folder", "record", "verified", "digest"]

_DIGEST = ".sha256"


def folder():
    """The cache folder, created (private) or checked on each call."""
    root = os.environ.get("HYBRIDGPU_CACHE")
    if root:
        return private_folder(os.path.join(root, "vgpu"), "HYBRIDGPU_CACHE")
    home = os.path.join(os.path.expanduser("~"), ".cache", "hybridgpu")
    try:
        os.makedirs(home, exist_ok=True)
    except OSError:  # an unwritable home: a per-user folder in the temporary directory
        path = os.path.join(tempfile.gettempdir(), f"hybridgpu-vgpu-{os.getuid()}")
        return private_folder(path, "the temporary directory")
    return private_folder(os.path.join(home, "vgpu"), "~/.cache")


def private_folder(path, where="the cache"):
    """``path``, made a private directory of this user, or CacheError naming what is wrong
    (``where``: how it was chosen, for the message)."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), 0o700, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as err:
        raise CacheError(f"the virtual GPU's kernel cache {path} (from {where}) cannot be "
                         f"created: {err}") from None
    info = os.lstat(path)
    me = os.getuid()
    problem = None
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        problem = "it is not a directory (a symlink or a file)"
    elif info.st_uid != me:
        problem = f"it belongs to uid {info.st_uid}, not to you (uid {me})"
    elif info.st_mode & 0o022:
        problem = f"it is writable by group or others (mode {oct(info.st_mode & 0o777)})"
    else:
        problem = _parent_problem(path)
    if problem:
        raise CacheError(f"refusing the virtual GPU's kernel cache {path} (from {where}): "
                         f"{problem}, so another user could plant a library there that this "
                         "process would load. Remove it, or set HYBRIDGPU_CACHE to a folder of "
                         "your own")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)  # ours, only readable by others: make it private
    return path


def _parent_problem(path):
    parent = os.path.dirname(os.path.abspath(path))
    info = os.stat(parent)
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        return (f"its folder {parent} is writable by group or others without the sticky bit "
                f"(mode {oct(info.st_mode & 0o7777)}), so others could replace it")
    return None


def digest(path):
    """The sha256 (hex) of the file at ``path``."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def record(path):
    """Write ``path``'s digest beside it (``<path>.sha256``, replaced atomically)."""
    tmp = f"{path}{_DIGEST}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(digest(path) + "\n")
    os.replace(tmp, path + _DIGEST)


def verified(path):
    """True when ``path`` exists and its digest matches the one recorded beside it."""
    try:
        with open(path + _DIGEST) as f:
            want = f.read().strip()
        return bool(want) and digest(path) == want
    except OSError:
        return False
