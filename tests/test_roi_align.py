"""``contrib.ROIAlign`` against the real MXNet 1.9.1 (fixtures written by
``tests/fixtures/make_mxnet_roi_align_fixtures.py``): outputs and gradients through autograd,
imperative and hybridized, plus the errors bad inputs get. The op table
(``tests/op_cases/contrib_roi.py``) checks it against a loop reference and finite differences.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "mxnet_roi_align")
with open(os.path.join(HERE, "cases.json")) as _file:
    SPEC = json.load(_file)
ARRAYS = dict(np.load(os.path.join(HERE, "arrays.npz")))


def _attrs(name):
    return {k: tuple(v) if isinstance(v, list) else v for k, v in SPEC[name]["attrs"].items()}


def _run(name, hybridize=False, ctx=None):
    """(output, data gradient, rois gradient) of a fixture case, through autograd."""
    ctx = ctx or mx.cpu()
    data = mx.nd.array(ARRAYS[f"{name}/data"], ctx=ctx)
    rois = mx.nd.array(ARRAYS[f"{name}/rois"], ctx=ctx)
    data.attach_grad()
    rois.attach_grad()

    class Net(mx.gluon.HybridBlock):
        def hybrid_forward(self, F, x, r):
            return F.contrib.ROIAlign(x, r, **_attrs(name))

    net = Net()
    if hybridize:
        net.hybridize()
    with mx.autograd.record():
        out = net(data, rois)
    out.backward(mx.nd.array(ARRAYS[f"{name}/head"], ctx=ctx))
    return out.asnumpy(), data.grad.asnumpy(), rois.grad.asnumpy()


@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("name", sorted(SPEC))
def test_matches_mxnet(name, hybridize):
    out, grad_data, grad_rois = _run(name, hybridize)
    np.testing.assert_allclose(out, ARRAYS[f"{name}/out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_data, ARRAYS[f"{name}/grad_data"], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(grad_rois, ARRAYS[f"{name}/grad_rois"])


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["adaptive", "ratio2_aligned", "position_sensitive"])
def test_matches_mxnet_on_gpu(name, gpu_available):
    """The same numbers through the GPU path (CuPy, or the virtual GPU), hybridized."""
    out, grad_data, _ = _run(name, hybridize=True, ctx=gpu_available)
    np.testing.assert_allclose(out, ARRAYS[f"{name}/out"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(grad_data, ARRAYS[f"{name}/grad_data"], rtol=1e-5, atol=1e-6)


def test_fixture_rois_reach_the_edge_rules():
    """The fixture's rois cross the map's edges and one is far outside it, so MXNet's
    clamping and skipping are what the comparison checks."""
    rois = ARRAYS["ratio2/rois"]
    scaled = rois[:, 1:] * SPEC["ratio2"]["attrs"]["spatial_scale"]
    assert (scaled[:, :2] < 0).any() and (scaled[:, 2] > 9 + 1).any()
    assert (scaled[:, 3] > 7 + 1).any()


def test_negative_batch_index_gives_zeros():
    data = mx.nd.array(np.random.RandomState(0).uniform(1, 2, (1, 2, 4, 4)))
    rois = mx.nd.array([[-1, 0, 0, 3, 3], [0, 0, 0, 3, 3]])
    out = mx.nd.contrib.ROIAlign(data, rois, (2, 2), 1.0).asnumpy()
    assert (out[0] == 0).all() and (out[1] > 0).all()


def test_aligned_skips_masked_rois_before_checking_their_size():
    """GluonCV's FPN masks rois of other levels as all -1 (zero size): with aligned=True
    MXNet skips them (batch index < 0) before its size check, and gives them zeros."""
    data = mx.nd.array(np.random.RandomState(1).uniform(1, 2, (1, 2, 4, 4)))
    rois = mx.nd.array([[-1, -1, -1, -1, -1], [0, 0, 0, 3, 3]])
    out = mx.nd.contrib.ROIAlign(data, rois, (2, 2), 1.0, aligned=True).asnumpy()
    assert np.isfinite(out).all() and (out[0] == 0).all() and (out[1] > 0).all()


def test_shape_and_dtype_inference():
    data, rois = mx.sym.var("data"), mx.sym.var("rois")
    out = mx.sym.contrib.ROIAlign(data, rois, pooled_size=(3, 2), spatial_scale=0.25,
                                  position_sensitive=True)
    _, shapes, _ = out.infer_shape(data=(2, 12, 8, 8), rois=(5, 5))
    assert shapes == [(5, 2, 3, 2)]
    _, types, _ = out.infer_type(data=np.float64, rois=np.float64)
    assert types == [np.float64]


@pytest.mark.parametrize("rois_shape, attrs, message", [
    ((3, 4), {}, "rois must have shape (R, 5)"),
    ((3, 5), {"position_sensitive": True, "pooled_size": (2, 2)}, "must divide by"),
    ((3, 5), {"pooled_size": (2,)}, "pooled_size must be two positive ints"),
])
def test_bad_shapes_name_the_problem(rois_shape, attrs, message):
    data = mx.nd.zeros((1, 3, 4, 4))
    kwargs = {"pooled_size": (2, 2), "spatial_scale": 1.0, **attrs}
    with pytest.raises(MXNetError, match=message.replace("(", r"\(").replace(")", r"\)")):
        mx.nd.contrib.ROIAlign(data, mx.nd.zeros(rois_shape), **kwargs).wait_to_read()


def test_rois_dtype_must_match_data():
    data, rois = mx.sym.var("data"), mx.sym.var("rois")
    out = mx.sym.contrib.ROIAlign(data, rois, pooled_size=(2, 2), spatial_scale=1.0)
    with pytest.raises(MXNetError, match="rois must have data's dtype float32"):
        out.infer_type(data=np.float32, rois=np.float64)


def test_aligned_empty_roi_is_an_error():
    """MXNet aborts on it (CHECK_GT roi_width > 0); here it is an error naming the roi."""
    data = mx.nd.zeros((1, 1, 4, 4))
    rois = mx.nd.array([[0, 1, 1, 2, 2], [0, 3, 3, 3, 3]])
    with pytest.raises(MXNetError, match="roi 1 is"):
        mx.nd.contrib.ROIAlign(data, rois, (2, 2), 1.0, aligned=True).wait_to_read()
