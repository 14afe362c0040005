"""``mx.np`` against MXNet 1.9.1: every case of ``fixtures/make_mxnet_np_fixtures.py`` (the
oracle's results in ``fixtures/mxnet_np/cases.json``) gives the same shape, dtype, values and
printed form; autograd through indexing, reductions and dtype casts; random seeding; the
``_np_*`` ops inside hybridized blocks.

The fixtures were written by ``make_mxnet_np_fixtures.py`` with MXNet 1.9.1; regenerate them
with ``.oracle/bin/python tests/fixtures/make_mxnet_np_fixtures.py``.
"""

from __future__ import annotations

import filecmp
import json
import pathlib
import subprocess
import sys

import numpy as onp
import pytest

import hybridgpu as mx
from hybridgpu import autograd, np, npx

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "fixtures"))
import make_mxnet_np_fixtures as gen  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "mxnet_np" / "cases.json"
EXPECTED = json.loads(FIXTURES.read_text())["cases"]
#: Cases where MXNet 1.9.1 raises and hybridgpu computes the NumPy answer (docs/numpy_mode.md).
BETTER_THAN_MXNET = {"dot_int": "MXNet's dot has no integer kernel"}


def _compare(got, want, where, check_repr=True):
    if "error" in want:
        return
    if "array" in want:
        want = want["array"]
        assert hasattr(got, "asnumpy"), f"{where}: expected an array, got {type(got)}"
        host = got.asnumpy()
        assert list(host.shape) == want["shape"], where
        assert str(host.dtype) == want["dtype"], where
        values = onp.array([onp.nan if v is None else v for v in want["values"]])
        onp.testing.assert_allclose(host.astype(onp.float64).reshape(-1), values, rtol=2e-6,
                                    atol=5e-6, equal_nan=True, err_msg=where)
        # printing: MXNet's values (float32 results may differ in the last bit) print as MXNet
        if check_repr:
            same = np.array(values.astype(want["dtype"]).reshape(want["shape"]), ctx=got.ctx)
            assert repr(same) == want["repr"], f"{where}: {repr(same)!r} != {want['repr']!r}"
    elif "scalar" in want:
        assert str(got.dtype) == want["dtype"] and got.item() == want["scalar"], where
    elif "sequence" in want:
        assert len(got) == len(want["sequence"]), where
        for i, (g, w) in enumerate(zip(got, want["sequence"])):
            _compare(g, w, f"{where}[{i}]", check_repr)
    else:
        value = want["value"]
        got = list(got) if isinstance(got, tuple) else got
        assert got == value, f"{where}: {got!r} != {value!r}"


@pytest.fixture(autouse=True)
def numpy_mode():
    npx.set_np()
    yield
    npx.reset_np()


def test_every_case_has_a_fixture():
    assert sorted(gen.CASES) == sorted(set(EXPECTED) - {"export_block"})


@pytest.mark.parametrize("name", sorted(gen.CASES))
def test_case_matches_mxnet(name):
    want = EXPECTED[name]
    if "error" in want and name not in BETTER_THAN_MXNET:
        with pytest.raises(mx.MXNetError):
            gen.CASES[name](np, npx, mx)
        return
    got = gen.CASES[name](np, npx, mx)
    _compare(got, want, name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(n for n, w in EXPECTED.items()
                                       if "error" not in w and n in gen.CASES))
def test_case_matches_mxnet_on_gpu(name, gpu_available):
    """The same cases with gpu(0) as the default context (CuPy, or the virtual GPU)."""
    with gpu_available:
        got = gen.CASES[name](np, npx, mx)
    _compare(got, EXPECTED[name], f"{name} on {gpu_available}", check_repr=False)


def test_imports_mxnet_numpy_mode_export():
    """MXNet 1.9.1's NumPy-mode export (``_npi_add``, ``_npi_multiply_scalar``, ``_np_sum``,
    ``_npi_mean``, ``_npx_reshape``, ``slice``, V3 params) loads and gives MXNet's outputs."""
    folder = FIXTURES.parent
    net = mx.gluon.SymbolBlock.imports(str(folder / "np_block-symbol.json"), ["data0", "data1"],
                                       str(folder / "np_block-0000.params"))
    _, inputs = gen.export_block(np, npx, mx)
    out = net(*inputs)
    assert all(isinstance(o, np.ndarray) for o in out)
    _compare(list(out), EXPECTED["export_block"], "export_block")


def test_hybridized_numpy_block_matches_mxnet():
    """The exported block, hybridized here (integer indexing of a traced value, np arithmetic,
    F.np/F.npx), gives MXNet's outputs."""
    block, inputs = gen.export_block(np, npx, mx)
    _compare(list(block(*inputs)), EXPECTED["export_block"], "export_block hybridized")


def test_zero_dim_arrays():
    x = np.arange(3)
    assert x[1].shape == () and x.sum().shape == () and float(x[2]) == 2.0
    assert np.array(5).item() == 5.0 and bool(np.array(1.0))
    with pytest.raises(TypeError, match="unsized"):
        len(x.sum())


def test_gradient_through_advanced_indexing_repeats_accumulate():
    x = np.arange(6).reshape(2, 3)
    x.attach_grad()
    with autograd.record():
        y = (x[np.array([1, 1, 0]), 1:] * 2).sum()
    y.backward()
    assert isinstance(x.grad, np.ndarray) and y.shape == ()
    onp.testing.assert_array_equal(x.grad.asnumpy(), [[0, 2, 2], [0, 4, 4]])


def test_gradient_through_boolean_mask_and_reductions():
    x = np.array([[0.5, -1.0, 2.0], [3.0, -0.25, 1.5]])
    x.attach_grad()
    with autograd.record():
        y = x[x > 0].sum() + x.mean(axis=0).sum() + x.max()
    y.backward()
    want = (x.asnumpy() > 0) + 0.5 + (x.asnumpy() == 3.0)
    onp.testing.assert_allclose(x.grad.asnumpy(), want)


def test_gradient_through_dtype_promotion_and_matmul():
    a = np.array([[1.0, 2.0], [3.0, 4.0]])
    a.attach_grad()
    with autograd.record():
        y = (np.matmul(a, np.array([1, 2], dtype="int32")) / 2).sum()
    y.backward()
    onp.testing.assert_allclose(a.grad.asnumpy(), [[0.5, 1.0], [0.5, 1.0]])


def test_gradient_std_var_finite_differences():
    base = onp.array([[0.3, -1.2, 2.0], [0.7, 0.1, -0.4]], dtype=onp.float64)
    for fn in (np.std, np.var):
        x = np.array(base, dtype="float64")
        x.attach_grad()
        with autograd.record():
            y = fn(x, axis=1).sum()
        y.backward()
        eps, numeric = 1e-6, onp.zeros_like(base)
        for i in onp.ndindex(base.shape):
            up, down = base.copy(), base.copy()
            up[i] += eps
            down[i] -= eps
            ref = getattr(onp, fn.__name__)
            numeric[i] = (ref(up, axis=1).sum() - ref(down, axis=1).sum()) / (2 * eps)
        onp.testing.assert_allclose(x.grad.asnumpy(), numeric, rtol=1e-5, atol=1e-8)


def test_random_is_seeded_by_mx_random_seed():
    mx.random.seed(7)
    a = (np.random.uniform(size=(3,)), np.random.normal(0, 1, (2,)), np.random.randint(0, 9, (4,)))
    mx.random.seed(7)
    b = (np.random.uniform(size=(3,)), np.random.normal(0, 1, (2,)), np.random.randint(0, 9, (4,)))
    for x, y in zip(a, b):
        onp.testing.assert_array_equal(x.asnumpy(), y.asnumpy())
    assert a[2].dtype == onp.int64 and np.random.uniform().shape == ()
    picked = np.random.choice(5, size=3, replace=False).asnumpy()
    assert len(set(picked.tolist())) == 3 and picked.max() < 5
    x = np.arange(10)
    np.random.shuffle(x)
    assert sorted(x.asnumpy().tolist()) == list(range(10))


def test_conversions_and_contexts():
    x = np.array([[1, 2], [3, 4]])
    nd_view = x.as_nd_ndarray()
    assert type(nd_view) is mx.nd.NDArray and nd_view.shape == (2, 2)
    assert isinstance(nd_view.as_np_ndarray(), np.ndarray)
    assert x.ctx == mx.cpu() and x.device == mx.cpu() and x.context == mx.cpu()
    y = x.copyto(mx.cpu(1))
    assert isinstance(y, np.ndarray) and y.ctx == mx.cpu(1)
    assert type(x.asnumpy()) is onp.ndarray and str(x) == str(x.asnumpy())


def test_inplace_ops_write_into_the_array_and_refuse_recording():
    x = np.ones((2,), dtype="int32")
    x += 2
    x *= 3
    assert x.dtype == onp.int32 and x.asnumpy().tolist() == [9, 9]
    w = np.ones(2)
    w.attach_grad()
    with autograd.record(), pytest.raises(mx.MXNetError, match="Inplace"):
        w += 1


def test_bad_input_errors_name_the_function():
    with pytest.raises(mx.MXNetError, match="np.reshape.*shape \\(2, 2\\).*\\(3, 3\\)"):
        np.ones((2, 2)).reshape(3, 3)
    with pytest.raises(mx.MXNetError, match="np.split.*equal division"):
        np.split(np.arange(5), 2)
    with pytest.raises(mx.MXNetError, match="np.array: cannot make a numeric array from list"):
        np.array(["a", object()])


ROOT = pathlib.Path(__file__).resolve().parent.parent
ORACLE = ROOT / ".oracle" / "bin" / "python"


@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the oracle writes the committed fixture byte for byte."""
    subprocess.run([str(ORACLE), str(FIXTURES.parent.parent / "make_mxnet_np_fixtures.py"),
                    "--out", str(tmp_path)], check=True, capture_output=True, cwd=ROOT)
    for name in ("cases.json", "np_block-symbol.json", "np_block-0000.params"):
        assert filecmp.cmp(tmp_path / name, FIXTURES.parent / name, shallow=False), (
            f"{name} is out of date: run `.oracle/bin/python "
            "tests/fixtures/make_mxnet_np_fixtures.py`")


def test_numpy_mode_export_is_what_mxnet_numpy_mode_reads(tmp_path):
    """In NumPy mode the .params records are V3 (MXNet refuses V2 there) and the JSON says
    is_np_shape; the same files load back here with the same outputs."""
    block, inputs = gen.export_block(np, npx, mx)
    want = [o.asnumpy() for o in block(*inputs)]
    sym_file, params_file = block.export(str(tmp_path / "ours"))
    raw = pathlib.Path(params_file).read_bytes()
    assert raw[24:28] == (0xF993FACA).to_bytes(4, "little")
    assert json.loads(pathlib.Path(sym_file).read_text())["attrs"]["is_np_shape"] == ["int", 1]
    net = mx.gluon.SymbolBlock.imports(sym_file, ["data0", "data1"], params_file)
    for got, ref in zip(net(*inputs), want):
        onp.testing.assert_allclose(got.asnumpy(), ref, rtol=1e-6)


_ORACLE_IMPORT = """
import json, sys
sys.path.insert(0, sys.argv[1])
import make_mxnet_np_fixtures as gen
import mxnet as mx
from mxnet import np, npx
npx.set_np()
_, inputs = gen.export_block(np, npx, mx)
net = mx.gluon.SymbolBlock.imports(sys.argv[2] + "-symbol.json", ["data0", "data1"],
                                   sys.argv[2] + "-0000.params")
print(json.dumps([o.asnumpy().tolist() for o in net(*inputs)]))
"""


@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_mxnet_imports_our_numpy_mode_export(tmp_path):
    block, inputs = gen.export_block(np, npx, mx)
    want = [o.asnumpy() for o in block(*inputs)]
    block.export(str(tmp_path / "ours"))
    done = subprocess.run([str(ORACLE), "-c", _ORACLE_IMPORT, str(FIXTURES.parent.parent),
                           str(tmp_path / "ours")], check=True, capture_output=True, text=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    for g, w in zip(got, want):
        onp.testing.assert_allclose(onp.array(g), w, rtol=1e-6)


def test_host_fallbacks_refuse_tracked_inputs_while_recording():
    x = np.array([1.0, 2.0])
    x.attach_grad()
    assert int(np.count_nonzero(x)) == 2  # not recording: runs on the host
    with autograd.record(), pytest.raises(mx.MXNetError, match="np.isclose runs NumPy"):
        np.isclose(x, 1.0)


def test_random_distributions_have_their_moments():
    mx.random.seed(0)
    n = 20000
    e = np.random.exponential(2.0, size=(n,)).asnumpy()
    g = np.random.gamma(3.0, 2.0, size=(n,)).asnumpy()
    p = np.random.poisson(4.0, size=(n,)).asnumpy()
    u = np.random.uniform(-1.0, 3.0, size=(n,)).asnumpy()
    z = np.random.normal(1.0, 2.0, size=(n,)).asnumpy()
    for got, mean, var in ((e, 2.0, 4.0), (g, 6.0, 12.0), (p, 4.0, 4.0), (u, 1.0, 16 / 12),
                           (z, 1.0, 4.0)):
        assert abs(got.mean() - mean) < 5 * (var / n) ** 0.5
        assert abs(got.var() - var) < 0.1 * var
    assert np.random.gamma(2.0).shape == () and e.dtype == onp.float32


def test_solve_gradient():
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    a.attach_grad()
    with autograd.record():
        y = np.linalg.solve(a, np.array([1.0, 2.0])).sum()
    y.backward()
    inv = onp.linalg.inv(a.asnumpy())
    want = -onp.outer(inv.T @ onp.ones(2), inv @ onp.array([1.0, 2.0]))
    onp.testing.assert_allclose(a.grad.asnumpy(), want, rtol=1e-5)
