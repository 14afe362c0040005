"""``DataLoader``: mini-batches from a dataset, read in order, shuffled, or by any sampler.

``num_workers > 0`` reads batches in that many **threads** (never processes: nothing is
pickled, any dataset works) and keeps up to ``prefetch`` batches in flight; batches still come
out in sampler order, identical to ``num_workers=0``. The threads live for one pass and are
shut down when it ends, is abandoned, or fails (a worker's exception is raised in the loop).
They are daemon threads: a worker stuck in a read (after the loop raised ``TimeoutError``)
never keeps the process from exiting.

``default_batchify_fn`` stacks NDArrays with ``nd.stack``, turns NumPy arrays and numbers into
NDArrays (keeping their dtype), and batches each field of tuple samples separately.

hybridgpu extra: ``progress=True`` (or a dict of ``tqdm`` arguments) shows a ``tqdm`` progress
bar when tqdm is installed (a warning and no bar when it is not); tqdm is not a dependency.

Example:
    >>> from hybridgpu import nd
    >>> from hybridgpu.gluon.data import ArrayDataset
    >>> ds = ArrayDataset(nd.arange(10).reshape(5, 2), [0, 1, 0, 1, 1])
    >>> loader = DataLoader(ds, batch_size=2, last_batch="discard", num_workers=2)
    >>> len(loader), [(x.shape, y.asnumpy().tolist()) for x, y in loader]
    (2, [((2, 2), [0, 1]), ((2, 2), [0, 1])])
"""

from __future__ import annotations

import collections
import concurrent.futures
import queue
import threading
import warnings

import numpy as np

from ... import ndarray as nd
from ...context import Context, current_context
from ...ndarray import NDArray
from ...numpy._dispatch import wrap as to_numpy_array
from ...util import is_np_array
from ..numpy_mode import NumpyArray
from .sampler import BatchSampler, RandomSampler, SequentialSampler

__all__ = ["DataLoader", "default_batchify_fn"]


def _describe(sample):
    return f"shape {tuple(sample.shape)}" if hasattr(sample, "shape") else repr(sample)


def _stack_ndarrays(data):
    shape = data[0].shape
    for sample in data[1:]:
        if sample.shape != shape:
            raise ValueError(f"default_batchify_fn: samples in a batch must have the same shape, "
                             f"got {_describe(data[0])} and {_describe(sample)}; pad them or "
                             "pass your own batchify_fn")
    out = nd.stack(*data)
    return to_numpy_array(out) if isinstance(data[0], NumpyArray) or is_np_array() else out


def default_batchify_fn(data):
    """Merge a list of samples into a batch: NDArrays are stacked (``nd.stack``), tuples are
    batched field by field (a list of batches), anything else goes through ``numpy.asarray``
    into an NDArray of the same dtype (Python ints give int64, floats float64).

    Example:
        >>> batch = default_batchify_fn([(1, (2.0, 3)), (4, (5.0, 6))])
        >>> [batch[0].asnumpy().tolist(), [b.dtype.__name__ for b in batch[1]]]
        [[1, 4], ['float64', 'int64']]
    """
    if not data:
        raise ValueError("default_batchify_fn: the batch is empty")
    first = data[0]
    if isinstance(first, NDArray):
        return _stack_ndarrays(data)
    if isinstance(first, tuple):
        return [default_batchify_fn(list(field)) for field in zip(*data)]
    try:
        with warnings.catch_warnings():  # NumPy 1.x makes ragged samples an object array
            warnings.simplefilter("ignore")
            array = np.asarray(data)
        if array.dtype == object and len({np.shape(s) for s in data}) > 1:
            raise ValueError("ragged")
    except ValueError:
        shapes = sorted({_describe(np.asarray(s)) for s in data})
        raise ValueError(f"default_batchify_fn: samples in a batch must have the same shape, "
                         f"got {', '.join(shapes)}; pad them or pass your own batchify_fn"
                         ) from None
    if array.dtype.kind not in "biufc":
        raise TypeError(f"default_batchify_fn cannot batch samples of type "
                        f"{type(first).__name__} (NumPy dtype {array.dtype}); pass your own "
                        "batchify_fn")
    out = nd.array(array, dtype=array.dtype)
    return to_numpy_array(out) if is_np_array() else out  # mx.np batches in NumPy mode


def _as_in_context(data, ctx):
    """``data`` (an NDArray or nested lists/tuples of them) moved to ``ctx``."""
    if isinstance(data, NDArray):
        return data.as_in_context(ctx)
    if isinstance(data, (list, tuple)):
        return type(data)(_as_in_context(d, ctx) for d in data)
    return data


def _make_batch(dataset, batchify_fn, indices, ctx, pin_ctx):
    """One batch: the samples at ``indices``, batchified with ``ctx`` as default context."""
    with ctx:
        batch = batchify_fn([dataset[i] for i in indices])
        if pin_ctx is not None:
            batch = _as_in_context(batch, pin_ctx)
    return batch


class _SameThreadIter:
    """One pass, every batch made in the caller's thread when asked for."""

    def __init__(self, loader):
        self._loader = loader
        self._batches = iter(loader._batch_sampler)
        self._ctx = current_context()

    def __iter__(self):
        return self

    def __next__(self):
        indices = next(self._batches)
        loader = self._loader
        return _make_batch(loader._dataset, loader._batchify_fn, indices, self._ctx,
                           loader._pin_ctx)

    def close(self):
        """Nothing to release (for symmetry with the threaded iterator)."""


class _DaemonPool:
    """``num_workers`` daemon threads running submitted calls, each giving a ``Future``.

    ``concurrent.futures.ThreadPoolExecutor`` joins its threads when the interpreter exits,
    so one worker blocked forever would keep the process alive after the loop gave up on it;
    daemon threads are abandoned at exit instead.

    Example:
        >>> pool = _DaemonPool(2)
        >>> pool.submit(sum, [1, 2]).result(timeout=10)
        3
        >>> pool.shutdown()
    """

    def __init__(self, workers):
        self._work = queue.SimpleQueue()
        for index in range(workers):
            threading.Thread(target=self._run, name=f"hybridgpu-DataLoader_{index}",
                             daemon=True).start()
        self._workers = workers

    def _run(self):
        while (item := self._work.get()) is not None:
            future, fn, args = item
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(*args))
            except BaseException as err:  # handed to the loop, which raises it
                future.set_exception(err)
            del item, future

    def submit(self, fn, *args):
        """Run ``fn(*args)`` in a worker; returns its ``concurrent.futures.Future``."""
        future = concurrent.futures.Future()
        self._work.put((future, fn, args))
        return future

    def shutdown(self):
        """Let every worker end once its current call returns (queued calls are cancelled
        by the caller first); returns at once."""
        for _ in range(self._workers):
            self._work.put(None)


class _ThreadedIter:
    """One pass with ``num_workers`` threads and up to ``prefetch`` batches in flight, handed
    out in sampler order. The thread pool is shut down when the pass ends, fails or is
    abandoned (``close`` or garbage collection)."""

    def __init__(self, loader):
        self._loader = loader  # keeps the loader (and its dataset) alive during the pass
        self._batches = iter(loader._batch_sampler)
        self._ctx = current_context()
        self._pending = collections.deque()
        self._pool = _DaemonPool(loader._num_workers)
        for _ in range(max(1, loader._prefetch)):
            if not self._submit():
                break

    def _submit(self):
        indices = next(self._batches, None)
        if indices is None:
            return False
        loader = self._loader
        self._pending.append(self._pool.submit(
            _make_batch, loader._dataset, loader._batchify_fn, indices, self._ctx,
            loader._pin_ctx))
        return True

    def __iter__(self):
        return self

    def __next__(self):
        if not self._pending:
            self.close()
            raise StopIteration
        future = self._pending.popleft()
        timeout = self._loader._timeout
        try:
            batch = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            self.close()
            raise TimeoutError(f"DataLoader: a worker thread took more than {timeout} s to make "
                               "a batch; raise DataLoader(timeout=...) if your samples are slow "
                               "to read") from None
        except BaseException:
            self.close()
            raise
        self._submit()
        if not self._pending:
            self.close()
            self._loader._pass_finished()
        return batch

    def close(self):
        """Cancel batches not started yet and shut the worker threads down."""
        pool, self._pool = getattr(self, "_pool", None), None
        if pool is None:
            return
        for future in self._pending:
            future.cancel()
        self._pending.clear()
        pool.shutdown()

    def __del__(self):
        self.close()


def _check_batching(dataset, batch_size, shuffle, sampler, last_batch, batch_sampler):
    """The batch sampler the arguments describe, refusing conflicting ones as MXNet does."""
    if batch_sampler is not None:
        if batch_size is not None or shuffle or sampler is not None or last_batch is not None:
            raise ValueError("batch_size, shuffle, sampler and last_batch must not be specified "
                             "if batch_sampler is specified.")
        return batch_sampler
    if batch_size is None:
        raise ValueError("batch_size must be specified unless batch_sampler is specified")
    if sampler is None:
        sampler = RandomSampler(len(dataset)) if shuffle else SequentialSampler(len(dataset))
    elif shuffle:
        raise ValueError("shuffle must not be specified if sampler is specified")
    return BatchSampler(sampler, batch_size, last_batch if last_batch else "keep")


def _progress_options(progress):
    if not progress:
        return None
    try:
        import tqdm  # noqa: F401
    except ImportError:
        warnings.warn("DataLoader(progress=...) needs the tqdm package, which is not installed; "
                      "iterating without a progress bar (pip install tqdm)", stacklevel=3)
        return None
    return dict(progress) if isinstance(progress, dict) else {}


class DataLoader:
    """Mini-batches of ``dataset`` (MXNet 1.9's signature and argument checks).

    Give ``batch_size`` (with ``shuffle``, or a ``sampler`` of sample indices, and
    ``last_batch`` in ``'keep'``/``'discard'``/``'rollover'``), or a ``batch_sampler`` that
    yields lists of indices. ``batchify_fn`` merges samples (``default_batchify_fn``).
    ``pin_memory=True`` returns batches on ``cpu_pinned(pin_device_id)``, as MXNet does.

    ``num_workers > 0`` uses that many threads (``thread_pool`` is accepted and ignored: it is
    always threads) with ``prefetch`` batches in flight (default ``2 * num_workers``); a batch
    that takes longer than ``timeout`` seconds raises ``TimeoutError``. ``auto_reload=True``
    starts reading the next pass as soon as one ends (and the first at construction).
    ``try_nopython`` (MXNet 2's argument) is accepted and ignored. ``progress`` is hybridgpu's
    own: a ``tqdm`` progress bar per pass (True, or a dict of tqdm arguments).

    Example:
        >>> import numpy as np
        >>> loader = DataLoader(np.arange(12).reshape(6, 2), batch_size=4)
        >>> [b.shape for b in loader]
        [(4, 2), (2, 2)]
    """

    def __init__(self, dataset, batch_size=None, shuffle=False, sampler=None, last_batch=None,
                 batch_sampler=None, batchify_fn=None, num_workers=0, pin_memory=False,
                 pin_device_id=0, prefetch=None, thread_pool=False, timeout=120,
                 auto_reload=False, *, try_nopython=None, progress=False):
        self._dataset = dataset
        self._batch_sampler = _check_batching(dataset, batch_size, shuffle, sampler, last_batch,
                                              batch_sampler)
        self._batchify_fn = default_batchify_fn if batchify_fn is None else batchify_fn
        self._num_workers = max(0, _as_int("num_workers", num_workers))
        default_prefetch = 2 * self._num_workers
        self._prefetch = max(0, default_prefetch if prefetch is None
                             else _as_int("prefetch", prefetch))
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self._timeout = timeout
        self._pin_ctx = Context("cpu_pinned", pin_device_id) if pin_memory else None
        self._thread_pool = thread_pool
        self._auto_reload = bool(auto_reload) and self._num_workers > 0
        self._progress = _progress_options(progress)
        self._reloaded = None
        if self._auto_reload:
            self._reloaded = _ThreadedIter(self)

    def _new_pass(self):
        if self._num_workers == 0:
            return _SameThreadIter(self)
        reloaded, self._reloaded = self._reloaded, None
        return reloaded if reloaded is not None else _ThreadedIter(self)

    def _pass_finished(self):
        """Called by a threaded pass that has handed out its last batch."""
        if self._auto_reload and self._reloaded is None:
            self._reloaded = _ThreadedIter(self)

    def __iter__(self):
        total = len(self._batch_sampler) if self._progress is not None else None
        batches = self._new_pass()
        if self._progress is None:
            return batches
        import tqdm

        return iter(tqdm.tqdm(batches, total=total, **self._progress))

    def __len__(self):
        return len(self._batch_sampler)

    def close(self):
        """Stop a pass started ahead of time by ``auto_reload`` (its threads end)."""
        reloaded, self._reloaded = self._reloaded, None
        if reloaded is not None:
            reloaded.close()

    def __del__(self):
        reloaded = getattr(self, "_reloaded", None)
        if reloaded is not None:
            reloaded.close()


def _as_int(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    return int(value)


# MXNet's worker-pool pieces, which GluonCV and GluonNLP import from this module (issue 21)
from .worker_iter import (  # noqa: E402,F401
    ForkingPickler,
    _MultiWorkerIter,
    default_mp_batchify_fn,
)
