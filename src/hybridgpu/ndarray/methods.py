"""MXNet's op-backed ``NDArray`` methods (``x.sum(axis=1)``, ``x.exp()``, ``x.clip(0, 1)``...),
attached to the class from one table: method name -> ``nd`` function name.

A method calls the ``nd`` function with ``self`` as the first input and passes its arguments on
unchanged, so positional arguments bind as in MXNet (the op's other inputs, then its attributes
in order): ``x.clip(0, 1)`` is ``nd.clip(x, 0, 1)``, ``x.pick(index, 1)`` is
``nd.pick(x, index, 1)``. The function is looked up when the method is called, so a method whose
op is not registered fails only when used, with an error naming the op.

A few methods have MXNet-specific behaviour of their own: ``flatten``, ``expand_dims`` and
``squeeze`` take ``inplace=True`` (a view sharing memory instead of a copy); ``broadcast_to``
accepts a shape with more dimensions (leading 1s are added first) and 0 for "keep this
dimension"; ``slice_assign`` / ``slice_assign_scalar`` write into ``self`` and return it;
``diag(k=0)``; ``writable`` is a property (cpu arrays can be made read-only).

Skipped here: the autograd attributes ``attach_grad``, ``backward``, ``grad`` and ``detach``
(defined in ``ndarray.py``, calling down into ``hybridgpu.tape``), and ``as_np_ndarray``
(hybridgpu has no ``mx.np`` array type). Everything else in MXNet's list is either here or in
``ndarray.py``.

Example:
    >>> from hybridgpu import nd
    >>> x = nd.array([[1, -2], [3, -4]])
    >>> x.abs().sum(axis=1).asnumpy()
    array([3., 7.], dtype=float32)
    >>> x.clip(-1, 1).asnumpy().tolist()
    [[1.0, -1.0], [1.0, -1.0]]
"""

from __future__ import annotations

from .. import ndarray as _nd
from ..base import MXNetError
from .ndarray import NDArray

__all__ = ["METHODS", "SPECIAL_METHODS", "all_methods", "op_name_of"]

# method -> nd function it forwards to (same name; the op too unless listed in _HELPER_OPS).
METHODS = {name: name for name in (
    "abs", "arccos", "arccosh", "arcsin", "arcsinh", "arctan", "arctanh", "argmax",
    "argmax_channel", "argmin", "argsort", "broadcast_axes", "broadcast_like", "cbrt", "ceil",
    "clip", "cos", "cosh", "degrees", "depth_to_space", "exp", "expm1", "fix", "flip", "floor",
    "log", "log10", "log1p", "log2", "log_softmax", "max", "mean", "min", "nanprod", "nansum",
    "norm", "one_hot", "ones_like", "pad", "pick", "prod", "radians", "rcbrt", "reciprocal",
    "relu", "repeat", "rint", "round", "rsqrt", "shape_array", "sigmoid", "sign", "sin", "sinh",
    "size_array", "slice", "slice_axis", "slice_like", "softmax", "softmin", "sort",
    "space_to_depth", "split", "split_v2", "sqrt", "square", "sum", "swapaxes", "take", "tan",
    "tanh", "tile", "topk", "transpose", "trunc", "zeros_like")}

# nd functions that are Python helpers rather than generated ops -> the op they use.
_HELPER_OPS = {"split_v2": "_split_v2"}


def all_methods():
    """``{method: nd function}`` of every method this module installs (special ones too)."""
    return {**METHODS, **{m: name for m, (_, name) in SPECIAL_METHODS.items()}}


def op_name_of(function_name):
    """The registry op behind ``nd.<function_name>``."""
    return _HELPER_OPS.get(function_name, function_name)


def _function(method, name):
    """``nd.<name>`` at call time, or an MXNetError naming the method and the missing op."""
    fn = getattr(_nd, name, None)
    if fn is None:
        raise MXNetError(f"NDArray.{method}: needs nd.{name} (op {op_name_of(name)!r}), which "
                         f"is not registered in this build")
    return fn


def _forwarding_method(method, name):
    def forward(self, *args, **kwargs):
        return _function(method, name)(self, *args, **kwargs)

    forward.__name__ = forward.__qualname__ = method
    forward.__doc__ = (f"Same as ``nd.{name}(self, *args, **kwargs)``: MXNet's "
                       f"``NDArray.{method}``; see ``nd.{name}`` for the arguments.")
    return forward


# -- methods with behaviour of their own ----------------------------------------------------

def _view(self, method, name, attrs):
    """``nd.<name>(self, **attrs)`` as a view of ``self`` (the op only reshapes)."""
    op = _function(method, name).opdef
    _, (shape,) = op.infer_shape(op.parse_attrs(attrs), [self.shape])
    return NDArray(self._data.reshape(shape), self._ctx)


def flatten(self, inplace=False):
    """``nd.Flatten(self)``: shape ``(d0, d1 * ... * dk)``; ``inplace=True`` gives a view."""
    if inplace:
        return _view(self, "flatten", "Flatten", {})
    return _function("flatten", "Flatten")(self)


def expand_dims(self, axis, inplace=False):
    """``nd.expand_dims(self, axis=axis)``; ``inplace=True`` gives a view."""
    if inplace:
        return _view(self, "expand_dims", "expand_dims", {"axis": axis})
    return _function("expand_dims", "expand_dims")(self, axis=axis)


def squeeze(self, axis=None, inplace=False):
    """``nd.squeeze(self, axis=axis)``; ``inplace=True`` gives a view."""
    if inplace:
        return _view(self, "squeeze", "squeeze", {"axis": axis})
    return _function("squeeze", "squeeze")(self, axis=axis)


def diag(self, k=0, **kwargs):
    """``nd.diag(self, k=k, ...)``: the k-th diagonal (2-D input) or a diagonal matrix."""
    return _function("diag", "diag")(self, k=k, **kwargs)


def broadcast_to(self, shape):
    """Broadcast to ``shape``; it may have more dimensions than ``self`` (1s are prepended)
    and 0 keeps a dimension.

    Example:
        >>> from hybridgpu import nd
        >>> nd.array([1, 2, 3]).broadcast_to((2, 0)).shape
        (2, 3)
    """
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if len(shape) < self.ndim:
        raise ValueError(f"NDArray.broadcast_to: cannot broadcast shape {self.shape} to "
                         f"{shape}, which has fewer dimensions")
    padded = (1,) * (len(shape) - self.ndim) + self.shape
    target = tuple(have if want == 0 else want for want, have in zip(shape, padded))
    if any(have not in (1, want) for have, want in zip(padded, target)):
        raise ValueError(f"NDArray.broadcast_to: cannot broadcast shape {self.shape} (as "
                         f"{padded}) to {shape}: each dimension must be 1 or match")
    base = self if padded == self.shape else NDArray(self._data.reshape(padded), self._ctx)
    return _function("broadcast_to", "broadcast_to")(base, shape=target)


def slice_assign(self, rhs, begin, end, step):
    """Write ``rhs`` into ``self[begin:end:step]`` (per axis); returns ``self``."""
    fn = _function("slice_assign", "_slice_assign")
    return fn(self, rhs, begin=begin, end=end, step=step, out=self)


def slice_assign_scalar(self, value, begin, end, step):
    """Set ``self[begin:end:step]`` (per axis) to the number ``value``; returns ``self``."""
    fn = _function("slice_assign_scalar", "_slice_assign_scalar")
    return fn(self, scalar=value, begin=begin, end=end, step=step, out=self)


def _get_writable(self):
    flags = getattr(self._data, "flags", None)
    return True if self._ctx.is_gpu or flags is None else bool(flags.writeable)


def _set_writable(self, value):
    if self._ctx.is_gpu:
        if not value:
            raise MXNetError("NDArray.writable: gpu arrays cannot be made read-only")
        return
    self._data.flags.writeable = bool(value)


_writable = property(_get_writable, _set_writable,
                     doc="Whether the array may be written (cpu arrays can be set read-only).")


# Methods with behaviour of their own -> (implementation, the nd function it calls).
SPECIAL_METHODS = {
    "flatten": (flatten, "Flatten"), "expand_dims": (expand_dims, "expand_dims"),
    "squeeze": (squeeze, "squeeze"), "diag": (diag, "diag"),
    "broadcast_to": (broadcast_to, "broadcast_to"),
    "slice_assign": (slice_assign, "_slice_assign"),
    "slice_assign_scalar": (slice_assign_scalar, "_slice_assign_scalar"),
}


def _install():
    """Attach every method NDArray does not define itself (ndarray.py's own ones win)."""
    for method, name in METHODS.items():
        if not hasattr(NDArray, method):
            setattr(NDArray, method, _forwarding_method(method, name))
    for method, (fn, _) in SPECIAL_METHODS.items():
        if not hasattr(NDArray, method):
            fn.__qualname__ = f"NDArray.{method}"
            setattr(NDArray, method, fn)
    if not hasattr(NDArray, "writable"):
        NDArray.writable = _writable


_install()
