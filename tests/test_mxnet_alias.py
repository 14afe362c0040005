"""The ``import mxnet`` alias (``hybridgpu.install_mxnet_alias``): every ``mxnet.X`` is the very
module ``hybridgpu.X``, ``mxnet.__version__`` is MXNet's release while ``hybridgpu.__version__``
stays, nothing is loaded twice, a real MXNet is never shadowed silently, and the ``-m`` runner
gives an unmodified script the alias. The MXNet unit-test runner's shim can sit underneath.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import types

import pytest

import hybridgpu
from hybridgpu import mxnet_alias

SHIM = "/work/shared/mxnet-unittests/shim"


@pytest.fixture
def alias():
    """The alias installed for one test, removed afterwards with every mxnet module."""
    mxnet_alias.uninstall()
    yield mxnet_alias.install()
    mxnet_alias.uninstall()
    assert "mxnet" not in sys.modules


def _run(code, env_extra=None, args=()):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, *args, "-c", code] if code else
                          [sys.executable, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_version_is_mxnets_and_hybridgpus_stays(alias):
    import mxnet

    assert mxnet is alias
    assert mxnet.__version__ == mxnet_alias.MXNET_VERSION == "1.9.1"
    assert hybridgpu.__version__ != "1.9.1"
    assert mxnet.__hybridgpu_version__ == hybridgpu.__version__


def test_every_submodule_is_hybridgpus_own_module(alias):
    import mxnet.gluon.nn
    from mxnet.gluon.block import HybridBlock
    from mxnet.ndarray import NDArray

    assert mxnet.gluon.nn is hybridgpu.gluon.nn
    assert sys.modules["mxnet.gluon.nn"] is sys.modules["hybridgpu.gluon.nn"]
    assert HybridBlock is hybridgpu.gluon.HybridBlock and NDArray is hybridgpu.nd.NDArray
    assert mxnet.nd is hybridgpu.nd and mxnet.cpu is hybridgpu.cpu
    # hybridgpu's modules keep their own spec (the alias spec is not stamped on them)
    assert hybridgpu.gluon.nn.__spec__.name == "hybridgpu.gluon.nn"
    for name, module in list(sys.modules.items()):
        if name.startswith("mxnet."):
            assert module is sys.modules["hybridgpu" + name[5:]], name


def test_unknown_submodule_is_missing_not_a_second_copy(alias):
    with pytest.raises(ModuleNotFoundError, match="mxnet.tvmop.*hybridgpu.tvmop") as err:
        import mxnet.tvmop  # noqa: F401
    assert err.value.name == "mxnet.tvmop"
    assert "hybridgpu.tvmop" not in sys.modules


def test_missing_top_level_name_says_why(alias):
    with pytest.raises(AttributeError, match="coming_from_mxnet"):
        alias.rtc  # noqa: B018


def test_refuses_a_real_mxnet_on_the_path(tmp_path, monkeypatch):
    mxnet_alias.uninstall()
    (tmp_path / "mxnet").mkdir()
    (tmp_path / "mxnet" / "__init__.py").write_text("__version__ = '1.9.1'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(mxnet_alias.MXNetAliasError, match=r"real MXNet is installed.*force"):
        mxnet_alias.install()
    assert not mxnet_alias.is_installed()
    try:
        forced = mxnet_alias.install(force=True)
        assert forced.nd is hybridgpu.nd
    finally:
        mxnet_alias.uninstall()


def test_refuses_when_another_mxnet_is_imported(monkeypatch):
    mxnet_alias.uninstall()
    other = types.ModuleType("mxnet")
    other.__file__ = "/somewhere/mxnet/__init__.py"
    monkeypatch.setitem(sys.modules, "mxnet", other)
    with pytest.raises(mxnet_alias.MXNetAliasError, match="already imported.*somewhere"):
        mxnet_alias.install()
    assert sys.modules["mxnet"] is other


def test_install_is_idempotent(alias):
    assert mxnet_alias.install() is alias
    assert sum(isinstance(f, mxnet_alias._AliasFinder) for f in sys.meta_path) == 1


def test_the_shim_of_the_unittest_runner_can_sit_underneath():
    if not os.path.isdir(SHIM):
        pytest.skip(f"{SHIM} is not here")
    code = textwrap.dedent("""
        import mxnet, hybridgpu
        assert mxnet is hybridgpu                      # the shim's plain alias
        import mxnet.gluon
        alias = hybridgpu.install_mxnet_alias()        # ours on top of it
        import mxnet as again
        assert again is alias and again.__version__ == "1.9.1"
        assert again.gluon is hybridgpu.gluon
        print("ok")
    """)
    result = _run(code, {"PYTHONPATH": SHIM + os.pathsep + os.environ.get("PYTHONPATH", "")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_runner_gives_an_unmodified_script_the_alias(tmp_path):
    script = tmp_path / "uses_mxnet.py"
    script.write_text("import sys\nimport mxnet as mx\n"
                      "print(mx.__version__, mx.nd.ones((2,)).sum().asscalar(), sys.argv[1:])\n")
    result = _run(None, args=("-m", "hybridgpu.mxnet_alias", str(script), "--flag"))
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1.9.1", "2.0", "['--flag']"]


def test_runner_without_a_target_prints_usage():
    result = _run(None, args=("-m", "hybridgpu.mxnet_alias"))
    assert result.returncode == 2 and "usage" in result.stdout


def test_a_sitecustomize_installs_it_without_importing_hybridgpu(tmp_path):
    """The module imports nothing from hybridgpu: loaded as a file at start-up it installs
    the finder, and hybridgpu loads only on the first ``import mxnet``."""
    (tmp_path / "sitecustomize.py").write_text(textwrap.dedent("""
        import importlib.util, os
        _pkg = importlib.util.find_spec("hybridgpu").submodule_search_locations[0]
        _spec = importlib.util.spec_from_file_location(
            "hybridgpu_mxnet_alias", os.path.join(_pkg, "mxnet_alias.py"))
        _alias = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_alias)
        _alias.install(load=False)
    """))
    code = textwrap.dedent("""
        import sys
        assert "hybridgpu" not in sys.modules
        import mxnet, hybridgpu
        assert mxnet.__version__ == "1.9.1" and mxnet.gluon is hybridgpu.gluon
        assert hybridgpu.mxnet_alias.is_installed()
        assert hybridgpu.install_mxnet_alias() is mxnet
        print(sum(getattr(f, "_hybridgpu_mxnet_alias", False) for f in sys.meta_path))
    """)
    result = _run(code, {"PYTHONPATH": str(tmp_path) + os.pathsep
                         + os.environ.get("PYTHONPATH", "")})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "1"



def test_legacy_numpy_names_come_back_as_the_builtins_they_meant(monkeypatch):
    """GluonCV's anchor code says ``dtype=np.float`` (removed in NumPy 1.24): the alias puts
    back the removed names NumPy lacks, as the builtins they stood for, and replaces none."""
    import numpy as np

    for name in mxnet_alias.LEGACY_NUMPY_NAMES:
        if name in vars(np) and vars(np)[name] is not mxnet_alias.LEGACY_NUMPY_NAMES[name]:
            continue  # NumPy's own (np.bool and np.long on NumPy 2): never touched
        monkeypatch.delattr(np, name, raising=False)
    kept = {name: vars(np)[name] for name in mxnet_alias.LEGACY_NUMPY_NAMES if name in vars(np)}
    restored = mxnet_alias.restore_legacy_numpy_names()
    assert sorted(restored) == sorted(set(mxnet_alias.LEGACY_NUMPY_NAMES) - set(kept))
    assert "float" in restored and np.float is float and np.int is int and np.object is object
    assert np.array([1, 2], dtype=np.float).dtype == np.float64
    for name, value in kept.items():
        assert vars(np)[name] is value
    assert mxnet_alias.restore_legacy_numpy_names() == []
