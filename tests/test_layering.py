"""Data flows down: the package's top-level parts import only parts below them, and no two
parts import each other, counting every import in the source (function-level ones too).

The walk reads the source with ``ast`` (nothing is imported to find the edges), resolves relative
imports and the package's aliases (``hybridgpu.nd`` is ``hybridgpu.ndarray``), maps each module to
its part (the first name under ``hybridgpu``) and fails naming the offending import's file and
line. ``LAYERS`` is the order, lowest first; a new top-level module or package must be placed in
it.
"""

from __future__ import annotations

import ast
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

import hybridgpu

SRC = Path(hybridgpu.__file__).resolve().parent
PACKAGE = "hybridgpu"

#: The parts, lowest first: a part may import itself and the parts before it, never one after it.
LAYERS = (
    "base",           # MXNetError, the dtype-flag table
    "util",           # mx.util: the NumPy-semantics switches, environment access
    "runtime",        # mx.runtime: which of MXNet's build features are here
    "registry",       # mx.registry: name -> class tables (GluonNLP's factories)
    "limits",         # size caps for what files ask to allocate
    "safe_text",      # names from files made safe to print or generate
    "numpy_interop",  # what NumPy may do with NDArrays (ufuncs, mixing)
    "vgpu",           # the virtual GPU: a CuPy stand-in a context can hand out
    "ops",            # the op registry: imports nothing but the modules above
    "graph",          # the IR, inference, the reference interpreter
    "modes",          # recording / train-mode flags
    "tape",           # the autograd tape, its one node constructor, reverse mode
    "context",        # devices and their array modules
    "timing",         # device-event timing (gpucheck, the gpu executor's kernel times)
    "random_state",   # per-device random generators
    "name",           # automatic names and name scopes
    "attribute",      # attribute scopes
    "serialization",  # MXNet's .params format
    "recordio",       # MXNet's .rec files
    "ndarray",
    "symbol",
    "autograd",
    "numpy",          # mx.np: NumPy-semantics arrays over the same registry and dispatch point
    "numpy_extension",  # mx.npx: MXNet's NumPy-mode extensions (nn ops, devices, set_np)
    "compiler",
    "executor",
    # MXNet's Python surface that gluon builds on
    "lr_scheduler", "initializer", "optimizer", "metric", "random", "image", "io",
    "kvstore",        # gluon's Trainer sums gradients through it
    "gluon",
    "contrib",        # mx.contrib: amp's loss scaling, text vocabularies (over gluon)
    "model", "callback", "module", "test_utils",   # mx.model checkpoints, mx.mod
    "operator", "viz", "profiler", "onnx",  # CustomOp, network pictures, profiles, ONNX export
    "mxnet_surface",  # MXNet 1.9.1's top-level names, for the package's __getattr__
    "mxnet_alias",    # `import mxnet` as hybridgpu, for third-party packages
    "hybridgpu",      # the package's __init__: the public surface
    "bench_env", "bench", "gpucheck", "__main__",
)

#: Imports allowed against the order for now, each (importer module, imported module) with why.
#: Each must still exist: remove an entry when its import goes away.
KNOWN_EXCEPTIONS = {
    # TODO(issue 9): MXNet's Symbol.bind/simple_bind/eval compile the graph; the Executor API
    # belongs above the compiler (or reaches it through the backend registry).
    ("hybridgpu.symbol.executor", "hybridgpu.compiler"):
        "Symbol.bind's Executor compiles the graph",
}


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``importer`` imports ``target`` at ``path:line``."""

    importer: str
    target: str
    path: str
    line: int

    def __str__(self):
        return f"{self.path}:{self.line}: {self.importer} imports {self.target}"


def module_names(root, package):
    """``{module name: (file, is_package)}`` for every ``.py`` file under ``root``."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (package, *path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return modules


def _from_targets(node, importer, is_package, package, modules):
    """Modules named by ``from X import a, b`` (``X.a`` when it is a module, else ``X``)."""
    if node.level:
        base = importer.split(".") if is_package else importer.split(".")[:-1]
        base = base[:len(base) - (node.level - 1)]
        base = ".".join(base + ([node.module] if node.module else []))
    elif node.module and (node.module == package or node.module.startswith(package + ".")):
        base = node.module
    else:
        return []
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]


def _dealias(target, package, aliases):
    """``hybridgpu.nd.x`` -> ``hybridgpu.ndarray.x`` for the package's module aliases."""
    parts = target.split(".")
    if len(parts) > 1 and parts[1] in aliases:
        return ".".join([*aliases[parts[1]].split("."), *parts[2:]])
    return target


def imports_of(root, package, aliases=None):
    """Every import of a ``package`` module by a module under ``root``, at any depth."""
    modules, aliases = module_names(root, package), aliases or {}
    found = []
    for importer, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names
                           if a.name == package or a.name.startswith(package + ".")]
            elif isinstance(node, ast.ImportFrom):
                targets = _from_targets(node, importer, is_package, package, modules)
            else:
                continue
            rel = path.relative_to(root.parent)
            found += [Import(importer, _dealias(t, package, aliases), str(rel), node.lineno)
                      for t in targets]
    return found


def part_of(module):
    """The part a module belongs to: the first name under the package (the package itself for
    its ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def upward_imports(edges, layers, exceptions=()):
    """Edges whose target part comes after the importer's part in ``layers`` (parts missing
    from ``layers`` are left to ``test_every_part_has_a_layer``)."""
    rank = {part: i for i, part in enumerate(layers)}
    return [e for e in edges if (e.importer, e.target) not in exceptions
            and rank.get(part_of(e.target), -1) > rank.get(part_of(e.importer), len(rank))]


def part_cycle(edges, exceptions=()):
    """The import edges of one cycle between parts, or [] when the part graph has none."""
    graph = {}
    for e in edges:
        a, b = part_of(e.importer), part_of(e.target)
        if a != b and (e.importer, e.target) not in exceptions:
            graph.setdefault(a, {}).setdefault(b, e)
    state, stack = {}, []

    def visit(part):
        state[part] = "open"
        stack.append(part)
        for nxt in sorted(graph.get(part, {})):
            if state.get(nxt) == "open":
                loop = stack[stack.index(nxt):] + [nxt]
                return [graph[a][b] for a, b in zip(loop, loop[1:])]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[part] = "done"
        return []

    for part in sorted(graph):
        if part not in state and (found := visit(part)):
            return found
    return []


def _package_aliases():
    """Names the package binds to its own modules under another name (``nd``, ``sym``)."""
    return {name: value.__name__ for name, value in vars(hybridgpu).items()
            if isinstance(value, types.ModuleType) and value.__name__.startswith(PACKAGE + ".")
            and value.__name__ != f"{PACKAGE}.{name}"}


@pytest.fixture(scope="module")
def edges():
    return imports_of(SRC, PACKAGE, _package_aliases())


def _report(what, bad):
    return f"{what}:\n" + "\n".join(f"  {e}" for e in bad)


def test_every_part_has_a_layer(edges):
    parts = {part_of(m) for m in module_names(SRC, PACKAGE)}
    missing = sorted(parts - set(LAYERS))
    assert not missing, f"top-level modules without a place in LAYERS: {missing}; add each " \
                        "above every part it imports and below every part importing it"


def test_no_upward_imports(edges):
    bad = upward_imports(edges, LAYERS, KNOWN_EXCEPTIONS)
    assert not bad, _report("imports of a higher part (data flows down; see LAYERS)", bad)


def test_no_import_cycle_between_parts(edges):
    cycle = part_cycle(edges, KNOWN_EXCEPTIONS)
    assert not cycle, _report("an import cycle between parts", cycle)


def test_known_exceptions_still_exist(edges):
    present = {(e.importer, e.target) for e in edges}
    stale = [pair for pair in KNOWN_EXCEPTIONS if pair not in present]
    assert not stale, f"remove these fixed imports from KNOWN_EXCEPTIONS: {stale}"


def test_the_tape_is_below_ndarray_and_imports_nothing_above_modes(edges):
    targets = {part_of(e.target) for e in edges if part_of(e.importer) == "tape"}
    assert targets <= {"base", "modes", "tape"}, targets


def _module_names_bound(tree, importer, is_package, modules):
    """Local names a file binds to package modules (``from .. import modes``)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                targets = _from_targets(ast.ImportFrom(node.module, [alias], node.level),
                                        importer, is_package, PACKAGE, modules)
                if targets and targets[0].endswith("." + alias.name):  # the name is a module
                    bound.add(alias.asname or alias.name)
    return bound


def test_no_module_patches_another_modules_globals():
    """Hooks patched into a lower module from above (``imperative.NDArray = NDArray``, an
    installed recorder) hide the dependency from the import graph: none may exist."""
    modules, bad = module_names(SRC, PACKAGE), []
    for importer, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text())
        bound = _module_names_bound(tree, importer, is_package, modules)
        for node in ast.walk(tree):
            targets = node.targets if isinstance(node, ast.Assign) else (
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "setattr":
                targets = node.args[:1]
            bad += [f"{path.relative_to(SRC.parent)}:{node.lineno}" for t in targets
                    if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                    and t.value.id in bound or isinstance(t, ast.Name) and t.id in bound
                    and isinstance(node, ast.Call)]
    assert not bad, f"assignments into another module's globals: {bad}"


def test_tape_nodes_are_made_only_by_the_one_constructor():
    made = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            func = node.func if isinstance(node, ast.Call) else None
            if func is not None and "TapeNode" in (getattr(func, "id", None),
                                                   getattr(func, "attr", None)):
                made.append(str(path.relative_to(SRC)))
    assert made == ["tape/node.py"], f"TapeNode(...) outside tape.record: {made}"


# -- the walk itself, on a small package written for the test ------------------------------------
def _write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


@pytest.fixture()
def toy(tmp_path):
    root = tmp_path / "toy"
    _write(root, {
        "__init__.py": "from . import low, high\nshort = low\n",
        "low/__init__.py": "from .core import f\n",
        "low/core.py": "def f():\n    from ..high import g  # a function-level upward import\n"
                       "    return g\n",
        "high.py": "from .low import core\nfrom toy.short import f\nimport numpy\n",
    })
    return root


def test_walk_finds_relative_absolute_aliased_and_function_level_imports(toy):
    found = {(e.importer, e.target, e.line) for e in
             imports_of(toy, "toy", aliases={"short": "toy.low"})}
    assert found == {("toy", "toy.low", 1), ("toy", "toy.high", 1),
                     ("toy.low", "toy.low.core", 1), ("toy.low.core", "toy.high", 2),
                     ("toy.high", "toy.low.core", 1), ("toy.high", "toy.low", 2)}


def test_walk_reports_upward_imports_and_cycles_with_file_and_line(toy):
    edges = imports_of(toy, "toy", aliases={"short": "toy.low"})
    bad = upward_imports(edges, ("low", "high", "toy"))
    assert [str(e) for e in bad] == ["toy/low/core.py:2: toy.low.core imports toy.high"]
    cycle = {str(e) for e in part_cycle(edges)}
    assert cycle == {"toy/low/core.py:2: toy.low.core imports toy.high",
                     "toy/high.py:1: toy.high imports toy.low.core"}
    exception = {("toy.low.core", "toy.high")}
    assert upward_imports(edges, ("low", "high", "toy"), exception) == []
    assert part_cycle(edges, exception) == []
