"""Text from outside (node names, attribute strings, dictionary keys) made safe to put into
anything hybridgpu builds as text to compile or run: generated Python, CUDA C, DOT, messages.

Model files come from strangers, and a node's name is whatever string the file says (MXNet
accepts any). The rule every code generator follows: **nothing from a file or a user-chosen name
reaches generated source except through this module**:

* ``identifier(hint)``: a name for generated code, from the fixed alphabet ``[A-Za-z0-9_]``
  only, never starting with a digit, at most ``MAX_IDENTIFIER`` characters. Generators make
  names unique themselves (``Namespace``); the hint only makes programs readable.
* ``one_line(text)``: printable ASCII (0x20-0x7e) on one line, every other character escaped
  as ``\\n``, ``\\x00``, ``\\u0394``, ``\\U0001f600``, backslashes doubled, long text cut with
  its length said. Safe inside any comment.
* ``python_comment(text)`` / ``c_comment(text)``: a whole comment. The C form quotes the text,
  so the line never ends in a backslash (which would splice the next line into the comment).
* ``python_string(text)`` / ``c_string(text)``: string literals that evaluate to ``text``
  exactly (the C literal holds printable ASCII with octal escapes for everything else, as
  UTF-8 bytes).
* ``display(text)``: a name as people read it in ``print(graph)`` and errors: unchanged when it
  is printable, quoted and escaped otherwise.
* ``check_storable(text, what)``: raises ``MXNetError`` when ``text`` cannot be written back
  as UTF-8 (a lone surrogate), naming ``what``; loaders call it so a bad name is refused at
  load time, never later from inside a compiler.

Example:
    >>> hostile = "r\\n    __import__('os').system('touch /tmp/x')\\n    #"
    >>> identifier(hostile)
    'r_______import____os___system__touch__tmp_x_____'
    >>> print(python_comment(hostile))
    # r\\n    __import__('os').system('touch /tmp/x')\\n    #
    >>> print(c_comment("ends in a backslash \\\\"))
    // "ends in a backslash \\\\"
    >>> eval(python_string(hostile)) == hostile
    True
    >>> display("dense0_fwd"), display("two\\nlines")
    ('dense0_fwd', "'two\\\\nlines'")
"""

from __future__ import annotations

import re

from .base import MXNetError

__all__ = ["identifier", "one_line", "python_comment", "c_comment", "python_string",
           "c_string", "display", "check_storable", "MAX_IDENTIFIER", "MAX_LINE"]

#: Longest identifier ``identifier`` returns.
MAX_IDENTIFIER = 48
#: Longest text ``one_line`` keeps before cutting (escapes counted).
MAX_LINE = 160

_NOT_IDENTIFIER = re.compile(r"[^A-Za-z0-9_]")
_SHORT_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def identifier(hint, fallback="v"):
    """``hint`` as an ASCII identifier (``[A-Za-z0-9_]``, no leading digit, bounded length).

    Example:
        >>> identifier("dense0_fwd"), identifier("3x"), identifier(""), identifier("é")
        ('dense0_fwd', '_3x', 'v', '_')
    """
    text = _NOT_IDENTIFIER.sub("_", str(hint))[:MAX_IDENTIFIER] or fallback
    return "_" + text[:MAX_IDENTIFIER - 1] if text[0].isdigit() else text


def _escape_char(ch):
    if ch in _SHORT_ESCAPES:
        return _SHORT_ESCAPES[ch]
    if " " <= ch <= "~":
        return ch
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def one_line(text, limit=MAX_LINE):
    """``text`` as one line of printable ASCII (escaped; cut past ``limit`` characters).

    Example:
        >>> one_line("a\\nb\\x00c\\u0394"), one_line("x" * 300, limit=10)
        ('a\\\\nb\\\\x00c\\\\u0394', 'xxxxxxxxxx... (300 characters)')
    """
    text = str(text)
    if len(text) <= limit and text.isascii() and text.isprintable() and "\\" not in text:
        return text  # nothing to escape: the common case, without the loop
    out, size = [], 0
    for ch in text:
        piece = _escape_char(ch)
        if size + len(piece) > limit:
            out.append(f"... ({len(text)} characters)")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


def python_comment(text):
    """A Python comment line holding ``text`` (``# ...``)."""
    return "# " + one_line(text)


def c_comment(text):
    """A C/CUDA ``//`` comment holding ``text`` in quotes (never ends in a backslash)."""
    return '// "' + one_line(text).replace('"', '\\"') + '"'


def python_string(text):
    """A Python string literal equal to ``text``.

    Example:
        >>> python_string('a"b\\n')
        '\\'a"b\\\\n\\''
    """
    if not isinstance(text, str):
        raise TypeError(f"python_string expects a str, got {type(text).__name__}")
    return ascii(text)


def c_string(text):
    """A C string literal whose bytes are ``text`` in UTF-8 (printable ASCII kept, every other
    byte, quotes and backslashes as 3-digit octal escapes, which never run into the next
    character as hex escapes can).

    Example:
        >>> c_string('say "hi"\\n'), c_string("é")
        ('"say \\\\042hi\\\\042\\\\012"', '"\\\\303\\\\251"')
    """
    data = str(text).encode("utf-8", "surrogatepass")
    parts = []
    for byte in data:
        ch = chr(byte)
        keep = " " <= ch <= "~" and ch not in '"\\?'
        parts.append(ch if keep else f"\\{byte:03o}")
    return '"' + "".join(parts) + '"'


def display(text):
    """``text`` for people: as is when printable and free of quotes' trouble, else its
    escaped, quoted form (``'two\\nlines'``); long names are cut."""
    text = str(text)
    if text and text.isprintable() and len(text) <= MAX_LINE and text.strip() == text:
        return text
    return "'" + one_line(text).replace("'", "\\'") + "'"


def check_storable(text, what):
    """Raise MXNetError naming ``what`` when ``text`` cannot be stored as UTF-8.

    Example:
        >>> check_storable("ok", "node 0")
        >>> check_storable("\\ud800", "node 3 name")
        Traceback (most recent call last):
        ...
        hybridgpu.base.MXNetError: node 3 name '\\ud800' cannot be stored: ...
    """
    try:
        str(text).encode("utf-8")
    except UnicodeEncodeError as err:
        raise MXNetError(f"{what} {display(text)} cannot be stored: it is not valid Unicode "
                         f"text ({err.reason} at position {err.start}); MXNet files hold "
                         "UTF-8") from None
