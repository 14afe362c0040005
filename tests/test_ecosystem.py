"""GluonCV 0.10.5, GluonNLP 0.10.0 and d2lzh 1.0.0, unchanged, through the ``import mxnet``
alias: each package imports, and one small model or helper of each runs (imperatively and
hybridized). Equality with MXNet 1.9.1 on the same weights, model by model, is measured by
``benchmarks/ecosystem_models.py`` (its table: benchmarks/results/ecosystem_models.md).

The packages are optional: install them with
``pip install --no-deps gluoncv==0.10.5.post0 gluonnlp==0.10.0 d2lzh==1.0.0`` and their light
import-time dependencies (the ``[ecosystem]`` extra); without them these tests skip.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile

import numpy as np
import pytest

import hybridgpu
from hybridgpu import mxnet_alias

INSTALL = ("pip install --no-deps gluoncv==0.10.5.post0 gluonnlp==0.10.0 d2lzh==1.0.0 and "
           "pip install -e .[ecosystem]")


def _needs(package):
    if importlib.util.find_spec(package) is None:
        pytest.skip(f"{package} is not installed ({INSTALL})")


@pytest.fixture(scope="module")
def mx():
    """hybridgpu as ``mxnet`` for this module; the packages imported through it stay
    loaded (they hold references to hybridgpu's modules only)."""
    had = mxnet_alias.is_installed()
    module = mxnet_alias.install()
    yield module
    if not had:
        mxnet_alias.uninstall()
        for name in [n for n in sys.modules
                     if n.split(".")[0] in ("gluoncv", "gluonnlp", "d2lzh")]:
            del sys.modules[name]


def _outputs(out):
    return [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


# -- GluonCV ----------------------------------------------------------------------------------

def test_gluoncv_imports_and_its_blocks_are_hybridgpus(mx):
    _needs("gluoncv")
    import gluoncv

    assert gluoncv._found_mxnet, "gluoncv's MXNet version check refused the alias"
    net = gluoncv.model_zoo.get_model("cifar_resnet20_v1", pretrained=False)
    assert isinstance(net, hybridgpu.gluon.HybridBlock)


def test_gluoncv_cifar_resnet_hybridized_and_exported_equal(mx):
    _needs("gluoncv")
    import gluoncv

    net = gluoncv.model_zoo.get_model("cifar_resnet20_v1", pretrained=False)
    net.initialize(mx.init.Xavier())
    x = mx.nd.array(np.random.RandomState(0).uniform(-1, 1, (2, 3, 32, 32)))
    eager = net(x).asnumpy()
    assert eager.shape == (2, 10)
    net.hybridize()
    np.testing.assert_allclose(net(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)
    with tempfile.TemporaryDirectory() as tmp:
        net.export(os.path.join(tmp, "cifar"))
        loaded = mx.gluon.SymbolBlock.imports(os.path.join(tmp, "cifar-symbol.json"), "data",
                                              os.path.join(tmp, "cifar-0000.params"))
        np.testing.assert_allclose(loaded(x).asnumpy(), eager, rtol=1e-5, atol=1e-6)


def test_gluoncv_yolo3_detections_are_nms_ordered(mx):
    """YOLOv3's head: box_nms over every class; kept detections come first, by score."""
    _needs("gluoncv")
    import gluoncv

    net = gluoncv.model_zoo.get_model("yolo3_mobilenet0.25_voc", pretrained=False,
                                      pretrained_base=False)
    net.initialize()
    ids, scores, boxes = _outputs(net(mx.nd.array(np.random.RandomState(1).rand(1, 3, 64, 64))))
    assert ids.shape == scores.shape == (1, 100, 1) and boxes.shape == (1, 100, 4)
    kept = ids[0, :, 0] >= 0
    count = int(kept.sum())
    assert count and kept[:count].all(), "kept rows must come first"
    assert np.all(np.diff(scores[0, kept, 0]) <= 0), "kept rows must be by falling score"
    assert set(np.unique(ids[0, kept, 0])) <= set(range(20))


def test_gluoncv_ssd_training_step(mx):
    """GluonCV's SSD training building blocks: the target generator (box_iou,
    bipartite_matching, box_encode), SSDMultiBoxLoss, backward and the Trainer."""
    _needs("gluoncv")
    import gluoncv
    from gluoncv.model_zoo.ssd.target import SSDTargetGenerator

    net = gluoncv.model_zoo.get_model("ssd_300_mobilenet0.25_voc", pretrained=False,
                                      pretrained_base=False)
    net.initialize()      # (Xavier refuses its BatchNorm gammas that have no init, as MXNet)
    x = mx.nd.array(np.random.RandomState(9).uniform(-1, 1, (2, 3, 128, 128)))
    with mx.autograd.train_mode():
        cls_preds, _, anchors = net(x)
    boxes = mx.nd.array([[[10, 10, 60, 70], [50, 40, 120, 110]],
                         [[5, 5, 100, 100], [-1, -1, -1, -1]]])
    ids = mx.nd.array([[[3], [7]], [[1], [-1]]])
    targets = SSDTargetGenerator(iou_thresh=0.5, stds=(0.1, 0.1, 0.2, 0.2),
                                 negative_mining_ratio=-1)(anchors, cls_preds, boxes, ids)
    cls_targets, box_targets = targets[0], targets[1]
    positive = cls_targets.asnumpy() > 0
    assert positive.sum(axis=1).min() >= 1          # every image has a matched anchor
    assert set(np.unique(cls_targets.asnumpy()[positive])) <= {2.0, 4.0, 8.0}  # ids + 1
    loss_fn = gluoncv.loss.SSDMultiBoxLoss()
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.01})
    losses = []
    for _ in range(3):
        with mx.autograd.record():
            cls_preds, box_preds, _ = net(x)
            total, _, _ = loss_fn(cls_preds, box_preds, cls_targets, box_targets)
            mx.autograd.backward(total)
        trainer.step(1)
        losses.append(sum(float(t.sum().asscalar()) for t in total))
    assert losses[-1] < losses[0]


def test_gluoncv_data_presets(mx):
    """GluonCV's ImageNet eval preset (Resize, CenterCrop, to_tensor, normalize) and its SSD
    and YOLOv3 training transforms (random expand/crop/flip, colour distortion, imresize
    through mxnet.image.image._get_interp_method) on one uint8 image with boxes."""
    _needs("gluoncv")
    from gluoncv.data.transforms import presets

    img = mx.nd.array(np.random.RandomState(10).randint(0, 256, (60, 80, 3)), dtype="uint8")
    tensor = presets.imagenet.transform_eval(img, resize_short=32, crop_size=24)
    assert tensor.shape == (1, 3, 24, 24) and tensor.dtype == np.float32
    label = np.array([[5, 5, 40, 50, 3], [30, 20, 70, 55, 7]], "f4")
    for transform in (presets.ssd.SSDDefaultTrainTransform(64, 64),
                      presets.yolo.YOLO3DefaultTrainTransform(64, 64)):
        image, boxes = transform(img, label)
        assert image.shape == (3, 64, 64) and boxes.shape[1] == 5
        assert (boxes[:, :4] >= 0).all() and (boxes[:, :4] <= 64).all()


# -- GluonNLP ---------------------------------------------------------------------------------

def test_gluonnlp_language_model_hybridized_equal(mx):
    """(StandardRNN with dropout > 0 calls nd.Dropout in hybrid_forward: it cannot be
    hybridized on MXNet either.)"""
    _needs("gluonnlp")
    import gluonnlp as nlp

    net = nlp.model.StandardRNN("lstm", vocab_size=50, embed_size=8, hidden_size=8,
                                num_layers=2, dropout=0.0, tie_weights=False)
    net.initialize(mx.init.Xavier())
    tokens = mx.nd.array(np.random.RandomState(2).randint(0, 50, (5, 2)))
    state = net.begin_state(batch_size=2, func=mx.nd.zeros)
    eager, _ = net(tokens, state)
    assert eager.shape == (5, 2, 50)
    net.hybridize()
    hybrid, _ = net(tokens, state)
    np.testing.assert_allclose(hybrid.asnumpy(), eager.asnumpy(), rtol=1e-5, atol=1e-6)


def test_gluonnlp_awd_lstm_weight_drop(mx):
    """AWD-LSTM's WeightDropParameter reads MXNet's private Parameter names; predicting,
    imperative = hybridized; training, the weight drop changes the output."""
    _needs("gluonnlp")
    import gluonnlp as nlp

    net = nlp.model.AWDRNN("lstm", vocab_size=50, embed_size=8, hidden_size=8, num_layers=2,
                           tie_weights=True, dropout=0.0, weight_drop=0.9, drop_h=0.0,
                           drop_i=0.0, drop_e=0.0)
    net.initialize(mx.init.Uniform(1.0))
    tokens = mx.nd.array(np.random.RandomState(8).randint(0, 50, (5, 2)))
    state = net.begin_state(batch_size=2, func=mx.nd.zeros)
    predicted = net(tokens, state)[0].asnumpy()
    with mx.autograd.record():
        trained = net(tokens, state)[0].asnumpy()
    assert np.abs(trained - predicted).max() > 1e-3
    net.hybridize()
    np.testing.assert_allclose(net(tokens, state)[0].asnumpy(), predicted, rtol=1e-5,
                               atol=1e-6)


def test_gluonnlp_small_bert_hybridized_equal(mx):
    """BERT's fused self-attention (interleaved_matmul_selfatt_*), valid lengths and the
    masked-LM decoder (reshape_like over axis ranges)."""
    _needs("gluonnlp")
    import gluonnlp as nlp

    encoder = nlp.model.BERTEncoder(num_layers=2, units=16, hidden_size=32, max_length=32,
                                    num_heads=2, dropout=0.0)
    net = nlp.model.BERTModel(encoder, vocab_size=30, token_type_vocab_size=2, units=16,
                              embed_size=16, use_pooler=True, use_decoder=True,
                              use_classifier=True)
    net.initialize(mx.init.Normal(0.1))
    rng = np.random.RandomState(5)
    inputs = (mx.nd.array(rng.randint(0, 30, (2, 7))), mx.nd.zeros((2, 7)),
              mx.nd.array([7, 5]), mx.nd.array([[1, 2], [3, 4]]))
    eager = _outputs(net(*inputs))
    assert [o.shape for o in eager] == [(2, 7, 16), (2, 16), (2, 2), (2, 2, 30)]
    net.hybridize()
    for got, want in zip(_outputs(net(*inputs)), eager):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_gluonnlp_transformer_hybridized_equal_and_elmo_encoder_runs(mx):
    """The NMT transformer (arange_like, masks) imperative = hybridized; ELMo's LSTMP encoder
    (contrib.foreach, LSTMPCell with clipping) runs imperatively (foreach has no symbolic
    form here)."""
    _needs("gluonnlp")
    import gluonnlp as nlp

    enc, dec, one_step = nlp.model.transformer.get_transformer_encoder_decoder(
        num_layers=1, units=16, hidden_size=32, num_heads=2, max_src_length=20,
        max_tgt_length=20, dropout=0.0)
    vocab = nlp.Vocab(nlp.data.count_tokens(list("abcdef")))
    model = nlp.model.translation.NMTModel(
        src_vocab=vocab, tgt_vocab=vocab, encoder=enc, decoder=dec,
        one_step_ahead_decoder=one_step, embed_size=16, prefix="t_")
    model.initialize(mx.init.Xavier())
    rng = np.random.RandomState(6)
    args = (mx.nd.array(rng.randint(0, 8, (2, 5))), mx.nd.array(rng.randint(0, 8, (2, 4))),
            mx.nd.array([5, 3]), mx.nd.array([4, 2]))
    eager = model(*args)[0].asnumpy()
    model.hybridize()
    np.testing.assert_allclose(model(*args)[0].asnumpy(), eager, rtol=1e-5, atol=1e-6)
    encoder = nlp.model.BiLMEncoder(mode="lstmpc", num_layers=2, input_size=8, hidden_size=16,
                                    dropout=0.0, skip_connection=True, proj_size=8,
                                    cell_clip=3, proj_clip=3)
    encoder.initialize()
    out, _ = encoder(mx.nd.ones((5, 2, 8)), encoder.begin_state(mx.nd.zeros, batch_size=2),
                     mx.nd.ones((2, 5)))
    assert out.shape == (2, 5, 2, 16)
    assert np.abs(out.asnumpy()).max() <= 3 + 1e-6     # proj_clip holds


def test_gluonnlp_bertadam_lowers_the_loss(mx):
    """BERTAdam runs on the contrib AdamW update ops."""
    _needs("gluonnlp")
    import gluonnlp  # noqa: F401  (registers 'bertadam')

    net = mx.gluon.nn.Dense(1, in_units=4)
    net.initialize(mx.init.Xavier())
    trainer = mx.gluon.Trainer(net.collect_params(), "bertadam", {"learning_rate": 0.05})
    x = mx.nd.array(np.random.RandomState(3).rand(16, 4))
    y = x.sum(axis=1, keepdims=True)
    losses = []
    for _ in range(20):
        with mx.autograd.record():
            loss = ((net(x) - y) ** 2).mean()
        loss.backward()
        trainer.step(1)
        losses.append(loss.asscalar())
    assert losses[-1] < 0.5 * losses[0]


# -- d2lzh ------------------------------------------------------------------------------------

def test_d2lzh_linear_regression_from_scratch(mx):
    """The book's chapter 3 loop with d2lzh's data_iter, linreg, squared_loss and sgd."""
    _needs("d2lzh")
    import d2lzh as d2l

    rng = np.random.RandomState(4)
    features = mx.nd.array(rng.normal(size=(1000, 2)))
    labels = features[:, 0] * 2 - features[:, 1] * 3.4 + 4.2
    w, b = mx.nd.zeros((2, 1)), mx.nd.zeros((1,))
    w.attach_grad()
    b.attach_grad()
    for _ in range(3):
        for x, y in d2l.data_iter(10, features, labels):
            with mx.autograd.record():
                loss = d2l.squared_loss(d2l.linreg(x, w, b), y)
            loss.backward()
            d2l.sgd([w, b], 0.03, 10)
    np.testing.assert_allclose(w.asnumpy().ravel(), [2, -3.4], atol=0.05)
    np.testing.assert_allclose(b.asnumpy(), [4.2], atol=0.05)


def test_d2lzh_corr2d_and_vocabulary(mx):
    _needs("d2lzh")
    import collections

    import d2lzh as d2l

    x = mx.nd.arange(12).reshape((3, 4))
    k = mx.nd.array([[1, -1]])
    want = x.asnumpy()[:, :-1] - x.asnumpy()[:, 1:]
    np.testing.assert_array_equal(d2l.corr2d(x, k).asnumpy(), want)
    vocab = d2l.text.vocab.Vocabulary(collections.Counter("abbccc"), min_freq=2)
    assert vocab.idx_to_token == ["<unk>", "c", "b"]


def test_d2lzh_rnn_from_scratch_trains_with_its_detach_habit(mx, capsys):
    """d2lzh.train_and_predict_rnn with consecutive batches calls ``s.detach()`` without
    keeping the result: the next step's graph starts from the previous step's state, whose
    graph the last backward freed. As in MXNet, that state is a constant there."""
    _needs("d2lzh")
    import re

    import d2lzh as d2l

    corpus = "the quick brown fox jumps over the lazy dog " * 12
    chars = sorted(set(corpus))
    char_to_idx = {c: i for i, c in enumerate(chars)}
    vocab, hidden, ctx = len(chars), 16, mx.cpu()

    def get_params():
        rng = np.random.RandomState(7)
        shapes = [(vocab, hidden), (hidden, hidden), (hidden,), (hidden, vocab), (vocab,)]
        params = [mx.nd.array(rng.normal(scale=0.01, size=s)) for s in shapes]
        for p in params:
            p.attach_grad()
        return params

    def init_state(batch_size, num_hiddens, ctx):
        return (mx.nd.zeros((batch_size, num_hiddens), ctx=ctx),)

    def rnn(inputs, state, params):
        w_xh, w_hh, b_h, w_hq, b_q = params
        (h,), outputs = state, []
        for x in inputs:
            h = mx.nd.tanh(mx.nd.dot(x, w_xh) + mx.nd.dot(h, w_hh) + b_h)
            outputs.append(mx.nd.dot(h, w_hq) + b_q)
        return outputs, (h,)

    d2l.train_and_predict_rnn(rnn, get_params, init_state, hidden, vocab, ctx,
                              [char_to_idx[c] for c in corpus], chars, char_to_idx, False,
                              4, 8, 100, 0.01, 4, 1, 5, ["the"])
    perplexities = [float(p) for p in re.findall(r"perplexity ([0-9.]+)", capsys.readouterr().out)]
    assert len(perplexities) == 4 and perplexities[-1] < 0.6 * perplexities[0]


def test_d2lzh_helpers_give_mxnets_numbers(mx):
    """d2lzh's deterministic helpers on the fixture's inputs, against MXNet 1.9.1's results
    (tests/fixtures/make_mxnet_d2lzh_fixtures.py wrote them with the real MXNet)."""
    _needs("d2lzh")
    import importlib

    import d2lzh as d2l

    fixtures = os.path.join(os.path.dirname(__file__), "fixtures")
    sys.path.insert(0, fixtures)
    try:
        maker = importlib.import_module("make_mxnet_d2lzh_fixtures")
    finally:
        sys.path.remove(fixtures)
    want = np.load(os.path.join(fixtures, "mxnet_d2lzh", "arrays.npz"))
    got = maker.run_helpers(mx, d2l)
    assert sorted(got) == sorted(want.files)
    for name in want.files:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-5, atol=1e-6, err_msg=name)
