"""Reduction, indexing and sorting ops beyond the case table: error messages on bad input (they
name the op, the argument, and what was expected versus given), MXNet's tie rules (max/min
gradients, sort order), hidden outputs, index dtypes, and attributes in MXNet's JSON form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError

nd = mx.nd


def _arr(*shape):
    return nd.array(np.arange(np.prod(shape), dtype=np.float32).reshape(shape))


def _raises(fn, *fragments):
    with pytest.raises(MXNetError) as info:
        fn()
    for fragment in fragments:
        assert fragment in str(info.value), f"{fragment!r} not in {str(info.value)!r}"


# -- error messages ---------------------------------------------------------------------------

@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: nd.sum(_arr(2, 3, 4), axis=3), ("sum", "axis 3", "(2, 3, 4)", "[-3, 2]")),
    (lambda: nd.max(_arr(2, 3), axis=(0, -4)), ("max", "axis -4")),
    (lambda: nd.mean(_arr(2, 3), axis=(1, -1)), ("mean", "twice")),
    (lambda: nd.argmax(_arr(2, 3), axis=2), ("argmax", "axis 2", "(2, 3)")),
    (lambda: nd.argmax_channel(_arr(4)), ("argmax_channel", "at least 2 dims", "(4,)")),
    (lambda: nd.norm(_arr(2, 3), ord=3), ("norm", "ord", "1 or 2", "3")),
    (lambda: nd.norm(_arr(2, 3), axis=5), ("norm", "axis 5")),
    (lambda: nd.moments(_arr(2, 3)), ("moments", "axes", "at least one axis")),
    (lambda: nd.moments(_arr(2, 3), axes=(0, 2)), ("moments", "axis 2")),
])
def test_bad_reduction_arguments_name_the_op(call, fragments):
    _raises(call, *fragments)


@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: nd.slice(_arr(2, 3), begin=(0, 0), end=(1,)), ("slice", "same length")),
    (lambda: nd.slice(_arr(2, 3), begin=(0, 0, 0), end=(1, 1, 1)), ("slice", "(2, 3)")),
    (lambda: nd.slice(_arr(2, 3), begin=(0,), end=(1,), step=(0,)), ("slice", "step", "0")),
    (lambda: nd.slice(_arr(2, 3), begin=(0, 0), end=(1, 1), step=(1,)), ("slice", "step")),
    (lambda: nd.slice(_arr(2, 3), begin=(0, "a"), end=(1, 1)), ("slice", "'begin'")),
    (lambda: nd.slice_axis(_arr(2, 3), axis=1, begin=0, end=5), ("slice_axis", "end=5", "3")),
    (lambda: nd.slice_axis(_arr(2, 3), axis=1, begin=2, end=1), ("slice_axis", "begin=2")),
    (lambda: nd.slice_axis(_arr(2, 3), axis=1, begin=-5, end=None), ("slice_axis", "-5")),
    (lambda: nd.slice_axis(_arr(2, 3), axis=2, begin=0, end=1), ("slice_axis", "axis 2")),
    (lambda: nd.slice_like(_arr(2, 3), _arr(3, 3)), ("slice_like", "(3, 3)", "(2, 3)")),
    (lambda: nd.slice_like(_arr(2, 3), _arr(2)), ("slice_like", "same number of dims")),
    (lambda: nd.slice_like(_arr(2, 3, 4), _arr(2, 3), axes=(-1,)), ("slice_like", "axes")),
])
def test_bad_slices_name_the_op_and_argument(call, fragments):
    _raises(call, *fragments)


@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: nd.take(_arr(2, 3), nd.array([0, 3]), axis=1, mode="raise"),
     ("take", "mode='raise'", "[0, 3)", "3")),
    (lambda: nd.take(_arr(2, 3), nd.array([-1]), axis=1, mode="raise"), ("take", "-1")),
    (lambda: nd.take(_arr(2, 3), nd.array([0]), axis=2), ("take", "axis 2", "(2, 3)")),
    (lambda: nd.take(_arr(2, 3), nd.array([0]), mode="nearest"), ("take", "'mode'", "wrap")),
    (lambda: nd.pick(_arr(2, 3), nd.array([0, 1, 1])), ("pick", "(3,)", "(2,)", "(2, 3)")),
    (lambda: nd.pick(_arr(2, 3), nd.array([0, 1]), axis=None), ("pick", "axis=None")),
    (lambda: nd.pick(_arr(2, 3), nd.array([0, 1]), axis=-3), ("pick", "axis -3")),
    (lambda: nd.one_hot(nd.array([0, 1]), depth=-1), ("one_hot", "depth", "-1")),
    (lambda: nd.one_hot(nd.array([0, 1])), ("one_hot", "'depth'")),
    (lambda: nd.gather_nd(_arr(2, 3), nd.array([0, 1])), ("gather_nd", "2 dims", "(2,)")),
    (lambda: nd.gather_nd(_arr(2, 3), nd.array([[0], [1], [0]])), ("gather_nd", "3 axes")),
    (lambda: nd.gather_nd(_arr(2, 3), nd.array([[2], [0]])), ("gather_nd", "out of range")),
    (lambda: nd.scatter_nd(nd.array([1, 2]), nd.array([[0, 1]]), shape=(3, 3)),
     ("scatter_nd", "(2,)", "(3, 3)", "(2, 3)")),
    (lambda: nd.batch_take(_arr(3, 2), nd.array([0, 1])), ("batch_take", "2 elements", "3 rows")),
    (lambda: nd.ravel_multi_index(_arr(3, 2), shape=(7, 6)), ("ravel_multi_index", "(2, N)")),
    (lambda: nd.ravel_multi_index(_arr(2, 2)), ("ravel_multi_index", "'shape'")),
    (lambda: nd.unravel_index(_arr(2), shape=(3, -1)), ("unravel_index", "(3, -1)")),
])
def test_bad_indexing_names_the_op_and_argument(call, fragments):
    _raises(call, *fragments)


@pytest.mark.parametrize(("call", "fragments"), [
    (lambda: nd.topk(_arr(2, 3), k=4), ("topk", "k=4", "3")),
    (lambda: nd.topk(_arr(2, 3), axis=2), ("topk", "axis 2", "(2, 3)")),
    (lambda: nd.topk(_arr(300), k=2, dtype="uint8"), ("topk", "uint8", "299")),
    (lambda: nd.topk(_arr(2, 3), ret_typ="values"), ("topk", "'ret_typ'", "value")),
    (lambda: nd.argsort(_arr(3000), dtype="float16"), ("argsort", "float16", "2999")),
    (lambda: nd.sort(_arr(2, 3), axis=-3), ("sort", "axis -3")),
])
def test_bad_sorting_arguments_name_the_op(call, fragments):
    _raises(call, *fragments)


def test_shape_inference_errors_name_the_op():
    cases = [("sum", {"axis": 4}, [(2, 3)], "axis 4"),
             ("take", {"axis": -3}, [(2, 3), (4,)], "axis -3"),
             ("pick", {}, [(2, 3), (3,)], "(3,)"),
             ("topk", {"k": 9}, [(2, 3)], "k=9"),
             ("slice", {"begin": (0,), "end": (1, 2)}, [(2, 3)], "same length")]
    for name, attrs, shapes, fragment in cases:
        op = ops.get(name)
        _raises(lambda op=op, attrs=attrs, shapes=shapes: op.infer_shape(
            op.parse_attrs(attrs), shapes), name, fragment)


# -- MXNet's rules ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("axis", [1, None])
def test_max_min_gradient_goes_to_every_tied_element(name, axis):
    x = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 1.0, 2.0]])
    op = ops.get(name)
    attrs = op.parse_attrs({} if axis is None else {"axis": axis})
    data = nd.array(x, dtype="float64")
    out = nd.max(data, axis=axis) if name == "max" else nd.min(data, axis=axis)
    g = np.arange(1.0, out.size + 1).reshape(out.shape)
    (grad,) = op.grad(nd, [data], [out], [nd.array(g, dtype="float64")], **attrs)
    extreme = getattr(x, name)(axis=axis, keepdims=True)
    want = (x == extreme) * g.reshape(extreme.shape)
    np.testing.assert_array_equal(grad.asnumpy(), want)


def test_ties_keep_their_order_both_ways():
    x = np.array([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [0.0, 0.0, 5.0, 5.0, 1.0, 0.0]])
    data = nd.array(x)
    np.testing.assert_array_equal(nd.argsort(data).asnumpy(),
                                  [[1, 4, 3, 0, 2, 5], [0, 1, 5, 4, 2, 3]])
    np.testing.assert_array_equal(nd.argsort(data, is_ascend=False).asnumpy(),
                                  [[0, 2, 5, 3, 1, 4], [2, 3, 4, 0, 1, 5]])
    np.testing.assert_array_equal(nd.topk(data, k=3).asnumpy(), [[0, 2, 5], [2, 3, 4]])
    np.testing.assert_array_equal(nd.argmax(data, axis=1).asnumpy(), [0, 2])
    np.testing.assert_array_equal(nd.argmin(data, axis=1).asnumpy(), [1, 0])


def test_argmax_returns_indices_in_the_input_dtype():
    for dtype in ("float32", "float64", "int32"):
        out = nd.argmax(nd.array([[1, 5, 2]], dtype=dtype), axis=1)
        assert out.dtype == np.dtype(dtype) and out.asnumpy().tolist() == [1]


def test_full_reductions_give_shape_1_not_0d():
    x = _arr(2, 3)
    for fn in (nd.sum, nd.mean, nd.max, nd.min, nd.prod, nd.nansum, nd.norm, nd.argmax):
        assert fn(x).shape == (1,), fn.__name__
    assert nd.sum(x, exclude=True).shape == (1,)
    assert nd.sum(x, axis=(0, 1), exclude=True).shape == (2, 3)


def test_hidden_outputs_of_sort_and_topk():
    x = nd.array([[3.0, 1.0, 2.0]])
    assert isinstance(nd.sort(x), nd.NDArray)
    assert isinstance(nd.topk(x, k=2, ret_typ="value"), nd.NDArray)
    values, indices = nd.topk(x, k=2, ret_typ="both", dtype="int32")
    assert values.dtype == np.float32 and indices.dtype == np.int32
    assert indices.asnumpy().tolist() == [[0, 2]]
    for attrs, count in (({"ret_typ": "value"}, 2), ({"ret_typ": "both"}, 2),
                         ({"ret_typ": "mask"}, 1), ({}, 1)):
        op = ops.get("topk")
        parsed = op.parse_attrs(attrs)
        assert op.num_outputs(parsed) == count
        assert len(op.output_names(parsed)) == count


def test_slices_are_copies():
    x = _arr(3, 4)
    part = nd.slice(x, begin=(1, None), end=(3, None))
    part[:] = -1
    assert x.asnumpy().min() == 0


def test_attributes_parse_mxnet_json_strings():
    op = ops.get("slice")
    attrs = op.parse_attrs({"begin": "(0, None)", "end": "(2, 3)", "step": "(1, -1)"})
    assert attrs["begin"] == (0, None) and attrs["step"] == (1, -1)
    assert op.format_attrs(attrs) == {"begin": "(0, None)", "end": "(2, 3)", "step": "(1, -1)"}
    assert ops.get("slice_axis").parse_attrs({"axis": "1", "begin": "0", "end": "None"})[
        "end"] is None
    assert ops.get("topk").parse_attrs({"axis": "None", "ret_typ": "both"})["axis"] is None
    assert ops.get("sum").parse_attrs({"axis": "(0, 1)"})["axis"] == (0, 1)


def test_aliases_are_the_same_op():
    for alias, name in (("sum_axis", "sum"), ("max_axis", "max"), ("min_axis", "min"),
                        ("crop", "slice"), ("choose_element_0index", "pick")):
        assert ops.get(alias) is ops.get(name)


# -- against the real MXNet (skipped without .oracle/) ------------------------------------------

ORACLE = Path(__file__).resolve().parent.parent / ".oracle" / "bin" / "python"

_ORACLE_CALLS = {
    "argsort-ties": "nd.argsort(ties)",
    "argsort-ties-desc": "nd.argsort(ties, is_ascend=False)",
    "topk-ties": "nd.topk(ties, k=5)",
    "topk-ties-asc-axis0": "nd.topk(ties, k=2, axis=0, is_ascend=True)",
    "sort-ties-desc-flat": "nd.sort(ties[0], axis=None, is_ascend=False)",
    "argmax-ties": "nd.argmax(ties, axis=1)",
    "argmin-ties-flat": "nd.argmin(ties[0:1])",
    "take-clip": "nd.take(data, frac, axis=1)",
    "take-wrap": "nd.take(data, frac, axis=1, mode='wrap')",
    "pick-clip": "nd.pick(data, picks, axis=1)",
    "pick-wrap": "nd.pick(data, picks, axis=1, mode='wrap')",
    "pick-keepdims": "nd.pick(data, picks, axis=1, keepdims=True)",
    "one-hot": "nd.one_hot(frac, 3, on_value=2.5, dtype='int32')",
    "gather-nd-negative": "nd.gather_nd(data, nd.array([[-1, 0, -2], [0, -3, 2]]))",
    "scatter-nd": "nd.scatter_nd(nd.array([1, 2]), nd.array([[1, 0], [0, 1]]), shape=(2, 2))",
    "batch-take-clip": "nd.batch_take(data[0], nd.array([-1, 7, 2], dtype='int32'))",
    "ravel-unchecked": "nd.ravel_multi_index(nd.array([[8, -1, 1.7], [4, 7, 2]]), shape=(7, 6))",
    "unravel-negative": "nd.unravel_index(nd.array([50, -1, 1.7]), shape=(-1, 6))",
    "mean-int": "nd.mean(nd.array([[-1, -2], [-3, -6]], dtype='int32'), axis=1)",
    "slice-clamped": "nd.slice(data, begin=(None, 5), end=(None, -10), step=(None, -1))",
}
_ORACLE_PRELUDE = """
import json
import numpy as np
rng = np.random.RandomState(0)
ties = nd.array(rng.randint(0, 4, size=(3, 12)).astype(np.float32))
data = nd.array(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
frac = nd.array([[-1.0, 5.0, 1.7, -0.5, -1.5]])
picks = nd.array([[-1.0, 5.0, 1.7, -0.5], [-1.5, 2.0, 0.2, 9.0]])
"""


def _run_calls(nd_module):
    results = {}
    env = {"nd": nd_module}
    exec(_ORACLE_PRELUDE, env)  # noqa: S102  (fixed test inputs)
    for key, call in _ORACLE_CALLS.items():
        out = eval(call, env)  # noqa: S307
        results[key] = [np.dtype(out.dtype).name, list(out.shape), out.asnumpy().tolist()]
    return results


@pytest.mark.oracle
def test_tie_order_and_index_modes_match_real_mxnet():
    import json
    import os
    import subprocess

    if not ORACLE.exists():
        pytest.skip("needs the real MXNet in .oracle/")
    script = ("import json, mxnet as mx\nnd = mx.nd\n" + _ORACLE_PRELUDE
              + f"calls = {_ORACLE_CALLS!r}\nout = {{}}\n"
              + "for k, c in calls.items():\n    r = eval(c)\n"
              + "    out[k] = [np.dtype(r.dtype).name, list(r.shape), r.asnumpy().tolist()]\n"
              + "print(json.dumps(out))\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([str(ORACLE), "-c", script], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-2000:]
    want = json.loads(proc.stdout.strip().splitlines()[-1])
    got = _run_calls(nd)
    for key in _ORACLE_CALLS:
        assert got[key] == want[key], f"{key}: hybridgpu {got[key]} vs MXNet {want[key]}"
