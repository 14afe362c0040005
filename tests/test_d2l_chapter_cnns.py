"""The d2l book's chapter CNNs in NumPy mode (LeNet, BatchNorm LeNet, AlexNet, VGG, NiN,
GoogLeNet, ResNet, DenseNet; tiny channel counts) on hybridgpu, imperative and hybridized, on
cpu and on gpu, as the book writes them (``nn.Sequential``, ``nn.Block`` with ``forward``) and
as ``HybridSequential``/``HybridBlock``: forward, one training step and the forward after it
equal MXNet 1.9.1's numbers (``fixtures/make_mxnet_d2l_cnn_fixtures.py`` wrote them with the
oracle, after checking there that all four forms agree)."""

from __future__ import annotations

import importlib.util
import json
import pathlib

import numpy as onp
import pytest

import hybridgpu as mx
from hybridgpu import npx

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures"
_spec = importlib.util.spec_from_file_location(
    "make_mxnet_d2l_cnn_fixtures", FIXTURES / "make_mxnet_d2l_cnn_fixtures.py")
cnns = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cnns)
WANT = json.loads((FIXTURES / "mxnet_d2l_cnns" / "results.json").read_text())["results"]
# hybridizing the book's nn.Sequential warns as MXNet 1.9 does; that warning is not under test
pytestmark = pytest.mark.filterwarnings("ignore:All children of this Sequential layer")
PARTS = ("forward", "loss", "forward after one step", "first weight's gradient")


@pytest.fixture
def numpy_mode():
    npx.set_np()
    yield
    npx.reset_np()


def _check(name, got):
    assert len(got) == len(PARTS)
    for part, g, w in zip(PARTS, got, WANT[name]):
        w = onp.asarray(w, dtype=onp.float64)
        scale = float(onp.abs(w).max())
        onp.testing.assert_allclose(onp.asarray(g, dtype=onp.float64), w, rtol=1e-4,
                                    atol=2e-5 * scale, err_msg=f"{name}: {part}")


def test_fixture_has_every_case():
    assert sorted(WANT) == sorted(cnns.CASES)


VARIANT_IDS = ["Block", "Block-hybridized", "HybridBlock", "HybridBlock-hybridized"]


@pytest.mark.parametrize(("hybrid", "hybridize"), cnns.VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("name", sorted(cnns.CASES))
def test_chapter_cnn_matches_mxnet(name, hybrid, hybridize, numpy_mode):
    seen = []
    _check(name, cnns.run_case(mx, name, hybrid, hybridize, seen.append))
    assert isinstance(seen[0], mx.np.ndarray) and seen[0].ctx == mx.cpu()


@pytest.mark.gpu
@pytest.mark.parametrize(("hybrid", "hybridize"), cnns.VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("name", sorted(cnns.CASES))
def test_chapter_cnn_matches_mxnet_on_gpu(name, hybrid, hybridize, numpy_mode, gpu_available):
    seen = []
    with gpu_available:
        got = cnns.run_case(mx, name, hybrid, hybridize, seen.append)
    assert isinstance(seen[0], mx.np.ndarray) and seen[0].ctx == gpu_available
    _check(name, got)
