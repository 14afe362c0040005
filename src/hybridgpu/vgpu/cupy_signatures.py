"""Check recorded CuPy calls (``vgpu.recorder``) against the real CuPy package.

For each recorded call shape (dotted name, Python types of the positional arguments, names
and types of the keyword arguments) it checks, with the real ``cupy`` imported (cupy-cuda13x
imports without a GPU or a driver):

* the name exists at that path in the real package;
* the arguments bind to the real object's signature: ``inspect.signature`` where Python has
  one, else the signature Cython embeds as the first docstring line(s)
  (``RawModule(str code=None, *, str path=None, tuple options=(), ...)``), else, for the few
  slots that have neither, the declaration in ``FORWARDED`` (what the call is handed to);
* without the NCCL library (``cupy.cuda.nccl.available`` is False: its wheel is 300 MB),
  ``cupy.cuda.nccl.*`` calls are checked against the signatures Cython embedded in the
  compiled ``cupy_backends.cuda.libs.nccl`` module, read from its file;
* every parameter Cython declares with a type gets a Python type Cython accepts: ``tuple``,
  ``str``... (or None), a C integer (an int or NumPy integer, never a float), a C float (any
  real number), a CuPy class (an instance of it, or None).

Run it away from the virtual GPU (which plays ``cupyx`` in ``sys.modules``): ``python -m
hybridgpu.vgpu.cupy_signatures FILE_OR_DIR...`` prints each problem and exits 1 if any.

Example (it needs the real CuPy, ``pip install -e '.[cuda-check]'``; tests/test_real_cupy.py
runs it)::

    problems = check([{"name": "cupy.RawModule", "args": [],
                       "kwargs": {"code": "str", "options": "list[str]"}}])
    problems[0]["problem"]
    # "parameter 'options' is declared 'tuple' (Cython), got list[str]"
"""

from __future__ import annotations

import inspect
import json
import os
import re
import sys

__all__ = ["check", "signatures", "load", "main", "FORWARDED", "ELEMENTS", "looser_than_cupy"]

# Slots without an introspectable signature, declared where the call goes: RawKernel.__call__
# hands its arguments to cupy.cuda.function.Function.__call__ (cupy/cuda/function.pyx), whose
# parameter names the tests find in the compiled module (test_real_cupy.py).
FORWARDED = {
    "cupy.RawKernel.__call__": (
        "cupy/cuda/function",
        "__call__(self, tuple grid, tuple block, args, size_t shared_mem=0, stream=None, "
        "bint enable_cooperative_groups=False)"),
}

# Arguments CuPy unpacks itself: the kernel arguments of a launch may be device arrays or
# scalars only (function.pyx's _pointer: an ndarray, CPointer or a Python/NumPy scalar).
ELEMENTS = {("cupy.RawKernel.__call__", "args"): ("cupy.ndarray", "int", "float", "bool",
                                                  "complex", "numpy.")}

_SIG_LINE = re.compile(r"^\s*(?:[\w.]+\.)?(\w+)\((.*)\)\s*(?:->\s*[\w.\[\], ]+)?\s*$")
_PY_TYPES = {"str": str, "tuple": tuple, "list": list, "dict": dict, "bytes": bytes}
_C_INTS = {"int", "long", "short", "char", "size_t", "ssize_t", "Py_ssize_t", "intptr_t",
           "uintptr_t", "ptrdiff_t", "unsigned", "signed", "long long", "unsigned int",
           "unsigned long", "unsigned long long", "unsigned short", "unsigned char",
           "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
           "uint64_t"}
_C_FLOATS = {"float", "double"}
_ANY = {"", "object", "bint", "bool"}  # Cython reads bool arguments as bint (truth value)
_NUMPY_INTS = {f"numpy.{n}" for n in ("int8", "int16", "int32", "int64", "uint8", "uint16",
                                       "uint32", "uint64", "intp", "uintp", "longlong",
                                       "ulonglong", "intc", "uintc", "short", "ushort")}
_NUMPY_REALS = _NUMPY_INTS | {"numpy.float16", "numpy.float32", "numpy.float64",
                              "numpy.bool", "numpy.bool_"}


class _Default:
    def __repr__(self):
        return "<default>"


def _split(params):
    """Split a parameter list at top-level commas."""
    parts, depth, quote, cur = [], 0, None, ""
    for ch in params:
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        cur += ch
    return [p.strip() for p in parts + [cur] if p.strip()]


def parse_signature(line):
    """An ``inspect.Signature`` from a Cython-embedded signature line; each annotation is
    the Cython type written before the name (``''`` when none)."""
    match = _SIG_LINE.match(line.replace("\\*", "*"))
    if match is None:
        raise ValueError(f"not a signature line: {line!r}")
    params, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for text in _split(match.group(2)):
        if text == "/":
            params = [p.replace(kind=inspect.Parameter.POSITIONAL_ONLY) for p in params]
            continue
        if text == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        head, _, default = text.partition("=")
        words = head.replace(":", " ").split()
        if head.startswith("**"):
            params.append(inspect.Parameter(head[2:], inspect.Parameter.VAR_KEYWORD))
            continue
        if head.startswith("*"):
            params.append(inspect.Parameter(head[1:].strip(), inspect.Parameter.VAR_POSITIONAL))
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        ctype = " ".join(w for w in words[:-1] if w not in ("not", "None"))
        params.append(inspect.Parameter(words[-1], kind, annotation=ctype,
                                        default=_Default() if default else
                                        inspect.Parameter.empty))
    return inspect.Signature(params)


def _doc_signatures(obj):
    """The signature lines at the top of ``obj``'s docstring (Cython's embedsignature)."""
    lines = []
    for line in (getattr(obj, "__doc__", None) or "").strip().splitlines():
        if not line.strip():
            continue
        if not _SIG_LINE.match(line.replace("\\*", "*")):
            break
        lines.append(line.strip())
    return lines


def _generic(sig):
    """True for ``(self, /, *args, **kwargs)``-like signatures, which say nothing."""
    var = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    named = [p for p in sig.parameters.values() if p.kind not in var and p.name != "self"]
    return not named and len(sig.parameters) > 0


def _ufunc_signature(obj):
    """CuPy's call signature of a ufunc without a documented one (cupyx.scipy.special's),
    written as CuPy documents its own ufuncs (``add(x1, x2, /, out=None, *, ...)``)."""
    inputs = ", ".join(f"x{i + 1}" for i in range(obj.nin))
    return parse_signature(f"{obj.__name__}({inputs}, /, out=None, *, casting='same_kind', "
                           "dtype=None)")


def signatures(name, obj):
    """``[(Signature, where it came from)]`` for the real CuPy object ``obj`` named
    ``name``: each one the call must bind to. Empty when CuPy offers none."""
    if name in FORWARDED:
        where, line = FORWARDED[name]
        return [(parse_signature(line), f"declared in {where}.pyx")]
    found = [(parse_signature(line), "embedded signature") for line in _doc_signatures(obj)]
    if not found and type(obj).__name__ == "ufunc" and isinstance(getattr(obj, "nin", None),
                                                                  int):
        found.append((_ufunc_signature(obj), "ufunc with nin inputs"))
    if not found:
        try:
            sig = inspect.signature(obj)
        except (TypeError, ValueError):
            return []
        if not _generic(sig):  # Python annotations are hints, not checked types: dropped
            sig = sig.replace(parameters=[p.replace(annotation=inspect.Parameter.empty)
                                          for p in sig.parameters.values()],
                              return_annotation=inspect.Signature.empty)
            found.append((sig, "inspect.signature"))
    return found


def _resolve(dotted):
    """The real CuPy object at ``dotted`` and whether it is reached through a class or
    instance (a method), or raise AttributeError naming the missing part."""
    import importlib

    head, *rest = dotted.split(".")
    obj = importlib.import_module(head)
    owner = None
    for i, part in enumerate(rest):
        if not hasattr(obj, part):
            module = ".".join([head, *rest[:i + 1]])
            try:
                obj, owner = importlib.import_module(module), None
                continue
            except ImportError:
                raise AttributeError(f"{'.'.join([head, *rest[:i]])} has no {part!r}") from None
        owner, obj = obj, getattr(obj, part)
    return obj, owner is not None and not inspect.ismodule(owner)


def _real_class(descriptor):
    if not descriptor.startswith(("cupy.", "cupyx.")):
        return None
    try:
        obj, _ = _resolve(descriptor)
    except (AttributeError, ImportError):
        return None
    return obj if isinstance(obj, type) else None


def _declared_class(ctype, obj):
    module = sys.modules.get(getattr(obj, "__module__", None) or "")
    if module is None and hasattr(obj, "__objclass__"):
        module = sys.modules.get(obj.__objclass__.__module__)
    found = getattr(module, ctype, None) if module is not None else None
    if found is None:
        import cupy

        found = {"ndarray": cupy.ndarray, "_ndarray_base": cupy.ndarray}.get(ctype)
    return found if isinstance(found, type) else None


def accepts(ctype, descriptor, obj=None):
    """None when Cython accepts a ``descriptor``-typed value for a parameter declared
    ``ctype``, else the reason it does not ('unchecked: ...' for a type it cannot judge)."""
    base = descriptor.split("[", 1)[0]
    if ctype in _ANY:
        return None
    if ctype in _PY_TYPES:
        ok = base in (ctype, "None")
    elif ctype in _C_INTS:
        ok = base in ("int", "bool") or base in _NUMPY_INTS
    elif ctype in _C_FLOATS:
        ok = base in ("int", "float", "bool") or base in _NUMPY_REALS
    else:
        declared = _declared_class(ctype, obj)
        if declared is None:
            return f"unchecked: cannot find Cython type {ctype!r}"
        got = _real_class(descriptor)
        ok = base == "None" or (got is not None and issubclass(got, declared))
    return None if ok else f"is declared {ctype!r} (Cython), got {descriptor}"


_COMPILED_SIG = re.compile(
    rb"(?:^|[\x00\n])((?:\w+\.)?\w+\([^\x00\n()]*\)(?: -> [\w.]+)?)[\n\x00]")


def compiled_signatures(module):
    """``{'Class.method' or 'function': signature line}`` embedded by Cython in the compiled
    module ``module`` (found, not imported: it may need a library that is not there)."""
    import importlib.util

    with open(importlib.util.find_spec(module).origin, "rb") as f:
        data = f.read()
    found = {}
    for match in _COMPILED_SIG.finditer(data):
        line = match.group(1).decode(errors="replace")
        found.setdefault(line.split("(", 1)[0], line)
    return found


class _Embedded:
    """A stand-in for an object of a compiled module that cannot be loaded here: its
    docstring is its embedded signature line."""

    def __init__(self, line, module):
        self.__doc__, self.__module__ = line, module


def _nccl_fallback(name):
    """``(object, through_class)`` for a ``cupy.cuda.nccl`` name when NCCL is not loadable,
    else None."""
    import warnings

    with warnings.catch_warnings():  # CuPy warns that the library could not be loaded
        warnings.simplefilter("ignore")
        import cupy.cuda.nccl as nccl
    if getattr(nccl, "available", True):
        return None
    key = name[len("cupy.cuda.nccl."):]
    embedded = compiled_signatures("cupy_backends.cuda.libs.nccl")
    line = embedded.get(key)
    if line is None and f"{key}.__init__" in embedded:  # a class whose __init__ is declared
        head, _, params = embedded[f"{key}.__init__"].partition("(self")
        return _Embedded(f"{key}({params.lstrip(', ')}", "cupy_backends.cuda.libs.nccl"), False
    if line is None:
        raise AttributeError(f"cupy.cuda.nccl (compiled module, library not loaded) has no "
                             f"{key!r}")
    return _Embedded(line, "cupy_backends.cuda.libs.nccl"), "." in key


def _elements(name, pname, descriptor):
    """Why the items of a ``tuple[...]``/``list[...]`` argument are not what CuPy unpacks
    there (``ELEMENTS``), or None."""
    allowed = ELEMENTS.get((name, pname))
    if allowed is None or "[" not in descriptor:
        return None
    items = descriptor.split("[", 1)[1].rstrip("]").split("|")
    bad = [item for item in items if item and not item.startswith(allowed)
           or item == "numpy.ndarray"]
    return f"holds {', '.join(bad)}, which CuPy cannot pass to a kernel" if bad else None


def _bind(sig, method, record):
    args = ["<self>"] if method else []
    args += list(record["args"])
    return sig.bind(*args, **dict(record["kwargs"]))


def check_one(record):
    """The problems (strings) of one recorded call; ``[]`` when it binds and types fit."""
    name = record["name"]
    try:
        found = _nccl_fallback(name) if name.startswith("cupy.cuda.nccl.") else None
        obj, through_class = found or _resolve(name)
    except (AttributeError, ImportError) as err:
        return [f"not in the real CuPy: {err}"]
    if isinstance(obj, type):
        through_class = False
    found = signatures(name, obj)
    if not found:
        return ["unchecked: the real CuPy object has no signature to bind"]
    problems = []
    for sig, where in found:
        method = through_class and next(iter(sig.parameters), None) == "self"
        if isinstance(obj, type) and next(iter(sig.parameters), None) == "self":
            sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        try:
            bound = _bind(sig, method, record)
        except TypeError as err:
            problems.append(f"does not bind to {name}{sig} ({where}): {err}")
            continue
        for pname, value in bound.arguments.items():
            param = sig.parameters[pname]
            if param.annotation is inspect.Parameter.empty or not isinstance(value, str) \
                    or value == "<self>" or not isinstance(param.annotation, str):
                continue
            why = accepts(param.annotation, value, obj) or _elements(name, pname, value)
            if why:
                problems.append(f"parameter {pname!r} {why}" if not why.startswith("unchecked")
                                else f"parameter {pname!r}: {why}")
    return problems


def looser_than_cupy(name, params):
    """Where a stand-in callable's parameters (``[(name, kind name)]``, as
    ``inspect.Parameter``) let a call bind that the real CuPy ``name`` would refuse: a name the
    real one lacks, a keyword-only parameter taken by position, a parameter at another
    position. ``None`` when CuPy offers no signature to compare with."""
    fallback = _nccl_fallback(name) if name.startswith("cupy.cuda.nccl.") else None
    obj, _ = fallback or _resolve(name)
    found = signatures(name, obj)
    if not found:
        return None
    real = [p for p in found[-1][0].parameters.values() if p.name != "self"]
    by_name = {p.name: p for p in real}
    any_keyword = any(p.kind == p.VAR_KEYWORD for p in real)
    positional = [p for p in real if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    any_positional = any(p.kind == p.VAR_POSITIONAL for p in real)
    issues = []
    for index, (pname, kind) in enumerate(params):
        if kind in ("VAR_POSITIONAL", "VAR_KEYWORD") or pname.startswith("_"):
            continue
        mine = by_name.get(pname)
        if mine is None and not any_keyword:
            issues.append(f"{pname!r}: CuPy has no such parameter")
        elif kind == "POSITIONAL_OR_KEYWORD" and not any_positional and (
                index >= len(positional) or positional[index].name != pname):
            issues.append(f"{pname!r}: taken at position {index}, where CuPy takes "
                          f"{positional[index].name if index < len(positional) else 'none'}")
    return issues


def check(records):
    """``[{record..., 'problem': text}]`` for every problem of every record (a record
    whose problems all start with 'unchecked' is reported with those too)."""
    out = []
    for record in records:
        for problem in check_one(record):
            out.append({**record, "problem": problem})
    return out


def load(paths):
    """The records of the JSON files at ``paths`` (folders: their ``cupy-calls-*.json``),
    one per distinct call shape."""
    records, seen = [], set()
    for path in paths:
        files = [os.path.join(path, f) for f in sorted(os.listdir(path))
                 if f.startswith("cupy-calls-") and f.endswith(".json")] \
            if os.path.isdir(path) else [path]
        for file in files:
            with open(file, encoding="utf-8") as f:
                for record in json.load(f):
                    key = json.dumps([record["name"], record["args"],
                                      sorted(record["kwargs"].items())])
                    if key not in seen:
                        seen.add(key)
                        records.append(record)
    return records


def main(argv=None):
    """``python -m hybridgpu.vgpu.cupy_signatures FILE_OR_DIR... [--json]``: exit 1 when a
    call does not fit the real CuPy ('unchecked' notes are printed, not counted)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in argv
    paths = [a for a in argv if a != "--json"]
    records = load(paths)
    problems = check(records)
    if as_json:
        print(json.dumps({"checked": len(records), "problems": problems}))
    else:
        for p in problems:
            print(f"{p['name']}({', '.join(p['args'])}"
                  f"{''.join(f', {k}={v}' for k, v in p['kwargs'].items())}) "
                  f"at {p.get('site', '?')}: {p['problem']}")
        print(f"{len(records)} CuPy call shapes checked against cupy "
              f"{_version()}: {sum(not _unchecked(p) for p in problems)} problems")
    return 1 if any(not _unchecked(p) for p in problems) else 0


def _unchecked(problem):
    return problem["problem"].startswith("unchecked") or ": unchecked" in problem["problem"]


def _version():
    import cupy

    return cupy.__version__


if __name__ == "__main__":
    raise SystemExit(main())
