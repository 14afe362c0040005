"""``Symbol.debug_str()``: the text MXNet 1.9 prints for a symbol, line for line.

The outputs (``name(index)``), then every node in MXNet's depth-first order: a variable as
``Variable:<name>``, an op as its name, its inputs (a variable input with its version: 1 for an
auxiliary state the op updates, else 0) and its attributes sorted by key. A symbol that is one
op without inputs prints ``AtomicFunctor  Op:<op>``; a single variable prints just itself.

Example:
    >>> import hybridgpu as mx
    >>> x = mx.sym.var("data")
    >>> text = mx.sym.Activation(x, act_type="relu", name="r").debug_str()
    >>> for line in text.splitlines():
    ...     print(line.replace(chr(9), "  "))
    Symbol Outputs:
      output[0]=r(0)
    Variable:data
    --------------------
    Op:Activation, Name=r
    Inputs:
      arg[0]=data(0) version=0
    Attrs:
      act_type=relu
"""

from __future__ import annotations

from ..graph import topological_order
from .symbol import Symbol

__all__ = ["debug_str"]


def _node_lines(node):
    if node.is_variable:
        return [f"Variable:{node.name}"]
    lines = ["--------------------", f"Op:{node.op.name}, Name={node.name}", "Inputs:"]
    aux = set(node.op.aux)
    for i, (input_name, entry) in enumerate(zip(node.input_names(), node.inputs)):
        line = f"\targ[{i}]={entry.node.name}({entry.index})"
        if entry.node.is_variable:
            line += f" version={1 if input_name in aux else 0}"
        lines.append(line)
    attrs = {**node.given_attrs, **node.extra}
    if attrs:
        lines.append("Attrs:")
        lines += [f"\t{key}={attrs[key]}" for key in sorted(attrs)]
    return lines


def debug_str(symbol):
    """The MXNet-format description of ``symbol`` (a ``str`` ending in a newline)."""
    outputs = symbol._outputs
    if len(outputs) == 1 and not outputs[0].node.inputs:
        node = outputs[0].node
        if node.is_variable:
            return f"Variable:{node.name}\n"
        return f"AtomicFunctor  Op:{node.op.name}\n"
    lines = ["Symbol Outputs:"]
    lines += [f"\toutput[{i}]={e.node.name}({e.index})" for i, e in enumerate(outputs)]
    for node in topological_order(outputs):
        lines += _node_lines(node)
    return "\n".join(lines) + "\n"


Symbol.debug_str = debug_str
