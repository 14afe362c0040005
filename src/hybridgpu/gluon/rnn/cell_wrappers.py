"""Cells built from other cells, as in MXNet 1.x: the stacks ``SequentialRNNCell`` and
``HybridSequentialRNNCell``, ``BidirectionalCell`` (unroll only), ``DropoutCell``, and the
modifiers ``ZoneoutCell`` and ``ResidualCell`` (``ModifierCell`` is their base: it shares the
wrapped cell's parameters and states).

Example:
    >>> import hybridgpu as mx
    >>> from hybridgpu.gluon.rnn import LSTMCell, GRUCell
    >>> stack = HybridSequentialRNNCell()
    >>> stack.add(LSTMCell(4, input_size=3))
    >>> stack.add(DropoutCell(0.5))
    >>> stack.add(ResidualCell(GRUCell(4, input_size=4)))
    >>> stack.initialize()
    >>> outs, states = stack.unroll(6, mx.nd.ones((2, 6, 3)), merge_outputs=True)
    >>> outs.shape, len(states)
    ((2, 6, 4), 3)
"""

from __future__ import annotations

from ... import ndarray as nd
from ...base import MXNetError
from ..block import _indent
from .rnn_cell import HybridRecurrentCell, RecurrentCell
from .sequence import (
    begin_state_for,
    format_sequence,
    is_tensor,
    mask_padding,
    reverse_sequences,
)

__all__ = ["SequentialRNNCell", "HybridSequentialRNNCell", "BidirectionalCell", "DropoutCell",
           "ModifierCell", "ZoneoutCell", "ResidualCell"]


# -- stacks -----------------------------------------------------------------------------------

class _StackMixin:
    """What both stacks share: ``add``, states of every cell in order, ``unroll`` cell by cell,
    one step through every cell."""

    def add(self, cell):
        """Append ``cell`` to the stack."""
        self.register_child(cell)

    def __repr__(self):
        body = "\n".join(f"({i}): {_indent(repr(cell), 2)}"
                         for i, cell in self._children.items())
        return f"{type(self).__name__}(\n{body}\n)"

    def __getitem__(self, i):
        return self._children[str(i)]

    def __len__(self):
        return len(self._children)

    def state_info(self, batch_size=0):
        return [info for cell in self._children.values()
                for info in cell.state_info(batch_size)]

    def begin_state(self, **kwargs):
        if self._modified:
            raise MXNetError(f"{type(self).__name__} {self.name!r} is wrapped by a modifier "
                             "cell: call the modifier cell's begin_state instead")
        return [s for cell in self._children.values() for s in cell.begin_state(**kwargs)]

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        _, _, F, batch = format_sequence(length, inputs, layout, None)
        states = begin_state_for(self, F, begin_state, inputs, batch)
        cells, pos, next_states = list(self._children.values()), 0, []
        for i, cell in enumerate(cells):
            count = len(cell.state_info())
            inputs, cell_states = cell.unroll(
                length, inputs=inputs, begin_state=states[pos:pos + count], layout=layout,
                merge_outputs=None if i < len(cells) - 1 else merge_outputs,
                valid_length=valid_length)
            pos += count
            next_states.extend(cell_states)
        return inputs, next_states

    def _step_all(self, inputs, states):
        pos, next_states = 0, []
        for cell in self._children.values():
            if isinstance(cell, BidirectionalCell):
                raise MXNetError(f"{type(self).__name__}: a BidirectionalCell cannot be "
                                 "stepped; use unroll")
            count = len(cell.state_info())
            inputs, cell_states = cell(inputs, states[pos:pos + count])
            pos += count
            next_states.extend(cell_states)
        return inputs, next_states


class SequentialRNNCell(_StackMixin, RecurrentCell):
    """Cells run one after the other at each step (any cells; see HybridSequentialRNNCell to
    hybridize).

    Example:
        >>> from hybridgpu.gluon.rnn import RNNCell
        >>> stack = SequentialRNNCell()
        >>> stack.add(RNNCell(3, input_size=2))
        >>> stack.add(RNNCell(2, input_size=3))
        >>> stack.initialize()
        >>> out, states = stack(nd.ones((4, 2)), stack.begin_state(batch_size=4))
        >>> out.shape, [s.shape for s in states]
        ((4, 2), [(4, 3), (4, 2)])
    """

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def __call__(self, inputs, states):
        self._counter += 1
        return self._step_all(inputs, states)


class HybridSequentialRNNCell(_StackMixin, HybridRecurrentCell):
    """A hybridizable stack of hybridizable cells."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, inputs, states):
        return self._step_all(inputs, states)


# -- bidirectional ----------------------------------------------------------------------------

class BidirectionalCell(HybridRecurrentCell):
    """Runs ``l_cell`` forward and ``r_cell`` backward in time over a sequence and joins their
    outputs on the feature axis; it can only be unrolled.

    Example:
        >>> from hybridgpu.gluon.rnn import GRUCell
        >>> bi = BidirectionalCell(GRUCell(3, input_size=2), GRUCell(3, input_size=2))
        >>> bi.initialize()
        >>> outs, states = bi.unroll(4, nd.ones((5, 4, 2)), merge_outputs=True)
        >>> outs.shape, len(states)
        ((5, 4, 6), 2)
    """

    def __init__(self, l_cell, r_cell, output_prefix="bi_"):
        super().__init__(prefix="", params=None)
        self.register_child(l_cell, "l_cell")
        self.register_child(r_cell, "r_cell")
        self._output_prefix = output_prefix

    def __call__(self, inputs, states):
        raise NotImplementedError("Bidirectional cannot be stepped. Please use unroll")

    def __repr__(self):
        return (f"{type(self).__name__}(forward={self._children['l_cell']!r}, "
                f"backward={self._children['r_cell']!r})")

    def state_info(self, batch_size=0):
        return [info for cell in self._children.values()
                for info in cell.state_info(batch_size)]

    def begin_state(self, **kwargs):
        if self._modified:
            raise MXNetError("BidirectionalCell is wrapped by a modifier cell: call the "
                             "modifier cell's begin_state instead")
        return [s for cell in self._children.values() for s in cell.begin_state(**kwargs)]

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, axis, F, batch = format_sequence(length, inputs, layout, False)
        reversed_inputs = reverse_sequences(inputs, length, valid_length)
        states = begin_state_for(self, F, begin_state, inputs, batch)
        l_cell, r_cell = self._children["l_cell"], self._children["r_cell"]
        split = len(l_cell.state_info(batch))
        l_outputs, l_states = l_cell.unroll(length, inputs=inputs, begin_state=states[:split],
                                            layout=layout, merge_outputs=merge_outputs,
                                            valid_length=valid_length)
        r_outputs, r_states = r_cell.unroll(length, inputs=reversed_inputs,
                                            begin_state=states[split:], layout=layout,
                                            merge_outputs=False, valid_length=valid_length)
        r_outputs = reverse_sequences(r_outputs, length, valid_length)
        if merge_outputs is None:
            merge_outputs = is_tensor(l_outputs)
            l_outputs = format_sequence(None, l_outputs, layout, merge_outputs)[0]
            r_outputs = format_sequence(None, r_outputs, layout, merge_outputs)[0]
        if merge_outputs:
            r_outputs = F.stack(*r_outputs, axis=axis) if not is_tensor(r_outputs) else r_outputs
            outputs = F.concat(l_outputs, r_outputs, dim=2, name=f"{self._output_prefix}out")
        else:
            outputs = [F.concat(lo, ro, dim=1, name=f"{self._output_prefix}t{i}")
                       for i, (lo, ro) in enumerate(zip(l_outputs, r_outputs))]
        if valid_length is not None:
            outputs = mask_padding(F, outputs, length, valid_length, axis, merge_outputs)
        return outputs, l_states + r_states


# -- dropout and modifiers --------------------------------------------------------------------

class DropoutCell(HybridRecurrentCell):
    """Dropout on each step's input (train mode); no states. ``axes`` shares the mask.

    Example:
        >>> DropoutCell(0.5)(nd.ones((2, 3)), [])[0].asnumpy().tolist()  # not training
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, rate, axes=(), prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        if not 0 <= rate <= 1:
            raise MXNetError(f"DropoutCell: rate must be in [0, 1], got {rate!r}")
        self._rate, self._axes = rate, axes

    def _alias(self):
        return "dropout"

    def __repr__(self):
        return f"{type(self).__name__}(rate={self._rate}, axes={self._axes})"

    def state_info(self, batch_size=0):
        return []

    def hybrid_forward(self, F, inputs, states):
        if self._rate > 0:
            inputs = F.Dropout(data=inputs, p=self._rate, axes=self._axes,
                               name=f"t{self._counter}_fwd")
        return inputs, states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        inputs, _, F, _ = format_sequence(length, inputs, layout, merge_outputs)
        if is_tensor(inputs):  # one mask draw over the whole sequence
            return self.hybrid_forward(F, inputs, begin_state or [])
        return super().unroll(length, inputs, begin_state=begin_state, layout=layout,
                              merge_outputs=merge_outputs, valid_length=valid_length)


class ModifierCell(HybridRecurrentCell):
    """Base of cells that wrap one ``base_cell`` (sharing its parameters and states)."""

    def __init__(self, base_cell):
        if base_cell._modified:
            raise MXNetError(f"Cell {base_cell.name} is already modified. One cell cannot be "
                             "modified twice")
        base_cell._modified = True
        super().__init__(prefix=base_cell.prefix + self._alias(), params=None)
        self.base_cell = base_cell

    @property
    def params(self):
        return self.base_cell.params

    def state_info(self, batch_size=0):
        return self.base_cell.state_info(batch_size)

    def begin_state(self, func=nd.zeros, **kwargs):
        if self._modified:
            raise MXNetError(f"{type(self).__name__} {self.name!r} is wrapped by another "
                             "modifier cell: call that cell's begin_state instead")
        self.base_cell._modified = False
        try:
            return self.base_cell.begin_state(func=func, **kwargs)
        finally:
            self.base_cell._modified = True

    def __repr__(self):
        return f"{type(self).__name__}({self.base_cell!r})"


class ZoneoutCell(ModifierCell):
    """Zoneout: in train mode each output and state element keeps its previous value with
    probability ``zoneout_outputs`` / ``zoneout_states`` (Krueger et al. 2016); the base cell
    unchanged otherwise.

    Example:
        >>> from hybridgpu.gluon.rnn import RNNCell
        >>> cell = ZoneoutCell(RNNCell(3, input_size=2), zoneout_outputs=0.5)
        >>> cell
        ZoneoutCell(p_out=0.5, p_state=0.0, RNNCell(2 -> 3, tanh))
    """

    def __init__(self, base_cell, zoneout_outputs=0.0, zoneout_states=0.0):
        if isinstance(base_cell, BidirectionalCell):
            raise MXNetError("BidirectionalCell doesn't support zoneout since it doesn't "
                             "support step. Please add ZoneoutCell to the cells underneath "
                             "instead.")
        if isinstance(base_cell, (SequentialRNNCell, HybridSequentialRNNCell)) and any(
                isinstance(c, BidirectionalCell) for c in base_cell._children.values()):
            raise MXNetError("Bidirectional SequentialRNNCell doesn't support zoneout. Please "
                             "add ZoneoutCell to the cells underneath instead.")
        super().__init__(base_cell)
        self.zoneout_outputs, self.zoneout_states = zoneout_outputs, zoneout_states
        self._prev_output = None

    def _alias(self):
        return "zoneout"

    def __repr__(self):
        return (f"{type(self).__name__}(p_out={self.zoneout_outputs}, "
                f"p_state={self.zoneout_states}, {self.base_cell!r})")

    def reset(self):
        super().reset()
        self._prev_output = None

    def hybrid_forward(self, F, inputs, states):
        next_output, next_states = self.base_cell(inputs, states)

        def keep_new(p, like):  # nonzero where the new value is kept (always, predicting)
            return F.Dropout(F.ones_like(like), p=p)

        prev_output = self._prev_output
        if prev_output is None:
            prev_output = F.zeros_like(next_output)
        output = next_output
        if self.zoneout_outputs != 0.0:
            output = F.where(keep_new(self.zoneout_outputs, next_output), next_output,
                             prev_output)
        if self.zoneout_states != 0.0:
            next_states = [F.where(keep_new(self.zoneout_states, new), new, old)
                           for new, old in zip(next_states, states)]
        self._prev_output = output
        return output, next_states


class ResidualCell(ModifierCell):
    """Adds each step's input to the base cell's output (Wu et al. 2016); input and output
    sizes must agree.

    Example:
        >>> from hybridgpu.gluon.rnn import GRUCell
        >>> cell = ResidualCell(GRUCell(2, input_size=2))
        >>> cell.initialize()
        >>> cell(nd.ones((3, 2)), cell.begin_state(batch_size=3))[0].shape
        (3, 2)
    """

    def hybrid_forward(self, F, inputs, states):
        output, states = self.base_cell(inputs, states)
        return F.elemwise_add(output, inputs, name=f"t{self._counter}_fwd"), states

    def unroll(self, length, inputs, begin_state=None, layout="NTC", merge_outputs=None,
               valid_length=None):
        self.reset()
        self.base_cell._modified = False
        try:
            outputs, states = self.base_cell.unroll(
                length, inputs=inputs, begin_state=begin_state, layout=layout,
                merge_outputs=merge_outputs, valid_length=valid_length)
        finally:
            self.base_cell._modified = True
        merge_outputs = is_tensor(outputs) if merge_outputs is None else merge_outputs
        inputs, axis, F, _ = format_sequence(length, inputs, layout, merge_outputs)
        if valid_length is not None:
            inputs = mask_padding(F, inputs, length, valid_length, axis, merge_outputs)
        if merge_outputs:
            return F.elemwise_add(outputs, inputs), states
        return [F.elemwise_add(o, i) for o, i in zip(outputs, inputs)], states
