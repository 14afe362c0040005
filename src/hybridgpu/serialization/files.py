"""Reading and writing model files safely: whole files replaced atomically, pairs of files
replaced together, leftovers of killed saves cleaned up, and reads that refuse what is not a
plain file.

Saving (``atomic_write``): the bytes go to a temporary ``.<name>.<12 hex digits>.tmp`` beside
the target, which is flushed, synced and renamed over the target, so a crash or a full disk
never leaves half a file; the previous file stays until the rename. The new file gets the mode
MXNet's files get (``0o666`` less the umask: 0644 under the usual umask 022), or the mode of
the file it replaces (MXNet rewrites a file in place, which keeps its mode).

A save killed before its rename (SIGKILL, a power cut) leaves its temporary behind. The next
save of the same file removes such leftovers: only names of exactly that pattern for that file,
only regular files owned by this user, and only those untouched for ``STALE_SECONDS`` (a save
still running in another process keeps writing, so its temporary stays fresh).

Saving several files as one (``together()``): inside ``with together():`` each save is written
to its temporary and left there; when the block ends without an error, the temporaries are
renamed in the order they were saved; when it fails, every temporary is removed and every
target keeps its old content. ``export`` saves the ``.params`` first and the symbol second, so
a failure leaves the old pair or the new pair (only a failing *rename*, after the params'
rename succeeded, could mix them).

Reading (``read_regular``): the path must name a regular file (after symlinks): a device such
as ``/dev/zero``, a FIFO or a folder behind a model's name is refused before a byte is read, and
the size comes from the file system, so reading ends where the file does. ``check_header``
sees the first bytes and the size before the rest is read.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "m.txt")
    >>> atomic_write(path, lambda f: f.write(b"new"))
    >>> read_regular(path, "model file")
    b'new'
    >>> with together():
    ...     atomic_write(path, lambda f: f.write(b"one"))
    ...     atomic_write(path + "2", lambda f: f.write(b"two"))
    >>> sorted(os.listdir(folder))
    ['m.txt', 'm.txt2']
    >>> read_regular("/dev/zero", "parameter file")
    Traceback (most recent call last):
    ...
    hybridgpu.base.MXNetError: cannot load parameter file '/dev/zero': not a regular file ...
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import stat
import threading
import time

from ..base import MXNetError

__all__ = ["atomic_write", "together", "read_regular", "stale_temporaries", "STALE_SECONDS"]

#: A temporary untouched this long (seconds) is a leftover of a killed save.
STALE_SECONDS = 15 * 60
_TMP = ".{base}.{token}.tmp"
_state = threading.local()


def _temp_pattern(base):
    return re.compile(r"\." + re.escape(base[:180]) + r"\.[0-9a-f]{12}\.tmp\Z")


def stale_temporaries(target, now=None):
    """Paths of leftover temporaries of earlier saves of ``target`` (see the module
    docstring): our name pattern, regular files of this user, older than STALE_SECONDS."""
    directory = os.path.dirname(os.path.abspath(target))
    pattern = _temp_pattern(os.path.basename(target))
    now = time.time() if now is None else now
    found = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return found
    uid = os.getuid() if hasattr(os, "getuid") else None
    for entry in entries:
        if not pattern.match(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if (stat.S_ISREG(info.st_mode) and (uid is None or info.st_uid == uid)
                and now - info.st_mtime > STALE_SECONDS):
            found.append(entry.path)
    return found


def _remove_stale(target):
    for path in stale_temporaries(target):
        with contextlib.suppress(OSError):
            os.unlink(path)


def _open_temp(directory, base):
    """Create a new temporary file in ``directory``; the umask applies as for any new file."""
    for _ in range(100):
        tmp = os.path.join(directory, _TMP.format(base=base[:180], token=secrets.token_hex(6)))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                         0o666)
        except FileExistsError:
            continue
        return fd, tmp
    raise MXNetError(f"cannot create a temporary file in {directory}")


def _fsync_directory(directory):
    """Make the rename durable where the platform allows it (best effort)."""
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _stage(path, write_body):
    """Write ``write_body(stream)`` to a temporary beside ``path``: ``(tmp, target)``."""
    target = os.path.realpath(path) if os.path.islink(path) else path
    directory = os.path.dirname(os.path.abspath(target))
    _remove_stale(target)
    try:
        fd, tmp = _open_temp(directory, os.path.basename(target))
    except OSError as err:
        raise MXNetError(f"cannot save {path}: {err}") from err
    try:
        with os.fdopen(fd, "wb") as stream:
            write_body(stream)
            stream.flush()
            os.fsync(stream.fileno())
        with contextlib.suppress(OSError):
            os.chmod(tmp, os.stat(target).st_mode & 0o7777)  # keep an existing file's mode
    except BaseException as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(err, OSError):
            raise MXNetError(f"cannot save {path}: {err}") from err
        raise
    return tmp, target


def _commit(path, tmp, target):
    try:
        os.replace(tmp, target)
    except OSError as err:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise MXNetError(f"cannot save {path}: {err}") from err
    _fsync_directory(os.path.dirname(os.path.abspath(target)))


def atomic_write(path, write_body):
    """Write ``write_body(stream)`` (a binary stream) to ``path`` atomically; inside
    ``together()`` the rename waits for the block's end."""
    staged = getattr(_state, "staged", None)
    tmp, target = _stage(path, write_body)
    if staged is not None:
        staged.append((path, tmp, target))
    else:
        _commit(path, tmp, target)


@contextlib.contextmanager
def together():
    """Save several files as one (see the module docstring). Nested blocks join the
    outermost one."""
    if getattr(_state, "staged", None) is not None:
        yield
        return
    _state.staged = staged = []
    try:
        yield
    except BaseException:
        for _, tmp, _ in staged:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    finally:
        _state.staged = None
    for n, (path, tmp, target) in enumerate(staged):
        try:
            _commit(path, tmp, target)
        except MXNetError:
            for _, rest, _ in staged[n + 1:]:
                with contextlib.suppress(OSError):
                    os.unlink(rest)
            raise


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a plain file"


def read_regular(path, what, header_size=0, check_header=None, verb="load"):
    """The bytes of the regular file ``path``. ``what`` names it in errors (``cannot
    {verb} {what} 'path': ...``); when
    ``check_header`` is given it is called as ``check_header(first header_size bytes, file
    size)`` before the rest is read, and raises to stop there."""
    shown = repr(os.fspath(path))
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise MXNetError(f"cannot {verb} {what} {shown}: {err.strerror or err}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise MXNetError(f"cannot {verb} {what} {shown}: not a regular file "
                         f"({_kind(info.st_mode)}); model files are read only from "
                         "regular files")
    with os.fdopen(fd, "rb") as stream:
        size = info.st_size
        try:
            head = stream.read(min(header_size, size))
            if check_header is not None:
                check_header(head, size)
            rest = stream.read(size - len(head))
        except OSError as err:
            raise MXNetError(f"cannot {verb} {what} {shown}: {err.strerror or err}") from None
    data = head + rest
    if len(data) != size:
        raise MXNetError(f"cannot {verb} {what} {shown}: the file changed while it was read "
                         f"({len(data)} of {size} bytes)")
    return data
