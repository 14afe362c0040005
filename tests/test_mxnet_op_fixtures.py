"""Pin ``mx.nd`` ops to the outputs of the real MXNet 1.9.1.

The fixtures in ``tests/fixtures/mxnet_ops/`` (``cases.json`` + ``arrays.npz``) come from
``tests/fixtures/make_mxnet_op_fixtures.py``, run under the oracle interpreter. Each case is
replayed on ``hybridgpu``:

* ``test_forward_matches_mxnet``: ``mx.nd.<path>(*inputs, **attrs)`` gives MXNet's outputs
  (shape, dtype, values: rtol 1e-5 / atol 1e-6 for floats, exact for integers and bools) and,
  for ops that update auxiliary states (BatchNorm in training), MXNet's updated states.
* ``test_gradient_matches_mxnet``: the op's registry gradient (``OpDef.grad``) of
  ``sum(output_i * head_i)`` equals MXNet's ``autograd`` gradient (rtol 1e-4 / atol 1e-5:
  backward math runs through several ops in a different order).
* ``test_generator_reproduces_fixtures`` (``oracle`` marker): the generator, re-run, writes the
  committed ``cases.json`` byte for byte and the same arrays.

A case whose op hybridgpu lacks fails with a message naming the op. Cases where hybridgpu should
deliberately differ from MXNet carry ``xfail`` (or ``grad_xfail``) with the reason.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import modes, ops

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "mxnet_ops"
GENERATOR = HERE / "fixtures" / "make_mxnet_op_fixtures.py"
ORACLE = HERE.parent / ".oracle" / "bin" / "python"
HEAD_RULE = "((arange(size) * 7) % 11 - 5.5) / 4, reshaped to the output's shape and dtype"
FORWARD_TOL = {"rtol": 1e-5, "atol": 1e-6}
GRAD_TOL = {"rtol": 1e-4, "atol": 1e-5}
LOOSE_TOL = {"float16": {"rtol": 1e-3, "atol": 1e-3}}


def _load_fixtures():
    table = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
    with np.load(FIXTURES / table["arrays"]) as npz:
        arrays = {key: npz[key] for key in npz.files}
    return table, arrays


TABLE, ARRAYS = _load_fixtures()
CASES = TABLE["cases"]


# -- helpers ------------------------------------------------------------------------------------

def head_like(shape, dtype):
    """The head gradient the generator used for an output (see ``HEAD_RULE``)."""
    size = int(np.prod(shape, dtype=np.int64))
    return (((np.arange(size) * 7) % 11 - 5.5) / 4).reshape(shape).astype(dtype)


def case_params(cases, grad=False):
    """One pytest param per case, id = case id; xfail marks where the case table says so."""
    params = []
    for case in cases:
        reason = case.get("xfail") or (case.get("grad_xfail") if grad else None)
        marks = [pytest.mark.xfail(reason=reason, strict=False)] if reason else []
        params.append(pytest.param(case, id=case["id"], marks=marks))
    return params


def case_attrs(case):
    """The case's attributes as a user passes them: JSON lists back to tuples."""
    attrs = dict(case["attrs"])
    for key in case.get("tuples", ()):
        attrs[key] = tuple(attrs[key])
    return attrs


def case_inputs(case):
    """The case's input arrays (NumPy), in call order."""
    return [ARRAYS[f"{case['id']}/in{i}"] for i in range(len(case["inputs"]))]


def nd_function(case):
    """``hybridgpu.nd.<path>``; fails the test (not skips) when hybridgpu lacks it."""
    fn = mx.nd
    for part in case["path"].split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            pytest.fail(f"op missing: hybridgpu has no mx.nd.{case['path']} (MXNet op "
                        f"{case['op']!r}, registered: {ops.exists(case['op'])})", pytrace=False)
    return fn


def registry_op(case, fn):
    """The OpDef behind ``fn`` (or MXNet's op name for hand-written helpers)."""
    op = getattr(fn, "opdef", None)
    if op is None:
        if not ops.exists(case["op"]):
            pytest.fail(f"op missing: {case['op']!r} is not in the hybridgpu op registry",
                        pytrace=False)
        op = ops.get(case["op"])
    return op


def as_list(result):
    """An op's result as a list of outputs."""
    return list(result) if isinstance(result, (list, tuple)) else [result]


def _mismatch_report(got, want, limit=6):
    """The first differing positions, as ``index: hybridgpu X, MXNet Y``."""
    if got.dtype.kind in "fc" or want.dtype.kind in "fc":
        bad = ~np.isclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-5,
                          atol=1e-6, equal_nan=True)
    else:
        bad = got != want
    spots = np.argwhere(bad)[:limit]
    lines = [f"  {tuple(int(i) for i in idx)}: hybridgpu {got[tuple(idx)]!r}, "
             f"MXNet {want[tuple(idx)]!r}" for idx in spots]
    return f"{int(bad.sum())} of {bad.size} differ:\n" + "\n".join(lines)


def assert_same(label, got, want, case, tol):
    """``got`` (NDArray or array) has ``want``'s shape, dtype and values."""
    if got is None:
        pytest.fail(f"{label}: hybridgpu gives None, MXNet an array of shape {want.shape}")
    value = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    assert tuple(value.shape) == want.shape, (
        f"{label}: shape {tuple(value.shape)}, MXNet {want.shape}")
    assert np.dtype(value.dtype) == want.dtype, (
        f"{label}: dtype {np.dtype(value.dtype).name}, MXNet {want.dtype.name}")
    if want.dtype.kind in "fc":
        tol = {**tol, **LOOSE_TOL.get(want.dtype.name, {})}
        tol = {k: case.get(k) or v for k, v in tol.items()}
        ok = np.allclose(value, want, equal_nan=True, **tol)
    else:
        ok = np.array_equal(value, want)
    assert ok, f"{label}: values differ from MXNet; " + _mismatch_report(value, want)


# -- forward ------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", case_params(CASES))
def test_forward_matches_mxnet(case):
    """Outputs and updated auxiliary states equal MXNet's."""
    cid = case["id"]
    fn = nd_function(case)
    inputs = [mx.nd.array(a, dtype=a.dtype) for a in case_inputs(case)]
    with modes.training(bool(case.get("train"))):
        got = as_list(fn(*inputs, **case_attrs(case)))
    want = case["outputs"]
    if case.get("keep_outputs"):
        assert len(got) >= len(want), f"{cid}: {len(got)} outputs, MXNet at least {len(want)}"
    else:
        assert len(got) == len(want), f"{cid}: {len(got)} outputs, MXNet {len(want)}"
    for i in range(len(want)):
        assert_same(f"{cid} output {i}", got[i], ARRAYS[f"{cid}/out{i}"], case, FORWARD_TOL)
    for k, aux in enumerate(case.get("aux", ())):
        name = case["inputs"][aux["input"]]["name"]
        assert_same(f"{cid} {name} after the call", inputs[aux["input"]],
                    ARRAYS[f"{cid}/aux{k}"], case, FORWARD_TOL)


# -- gradients ----------------------------------------------------------------------------------

def all_outputs(op, arrays, attrs, train):
    """Every output of ``op`` (hidden ones too, e.g. BatchNorm's saved mean/var) as NDArrays,
    computed on copies so auxiliary-state updates don't touch ``arrays``."""
    extra = {"is_train": train} if op.mode_dependent else {}
    result = op.compute(np, *[a.copy() for a in arrays], **attrs, **extra)
    return [mx.nd.array(r, dtype=r.dtype) for r in as_list(result)]


def registry_gradients(case):
    """Input gradients of ``sum(output_i * head_i)`` from the op's registry gradient:
    ``op.grad(mx.nd, inputs, outputs, head_grads, **attrs)`` (None = no gradient)."""
    fn = nd_function(case)
    op = registry_op(case, fn)
    if op.grad is None:
        pytest.fail(f"{case['op']}: the registry op has no gradient (grad=None)", pytrace=False)
    arrays = case_inputs(case)
    attrs = op.parse_attrs(case_attrs(case), len(arrays) if op.variadic else None)
    train = bool(case.get("train"))
    inputs = [mx.nd.array(a, dtype=a.dtype) for a in arrays]
    with modes.training(train):
        outs = all_outputs(op, arrays, attrs, train)
        visible = op.num_visible_outputs(attrs)
        heads = [mx.nd.array(head_like(o.shape, o.dtype) if i < visible
                             else np.zeros(o.shape, o.dtype), dtype=o.dtype)
                 for i, o in enumerate(outs)]
        grads = op.grad(mx.nd, inputs, outs, heads, **attrs)
    assert len(grads) == len(inputs), (
        f"{case['id']}: {len(grads)} gradients for {len(inputs)} inputs")
    return grads


@pytest.mark.parametrize("case", case_params([c for c in CASES if c.get("grads")], grad=True))
def test_gradient_matches_mxnet(case):
    """The registry gradient equals MXNet's autograd gradient for each recorded input."""
    grads = registry_gradients(case)
    for k, entry in enumerate(case["grads"]):
        name = case["inputs"][entry["input"]]["name"]
        got = grads[entry["input"]]
        if got is None:
            pytest.fail(f"{case['id']}: no gradient for input {name!r}; MXNet gives one",
                        pytrace=False)
        assert_same(f"{case['id']} gradient of {name}", got, ARRAYS[f"{case['id']}/grad{k}"],
                    case, GRAD_TOL)


# -- the fixtures themselves --------------------------------------------------------------------

def test_fixture_table_is_complete():
    """Every array the table names is stored, the head rule is ours, and 60+ ops are pinned."""
    assert TABLE["head_rule"] == HEAD_RULE
    for case in CASES:
        for field, tag in (("inputs", "in"), ("outputs", "out"), ("grads", "grad"),
                           ("aux", "aux")):
            for i, entry in enumerate(case.get(field, ())):
                array = ARRAYS[f"{case['id']}/{tag}{i}"]
                assert list(array.shape) == entry["shape"], (case["id"], field, i)
                assert array.dtype.name == entry["dtype"], (case["id"], field, i)
    assert len({c["op"] for c in CASES}) >= 60
    assert len({c["id"] for c in CASES}) == len(CASES)


@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the oracle reproduces the committed fixtures."""
    run = subprocess.run([str(ORACLE), str(GENERATOR), "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=900, cwd=HERE.parent)
    assert run.returncode == 0, f"generator failed:\n{run.stdout[-2000:]}\n{run.stderr[-4000:]}"
    fresh = (tmp_path / "cases.json").read_text(encoding="utf-8")
    committed = (FIXTURES / "cases.json").read_text(encoding="utf-8")
    assert fresh == committed, (
        "cases.json is out of date: run `.oracle/bin/python "
        "tests/fixtures/make_mxnet_op_fixtures.py` and commit the result")
    with np.load(tmp_path / "arrays.npz") as npz:
        assert sorted(npz.files) == sorted(ARRAYS)
        for key in npz.files:
            np.testing.assert_allclose(npz[key], ARRAYS[key], rtol=1e-6, atol=1e-7,
                                       equal_nan=True, err_msg=key)
