"""Graph nodes: a ``Node`` is one op application (or a variable); an ``Entry`` is one of its
outputs. Symbols, autograd and the compiler all build on these.

Example:
    >>> from hybridgpu import ops
    >>> x = Node.variable("data")
    >>> relu = Node(ops.get("relu"), "relu0", {}, [Entry(x, 0)])
    >>> relu.num_outputs, relu.inputs[0].node.name
    (1, 'data')
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Node", "Entry"]


class Node:
    """One node: ``op`` (an OpDef, or None for a variable), a unique-ish ``name``, parsed
    ``attrs`` (complete, with defaults), ``given_attrs`` (what the user or the JSON gave, written
    back to JSON), ``inputs`` (Entries) and ``extra`` (graph-level attributes such as
    ``__shape__``, ``__lr_mult__`` or any user attribute, all strings)."""

    __slots__ = ("op", "name", "attrs", "given_attrs", "inputs", "extra", "shape_cache",
                 "__weakref__")

    def __init__(self, op, name, attrs, inputs, given_attrs=None, extra=None):
        self.op = op
        self.name = name
        self.attrs = attrs
        self.given_attrs = dict(given_attrs or {})
        self.inputs = list(inputs)
        self.extra = dict(extra or {})
        self.shape_cache = {}  # output index -> fully known shape found by an inference

    @classmethod
    def variable(cls, name, extra=None):
        """A variable (an input of the graph: data, a parameter or an auxiliary state)."""
        return cls(None, name, {}, [], extra=extra)

    @property
    def is_variable(self):
        """True for graph inputs."""
        return self.op is None

    @property
    def num_outputs(self):
        """Outputs this node computes (visible or not)."""
        return 1 if self.op is None else self.op.num_outputs(self.attrs)

    @property
    def num_visible_outputs(self):
        """Outputs users see (BatchNorm shows 1 of its 3 unless output_mean_var)."""
        return 1 if self.op is None else self.op.num_visible_outputs(self.attrs)

    def output_names(self):
        """``name_output`` style names of the visible outputs, as MXNet lists them."""
        if self.op is None:
            return [self.name]
        names = self.op.output_names(self.attrs)[:self.num_visible_outputs]
        return [f"{self.name}_{n}" for n in names]

    def input_names(self):
        """The op's names for this node's inputs (``data``, ``weight``, ...)."""
        return [] if self.op is None else list(self.op.input_names(self.attrs))

    def __repr__(self):
        kind = "var" if self.op is None else self.op.name
        return f"<Node {self.name} ({kind})>"


class Entry(NamedTuple):
    """Output ``index`` of ``node``."""

    node: Node
    index: int
