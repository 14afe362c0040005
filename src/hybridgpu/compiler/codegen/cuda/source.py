"""An indenting builder for CUDA C source, and the rules for what may appear in it.

Model files are hostile: a node's name could carry ``*/``, a newline or a ``#include``. So
generated CUDA never contains a name from the graph. Identifiers are made here from a fixed
alphabet and numbers (``ident("k", 3, "fused")`` is ``k3_fused``; anything else raises), and a
comment is forced onto one line of printable ASCII with ``*/`` and ``//`` taken out.

``numbered(source)`` prefixes line numbers, for compile errors (an error quotes its line).

Example:
    >>> src = CudaSource()
    >>> name = ident("k", 3, "fused")
    >>> with src.block(f'extern "C" __global__ void {name}(float* o0)'):
    ...     src.comment("relu */ evil\\n#include <x>")
    ...     with src.block("if (threadIdx.x == 0)"):
    ...         src.line("o0[0] = 1.0f;")
    >>> print(src.text())
    extern "C" __global__ void k3_fused(float* o0) {
      // relu evil #include <x>
      if (threadIdx.x == 0) {
        o0[0] = 1.0f;
      }
    }
    <BLANKLINE>
    >>> ident("k", "3; system()")
    Traceback (most recent call last):
    ...
    ValueError: unsafe CUDA identifier part '3; system()'
"""

from __future__ import annotations

import contextlib
import re

__all__ = ["CudaSource", "ident", "safe_comment", "numbered", "kernel_head", "param_kinds"]

_PART = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]+")
_MAX_COMMENT = 120


def ident(*parts):
    """An identifier joined from ``parts``: ASCII letters and digits only (ints allowed); the
    first part starts with a letter. ``ident("k", 3, "fused") == "k3_fused"``: parts after a
    number are joined with ``_``."""
    text = ""
    for n, part in enumerate(parts):
        part = str(part)
        if not _PART.fullmatch(part) or (n == 0 and not part[0].isalpha()):
            raise ValueError(f"unsafe CUDA identifier part {part!r}")
        if n and (text[-1].isdigit() and part[0].isalpha()):
            text += "_"
        text += part
    return text


def safe_comment(text):
    """``text`` as one line of printable ASCII, without comment delimiters, at most 120
    characters."""
    text = "".join(c if " " <= c <= "~" else " " for c in str(text))
    while "*/" in text or "/*" in text or "//" in text:
        text = text.replace("*/", "").replace("/*", "").replace("//", "")
    return " ".join(text.split())[:_MAX_COMMENT]


def kernel_head(name, params, threads=256):
    """The first line of a kernel taking ``params`` (C declarations), launched with at most
    ``threads`` threads a block.

    Example:
        >>> kernel_head("k1_ew", ["float* o0", "long long n"], threads=128)
        'extern "C" __global__ void __launch_bounds__(128) k1_ew(float* o0, long long n)'
    """
    return (f'extern "C" __global__ void __launch_bounds__({threads}) {name}('
            f'{", ".join(params)})')


def param_kinds(params):
    """The C types of ``params`` (declarations) without their names and ``__restrict__``, as
    a Kernel records them for checking launch arguments.

    Example:
        >>> param_kinds(["const float* __restrict__ i0", "long long n"])
        ('const float*', 'long long')
    """
    return tuple(p.rsplit(" ", 1)[0].replace(" __restrict__", "") for p in params)


def numbered(source):
    """``source`` with a line number before each line (as compile errors count them)."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{n:>{width}} | {line}" for n, line in enumerate(lines, 1))


class CudaSource:
    """Lines of CUDA C with indentation handled by ``block`` (two spaces a level)."""

    def __init__(self):
        self._lines = []
        self._depth = 0

    def line(self, text=""):
        """Append one line (statements; the builder adds the indentation)."""
        if "\n" in text:
            raise ValueError("CudaSource.line takes one line; call it once a line")
        self._lines.append(("  " * self._depth + text) if text else "")

    def lines(self, text):
        """Append each line of ``text`` (generated statements, such as a fused body)."""
        for line in str(text).splitlines():
            self.line(line.strip())

    def comment(self, text):
        """A ``//`` comment, sanitized (see ``safe_comment``)."""
        self.line(f"// {safe_comment(text)}")

    @contextlib.contextmanager
    def block(self, head, tail=""):
        """``head {`` ... ``}tail`` with the body indented."""
        self.line(f"{head} {{")
        self._depth += 1
        try:
            yield self
        finally:
            self._depth -= 1
            self.line("}" + tail)

    def extend(self, other):
        """Append the lines of another builder at this builder's depth."""
        for line in other.text().splitlines():
            self.line(line)

    def text(self):
        """The source, ending with a newline."""
        return "\n".join(self._lines) + "\n"
