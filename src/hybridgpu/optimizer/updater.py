"""``Updater``: an optimizer plus the states of the weights it updates (MXNet's updater).

Calling an updater with indices, gradients and weights creates each index's state on first
sight (on the weight's context) and updates the weights in place. Optimizers with
``aggregate_num > 0`` (all built-in ones) receive the weights of one dtype together, in lists of
at most ``aggregate_num``, which is where a fused multi-tensor gpu update plugs in (see
``Optimizer.step_arrays``).

``get_states``/``set_states`` use bytes in hybridgpu's pickle-free format (see
``hybridgpu.optimizer.states_io``), not MXNet's pickles.

Example:
    >>> import hybridgpu as mx
    >>> updater = get_updater(mx.optimizer.create("sgd", learning_rate=0.1, momentum=0.9))
    >>> w = mx.nd.ones(2)
    >>> updater(0, mx.nd.ones(2), w)
    >>> [round(x, 6) for x in w.asnumpy().tolist() + updater.states[0].asnumpy().tolist()]
    [0.9, 0.9, -0.1, -0.1]
    >>> restored = get_updater(mx.optimizer.create("sgd", momentum=0.9))
    >>> restored.set_states(updater.get_states(dump_optimizer=True))
    >>> restored.optimizer.lr, restored.optimizer.num_update
    (0.1, 1)
"""

from __future__ import annotations

from ..ndarray import NDArray
from . import states_io

__all__ = ["Updater", "get_updater"]


class Updater:
    """Updates weights with ``optimizer``, keeping one state per index in ``states``.

    Example:
        >>> import hybridgpu as mx
        >>> updater = Updater(mx.optimizer.create("adam"))
        >>> updater([0, 1], [mx.nd.ones(1), mx.nd.ones(2)], [mx.nd.zeros(1), mx.nd.zeros(2)])
        >>> sorted(updater.states), updater.optimizer.num_update
        ([0, 1], 1)
    """

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.states = {}
        self.states_synced = {}
        self.aggregate_updates = optimizer.aggregate_num > 0

    def __call__(self, index, grad, weight):
        """Update ``weight`` (an NDArray, or a list matching the list ``index``) with
        ``grad``."""
        if isinstance(index, (list, tuple)):
            indices, grads, weights = list(index), list(grad), list(weight)
        else:
            indices, grads, weights = [index], [grad], [weight]
        indices = [i.decode() if isinstance(i, bytes) else i for i in indices]
        if weights:
            self.optimizer._set_current_context(weights[0].context.device_id)
        for idx, w in zip(indices, weights):
            if idx not in self.states:
                self.states[idx] = self.optimizer.create_state_multi_precision(idx, w)
                self.states_synced[idx] = True
            elif not self.states_synced[idx]:  # loaded: check it fits, then move it
                self.check_states({idx: w})
                self.states[idx] = self.sync_state_context(self.states[idx], w.context)
                self.states_synced[idx] = True
        if not self.aggregate_updates:
            for idx, w, g in zip(indices, weights, grads):
                self.optimizer.update_multi_precision(idx, w, g, self.states[idx])
            return
        by_dtype = {}
        for item in zip(indices, weights, grads):
            by_dtype.setdefault(item[1].dtype, []).append(item)
        size = self.optimizer.aggregate_num
        for items in by_dtype.values():
            for start in range(0, len(items), size):
                idxs, ws, gs = (list(x) for x in zip(*items[start:start + size]))
                self.optimizer.update_multi_precision(idxs, ws, gs,
                                                      [self.states[i] for i in idxs])

    def sync_state_context(self, state, context):
        """``state`` with every NDArray moved to ``context``."""
        if isinstance(state, NDArray):
            return state.as_in_context(context)
        if isinstance(state, (tuple, list)):
            return type(state)(self.sync_state_context(s, context) for s in state)
        return state

    def check_states(self, weights):
        """MXNetError naming the index when a loaded state does not fit its weight
        (``weights``: index -> NDArray): compared with the state the optimizer would create,
        in structure, shapes and dtypes. Loaded states of indices not in ``weights`` are
        not checked."""
        for idx, weight in weights.items():
            if idx in self.states and not self.states_synced.get(idx, True):
                expected = self.optimizer.create_state_multi_precision(idx, weight)
                states_io.check_state(idx, self.states[idx], expected)

    def set_states(self, states):
        """Load states (and the optimizer's attributes, when saved with them) from bytes
        written by ``get_states``."""
        loaded, config = states_io.loads_states(states)
        if config is not None:
            states_io.restore_optimizer(self.optimizer, config)
        self.states = loaded
        self.states_synced = dict.fromkeys(self.states, False)

    def get_states(self, dump_optimizer=False):
        """The states as bytes; with ``dump_optimizer`` also the optimizer's attributes
        (learning rate, update counts, scheduler)."""
        return states_io.dumps_states(self.states,
                                      self.optimizer if dump_optimizer else None)

    def _state_records(self, dump_optimizer=False):
        """``get_states`` as (records, names) for an atomic ``ndarray_file.save``."""
        return states_io.state_records(self.states, self.optimizer if dump_optimizer else None)


def get_updater(optimizer):
    """An ``Updater`` for ``optimizer``."""
    return Updater(optimizer)
