"""Shape and join ops beyond the case table: error messages on bad input (they name the op,
the argument and both shapes), shape inference with unknown shapes (deferred init), split
gradients with an unused output, and the ``split_v2`` helper."""

from __future__ import annotations

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.ndarray.splitting import split_v2

nd = mx.nd


def _arr(*shape):
    return nd.array(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))


def _raises(fn, *fragments):
    with pytest.raises(MXNetError) as info:
        fn()
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


# -- error messages ---------------------------------------------------------------------------

def test_bad_reshape_names_op_input_shape_and_target():
    _raises(lambda: nd.reshape(_arr(2, 3, 4), shape=(5, 5)), "Reshape", "(2, 3, 4)", "(5, 5)")
    _raises(lambda: nd.Reshape(_arr(2, 3, 4), shape=(-1, -1)), "Reshape", "more than one -1")
    op = ops.get("Reshape")
    _raises(lambda: op.infer_shape(op.parse_attrs({"shape": (7, -1)}), [(2, 3, 4)]),
            "Reshape", "(2, 3, 4)", "(7, -1)")


def test_reshape_without_shape_says_so():
    _raises(lambda: nd.reshape(_arr(2, 3)), "Reshape", "'shape'")


def test_concat_of_mismatched_shapes_names_both():
    _raises(lambda: nd.concat(_arr(2, 3), _arr(3, 3), dim=1), "Concat", "(2, 3)", "(3, 3)")
    op = ops.get("Concat")
    _raises(lambda: op.infer_shape(op.parse_attrs({"dim": 0}, 2), [(2, 3), (2, 4)]),
            "Concat", "(2, 3)", "(2, 4)")
    _raises(lambda: nd.concat(_arr(2, 3), _arr(2, 3, 1)), "Concat", "(2, 3)", "(2, 3, 1)")


def test_concat_and_add_n_refuse_mixed_dtypes():
    ints = nd.array(np.ones((2, 3)), dtype="int32")
    _raises(lambda: nd.concat(_arr(2, 3), ints), "Concat", "int32", "float32")
    _raises(lambda: nd.add_n(_arr(2, 3), ints), "add_n", "int32", "float32")


@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: nd.concat(_arr(2, 3), _arr(2, 3), dim=2), ("Concat", "axis 2")),
    (lambda: nd.stack(_arr(2, 3), _arr(3, 2)), ("stack", "(2, 3)", "(3, 2)")),
    (lambda: nd.stack(_arr(2, 3), _arr(2, 3), axis=3), ("stack", "axis 3")),
    (lambda: nd.add_n(_arr(2, 3), _arr(3,)), ("add_n", "(2, 3)", "(3,)")),
    (lambda: nd.split(_arr(2, 4), num_outputs=3), ("SliceChannel", "(2, 4)", "num_outputs=3")),
    (lambda: nd.split(_arr(2, 4), num_outputs=2, squeeze_axis=True),
     ("SliceChannel", "squeeze_axis", "size 1")),
    (lambda: nd._internal._split_v2(_arr(5, 2), indices=(1, 3), axis=0),
     ("_split_v2", "indices=(1, 3)", "start at 0")),
    (lambda: nd._internal._split_v2(_arr(5, 2), indices=(0, 7), axis=0),
     ("_split_v2", "(5, 2)")),
    (lambda: nd.transpose(_arr(2, 3, 4), axes=(1, 0)), ("transpose", "axes=(1, 0)", "3")),
    (lambda: nd.transpose(_arr(2, 3), axes=(0, 0)), ("transpose", "twice")),
    (lambda: nd.swapaxes(_arr(2, 3), 0, 2), ("SwapAxis", "axis 2")),
    (lambda: nd.expand_dims(_arr(2, 3), axis=3), ("expand_dims", "axis 3", "(2, 3)")),
    (lambda: nd.squeeze(_arr(1, 3), axis=1), ("squeeze", "axis 1", "(1, 3)", "size is 3")),
    (lambda: nd.tile(_arr(2, 3), reps=(0, 1)), ("tile", "reps=(0, 1)")),
    (lambda: nd.repeat(_arr(2, 3), repeats=-1), ("repeat", "repeats", "-1")),
    (lambda: nd.broadcast_to(_arr(2, 4), shape=(3, 4)), ("broadcast_to", "(2, 4)", "(3, 4)")),
    (lambda: nd.broadcast_to(_arr(2, 1), shape=(2, 2, 2)), ("broadcast_to", "3 dims")),
    (lambda: nd.broadcast_axis(_arr(2, 3), axis=1, size=4), ("broadcast_axis", "size 3")),
    (lambda: nd.broadcast_like(_arr(2, 3), _arr(2, 4)), ("broadcast_like", "(2, 3)", "(2, 4)")),
    (lambda: nd.broadcast_like(_arr(2, 1), _arr(2, 4), lhs_axes=(1,)),
     ("broadcast_like", "rhs_axes=None")),
    (lambda: nd.reverse(_arr(2, 3), axis=2), ("reverse", "axis 2")),
    (lambda: nd.reshape_like(_arr(2, 3), _arr(5, 7)), ("reshape_like", "(2, 3)", "(5, 7)")),
    (lambda: nd.depth_to_space(_arr(1, 7, 2, 3), 2), ("depth_to_space", "multiple of 4")),
    (lambda: nd.space_to_depth(_arr(1, 2, 3, 4), 2), ("space_to_depth", "(1, 2, 3, 4)")),
    (lambda: nd.pad(_arr(2, 3, 4), mode="edge", pad_width=(0, 0, 1, 1, 1, 1)),
     ("Pad", "4-D or 5-D", "(2, 3, 4)")),
    (lambda: nd.pad(_arr(1, 1, 3, 4), mode="edge", pad_width=(1, 0, 0, 0, 1, 1, 1, 1)),
     ("Pad", "first two axes")),
    (lambda: nd.pad(_arr(1, 1, 3, 4), mode="reflect", pad_width=(0, 0, 0, 0, 3, 1, 1, 1)),
     ("Pad", "reflect", "size 3")),
    (lambda: nd.pad(_arr(1, 1, 3, 4), mode="wrap", pad_width=(0, 0, 0, 0, 1, 1, 1, 1)),
     ("Pad", "'mode'", "wrap")),
])
def test_bad_input_gives_a_clear_error(call, fragments):
    _raises(call, *fragments)


# -- shape inference with unknown shapes ------------------------------------------------------

_UNKNOWN_INPUT = [
    ("Reshape", {"shape": (0, -1)}, 1), ("transpose", {}, 1), ("SwapAxis", {"dim2": 1}, 1),
    ("expand_dims", {"axis": 0}, 1), ("squeeze", {}, 1), ("Flatten", {}, 1),
    ("tile", {"reps": (2,)}, 1), ("repeat", {"repeats": 2}, 1),
    ("broadcast_to", {"shape": (0, 3)}, 1), ("broadcast_axis", {"axis": 0, "size": 3}, 1),
    ("broadcast_like", {}, 2), ("reverse", {"axis": 0}, 1), ("reshape_like", {}, 2),
    ("shape_array", {}, 1), ("size_array", {}, 1), ("depth_to_space", {"block_size": 2}, 1),
    ("space_to_depth", {"block_size": 2}, 1),
    ("Pad", {"mode": "edge", "pad_width": (0,) * 4 + (1,) * 4}, 1),
    ("_backward_Pad", {"mode": "edge", "pad_width": (0,) * 4 + (1,) * 4}, 1),
    ("Concat", {}, 2), ("stack", {}, 2), ("add_n", {}, 3),
    ("SliceChannel", {"num_outputs": 2}, 1), ("_split_v2", {"indices": (0, 1)}, 1),
]


@pytest.mark.parametrize(("name", "attrs", "n"), _UNKNOWN_INPUT, ids=lambda v: str(v))
def test_unknown_input_shapes_give_unknown_outputs(name, attrs, n):
    op = ops.get(name)
    parsed = op.parse_attrs(attrs, n if op.variadic else None)
    _, outs = op.infer_shape(parsed, [None] * n)
    assert outs == [None] * op.num_outputs(parsed)


@pytest.mark.parametrize(("name", "attrs", "shapes", "want"), [
    ("Reshape", {"shape": (-1, 12)}, [(0, 3, 4)], [(0, 12)]),
    ("Reshape", {"shape": (0, -1)}, [(0, 3, 4)], [None]),
    ("Reshape", {"shape": (4, 6)}, [None], [(4, 6)]),
    ("Flatten", {}, [(0, 3, 4)], [(0, 12)]),
    ("Flatten", {}, [(2, 0, 4)], [(2, 0)]),
    ("transpose", {}, [(0, 3)], [(3, 0)]),
    ("broadcast_to", {"shape": (0, 5)}, [(0, 1)], [(0, 5)]),
    ("broadcast_to", {"shape": (4, 5)}, [None], [(4, 5)]),
    ("squeeze", {}, [(0, 1, 3)], [None]),
    ("squeeze", {"axis": 1}, [(0, 1, 3)], [(0, 3)]),
    ("Concat", {"dim": 0}, [(0, 3), (2, 3)], [(0, 3)]),
    ("Concat", {"dim": 0}, [(4, 3), (2, 3)], [(6, 3)]),
    ("stack", {}, [(2, 0), (0, 3)], [(2, 2, 3)]),
    ("SliceChannel", {"num_outputs": 2, "axis": 0}, [(0, 3)], [(0, 3), (0, 3)]),
    ("shape_array", {}, [(0, 3)], [(2,)]),
])
def test_partly_known_shapes_infer_what_they_can(name, attrs, shapes, want):
    op = ops.get(name)
    parsed = op.parse_attrs(attrs, len(shapes) if op.variadic else None)
    assert op.infer_shape(parsed, shapes)[1] == want


def test_concat_completes_an_unknown_input_from_the_others():
    op = ops.get("Concat")
    ins, outs = op.infer_shape(op.parse_attrs({"dim": 1}, 2), [None, (2, 5)])
    assert ins == [(2, 0), (2, 5)] and outs == [(2, 0)]


# -- behaviour the case table cannot express ---------------------------------------------------

def test_ops_return_copies_not_views():
    x = _arr(2, 3)
    for y in (nd.reshape(x, shape=(3, 2)), nd.transpose(x), nd.flatten(x),
              nd.expand_dims(x, axis=0), nd.split(x, num_outputs=3)[0]):
        y[:] = -1
    assert (x.asnumpy() >= 0).all()


def test_split_gradient_fills_an_unused_output_with_zeros():
    op = ops.get("SliceChannel")
    x = _arr(2, 4)
    attrs = op.parse_attrs({"num_outputs": 2})
    outs = op.compute(np, x.asnumpy(), **attrs)
    outs = [nd.array(o) for o in outs]
    (grad,) = op.grad(nd, [x], outs, [None, nd.array(np.ones((2, 2)))], **attrs)
    np.testing.assert_array_equal(grad.asnumpy(), [[0, 0, 1, 1], [0, 0, 1, 1]])


def test_split_v2_helper_matches_numpy_split():
    x = np.arange(30, dtype=np.float32).reshape(5, 6)
    for spec, axis in (((1, 3), 0), (3, 1), ([2], -1)):
        got = split_v2(nd.array(x), spec, axis=axis)
        want = np.split(x, spec if isinstance(spec, int) else list(spec), axis=axis)
        assert [g.asnumpy().tolist() for g in got] == [w.tolist() for w in want]
    squeezed = split_v2(nd.array(x), 5, axis=0, squeeze_axis=True)
    assert [s.shape for s in squeezed] == [(6,)] * 5


def test_split_v2_helper_rejects_bad_sections():
    with pytest.raises(MXNetError, match="split_v2: cannot split axis 0"):
        split_v2(_arr(5, 2), 2)
    with pytest.raises(TypeError, match="indices_or_sections"):
        split_v2(_arr(5, 2), 2.0)
