"""MXNet's ``mx.registry``: name -> class tables per base class, with a register decorator and
a factory that builds instances from a name, a dict or a JSON string. GluonNLP registers its
token embeddings, subword functions and evaluation functions here (issue 21).

Example:
    >>> class Shape: pass
    >>> register = get_register_func(Shape, "shape")
    >>> @register
    ... class Square(Shape):
    ...     def __init__(self, side=1): self.side = side
    >>> create = get_create_func(Shape, "shape")
    >>> create("square", side=3).side, create('["Square", {"side": 2}]').side
    (3, 2)
    >>> sorted(get_registry(Shape))
    ['square']
"""

from __future__ import annotations

import json
import warnings

from .base import ArgumentTypeError, MXNetError

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY: dict[type, dict[str, type]] = {}


def _table(base_class):
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class):
    """A copy of the ``{name: class}`` table of ``base_class`` (names are lower case).

    Example:
        >>> get_registry(type("Nothing", (), {}))
        {}
    """
    return dict(_table(base_class))


def get_register_func(base_class, nickname):
    """``register(klass, name=None)``: adds a subclass of ``base_class`` under ``name`` (its
    class name by default), lower-cased; usable as a decorator. Re-registering a name warns.

    Example:
        >>> class Base: pass
        >>> get_register_func(Base, "base")(type("Leaf", (Base,), {})).__name__
        'Leaf'
    """
    table = _table(base_class)

    def register(klass, name=None):
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise ArgumentTypeError(f"register {nickname}: can only register subclasses of "
                                    f"{base_class.__name__}, got {klass!r}")
        key = (klass.__name__ if name is None else name).lower()
        old = table.get(key)
        if old is not None and old is not klass:
            warnings.warn(f"new {nickname} {klass.__module__}.{klass.__name__} registered "
                          f"as {key!r} overrides {old.__module__}.{old.__name__}",
                          UserWarning, stacklevel=2)
        table[key] = klass
        return klass

    register.__doc__ = f"Register a {nickname} to the {nickname} factory."
    return register


def get_alias_func(base_class, nickname):
    """``alias(*names)``: a decorator registering a class under each of ``names``.

    Example:
        >>> class Base: pass
        >>> _ = get_alias_func(Base, "base")("a", "b")(type("Leaf", (Base,), {}))
        >>> sorted(get_registry(Base))
        ['a', 'b']
    """
    register = get_register_func(base_class, nickname)

    def alias(*aliases):
        def decorate(klass):
            for name in aliases:
                register(klass, name)
            return klass
        return decorate

    return alias


def get_create_func(base_class, nickname):
    """``create(name_or_spec, *args, **kwargs)``: an instance of the class registered under
    the name; also takes an instance (returned as is), a dict (its ``nickname`` key is the
    name), a JSON list ``'["name", {kwargs}]'`` or a JSON object.

    Example:
        >>> class Base: pass
        >>> _ = get_register_func(Base, "base")(type("Leaf", (Base,), {}))
        >>> type(get_create_func(Base, "base")({"base": "leaf"})).__name__
        'Leaf'
    """
    table = _table(base_class)

    def create(*args, **kwargs):
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise TypeError(f"create {nickname}: give the {nickname} name first or as "
                            f"{nickname}=")
        if isinstance(name, base_class):
            if args or kwargs:
                raise ValueError(f"{nickname} is already an instance; arguments "
                                 f"{args or ''}{kwargs or ''} cannot apply to it")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise ArgumentTypeError(f"create {nickname}: the name must be a string, got "
                                    f"{type(name).__name__}")
        if name.startswith(("[", "{")):
            if args or kwargs:
                raise ValueError(f"create {nickname}: a JSON spec takes no other arguments")
            spec = json.loads(name)
            return create(spec[0], **spec[1]) if isinstance(spec, list) else create(**spec)
        klass = table.get(name.lower())
        if klass is None:
            raise MXNetError(f"{name!r} is not a registered {nickname}; registered: "
                             f"{sorted(table) or 'none'}")
        return klass(*args, **kwargs)

    create.__doc__ = f"Create a {nickname} instance from a name or a config."
    return create
