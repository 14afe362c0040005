"""Attribute schemas: parse an op's attributes from Python values or MXNet's JSON strings.

MXNet writes every attribute as a string (``"(3, 3)"``, ``"True"``, ``"relu"``, ``"None"``);
the same schema reads those and plain Python values, and formats values back the way MXNet does.

Example:
    >>> Shape().parse("(3, 3)"), Bool().parse("False"), Int().parse(4)
    ((3, 3), False, 4)
    >>> Shape().format((3, 3)), Bool().format(True)
    ('(3, 3)', 'True')
"""

from __future__ import annotations

import ast
import math

import numpy as np

__all__ = ["REQUIRED", "Attr", "Int", "Float", "Bool", "Str", "Enum", "Shape", "Axis", "DType",
           "FloatTuple", "AttrError", "Number"]


class _Required:
    def __repr__(self):
        return "REQUIRED"


#: Marks an attribute that has no default.
REQUIRED = _Required()


class AttrError(ValueError):
    """A value that does not fit its attribute's kind; the registry adds the op and name."""


class Attr:
    """One attribute's kind, default and doc. Subclasses implement ``_from_str``/``_check``.

    ``optional=True`` also accepts ``None`` (written ``"None"`` by MXNet).
    """

    kind = "any"

    def __init__(self, default=REQUIRED, doc="", optional=False):
        self.default = default
        self.doc = doc
        self.optional = optional or default is None

    def parse(self, value):
        """Return the Python value for ``value`` (a Python value or MXNet's string form)."""
        if value is None or (isinstance(value, str) and value.strip() == "None"):
            if self.optional:
                return None
            raise AttrError(f"expected {self.kind}, got None")
        if isinstance(value, str):
            return self._from_str(value.strip())
        return self._check(value)

    def format(self, value):
        """The string MXNet writes for ``value`` in JSON: ``str()`` of what the caller gave
        (``3`` stays ``'3'``, ``[1, 0]`` stays ``'[1, 0]'``), strings as they are."""
        if value is None:
            return "None"
        return value if isinstance(value, str) else str(value)

    def _from_str(self, text):
        return self._check(_literal(text, self.kind))

    def _check(self, value):
        return value

    def __repr__(self):
        default = "" if self.default is REQUIRED else f"={self.default!r}"
        return f"{self.kind}{default}"


#: Longest attribute string parsed as a Python literal (a shape, a tuple): a file's text is
#: bounded before the parser sees it (deep nesting would exhaust the stack).
MAX_LITERAL = 10_000


def _literal(text, kind):
    if len(text) > MAX_LITERAL:
        raise AttrError(f"expected {kind}, got a string of {len(text)} characters (the limit "
                        f"is {MAX_LITERAL})")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError) as err:
        raise AttrError(f"expected {kind}, got {text[:200]!r}") from err


class Int(Attr):
    kind = "int"

    def _check(self, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
            if isinstance(value, (float, np.floating)) and float(value).is_integer():
                return int(value)
            raise AttrError(f"expected int, got {value!r}")
        return int(value)


class Float(Attr):
    kind = "float"

    def _from_str(self, text):
        try:
            return float(text)
        except ValueError as err:
            raise AttrError(f"expected float, got {text!r}") from err

    def _check(self, value):
        if isinstance(value, (bool, np.bool_)) or not isinstance(
                value, (int, float, np.integer, np.floating)):
            raise AttrError(f"expected float, got {value!r}")
        return float(value)


class Bool(Attr):
    kind = "bool"
    _TEXT = {"true": True, "1": True, "false": False, "0": False}

    def _from_str(self, text):
        if text.lower() not in self._TEXT:
            raise AttrError(f"expected bool (True/False/1/0), got {text!r}")
        return self._TEXT[text.lower()]

    def _check(self, value):
        if isinstance(value, (bool, np.bool_, int, np.integer)) and value in (0, 1):
            return bool(value)
        raise AttrError(f"expected bool, got {value!r}")


class Str(Attr):
    kind = "str"

    def _from_str(self, text):
        return text

    def _check(self, value):
        if not isinstance(value, str):
            raise AttrError(f"expected str, got {value!r}")
        return value


class Enum(Attr):
    """One of a fixed set of strings, e.g. ``act_type`` in ``{'relu', 'tanh', ...}``."""

    kind = "enum"

    def __init__(self, choices, default=REQUIRED, doc="", optional=False):
        super().__init__(default, doc, optional)
        self.choices = tuple(choices)

    def _from_str(self, text):
        return self._check(text.strip("'\""))

    def _check(self, value):
        if value not in self.choices:
            raise AttrError(f"expected one of {list(self.choices)}, got {value!r}")
        return value

    def __repr__(self):
        return f"enum{list(self.choices)}" + ("" if self.default is REQUIRED
                                              else f"={self.default!r}")


class Shape(Attr):
    """A tuple of ints: ``(3, 3)``, ``[3, 3]`` or ``3`` (read as ``(3,)``); ``()`` allowed."""

    kind = "shape"

    def _check(self, value):
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return (int(value),)
        if isinstance(value, (tuple, list)):
            return tuple(Int()._check(v) for v in value)
        raise AttrError(f"expected a shape like (3, 3), got {value!r}")


class Axis(Shape):
    """An axis or tuple of axes; an int stays an int, ``()``/``None`` mean all axes."""

    kind = "axis"

    def _check(self, value):
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return int(value)
        return super()._check(value)


class FloatTuple(Attr):
    """A tuple of floats, e.g. ``(0.5, 0.5)``."""

    kind = "float tuple"

    def _check(self, value):
        if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
            return (float(value),)
        if isinstance(value, (tuple, list)):
            return tuple(Float()._check(v) for v in value)
        raise AttrError(f"expected a tuple of floats, got {value!r}")


class DType(Attr):
    """A dtype name: ``'float32'``, ``np.float16``, ``np.dtype('int32')``; parsed to a name."""

    kind = "dtype"
    NAMES = ("float32", "float64", "float16", "uint8", "int32", "int8", "int64", "bool",
             "int16", "uint16", "uint32", "uint64")

    def _from_str(self, text):
        return self._check(text.strip("'\""))

    def format(self, value):
        return "None" if value is None else self._check(value)

    def _check(self, value):
        try:
            name = np.dtype(value).name
        except TypeError as err:
            raise AttrError(f"expected a dtype name like 'float32', got {value!r}") from err
        if name not in self.NAMES:
            raise AttrError(f"dtype {name!r} is not supported; use one of {list(self.NAMES)}")
        return name


class Number(Attr):
    """An int or float scalar, kept as given (MXNet writes ``'1'`` for 1 and ``'1.5'``)."""

    kind = "number"

    def _from_str(self, text):
        try:
            return self._check(int(text))
        except ValueError:
            pass
        try:
            value = float(text)
        except ValueError as err:
            raise AttrError(f"expected a number, got {text!r}") from err
        if math.isinf(value) and "inf" not in text.lower():  # "1e400", as MXNet refuses it
            raise AttrError(f"out of range value {text[:40]!r}: larger than a double can hold")
        return value

    def _check(self, value):
        if isinstance(value, (bool, np.bool_)):
            return int(value)
        if isinstance(value, (int, np.integer)):
            try:
                float(value)
            except OverflowError:
                raise AttrError(f"out of range value: an integer of {len(str(value))} digits "
                                "is larger than a double can hold") from None
            return int(value)
        if isinstance(value, (float, np.floating)):
            return float(value)
        raise AttrError(f"expected a number, got {value!r}")
