"""How an op becomes NumPy calls in the generated CPU program: one ``Rule`` per op name.

A rule's ``emit(site)`` returns source lines that compute the node from ``site.ins`` (the
names of its input arrays) into ``site.outs`` (the names of preallocated output arrays), with
``out=`` everywhere, so a replay allocates nothing. Ops without a rule, or whose rule declines
(``when(site)`` is False: an integer dtype, unknown shapes, training-mode BatchNorm...), fall
back to the op's own ``OpDef.compute(np, ...)``, which returns fresh arrays.

Every rule redoes its op's math with the same NumPy calls in the same order as the op's
``compute``, so results agree bit for bit; ``tests/test_cpu_executor.py`` checks each rule
against ``compute`` over several attribute combinations and dtypes. A fused elementwise node
(``_fused``, from ``compiler/passes/fuse_elementwise.py``) runs its members' rules in order
into its output buffers, in place where each member allows it.

Rule kinds:

* ``"out"``: writes every used output into ``site.outs`` (arrays the generator provides).
  ``inplace`` names the inputs whose buffer output 0 may take over when the input dies at
  this node and has the output's shape and dtype (``np.maximum(t, zero, out=t)``): only
  inputs the rule reads before it first writes the output. ``scratch(site)`` asks for
  buffers used during this node only (the im2col columns of a Convolution).
* ``"view"``: binds ``site.outs[0]`` to an expression that may be a view of an input
  (``x.reshape(...)``); the generator keeps the input's buffer alive while the view lives.

Example:
    >>> import numpy as np
    >>> from hybridgpu import ops
    >>> from hybridgpu.graph import Entry, Node
    >>> x = Node.variable("x")
    >>> node = Node(ops.get("relu"), "relu0", {}, [Entry(x, 0)])
    >>> site = Site(node, [(2, 3)], ["float32"], [(2, 3)], ["float32"], is_train=False)
    >>> site.ins, site.outs = ["x"], ["relu0"]
    >>> rule = rule_for(site)
    >>> rule.kind, rule.emit(site)
    ('out', ['np.maximum(x, f32_0, out=relu0)'])
    >>> site.module.constants
    {'f32_0': (0, 'float32')}
"""

from __future__ import annotations

import itertools
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...limits import check_elements
from ...ops.reduce import reduced_shape, reduction_axes
from ...safe_text import display, python_comment

__all__ = ["Rule", "Site", "LOWERINGS", "HELPERS", "rule_for", "const_name"]


# -- what a rule sees -------------------------------------------------------------------------

class Site:
    """One node as its rule sees it: op, attributes, train mode, input and output shapes and
    dtypes (``np.dtype``), and (when emitting) the source names ``ins`` and ``outs`` (``None``
    for an output nobody reads; output 0 is always materialized).

    Names a rule needs come from ``module`` (the generator's module builder; a small local
    stand-in when None): ``const(value, dtype)`` names a module-level ``np.<dtype>(value)``
    (``f32_0``), ``view(name, shape)`` reshapes an array (made once at module level when
    ``name`` is a preallocated buffer, an inline ``.reshape`` otherwise), ``temp(hint)`` gives a
    fresh local name, ``define(hint, expr)`` names a module-level object built once from
    module-level names (``np``, buffers, views, ``HELPERS``), ``private(hint, shape, dtype)``
    a zero-filled buffer of this node alone. ``scratch`` holds the names of the buffers the
    rule's ``scratch(site)`` asked for: reused by other nodes, valid only during this one.
    """

    def __init__(self, node, in_shapes, in_dtypes, out_shapes, out_dtypes, is_train,
                 module=None):
        self.node, self.op, self.attrs = node, node.op, node.attrs
        self.in_shapes = [tuple(s) for s in in_shapes]
        self.in_dtypes = [np.dtype(t) for t in in_dtypes]
        self.out_shapes = [tuple(s) for s in out_shapes]
        self.out_dtypes = [np.dtype(t) for t in out_dtypes]
        self.is_train = is_train
        self.ins: list = []
        self.outs: list = []
        self.scratch: list = []
        self.used = [True] * len(self.out_shapes)  # which outputs anything reads
        self.module = module if module is not None else _LocalModule()

    def const(self, value, dtype):
        """The name of a module-level constant ``np.<dtype>(value)``."""
        return self.module.const(value, np.dtype(dtype))

    def view(self, name, shape):
        """``name`` reshaped to ``shape`` (an expression)."""
        return self.module.view(name, tuple(shape))

    def temp(self, hint):
        """A fresh local variable name."""
        return self.module.temp(hint)

    def define(self, hint, expr):
        """The name of a module-level ``name = expr``."""
        return self.module.define(hint, expr)

    def private(self, hint, shape, dtype):
        """A module-level zero-filled buffer of this node alone (kept between calls)."""
        check_elements(shape, f"node {display(self.node.name)}: buffer {hint}")
        return self.define(hint, f"np.zeros({tuple(shape)!r}, np.{np.dtype(dtype).name})")

    def is_static(self, name):
        """True when ``name`` is a module-level array (its views can be made once)."""
        return self.module.is_static(name)

    def bind(self, hint, op, attrs):
        """The name of a module-level ``op.compute`` with NumPy and ``attrs`` fixed."""
        return self.module.bind(hint, op, attrs)


class _LocalModule:
    """What a Site uses outside a generator (doctests, tests): records constants."""

    def __init__(self):
        self.constants = {}

    def const(self, value, dtype):
        name = const_name(value, dtype)
        self.constants[name] = (value, dtype.name)
        return name

    def view(self, name, shape):
        return f"{name}.reshape({shape!r})"

    def temp(self, hint):
        return hint

    def define(self, hint, expr):
        return hint

    def is_static(self, name):
        return False

    def bind(self, hint, op, attrs):
        return hint


def const_name(value, dtype):
    """A readable identifier for ``np.<dtype>(value)``: ``f32_2``, ``f64_m0_5``, ``f32_1em05``
    (``f32_k`` plus a digest when the value does not spell well)."""
    dtype = np.dtype(dtype)
    short = {"f": "f", "i": "i", "u": "u", "b": "b"}.get(dtype.kind, "c") + str(
        dtype.itemsize * 8)
    text = repr(value).replace("-", "m").replace(".", "_").replace("+", "")
    name = f"{short}_{text}"
    if name.isidentifier() and len(name) <= 32:
        return name
    return f"{short}_k{zlib.crc32(repr(value).encode()):08x}"


# -- rules --------------------------------------------------------------------------------------

def _always(site):
    return True


@dataclass(frozen=True)
class Rule:
    """How one op lowers: ``emit(site) -> [source line]``; ``when(site)`` says whether this
    node can use it (else the generator calls ``compute``); see the module docstring for
    ``kind`` and ``inplace``."""

    emit: Callable
    when: Callable = _always
    kind: str = "out"
    inplace: object = ()  # input indices output 0 may overwrite, or site -> such a tuple
    scratch: Callable | None = None  # site -> [(shape, dtype)] of buffers used only here

    def inplace_inputs(self, site):
        """Indices of the inputs whose buffer output 0 may take over (if it dies here)."""
        return tuple(self.inplace(site) if callable(self.inplace) else self.inplace)


LOWERINGS: dict[str, Rule] = {}


def _lower(names, emit, when=_always, kind="out", inplace=(), scratch=None):
    for name in (names,) if isinstance(names, str) else names:
        LOWERINGS[name] = Rule(emit, when, kind, inplace, scratch)


def rule_for(site):
    """The Rule this node lowers with, or None (the generator then calls ``compute``)."""
    rule = LOWERINGS.get(site.op.name)
    if rule is None or not rule.when(site):
        return None
    return rule


_FIRST = (0,)


def _same_float(site):
    """Every input and output has one floating-point dtype."""
    dtypes = {*site.in_dtypes, *site.out_dtypes}
    return len(dtypes) == 1 and next(iter(dtypes)).kind == "f"


def _dtype(site):
    return site.out_dtypes[0]


# -- binary elementwise: elemwise_*, broadcast_*, _*_scalar ------------------------------------

# registry key -> NumPy ufunc name; the same table as ops/elemwise_binary.py
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide", "mod": "mod",
    "power": "power", "maximum": "maximum", "minimum": "minimum", "hypot": "hypot",
    "equal": "equal", "not_equal": "not_equal", "greater": "greater",
    "greater_equal": "greater_equal", "lesser": "less", "lesser_equal": "less_equal",
    "logical_and": "logical_and", "logical_or": "logical_or", "logical_xor": "logical_xor",
}
_ELEMWISE_NAME = {"add": "elemwise_add", "sub": "elemwise_sub", "mul": "elemwise_mul",
                  "div": "elemwise_div"}
_SCALAR_NAME = {"add": "_plus_scalar", "sub": "_minus_scalar"}
_REVERSED = {"sub": "_rminus_scalar", "div": "_rdiv_scalar", "mod": "_rmod_scalar",
             "power": "_rpower_scalar"}


def _binary_emit(fn):
    def emit(site):
        (a, b), (o, *_) = site.ins, site.outs
        return [f"np.{fn}({a}, {b}, out={o})"]

    return emit


def _scalar_emit(fn, reverse):
    def emit(site):
        (a,), (o,) = site.ins, site.outs
        s = site.const(site.attrs["scalar"], site.in_dtypes[0])
        return [f"np.{fn}({s}, {a}, out={o})" if reverse else f"np.{fn}({a}, {s}, out={o})"]

    return emit


for _key, _fn in _BINARY.items():
    _lower((_ELEMWISE_NAME.get(_key, f"_{_key}"), f"broadcast_{_key}"), _binary_emit(_fn),
           _same_float, inplace=(0, 1))
    _lower(_SCALAR_NAME.get(_key, f"_{_key}_scalar"), _scalar_emit(_fn, False), _same_float,
           inplace=_FIRST)
    if _key in _REVERSED:
        _lower(_REVERSED[_key], _scalar_emit(_fn, True), _same_float, inplace=_FIRST)


# -- unary elementwise --------------------------------------------------------------------------

_UFUNCS = {  # op name -> NumPy ufunc: compute is ``xp.<ufunc>(x)`` for float x
    name: name for name in (
        "tanh", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt", "square",
        "negative", "abs", "floor", "ceil", "trunc", "sin", "cos", "tan", "arcsin", "arccos",
        "arctan", "sinh", "cosh", "arcsinh", "arccosh", "arctanh", "degrees", "radians")}
_UFUNCS["fix"] = "trunc"


def _ufunc_emit(fn):
    return lambda site: [f"np.{fn}({site.ins[0]}, out={site.outs[0]})"]


for _name, _fn in _UFUNCS.items():
    _lower(_name, _ufunc_emit(_fn), _same_float, inplace=_FIRST)


def _relu(site):
    x, o = site.ins[0], site.outs[0]
    return [f"np.maximum({x}, {site.const(0, _dtype(site))}, out={o})"]


def _one_over(fn):
    """``1 / fn(x)`` (rsqrt, rcbrt), or ``1 / x`` with ``fn=None`` (reciprocal)."""

    def emit(site):
        x, o = site.ins[0], site.outs[0]
        one = site.const(1, _dtype(site))
        if fn is None:
            return [f"np.divide({one}, {x}, out={o})"]
        return [f"np.{fn}({x}, out={o})", f"np.divide({one}, {o}, out={o})"]

    return emit


def _sigmoid_plain(site):
    """``1 / (1 + exp(-x))`` (the ``sigmoid`` op)."""
    x, o = site.ins[0], site.outs[0]
    one = site.const(1, _dtype(site))
    return [f"np.negative({x}, out={o})", f"np.exp({o}, out={o})",
            f"np.add({one}, {o}, out={o})", f"np.divide({one}, {o}, out={o})"]


def _softsign_plain(site):
    """``x / (1 + |x|)`` (the ``softsign`` op); reads x last, so never in place."""
    x, o = site.ins[0], site.outs[0]
    one = site.const(1, _dtype(site))
    return [f"np.abs({x}, out={o})", f"np.add({one}, {o}, out={o})",
            f"np.divide({x}, {o}, out={o})"]


def _logical_not(site):
    x, o = site.ins[0], site.outs[0]
    return [f"np.equal({x}, {site.const(0, _dtype(site))}, out={o})"]


def _copy(site):
    return [f"np.copyto({site.outs[0]}, {site.ins[0]})"]


def _fill(value):
    return lambda site: [f"{site.outs[0]}.fill({value})"]


def _same_dtype(site):
    return site.in_dtypes[0] == site.out_dtypes[0]


_lower("relu", _relu, _same_float, inplace=_FIRST)
_lower("rsqrt", _one_over("sqrt"), _same_float, inplace=_FIRST)
_lower("rcbrt", _one_over("cbrt"), _same_float, inplace=_FIRST)
_lower("reciprocal", _one_over(None), _same_float, inplace=_FIRST)
_lower("sigmoid", _sigmoid_plain, _same_float, inplace=_FIRST)
_lower("softsign", _softsign_plain, _same_float)  # reads x after writing the output
_lower("logical_not", _logical_not, _same_float, inplace=_FIRST)
_lower(("_copy", "BlockGrad"), _copy, _same_dtype)
_lower("zeros_like", _fill(0), _same_dtype)
_lower("ones_like", _fill(1), _same_dtype)


def _c_float(value):
    """MXNet keeps clip's bounds and hard_sigmoid's alpha/beta as C floats (ops round them)."""
    return float(np.float32(value))


def _clip(site):
    x, o, t = site.ins[0], site.outs[0], _dtype(site)
    lo = site.const(_c_float(site.attrs["a_min"]), t)
    hi = site.const(_c_float(site.attrs["a_max"]), t)
    return [f"np.clip({x}, {lo}, {hi}, out={o})"]


def _clip_ordered(site):
    return _same_float(site) and _c_float(site.attrs["a_min"]) <= _c_float(site.attrs["a_max"])


def _hard_sigmoid(site):
    x, o, t = site.ins[0], site.outs[0], _dtype(site)
    alpha = site.const(_c_float(site.attrs["alpha"]), t)
    beta = site.const(_c_float(site.attrs["beta"]), t)
    return [f"np.multiply({x}, {alpha}, out={o})", f"np.add({o}, {beta}, out={o})",
            f"np.clip({o}, {site.const(0, t)}, {site.const(1, t)}, out={o})"]


_lower("clip", _clip, _clip_ordered, inplace=_FIRST)
_lower("hard_sigmoid", _hard_sigmoid, _same_float, inplace=_FIRST)


# -- Activation -------------------------------------------------------------------------------

def _sigmoid_stable(site):
    """``exp(-logaddexp(0, -x))``: Activation's overflow-free sigmoid."""
    x, o = site.ins[0], site.outs[0]
    zero = site.const(0, _dtype(site))
    return [f"np.negative({x}, out={o})", f"np.logaddexp({zero}, {o}, out={o})",
            f"np.negative({o}, out={o})", f"np.exp({o}, out={o})"]


def _softrelu(site):
    x, o = site.ins[0], site.outs[0]
    return [f"np.logaddexp({x}, {site.const(0, _dtype(site))}, out={o})"]


def _softsign_activation(site):
    """``x / (|x| + 1)`` (Activation's softsign)."""
    x, o = site.ins[0], site.outs[0]
    one = site.const(1, _dtype(site))
    return [f"np.abs({x}, out={o})", f"np.add({o}, {one}, out={o})",
            f"np.divide({x}, {o}, out={o})"]


_ACTIVATIONS = {"relu": _relu, "sigmoid": _sigmoid_stable, "tanh": _ufunc_emit("tanh"),
                "softrelu": _softrelu, "softsign": _softsign_activation}

_lower("Activation", lambda site: _ACTIVATIONS[site.attrs["act_type"]](site),
       lambda site: _same_float(site) and site.attrs["act_type"] in _ACTIVATIONS,
       inplace=lambda site: () if site.attrs["act_type"] == "softsign" else _FIRST)


# -- FullyConnected ---------------------------------------------------------------------------

def _fc_emit(site):
    x, w, b = (*site.ins, None)[:3]
    o = site.outs[0]
    rows = math.prod(site.out_shapes[0][:-1])
    hidden, cols = site.in_shapes[1]
    x2 = x if site.in_shapes[0] == (rows, cols) else site.view(x, (rows, cols))
    o2 = o if site.out_shapes[0] == (rows, hidden) else site.view(o, (rows, hidden))
    lines = [f"np.dot({x2}, {w}.T, out={o2})"]  # compute's matmul (one BLAS call), cheaper
    if b is not None:
        lines.append(f"np.add({o2}, {b}, out={o2})")
    return lines


def _fc_when(site):
    return _same_float(site) and len(site.in_shapes[1]) == 2


_lower("FullyConnected", _fc_emit, _fc_when)


# -- reductions ---------------------------------------------------------------------------------

_REDUCTIONS = {"sum": True, "mean": False, "max": False, "min": False, "prod": True}


def _reduce_emit(site):
    name, attrs = site.op.name, site.attrs
    x, o, t = site.ins[0], site.outs[0], _dtype(site)
    shape = site.in_shapes[0]
    axes = reduction_axes(name, attrs["axis"], shape, attrs["exclude"])
    keep = attrs["keepdims"]
    natural = reduced_shape(shape, axes, True) if keep else tuple(
        d for i, d in enumerate(shape) if i not in axes)
    out = o if natural == site.out_shapes[0] else site.view(o, natural)
    dtype = f", dtype=np.{t.name}" if _REDUCTIONS[name] else ""
    return [f"np.{name}({x}, axis={axes!r}{dtype}, keepdims={keep}, out={out})"]


def _reduce_when(site):
    return _same_float(site) and _dtype(site).itemsize >= 4  # float16 means go through float32


_lower(tuple(_REDUCTIONS), _reduce_emit, _reduce_when)


def _global_pool_emit(site):
    x, o = site.ins[0], site.outs[0]
    fn = {"max": "max", "avg": "mean", "sum": "sum"}[site.attrs["pool_type"]]
    axes = tuple(range(2, len(site.in_shapes[0])))
    return [f"np.{fn}({x}, axis={axes!r}, keepdims=True, out={o})"]


def _global_pool_when(site):
    return (site.attrs["global_pool"] and site.attrs["pool_type"] in ("max", "avg", "sum")
            and _reduce_when(site))


_lower("Pooling", _global_pool_emit, _global_pool_when)


# -- BatchNorm (inference: the moving statistics) -----------------------------------------------

def _bn_emit(site):
    x, gamma, beta, mean, var = site.ins
    o, o_mean, o_invstd = (*site.outs, None, None)[:3]
    attrs, ndim = site.attrs, len(site.in_shapes[0])
    axis = attrs["axis"] % ndim
    bshape = tuple(site.in_shapes[0][axis] if i == axis else 1 for i in range(ndim))
    invstd, scale = site.temp(f"{o}_invstd"), site.temp(f"{o}_scale")
    lines = [f"{invstd} = 1.0 / np.sqrt({var} + {attrs['eps']!r})",
             f"{scale} = {invstd}" if attrs["fix_gamma"] else f"{scale} = {gamma} * {invstd}",
             f"np.subtract({x}, {mean}.reshape({bshape!r}), out={o})",
             f"np.multiply({o}, {scale}.reshape({bshape!r}), out={o})",
             f"np.add({o}, {beta}.reshape({bshape!r}), out={o})"]
    if o_mean is not None:
        lines.append(f"np.copyto({o_mean}, {mean})")
    if o_invstd is not None:
        lines.append(f"np.copyto({o_invstd}, {invstd})")
    return lines


def _bn_when(site):
    inference = not site.is_train or site.attrs["use_global_stats"]
    return inference and _same_float(site) and -len(site.in_shapes[0]) <= site.attrs[
        "axis"] < len(site.in_shapes[0])


_lower("BatchNorm", _bn_emit, _bn_when, inplace=_FIRST)  # reads the data first only


# -- views and sums -----------------------------------------------------------------------------

def _reshape_emit(site):
    return [f"{site.outs[0]} = {site.ins[0]}.reshape({site.out_shapes[0]!r})"]


_lower(("Reshape", "Flatten", "expand_dims"), _reshape_emit, _same_dtype, kind="view")


def _add_n_emit(site):
    o, ins = site.outs[0], site.ins
    if len(ins) == 1:
        return [f"np.copyto({o}, {ins[0]})"]
    return [f"np.add({ins[0]}, {ins[1]}, out={o})"] + [
        f"np.add({o}, {a}, out={o})" for a in ins[2:]]


_lower("add_n", _add_n_emit, _same_float, inplace=(0, 1))


def _dropout_emit(site):
    x, (o, mask) = site.ins[0], (*site.outs, None)[:2]
    lines = [f"np.copyto({o}, {x})"]
    if mask is not None:
        lines.append(f"{mask}.fill(1)")
    return lines


def _dropout_when(site):
    attrs = site.attrs
    identity = not (site.is_train or attrs["mode"] == "always") or attrs["p"] == 0.0
    return identity and 0.0 <= attrs["p"] <= 1.0 and _same_float(site)


_lower("Dropout", _dropout_emit, _dropout_when, inplace=_FIRST)


# -- Convolution: im2col into a reused buffer, then one matmul with out= --------------------------

_CONV_LAYOUTS = {1: "NCW", 2: "NCHW", 3: "NCDHW"}


def _conv_geometry(attrs):
    """``(kernel, stride, dilate, pad)`` as full tuples (ops/conv.py's defaults)."""
    kernel = tuple(attrs["kernel"])
    nd = len(kernel)
    return (kernel, tuple(attrs["stride"]) or (1,) * nd, tuple(attrs["dilate"]) or (1,) * nd,
            tuple(attrs["pad"]) or (0,) * nd)


def _conv_when(site):
    kernel, stride, dilate, pad = _conv_geometry(site.attrs)
    nd, groups = len(kernel), site.attrs["num_group"]
    x, w = site.in_shapes[0], site.in_shapes[1]
    return (_same_float(site) and nd in _CONV_LAYOUTS
            and site.attrs["layout"] in (None, _CONV_LAYOUTS[nd])
            and len(stride) == len(dilate) == len(pad) == nd and len(x) == nd + 2
            and groups >= 1 and x[1] % groups == 0 and w[0] % groups == 0
            and w == (w[0], x[1] // groups, *kernel))


def _pointwise(site):
    """A 1x1 convolution of one image with stride 1 and no padding: the image already is
    the column matrix."""
    kernel, stride, dilate, pad = _conv_geometry(site.attrs)
    return site.in_shapes[0][0] == 1 and set(kernel) == {1} and set(stride) == {1} and not any(
        pad)


def _conv_scratch(site):
    (n, c, *_), (_, f, *out_sp) = site.in_shapes[0], site.out_shapes[0]
    kernel, dtype = _conv_geometry(site.attrs)[0], site.out_dtypes[0]
    need = [] if _pointwise(site) else [((c, *kernel, n, *out_sp), dtype)]
    if n > 1:  # the product comes out (F, N, ...) and is then moved to (N, F, ...)
        need.append(((f, n * math.prod(out_sp)), dtype))
    return need


def _im2col_lines(site, cols):
    """Lines that fill ``cols`` (C, *kernel, N, *out) with the windows of the padded input."""
    x, o = site.ins[0], site.outs[0]
    kernel, stride, dilate, pad = _conv_geometry(site.attrs)
    n, c, *spatial = site.in_shapes[0]
    lines, src = [], x
    if any(pad):
        src = site.private(f"{o}_padded", (n, c, *(s + 2 * p for s, p in zip(spatial, pad))),
                           site.in_dtypes[0])
        inner = ", ".join(f"{p}:{p + s}" for s, p in zip(spatial, pad))
        lines.append(f"np.copyto({site.define(f'{src}_inner', f'{src}[:, :, {inner}]')}, {x})")
    geometry = f"{kernel!r}, {stride!r}, {dilate!r}"
    if site.is_static(src):
        pairs = site.define(f"{o}_windows", f"im2col_views({cols}, {src}, {geometry})")
        return lines + [f"for column, window in {pairs}:", "    np.copyto(column, window)"]
    pairs = site.define(f"{o}_windows", f"im2col_index({cols}, {geometry})")
    image = site.temp(f"{x}_cnhw")
    return lines + [f"{image} = {x}.swapaxes(0, 1)", f"for column, index in {pairs}:",
                    f"    np.copyto(column, {image}[index])"]


def _conv_emit(site):
    w, o = site.ins[1], site.outs[0]
    (n, c, *_), (_, f, *out_sp) = site.in_shapes[0], site.out_shapes[0]
    groups, pixels = site.attrs["num_group"], math.prod(out_sp)
    depth = c // groups * math.prod(site.attrs["kernel"])
    lead = () if groups == 1 else (groups,)  # one 2-D product, or one per group
    if _pointwise(site):
        lines, cols = [], site.view(site.ins[0], (*lead, depth, pixels))
    else:
        lines = _im2col_lines(site, site.scratch[0])
        cols = site.view(site.scratch[0], (*lead, depth, n * pixels))
    weight = site.view(w, (*lead, f // groups, depth))
    if n == 1:
        target = site.view(o, (*lead, f // groups, pixels))
        lines.append(f"np.matmul({weight}, {cols}, out={target})")
    else:
        product = site.scratch[-1]
        lines.append(f"np.matmul({weight}, {cols}, out="
                     f"{site.view(product, (*lead, f // groups, n * pixels))})")
        moved = site.define(f"{o}_nchw", f"{product}.reshape({(f, n, *out_sp)!r}).swapaxes(0, 1)")
        lines.append(f"np.copyto({o}, {moved})")
    if len(site.ins) > 2:
        lines.append(f"np.add({o}, {site.ins[2]}.reshape({(1, f) + (1,) * len(out_sp)!r}), "
                     f"out={o})")
    return lines


_lower("Convolution", _conv_emit, _conv_when, scratch=_conv_scratch)


def _windows(kernel, stride, dilate, out_sp):
    """``(kernel offset, window slices)`` per kernel offset (ops/conv.py's ``_window``)."""
    for offs in itertools.product(*(range(k) for k in kernel)):
        yield offs, tuple(slice(o * d, o * d + s * (m - 1) + 1, s)
                          for o, d, s, m in zip(offs, dilate, stride, out_sp))


def im2col_views(cols, src, kernel, stride, dilate):
    """``[(column block, window view of src)]``: im2col of a fixed array as copies."""
    image = src.swapaxes(0, 1)
    out_sp = cols.shape[-len(kernel):]
    return [(cols[(slice(None), *offs)], image[(slice(None), slice(None), *win)])
            for offs, win in _windows(kernel, stride, dilate, out_sp)]


def im2col_index(cols, kernel, stride, dilate):
    """``[(column block, index)]``: im2col of an array known at call time only."""
    out_sp = cols.shape[-len(kernel):]
    return [(cols[(slice(None), *offs)], (slice(None), slice(None), *win))
            for offs, win in _windows(kernel, stride, dilate, out_sp)]


#: Module-level helpers the generated source may call (``define`` expressions).
HELPERS = {"im2col_views": im2col_views, "im2col_index": im2col_index}


# -- fused elementwise groups (compiler/passes/fuse_elementwise.py's ``_fused`` nodes) ------------

class _MemberNode:
    """What a member's Site needs of a node."""

    def __init__(self, member):
        self.op, self.attrs, self.name = member.op, member.attrs, member.name


class _FusedPlan:
    """Where each member of a fused node writes: the buffer of a node output (``("out", k)``),
    a scratch buffer (``("scratch", s)``), or nowhere (``None``: no rule, so its compute
    returns a fresh array). Members run in order; a member may overwrite a dying input in
    place, and a buffer of a later output member is borrowed when what is put there dies
    before that member writes it (or is what it overwrites in place)."""

    def __init__(self, site):
        op = site.op
        self.members, shape, dtype = op.members, site.out_shapes[0], site.out_dtypes[0]
        self.output_of = {j: k for k, j in enumerate(op.outputs) if site.used[k]}
        self.member_of = {k: j for j, k in self.output_of.items()}
        n = len(self.members)
        self.last = {j: n if j in self.output_of else -1 for j in range(n)}
        for j, m in enumerate(self.members):
            for kind, i in m.refs:
                if kind == "t" and i not in self.output_of:
                    self.last[i] = j
        self.sites, self.rules = [], []
        for m in self.members:
            ins = [site.in_shapes[i] if kind == "in" else shape for kind, i in m.refs]
            sub = Site(_MemberNode(m), ins, [dtype] * len(ins), [shape], [dtype],
                       site.is_train, site.module)
            rule = rule_for(sub)
            self.sites.append(sub)
            self.rules.append(rule if rule is not None and rule.kind == "out" else None)
        self.where, self.scratch = {}, 0
        self._place()

    def _place(self):
        busy = {}
        for j in range(len(self.members)):
            if self.rules[j] is None:
                self.where[j] = None
                continue
            if j in self.output_of:
                where = ("out", self.output_of[j])
            else:
                where = self._inplace(j) or self._free(j, busy)
            self.where[j] = where
            busy[where] = self.last[j]

    def _takes(self, j, i):
        """True when member ``j`` may overwrite member ``i``'s value in place."""
        rule = self.rules[j]
        if rule is None:  # its compute reads everything before the copy out
            return True
        allowed = rule.inplace_inputs(self.sites[j])
        return all(p in allowed for p, ref in enumerate(self.members[j].refs) if ref == ("t", i))

    def _fits(self, where, j):
        """Member ``j``'s value may live in ``where`` (an output buffer must be free again,
        or overwritten in place, when its own member writes it)."""
        if where[0] != "out":
            return True
        owner = self.member_of[where[1]]
        return owner > j and (self.last[j] < owner or (
            self.last[j] == owner and self._takes(owner, j)))

    def _inplace(self, j):
        for p in self.rules[j].inplace_inputs(self.sites[j]):
            kind, i = self.members[j].refs[p]
            where = self.where.get(i) if kind == "t" else None
            if where is not None and self.last[i] == j and self._takes(j, i) and self._fits(
                    where, j):
                return where
        return None

    def _free(self, j, busy):
        for k in sorted(self.output_of.values()):
            where = ("out", k)
            if busy.get(where, -1) < j and self._fits(where, j):
                return where
        for s in range(self.scratch):
            if busy.get(("scratch", s), -1) < j:
                return ("scratch", s)
        self.scratch += 1
        return ("scratch", self.scratch - 1)

    def first_write(self, k):
        """The member that first writes output ``k``'s buffer."""
        return min(j for j in range(len(self.members)) if self.where[j] == ("out", k) or (
            self.where[j] is None and self.output_of.get(j) == k))


def _fused_plan(site):
    plan = site.__dict__.get("_fused_plan")
    if plan is None:
        plan = site._fused_plan = _FusedPlan(site)
    return plan


def _fused_when(site):
    dtypes = {*site.in_dtypes, *site.out_dtypes}
    if len(dtypes) != 1 or not hasattr(site.op, "members"):
        return False
    return any(rule is not None for rule in _fused_plan(site).rules)


def _fused_inplace(site):
    """Inputs that output 0 may overwrite: read no later than the member that first writes
    it, and there only where that member reads before it writes."""
    plan = _fused_plan(site)
    if 0 not in plan.output_of.values():
        return ()
    j0 = plan.first_write(0)
    ok = []
    for k in range(len(site.in_shapes)):
        if any(("in", k) in m.refs for m in plan.members[j0 + 1:]):
            continue
        rule = plan.rules[j0]
        places = [p for p, ref in enumerate(plan.members[j0].refs) if ref == ("in", k)]
        if rule is None or all(p in rule.inplace_inputs(plan.sites[j0]) for p in places):
            ok.append(k)
    return tuple(ok)


def _fused_emit(site):
    plan, lines, names = _fused_plan(site), [], {}
    for j, m in enumerate(plan.members):
        sub, where = plan.sites[j], plan.where[j]
        sub.ins = [site.ins[i] if kind == "in" else names[i] for kind, i in m.refs]
        refs = ", ".join([f"{'in' if kind == 'in' else 't'}{i}" for kind, i in m.refs]
                         + [f"{k}={v}" for k, v in m.given_attrs.items()])
        lines.append(python_comment(f"t{j} = {m.op.name}({refs})  ({m.name})"))
        if where is None:
            name = site.temp(m.name)
            lines.append(f"{name} = {site.bind(f'{m.name}_compute', m.op, m.attrs)}"
                         f"({', '.join(sub.ins)})")
            if j in plan.output_of:
                lines.append(f"np.copyto({site.outs[plan.output_of[j]]}, {name})")
        else:
            name = site.outs[where[1]] if where[0] == "out" else site.scratch[where[1]]
            sub.outs = [name]
            lines += plan.rules[j].emit(sub)
        names[j] = name
    return lines


def _fused_scratch(site):
    return [(site.out_shapes[0], site.out_dtypes[0])] * _fused_plan(site).scratch


_lower("_fused", _fused_emit, _fused_when, inplace=_fused_inplace, scratch=_fused_scratch)
