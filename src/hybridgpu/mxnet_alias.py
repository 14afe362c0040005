"""``import mxnet`` as hybridgpu, on request: for third-party code you do not edit (GluonCV,
GluonNLP, the d2l book's ``d2lzh``), which says ``import mxnet``.

One step, before that code is imported::

    import hybridgpu
    hybridgpu.install_mxnet_alias()
    import gluoncv                      # its ``import mxnet`` now gets hybridgpu

or, for a script or a module run as ``-m``, without editing it::

    python -m hybridgpu.mxnet_alias train.py --epochs 1
    python -m hybridgpu.mxnet_alias -m pytest tests/

What the alias does, and all it does:

- ``mxnet.X`` (any depth) is the very module object ``hybridgpu.X``; a name hybridgpu has no
  module of raises ``ModuleNotFoundError`` (never a second copy of a hybridgpu module).
- ``mxnet`` itself is a thin module whose attributes are hybridgpu's, except ``__version__``:
  it reports the MXNet release hybridgpu follows (``MXNET_VERSION``, "1.9.1"), which the
  packages' version checks accept (GluonCV refuses anything below 1.4). hybridgpu's own
  version stays ``hybridgpu.__version__`` (also ``mxnet.__hybridgpu_version__``).
- The code these packages hold was written for NumPy before 1.24, whose scalar-type aliases
  (``np.float``, ``np.int``, ``np.object``, ``np.str``, ``np.complex``, ``np.unicode``, and
  ``np.bool``/``np.long`` where NumPy lacks them) meant the Python builtins; GluonCV's anchors
  say ``dtype=np.float``. ``install`` puts back those that the running NumPy removed, as the
  builtins they stood for (``legacy_numpy_names=False`` leaves NumPy alone). It adds names
  only: nothing NumPy has is replaced.
- It never shadows a real MXNet silently: if an ``mxnet`` distribution is installed (found
  on ``sys.path``) or a different ``mxnet`` is already imported, ``install`` refuses with
  ``MXNetAliasError`` unless ``force=True``.

The finder holds no logic beyond mapping names; it is compatible with the name-only shim of
the MXNet unit-test runner (``sitecustomize`` that maps ``mxnet`` to ``hybridgpu``): installing
this one on top of it is allowed, and this finder is asked first. This file imports nothing
from hybridgpu, so a ``sitecustomize`` can install the alias without importing hybridgpu at
start-up (hybridgpu loads on the first ``import mxnet``)::

    import importlib.util, os
    _pkg = importlib.util.find_spec("hybridgpu").submodule_search_locations[0]
    _spec = importlib.util.spec_from_file_location(
        "hybridgpu_mxnet_alias", os.path.join(_pkg, "mxnet_alias.py"))
    _alias = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_alias)
    _alias.install(load=False)

Example:
    >>> import hybridgpu
    >>> mx = hybridgpu.install_mxnet_alias()
    >>> import mxnet.gluon.nn
    >>> mxnet.gluon.nn is hybridgpu.gluon.nn, mxnet.__version__
    (True, '1.9.1')
    >>> mx.nd is hybridgpu.nd
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types

__all__ = ["MXNET_VERSION", "MXNetAliasError", "install", "uninstall", "is_installed",
           "restore_legacy_numpy_names", "LEGACY_NUMPY_NAMES"]

#: The MXNet release whose behaviour hybridgpu follows; ``mxnet.__version__`` under the alias.
MXNET_VERSION = "1.9.1"

_SRC, _DST = "mxnet", "hybridgpu"


class MXNetAliasError(RuntimeError):
    """The alias was refused: a real MXNet is installed or already imported."""


def _make_top():
    """The ``mxnet`` module: hybridgpu's attributes, MXNet's version number."""
    target = importlib.import_module(_DST)
    top = types.ModuleType(_SRC, target.__doc__)
    top.__version__ = MXNET_VERSION
    top.__hybridgpu_version__ = target.__version__
    top.__all__ = list(getattr(target, "__all__", ()))
    top.__path__ = []           # a package, whose submodules only the finder below serves

    def __getattr__(name):      # noqa: N807  (PEP 562 module attribute hook)
        return getattr(target, name)

    def __dir__():              # noqa: N807
        return sorted(set(dir(target)) | {"__version__", "__hybridgpu_version__"})

    top.__getattr__ = __getattr__
    top.__dir__ = __dir__
    return top


class _AliasLoader(importlib.abc.Loader):
    """Hands out an existing module object as the module being imported."""

    def __init__(self, target):
        self._target = target
        self._spec = None

    def create_module(self, spec):
        if self._target is None:
            return _make_top()
        module = importlib.import_module(self._target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        # importlib stamped the alias spec on the module: give hybridgpu's module its own back
        if self._spec is not None:
            module.__spec__ = self._spec


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Finds ``mxnet`` and ``mxnet.X`` as hybridgpu and ``hybridgpu.X``."""

    _hybridgpu_mxnet_alias = True   # recognised also when this file was loaded on its own

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _SRC:
            return importlib.util.spec_from_loader(fullname, _AliasLoader(None),
                                                   is_package=True)
        if not fullname.startswith(_SRC + "."):
            return None
        name = _DST + fullname[len(_SRC):]
        try:
            found = importlib.util.find_spec(name)
        except (ImportError, AttributeError, ValueError):
            found = None
        if found is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: the mxnet alias maps it to {name!r}, which "
                f"hybridgpu does not have (see docs/coming_from_mxnet.md)", name=fullname)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(name),
                                               is_package=found.submodule_search_locations
                                               is not None)


def _real_mxnet():
    """Where an installed MXNet distribution is, or None (meta-path aliases not counted)."""
    spec = importlib.machinery.PathFinder.find_spec(_SRC)
    return None if spec is None else (spec.origin or str(spec.submodule_search_locations))


def _is_alias(module):
    return module is sys.modules.get(_DST) or getattr(module, "__hybridgpu_version__", None)


def is_installed():
    """Whether this alias's finder is on ``sys.meta_path``.

    Example:
        >>> import hybridgpu.mxnet_alias as alias
        >>> isinstance(alias.is_installed(), bool)
        True
    """
    return any(_is_finder(f) for f in sys.meta_path)


def _is_finder(finder):
    return getattr(finder, "_hybridgpu_mxnet_alias", False) is True


#: NumPy's scalar-type aliases that NumPy 1.24 removed: name -> the builtin it meant.
LEGACY_NUMPY_NAMES = {"float": float, "int": int, "complex": complex, "object": object,
                      "str": str, "unicode": str, "bool": bool, "long": int}


def restore_legacy_numpy_names():
    """Give NumPy back the aliases of ``LEGACY_NUMPY_NAMES`` it lacks; returns their names.

    Example:
        >>> import numpy as np
        >>> _ = restore_legacy_numpy_names()
        >>> np.array([1, 2], dtype=np.float).dtype
        dtype('float64')
    """
    import numpy

    missing = [name for name in LEGACY_NUMPY_NAMES if name not in vars(numpy)]
    for name in missing:
        setattr(numpy, name, LEGACY_NUMPY_NAMES[name])
    return missing


def install(force=False, load=True, legacy_numpy_names=True):
    """Make ``import mxnet`` (and every ``mxnet.X``) give hybridgpu; returns the ``mxnet``
    module (``load=False``: returns None and imports nothing yet, for a ``sitecustomize``).
    Idempotent. Refuses (``MXNetAliasError``) when a real MXNet is installed or already
    imported, unless ``force=True`` (then hybridgpu wins for this process). With
    ``legacy_numpy_names`` it restores NumPy's removed scalar-type aliases
    (``restore_legacy_numpy_names``), which the packages' code still uses.

    Example:
        >>> import hybridgpu
        >>> hybridgpu.install_mxnet_alias().__version__
        '1.9.1'
    """
    loaded = sys.modules.get(_SRC)
    if loaded is not None and not _is_alias(loaded) and not force:
        raise MXNetAliasError(
            f"a real MXNet is already imported ({getattr(loaded, '__file__', loaded)}); the "
            f"hybridgpu alias would not replace it. Install the alias before anything imports "
            f"mxnet, or pass force=True")
    real = _real_mxnet()
    if real is not None and not force:
        raise MXNetAliasError(
            f"a real MXNet is installed ({real}); hybridgpu will not shadow it silently. "
            f"Uninstall it, use another environment, or pass force=True to use hybridgpu "
            f"for 'import mxnet' in this process")
    if legacy_numpy_names:
        restore_legacy_numpy_names()
    if not is_installed():
        sys.meta_path.insert(0, _AliasFinder())
    if loaded is not None and not getattr(loaded, "__hybridgpu_version__", None):
        for name in [n for n in sys.modules if n == _SRC or n.startswith(_SRC + ".")]:
            del sys.modules[name]   # a real MXNet or the bare shim alias: serve ours from now
    return importlib.import_module(_SRC) if load else None


def uninstall():
    """Remove the finder and the ``mxnet`` modules it served (tests use this).

    Example:
        >>> import hybridgpu.mxnet_alias as alias
        >>> alias.uninstall(); alias.is_installed()
        False
    """
    sys.meta_path[:] = [f for f in sys.meta_path if not _is_finder(f)]
    for name in [n for n in sys.modules if n == _SRC or n.startswith(_SRC + ".")]:
        if _is_alias(sys.modules[name]) or sys.modules[name].__name__.startswith(_DST):
            del sys.modules[name]


def _main(argv):
    """``python -m hybridgpu.mxnet_alias script.py args`` or ``... -m module args``."""
    import runpy

    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print("usage: python -m hybridgpu.mxnet_alias (script.py | -m module) [args...]")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    install()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = list(argv)
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    from hybridgpu.mxnet_alias import _main as _package_main  # one finder class, not two

    sys.exit(_package_main(sys.argv[1:]))
