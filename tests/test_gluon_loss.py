"""``gluon.loss`` against the real MXNet 1.9.1.

The fixtures in ``tests/fixtures/mxnet_losses/`` were written by ``make_mxnet_loss_fixtures.py``
under the oracle: per case, the inputs, MXNet's output and the gradients ``backward()`` gave
its inputs. Each case is rebuilt here with hybridgpu by the generator's own ``build`` and must
give MXNet's ``repr``, name and output imperatively (rtol 1e-5), the same output hybridized, and
MXNet's gradients through the symbolic backward (the loss called on ``sym.var`` inputs, then
``simple_bind`` and ``backward(out_grads=ones)``) and, once it exists, through
``hybridgpu.autograd``. Then: signatures, errors that name the loss and both shapes, numerical
stability, Symbol inputs without shapes, other contexts, and the differences kept on purpose.
"""

from __future__ import annotations

import filecmp
import importlib.util
import json
import math
import pathlib
import subprocess
import sys
import types

import numpy as np
import pytest

import hybridgpu
from hybridgpu import nd, sym
from hybridgpu.base import MXNetError
from hybridgpu.gluon import loss as gloss

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "fixtures"))
import make_mxnet_loss_fixtures as gen  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "mxnet_losses"
ORACLE = ROOT / ".oracle" / "bin" / "python"
DOC = json.loads((FIXTURES / "cases.json").read_text())
TABLE = DOC["cases"]
ARRAYS = dict(np.load(FIXTURES / "arrays.npz"))
CASES = sorted(TABLE)
GRAD_CASES = [c for c in CASES if TABLE[c]["grads"]]
HAS_AUTOGRAD = importlib.util.find_spec("hybridgpu.autograd") is not None

#: hybridgpu seen through the names the generator uses (``mx.name``, ``mx.gluon.loss``).
HG = types.SimpleNamespace(name=hybridgpu.name, gluon=types.SimpleNamespace(loss=gloss))


def _arrays(case):
    return [None if spec is None else ARRAYS[f"{case}/in{i}"]
            for i, spec in enumerate(TABLE[case]["inputs"])]


def _nds(arrays, ctx=None):
    return [None if a is None else nd.array(a, ctx=ctx) for a in arrays]


def _close(got, want, what, rtol=1e-5, atol=1e-6):
    got = got.asnumpy() if hasattr(got, "asnumpy") else np.asarray(got)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != MXNet's {want.shape}"
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=what)


# -- MXNet's classes and signatures ------------------------------------------------------------

def test_every_mxnet_loss_is_here_with_its_aliases():
    assert set(gen.LOSSES) <= set(gloss.__all__)
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss
    assert gloss.SigmoidBCELoss is gloss.SigmoidBinaryCrossEntropyLoss
    for name in gen.LOSSES:
        assert issubclass(getattr(gloss, name), gloss.Loss)
        assert issubclass(getattr(gloss, name), hybridgpu.gluon.HybridBlock)


@pytest.mark.parametrize("cls", gen.LOSSES)
def test_signature_matches_mxnet(cls):
    """Constructor and ``hybrid_forward`` arguments, their order, kinds and defaults."""
    assert gen.signature_table(HG)[cls] == DOC["signatures"][cls]


# -- against MXNet's outputs and gradients ------------------------------------------------------

@pytest.mark.parametrize("case", CASES)
def test_forward_matches_mxnet(case):
    loss = gen.build(HG, case)
    assert repr(loss) == TABLE[case]["repr"]
    assert loss.name == TABLE[case]["name"]
    out = loss(*_nds(_arrays(case)))
    assert list(out.shape) == TABLE[case]["out_shape"]
    assert out.dtype == np.float32
    _close(out, ARRAYS[f"{case}/out"], f"{case}: output")


@pytest.mark.parametrize("case", CASES)
def test_hybridized_matches_imperative(case):
    loss = gen.build(HG, case)
    inputs = _nds(_arrays(case))
    imperative = loss(*inputs).asnumpy()
    loss.hybridize()
    for _ in range(2):  # the trace, then the replay
        _close(loss(*inputs), imperative, f"{case}: hybridized output", rtol=1e-6)


#: Losses that need their inputs' shapes to build a graph (unrolled over time, batch size).
NEEDS_SHAPES = ("CTCLoss", "SDMLLoss")


def _symbolic(case, shaped):
    """Output and input gradients through ``simple_bind`` and ``backward(out_grads=ones)``, the
    loss built on variables declared with their shapes or (``shaped=False``) without."""
    arrays = _arrays(case)
    names = {i: f"in{i}" for i, a in enumerate(arrays) if a is not None}
    variables = [None if a is None else sym.var(names[i], shape=a.shape if shaped else None)
                 for i, a in enumerate(arrays)]
    out = gen.build(HG, case)(*variables)
    assert sorted(out.list_arguments()) == sorted(names.values())
    exe = out.simple_bind(hybridgpu.cpu(), **{names[i]: arrays[i].shape for i in names})
    for i, name in names.items():
        exe.arg_dict[name][:] = arrays[i]
    exe.forward(is_train=True)
    exe.backward(nd.ones(exe.outputs[0].shape))
    return exe.outputs[0], {i: exe.grad_dict[names[i]] for i in TABLE[case]["grads"]}


@pytest.mark.parametrize(("case", "shaped"), [
    pytest.param(case, shaped, id=f"{case}-{'shaped' if shaped else 'shapeless'}")
    for case in GRAD_CASES for shaped in (True, False)
    if shaped or TABLE[case]["class"] not in NEEDS_SHAPES])
def test_symbolic_gradients_match_mxnet(case, shaped):
    out, grads = _symbolic(case, shaped)
    _close(out, ARRAYS[f"{case}/out"], f"{case}: symbolic output")
    for i, grad in grads.items():
        _close(grad, ARRAYS[f"{case}/grad{i}"], f"{case}: gradient of input {i}", atol=1e-5)


@pytest.mark.skipif(not HAS_AUTOGRAD, reason="hybridgpu.autograd is not written yet")
@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
@pytest.mark.parametrize("case", GRAD_CASES)
def test_autograd_gradients_match_mxnet(case, hybridize):
    autograd = importlib.import_module("hybridgpu.autograd")
    loss = gen.build(HG, case)
    if hybridize:
        loss.hybridize()
    inputs = _nds(_arrays(case))
    for i in TABLE[case]["grads"]:
        inputs[i].attach_grad()
    with autograd.record():
        out = loss(*inputs)
    out.backward()
    _close(out, ARRAYS[f"{case}/out"], f"{case}: recorded output")
    for i in TABLE[case]["grads"]:
        _close(inputs[i].grad, ARRAYS[f"{case}/grad{i}"], f"{case}: gradient of input {i}",
               atol=1e-5)


# -- errors --------------------------------------------------------------------------------------

@pytest.mark.parametrize("hybridize", [False, True], ids=["imperative", "hybridized"])
def test_label_of_another_size_names_the_loss_and_both_shapes(hybridize):
    loss = gloss.L2Loss(prefix="l2_")
    if hybridize:
        loss.hybridize()
    with pytest.raises(gloss.LabelShapeError) as info:
        loss(nd.ones((2, 3)), nd.ones((2, 4)))
    message = str(info.value)
    assert "L2Loss 'l2'" in message
    assert "label of shape (2, 4)" in message and "pred of shape (2, 3)" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, MXNetError)


@pytest.mark.parametrize(("loss", "inputs", "words"), [
    (gloss.SoftmaxCELoss(), [(3, 5), (3, 2)], ["SoftmaxCrossEntropyLoss", "(3, 2)", "(3, 5)",
                                               "sparse_label=True"]),
    (gloss.SoftmaxCELoss(sparse_label=False), [(3, 5), (3,)], ["label of shape (3,)"]),
    (gloss.TripletLoss(), [(3, 4), (3, 4), (2, 4)], ["TripletLoss", "negative of shape (2, 4)",
                                                     "pred of shape (3, 4)"]),
    (gloss.CosineEmbeddingLoss(), [(3, 4), (3, 5), (3,)], ["input1 of shape (3, 4)",
                                                           "input2 of shape (3, 5)"]),
    (gloss.PoissonNLLLoss(), [(3, 4), (4, 4)], ["PoissonNLLLoss", "target of shape (4, 4)"]),
    (gloss.CTCLoss(), [(2, 5, 4), (3, 2)], ["CTCLoss", "label of shape (3, 2)"]),
], ids=["sparse_ce", "dense_ce", "triplet", "cosine", "poisson", "ctc"])
def test_shape_errors_name_the_loss(loss, inputs, words):
    arrays = [nd.zeros(shape) for shape in inputs]
    for hybridize in (False, True):
        loss.hybridize(hybridize)
        with pytest.raises(gloss.LabelShapeError) as info:
            loss(*arrays)
        for word in words:
            assert word in str(info.value)


def test_label_shape_is_checked_on_symbols_with_shapes():
    pred, label = sym.var("pred", shape=(2, 3)), sym.var("label", shape=(3, 3))
    with pytest.raises(gloss.LabelShapeError, match=r"label of shape \(3, 3\)"):
        gloss.L1Loss()(pred, label)


def test_bad_constructor_arguments_are_refused_when_made():
    with pytest.raises(TypeError, match="L1Loss: weight must be a number"):
        gloss.L1Loss(weight="a")
    with pytest.raises(TypeError, match="weight must be a number"):
        gloss.HuberLoss(weight=nd.ones((1,)))
    with pytest.raises(ValueError, match="label_format can only be 'signed' or 'binary'"):
        gloss.LogisticLoss(label_format="foo")
    with pytest.raises(ValueError, match="'NTC' and 'TNC'"):
        gloss.CTCLoss(layout="NCT")
    with pytest.raises(ValueError, match="'NT' and 'TN'"):
        gloss.CTCLoss(label_layout="TT")


def test_losses_that_need_shapes_say_so_on_shapeless_symbols():
    with pytest.raises(MXNetError, match="CTCLoss .*needs the shapes of pred and label"):
        gloss.CTCLoss()(sym.var("pred"), sym.var("label"))
    with pytest.raises(MXNetError, match="SDMLLoss .*needs the batch size"):
        gloss.SDMLLoss()(sym.var("x1"), sym.var("x2"))


# -- behaviour -----------------------------------------------------------------------------------

def test_losses_on_shapeless_symbols_reshape_labels_in_the_graph():
    """As in MXNet, a label is reshaped with ``reshape_like``: the graph keeps no shapes (and
    lists its arguments in MXNet's order)."""
    out = gloss.L2Loss()(sym.var("pred"), sym.var("label"))
    assert out.list_arguments() == ["label", "pred"]
    pred = np.arange(6, dtype=np.float32).reshape(2, 3)
    label = np.ones((2, 3, 1), dtype=np.float32)
    got = out.eval(hybridgpu.cpu(), pred=nd.array(pred), label=nd.array(label))[0]
    _close(got, 0.5 * ((pred - 1) ** 2).mean(axis=1), "L2Loss on Symbols")
    json_text = out.tojson()
    assert "reshape_like" in json_text


def test_hybridized_loss_retraces_for_a_new_batch_size():
    loss = gloss.SoftmaxCELoss()
    loss.hybridize()
    for batch in (2, 5):
        pred = np.random.RandomState(batch).uniform(-1, 1, (batch, 4)).astype(np.float32)
        label = np.arange(batch, dtype=np.float32) % 4
        log_p = pred - np.log(np.exp(pred).sum(axis=1, keepdims=True))
        want = -log_p[np.arange(batch), label.astype(int)]
        _close(loss(nd.array(pred), nd.array(label)), want, f"batch {batch}")


def test_stable_for_large_logits():
    big = np.array([[-1000.0, 1000.0, 0.0]], dtype=np.float32)
    ones = np.ones_like(big)
    bce = gloss.SigmoidBCELoss()(nd.array(big), nd.array(ones)).asnumpy()
    _close(bce, np.array([1000 + 0 + math.log(2)], dtype=np.float32) / 3, "SigmoidBCELoss")
    logistic = gloss.LogisticLoss()(nd.array(big), nd.array(ones)).asnumpy()
    _close(logistic, np.array([(1000 + math.log(2)) / 3]), "LogisticLoss")
    ce = gloss.SoftmaxCELoss()(nd.array(big), nd.array([0])).asnumpy()
    _close(ce, np.array([2000.0], dtype=np.float32), "SoftmaxCELoss")


def test_poisson_compute_full_is_finite_for_zero_targets():
    """MXNet 1.9.1 returns NaN here (``0 * log(0)``); Stirling's term only counts above 1."""
    pred = np.array([[0.5, -0.5, 1.0]], dtype=np.float32)
    target = np.array([[0.0, 1.0, 4.0]], dtype=np.float32)
    out = gloss.PoissonNLLLoss(compute_full=True)(nd.array(pred), nd.array(target))
    stirling = np.array([0, 0, 4 * math.log(4) - 4 + 0.5 * math.log(2 * math.pi * 4)])
    _close(out, np.array([(np.exp(pred) - target * pred + stirling).mean()]), "Poisson full")


def test_l2_weight_none_means_one():
    pred, label = nd.array([[3.0]]), nd.array([[1.0]])
    assert gloss.L2Loss(weight=None)(pred, label).asnumpy().tolist() == [2.0]


def test_ctc_infeasible_label_gives_zero_loss_and_gradient():
    """1, 1 needs three steps (1, blank, 1): with two it is impossible, and MXNet gives 0 (and
    leaves the gradient uninitialized; here it is 0). With three there is one alignment."""
    out, grads = _ctc_with_gradient(np.zeros((1, 2, 4), np.float32), [[1, 1]])
    assert out.tolist() == [0.0]
    assert not grads.any()
    out, grads = _ctc_with_gradient(np.zeros((1, 3, 4), np.float32), [[1, 1]])
    _close(out, np.array([3 * math.log(4)], np.float32), "the one alignment of 1, 1")
    probability = np.full((1, 3, 4), 0.25, np.float32)
    chosen = np.zeros((1, 3, 4), np.float32)
    chosen[0, [0, 1, 2], [1, 3, 1]] = 1  # d(-log p)/d logits = softmax - the alignment
    _close(grads, probability - chosen, "gradient of the one alignment")


def test_ctc_label_longer_than_the_sequence_is_refused():
    with pytest.raises(MXNetError, match=r"CTCLoss 'ctcloss\d+': the max number of labels "
                                         r"cannot exceed .*\(1, 3\).*\(2, 1, 4\)"):
        gloss.CTCLoss()(nd.zeros((1, 2, 4)), nd.array([[0, 1, 2]]))


def _ctc_with_gradient(pred, label):
    variables = [sym.var("pred", shape=pred.shape), sym.var("label", shape=np.shape(label))]
    out = gloss.CTCLoss()(*variables)
    exe = out.simple_bind(hybridgpu.cpu(), pred=pred.shape, label=np.shape(label))
    exe.arg_dict["pred"][:] = pred
    exe.arg_dict["label"][:] = np.array(label, dtype=np.float32)
    exe.forward(is_train=True)
    exe.backward(nd.ones(exe.outputs[0].shape))
    return exe.outputs[0].asnumpy(), exe.grad_dict["pred"].asnumpy()


@pytest.mark.parametrize("case", ["cosine_margin", "sdml_default", "ctc_pred_lengths",
                                  "poisson_full"])
def test_runs_on_the_inputs_context(case):
    """Constants made inside a loss (zeros, eye, arange) follow the inputs' context."""
    loss = gen.build(HG, case)
    out = loss(*_nds(_arrays(case), ctx=hybridgpu.cpu(1)))
    assert out.context == hybridgpu.cpu(1)
    _close(out, ARRAYS[f"{case}/out"], f"{case} on cpu(1)")


@pytest.mark.parametrize("case", CASES)
def test_float64_inputs_give_float64_losses(case):
    """Constants made inside a loss (zeros, eye, arange, one_hot) take the inputs' dtype and
    integer labels are cast (MXNet fails on float64 for CosineEmbeddingLoss and SDMLLoss)."""
    loss = gen.build(HG, case)
    inputs = [None if a is None else nd.array(a, dtype="float64") for a in _arrays(case)]
    for hybridize in (False, True):
        loss.hybridize(hybridize)
        out = loss(*inputs)
        assert out.dtype == np.float64
        _close(out, ARRAYS[f"{case}/out"], f"{case} in float64", rtol=1e-4, atol=1e-5)


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_gpu_matches_mxnet(case, gpu_available):
    loss = gen.build(HG, case)
    inputs = _nds(_arrays(case), ctx=gpu_available)
    out = loss(*inputs)
    assert out.context == gpu_available
    _close(out, ARRAYS[f"{case}/out"], f"{case} on {gpu_available}")
    loss.hybridize()
    _close(loss(*inputs), ARRAYS[f"{case}/out"], f"{case} hybridized on {gpu_available}")


def test_loss_in_a_hybridized_training_graph():
    """A loss called inside another HybridBlock becomes part of its traced graph."""
    nn = hybridgpu.gluon.nn

    class WithLoss(hybridgpu.gluon.HybridBlock):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            with self.name_scope():
                self.dense = nn.Dense(3, in_units=4)
                self.loss = gloss.SoftmaxCELoss()

        def hybrid_forward(self, F, x, label):
            return self.loss(self.dense(x), label)

    net = WithLoss()
    net.initialize()
    x, label = nd.array(np.eye(4, dtype=np.float32)[:2]), nd.array([0, 2])
    imperative = net(x, label).asnumpy()
    net.hybridize()
    _close(net(x, label), imperative, "hybridized net with a loss", rtol=1e-6)
    assert imperative.shape == (2,)


# -- the generator -------------------------------------------------------------------------------

@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_generator_reproduces_fixtures(tmp_path):
    """Re-running the generator under the oracle writes the committed fixtures byte for
    byte."""
    subprocess.run([str(ORACLE), str(FIXTURES.parent / "make_mxnet_loss_fixtures.py"),
                    "--out", str(tmp_path)], check=True, capture_output=True, cwd=ROOT)
    for name in ("cases.json", "arrays.npz"):
        assert filecmp.cmp(tmp_path / name, FIXTURES / name, shallow=False), (
            f"{name} is out of date: run `.oracle/bin/python "
            "tests/fixtures/make_mxnet_loss_fixtures.py`")
