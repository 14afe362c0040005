"""The training examples (``examples/train_mlp.py``, ``examples/train_cnn.py``) run as tests:
each reaches its stated test accuracy, imperatively and hybridized, and the two runs give the
same loss curve (same seed, same data order, no Dropout: only float rounding may differ)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx

ROOT = pathlib.Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))

import train_cnn  # noqa: E402
import train_mlp  # noqa: E402


@pytest.mark.parametrize("example", [train_mlp, train_cnn], ids=lambda m: m.__name__)
def test_example_learns_and_hybridized_training_matches_imperative(example):
    imperative, hybridized = [], []
    accuracy = example.main(["--quiet"], history=imperative)
    hybrid_accuracy = example.main(["--quiet", "--hybridize"], history=hybridized)
    assert accuracy >= example.TARGET_ACCURACY, imperative
    assert hybrid_accuracy >= example.TARGET_ACCURACY, hybridized
    assert imperative[-1] < imperative[0] / 4, f"the loss did not go down: {imperative}"
    np.testing.assert_allclose(hybridized, imperative, rtol=1e-4)


def test_hybridized_training_replays_the_traced_graphs(monkeypatch):
    """With ``--hybridize`` the layers' Python runs only while tracing: once, never per batch
    (the training batches in train mode and the test batch in predict mode are two compiled
    signatures of one trace: the layers' Python reads neither shapes nor train mode)."""
    calls = []
    dense_forward = mx.gluon.nn.Dense.hybrid_forward

    def counting(self, F, *args, **kwargs):
        calls.append(F.__name__)
        return dense_forward(self, F, *args, **kwargs)

    monkeypatch.setattr(mx.gluon.nn.Dense, "hybrid_forward", counting)
    train_mlp.main(["--quiet", "--epochs", "2", "--hybridize"])
    assert calls == ["hybridgpu.symbol"] * 3  # 3 Dense layers, traced once
    calls.clear()
    train_mlp.main(["--quiet", "--epochs", "2"])
    assert calls.count("hybridgpu.ndarray") == 3 * (2 * 20 + 2)  # every batch, every layer


def test_mlp_through_train_step_equals_the_hybridized_loop():
    """``--train-step``: each batch through ``gluon.TrainStep`` (one compiled program, the
    net's output returned for the accuracy) gives the hybridized loop's losses."""
    loop, stepped = [], []
    accuracy = train_mlp.main(["--quiet", "--epochs", "3", "--hybridize"], history=loop)
    same = train_mlp.main(["--quiet", "--epochs", "3", "--train-step"], history=stepped)
    np.testing.assert_allclose(stepped, loop, rtol=1e-6)
    assert same == accuracy


def test_mlp_trains_in_float16_with_float32_master_weights():
    """``--dtype float16``: ``net.cast('float16')`` and ``multi_precision``; it still learns,
    through the loop and through TrainStep, and the weights stay float16."""
    history = []
    accuracy = train_mlp.main(["--quiet", "--dtype", "float16", "--train-step"],
                              history=history)
    assert accuracy >= train_mlp.TARGET_ACCURACY, history
    assert history[-1] < history[0] / 4


@pytest.mark.gpu
def test_mlp_float16_train_step_on_gpu(gpu_available, monkeypatch):
    """On a gpu, every float16 step is one captured graph with the multi-precision update."""
    modes = []
    real_call = mx.gluon.TrainStep.__call__

    def spy(self, *args, **kwargs):
        out = real_call(self, *args, **kwargs)
        modes.append(self.mode)
        return out

    monkeypatch.setattr(mx.gluon.TrainStep, "__call__", spy)
    accuracy = train_mlp.main(["--quiet", "--ctx", "gpu", "--dtype", "float16", "--train-step",
                               "--epochs", "3"])
    assert set(modes) == {"captured"} and len(modes) == 3 * 20
    assert accuracy > 0.6


def test_mlp_prints_one_line_per_epoch(capsys):
    accuracy = train_mlp.main(["--epochs", "2", "--hybridize"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0:2] for line in lines] == [["[Epoch", "0]"], ["[Epoch", "1]"]]
    assert f"test-acc={accuracy:.3f}" in lines[-1]


def test_cnn_data_parallel_on_two_contexts_keeps_copies_in_sync(monkeypatch):
    """``--devices 2``: split_and_load over cpu(0) and cpu(1), one Trainer; the trained
    parameters' copies on both contexts stay identical and the net still learns. (BatchNorm's
    moving statistics are per context, as in MXNet: each copy sees its half of the batch.)"""
    nets = []
    build = train_cnn.build_net

    def keep(*args, **kwargs):
        nets.append(build(*args, **kwargs))
        return nets[-1]

    monkeypatch.setattr(train_cnn, "build_net", keep)
    accuracy = train_cnn.main(["--quiet", "--devices", "2", "--hybridize"])
    assert accuracy >= train_cnn.TARGET_ACCURACY
    params = nets[0].collect_params()
    for name, param in params.items():
        assert param.list_ctx() == [mx.cpu(0), mx.cpu(1)], name
        copies = [d.asnumpy() for d in param.list_data()]
        if param.grad_req == "null":
            assert not np.array_equal(copies[0], copies[1]), name
        else:
            np.testing.assert_array_equal(copies[0], copies[1], err_msg=name)
    assert sum(p.grad_req == "null" for p in params.values()) == 2  # the moving statistics


def test_the_data_sets_are_learnable_and_balanced():
    x, y = train_mlp.make_spirals(400, seed=3)
    assert x.shape == (400, 2) and x.dtype == np.float32 and set(np.unique(y)) == {0.0, 1.0}
    assert 0.4 < y.mean() < 0.6
    images, labels = train_cnn.make_strokes(400, seed=3)
    assert images.shape == (400, 1, 16, 16) and images.dtype == np.float32
    assert np.bincount(labels.astype(int)).min() > 70
    # a stroke is brighter than the noise: each image's brightest row or column is its stroke
    clean, _ = train_cnn.make_strokes(8, noise=0.0, seed=3)
    assert all(0.6 <= img.max() <= 1.0 and (img > 0).sum() >= 6 for img in clean[:, 0])


def test_script_runs_from_the_command_line():
    run = subprocess.run([sys.executable, str(EXAMPLES / "train_mlp.py"), "--epochs", "12"],
                         capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.splitlines()[-1].startswith("final test accuracy")


@pytest.mark.gpu
@pytest.mark.parametrize("example", [train_mlp, train_cnn], ids=lambda m: m.__name__)
def test_example_on_gpu_follows_the_cpu_loss_curve(example, gpu_available):
    cpu, gpu = [], []
    example.main(["--quiet", "--epochs", "3", "--hybridize"], history=cpu)
    example.main(["--quiet", "--epochs", "3", "--hybridize", "--ctx", "gpu"], history=gpu)
    # the compiled GPU program sums in other orders than NumPy (GEMMs, reductions): rounding
    # differences of 1e-7 that training amplifies epoch by epoch
    np.testing.assert_allclose(gpu[0], cpu[0], rtol=1e-4)
    np.testing.assert_allclose(gpu, cpu, rtol=2e-2)
