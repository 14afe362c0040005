"""The virtual GPU's kernel cache is safe to share (issue 20): its folder is created private
and refused when another user owns it or others may write it (the ``HYBRIDGPU_CACHE`` folder
and the ``$TMPDIR/hybridgpu-vgpu-<uid>`` fallback alike), and a library or precompiled header
is used only when its digest matches the one recorded when this user built it.

The planted library is a real shared object whose constructor writes a marker file: had it
been loaded, the marker would exist."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

from hybridgpu import vgpu
from hybridgpu.vgpu import cache, compiler
from hybridgpu.vgpu.errors import CacheError

CXX = os.environ.get("CXX", "g++")
pytestmark = pytest.mark.skipif(shutil.which(CXX) is None,
                                reason="the virtual GPU compiles kernels with g++")
NOBODY = 65534


def _kernel(tag):
    return ('extern "C" __global__ void fill(float* y, float v) { y[threadIdx.x] = v + '
            f"{tag}; }}")


@pytest.fixture
def xp(monkeypatch):
    monkeypatch.setattr(compiler, "_loaded", {})
    monkeypatch.setattr(compiler, "_checked_headers", {})
    return vgpu.module(1)


def _run(xp, tag):
    y = xp.zeros(4, xp.float32)
    xp.RawModule(code=_kernel(tag)).get_function("fill")((1,), (4,), (y, np.float32(1)))
    return xp.asnumpy(y)


def _planted(folder, marker):
    """A shared library that creates ``marker`` when loaded, built in ``folder``."""
    c = os.path.join(folder, "planted.c")
    with open(c, "w") as f:
        f.write("#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {"
                f' FILE* f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    out = os.path.join(folder, "planted.so")
    subprocess.run([CXX, "-x", "c", "-shared", "-fPIC", c, "-o", out], check=True)
    return out


def _library_names(folder):
    return sorted(n for n in os.listdir(folder) if n.startswith("k-") and n.endswith(".so"))


def _plant(lib, folder, name):
    """Put ``lib`` at ``folder/name`` with a matching digest, as an attacker would."""
    os.makedirs(folder, exist_ok=True)
    shutil.copy(lib, os.path.join(folder, name))
    with open(os.path.join(folder, name + ".sha256"), "w") as f:
        f.write(cache.digest(lib) + "\n")


def _needs_root():
    if os.getuid() != 0:
        pytest.skip("hands a folder to another user (chown): needs root")


def test_the_folder_is_private_and_every_library_has_its_digest(xp, tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "c"))
    np.testing.assert_array_equal(_run(xp, 1), [2, 2, 2, 2])
    folder = compiler.cache_dir()
    assert folder == str(tmp_path / "c" / "vgpu")
    assert os.stat(folder).st_mode & 0o777 == 0o700
    names = _library_names(folder)
    assert len(names) == 1
    for name in names + [n for n in os.listdir(folder) if n.startswith("shim-")
                         and not n.endswith(".sha256")]:
        with open(os.path.join(folder, name), "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        with open(os.path.join(folder, name + ".sha256")) as f:
            assert f.read().strip() == want, name


def _planted_cache(xp, tmp_path, monkeypatch):
    """(the library name a kernel gets, a planted library, its marker)."""
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "mine"))
    _run(xp, 2)
    (name,) = _library_names(compiler.cache_dir())
    monkeypatch.setattr(compiler, "_loaded", {})
    marker = tmp_path / "planted-ran"
    return name, _planted(str(tmp_path), marker), marker


def test_a_cache_folder_of_another_user_is_refused(xp, tmp_path, monkeypatch):
    _needs_root()
    name, lib, marker = _planted_cache(xp, tmp_path, monkeypatch)
    theirs = tmp_path / "shared" / "vgpu"
    _plant(lib, str(theirs), name)
    os.chown(theirs, NOBODY, NOBODY)
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "shared"))
    with pytest.raises(CacheError, match=f"belongs to uid {NOBODY}, not to you.*"
                                         "HYBRIDGPU_CACHE"):
        _run(xp, 2)
    assert not marker.exists(), "the planted library ran"


def test_the_temporary_folder_fallback_refuses_a_planted_folder(xp, tmp_path, monkeypatch):
    """No writable home: the fallback ``$TMPDIR/hybridgpu-vgpu-<uid>``, which another local
    user can create first (the temporary directory is writable by all)."""
    _needs_root()
    name, lib, marker = _planted_cache(xp, tmp_path, monkeypatch)
    monkeypatch.delenv("HYBRIDGPU_CACHE")
    (tmp_path / "not-a-folder").write_text("")
    monkeypatch.setenv("HOME", str(tmp_path / "not-a-folder" / "home"))
    shared = tmp_path / "tmp"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    theirs = shared / f"hybridgpu-vgpu-{os.getuid()}"
    _plant(lib, str(theirs), name)
    os.chown(theirs, NOBODY, NOBODY)
    with pytest.raises(CacheError, match=f"hybridgpu-vgpu-0 .from the temporary directory.: it "
                                         f"belongs to uid {NOBODY}"):
        _run(xp, 2)
    assert not marker.exists(), "the planted library ran"
    shutil.rmtree(theirs)
    np.testing.assert_array_equal(_run(xp, 2), [3, 3, 3, 3])  # now made private, and used
    assert os.stat(theirs).st_uid == 0 and os.stat(theirs).st_mode & 0o777 == 0o700


@pytest.mark.parametrize("mode, refused", [(0o777, True), (0o770, True), (0o755, False)])
def test_a_folder_others_may_write_is_refused(xp, tmp_path, monkeypatch, mode, refused):
    folder = tmp_path / "c" / "vgpu"
    folder.mkdir(parents=True)
    os.chmod(folder, mode)
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "c"))
    if refused:
        with pytest.raises(CacheError, match=f"writable by group or others .mode {oct(mode)}"):
            _run(xp, 3)
    else:
        np.testing.assert_array_equal(_run(xp, 3), [4, 4, 4, 4])
        assert os.stat(folder).st_mode & 0o777 == 0o700  # made private


def test_a_symlinked_folder_and_a_replaceable_parent_are_refused(xp, tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    (tmp_path / "c").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "c" / "vgpu")
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "c"))
    with pytest.raises(CacheError, match="not a directory"):
        _run(xp, 4)
    (tmp_path / "open").mkdir()
    os.chmod(tmp_path / "open", 0o777)  # others may rename our folder away: no sticky bit
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "open"))
    with pytest.raises(CacheError, match="without the sticky bit"):
        _run(xp, 4)


def test_a_library_whose_digest_does_not_match_is_rebuilt_not_loaded(xp, tmp_path,
                                                                     monkeypatch):
    name, lib, marker = _planted_cache(xp, tmp_path, monkeypatch)
    folder = compiler.cache_dir()
    shutil.copy(lib, os.path.join(folder, "swap"))  # a new file, renamed over the library:
    os.replace(os.path.join(folder, "swap"), os.path.join(folder, name))  # the record stays
    np.testing.assert_array_equal(_run(xp, 2), [3, 3, 3, 3])
    assert not marker.exists(), "a library with another digest was loaded"
    assert cache.verified(os.path.join(folder, name))
    os.remove(os.path.join(folder, name + ".sha256"))  # no record: rebuilt too
    monkeypatch.setattr(compiler, "_loaded", {})
    np.testing.assert_array_equal(_run(xp, 2), [3, 3, 3, 3])
    assert cache.verified(os.path.join(folder, name))


def test_a_tampered_precompiled_header_is_rebuilt(xp, tmp_path, monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_CACHE", str(tmp_path / "c"))
    _run(xp, 5)
    folder = compiler.cache_dir()
    headers = [n for n in os.listdir(folder) if n.startswith("shim-") and n.endswith(".h")]
    assert headers
    for name in headers:
        with open(os.path.join(folder, name), "w") as f:
            f.write('#error "a planted header was included"\n')
        if os.path.exists(os.path.join(folder, name + ".gch")):
            with open(os.path.join(folder, name + ".gch"), "wb") as f:
                f.write(b"planted")
    monkeypatch.setattr(compiler, "_checked_headers", {})
    np.testing.assert_array_equal(_run(xp, 6), [7, 7, 7, 7])  # a new kernel: compiled now
    for name in headers:
        assert cache.verified(os.path.join(folder, name))
