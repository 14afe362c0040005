"""The main job, ``python -m hybridgpu bench``: its options, its table, what it records, and
that it fixes the BLAS thread count."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from hybridgpu import bench, bench_env


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "hybridgpu", *args], capture_output=True,
                          text=True, timeout=300, check=False)


def test_bare_command_prints_help_and_succeeds():
    out = run_cli()
    assert out.returncode == 0, out.stderr
    assert "usage: python -m hybridgpu" in out.stdout and "bench" in out.stdout


def test_version_flag_prints_the_package_version():
    import hybridgpu

    out = run_cli("--version")
    assert out.returncode == 0
    assert out.stdout.strip() == f"hybridgpu {hybridgpu.__version__}"


def test_bench_rejects_unknown_model_and_bad_batch():
    assert run_cli("bench", "--model", "vgg99").returncode == 2
    bad = run_cli("bench", "--batch", "0")
    assert bad.returncode == 2 and "--batch" in bad.stderr


def test_bench_prints_device_reason_threads_spread_and_legend(tmp_path):
    path = tmp_path / "out.json"
    out = run_cli("bench", "--cpu", "--quick", "--model", "mlp", "--batch", "3", "--repeat",
                  "2", "--json", str(path))
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert "device: cpu(0): asked for with --cpu" in text
    assert "1 thread(s) (fixed to 1 with threadpoolctl" in text
    row = next(line for line in text.splitlines() if line.startswith("mlp-batch3"))
    assert "3x512" in row and row.count("(") == 3 and row.count("-") >= 3  # min-max spreads
    for column in ("by hand", "imperative", "hybridized", "speedup"):
        assert f"  {column} " in text
    assert "floor" not in text and "out=" in text  # named for what it is, and says how
    saved = json.loads(path.read_text())
    assert saved["blas_threads"] == 1 and saved["device"] == "cpu(0)"
    assert len(saved["commit"]) in (40, 7) or saved["commit"] == "unknown"
    assert saved["numpy"] and saved["python"] and saved["hybridgpu"]
    (row,) = saved["rows"]
    assert row["workload"] == "mlp-batch3" and row["input_shape"] == [3, 512]
    assert row["repeats"] == 2
    low, high = row["hybridized_spread_us"]
    assert low <= row["hybridized_us"] <= high
    low, high = row["by_hand_spread_us"]
    assert 0 < low <= row["by_hand_us"] <= high


def test_blas_limit_sets_and_restores_the_thread_count():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info()
              if p["user_api"] == "blas"]
    if not before:
        pytest.skip("NumPy links no BLAS that threadpoolctl can see")
    with bench_env.blas_limit(1) as blas:
        inside = [p["num_threads"] for p in threadpoolctl.threadpool_info()
                  if p["user_api"] == "blas"]
        assert set(inside) == {1} and blas["threads"] == 1
    after = [p["num_threads"] for p in threadpoolctl.threadpool_info()
             if p["user_api"] == "blas"]
    assert after == before


def test_workloads_for_applies_batch_to_batched_models_only():
    assert bench.workloads_for() == [("mlp", 1), ("mlp", 64), ("chain8", None),
                                     ("resnet18_v1", 1), ("mlp-train", 1)]
    assert bench.workloads_for(["mlp", "chain8"], 8) == [("mlp", 8), ("chain8", None)]
    with pytest.raises(ValueError, match="unknown model 'vgg'"):
        bench.workloads_for(["vgg"])


@pytest.mark.parametrize("batch", [1, 3])
def test_training_by_hand_does_the_math_of_a_training_step(batch):
    """The mlp-train row's hand-written step takes the step the Gluon loop takes (the same
    weights after two steps), and its hybridized side is a TrainStep giving them too."""
    from hybridgpu import cpu

    work = bench.MODELS["mlp-train"][0](cpu(0), batch)
    for _ in range(2):
        work.imperative()
        work.by_hand()
    for layer, (w, b) in zip(work.net, work.by_hand.params):
        np.testing.assert_allclose(layer.weight.data().asnumpy(), w, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(layer.bias.data().asnumpy(), b, rtol=1e-5, atol=1e-7)
    work.hybridized()()
    assert work.train_step.mode == "compiled", work.train_step.reason


@pytest.mark.parametrize("model, batch", [("mlp", 1), ("mlp", 5), ("chain8", None)])
def test_by_hand_computes_what_the_network_computes(model, batch):
    from hybridgpu import cpu

    work = bench.MODELS[model][0](cpu(0), batch)
    expected = work.imperative().asnumpy()
    np.testing.assert_allclose(work.by_hand(), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(work.hybridized()().asnumpy(), work.by_hand(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("model, batch", [("mlp", 128), ("chain8", None), ("mlp-train", 64)])
def test_by_hand_allocates_no_array_per_call(model, batch):
    """The by-hand column writes into buffers allocated once: a naive NumPy version makes a
    temporary array per op (for chain8 megabytes a call, for these MLPs 64 KiB and more each);
    what is allowed is NumPy's own broadcasting buffer (8192 elements, 32 KiB)."""
    import tracemalloc

    from hybridgpu import cpu

    work = bench.MODELS[model][0](cpu(0), batch)
    work.by_hand()  # warm-up (BLAS, ufunc loops)
    first = work.by_hand()
    tracemalloc.start()
    try:
        again = work.by_hand()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 48 * 1024, f"{model}: {peak} bytes allocated in one by-hand call"
    if first is not None:
        assert again is first  # the same output buffer, written again


def test_measure_returns_median_within_its_spread():
    from hybridgpu import cpu

    calls = []
    median, low, high = bench.measure(lambda: calls.append(1), cpu(0), repeat=3, quick=True)
    assert 0 < low <= median <= high and len(calls) > 3


def test_device_choice_says_why_cpu_without_a_gpu():
    from hybridgpu.context import num_gpus

    ctx, reason = bench_env.device_choice()
    if num_gpus() == 0:
        assert str(ctx) == "cpu(0)"
        assert "CuPy" in reason and ("not installed" in reason or "no CUDA" in reason)
    else:
        assert str(ctx) == "gpu(0)" and "sees" in reason


def test_a_failing_workload_is_reported_and_the_others_still_run(monkeypatch):
    from hybridgpu import cpu

    def broken(ctx, batch):
        raise RuntimeError("no kernel today")

    monkeypatch.setitem(bench.MODELS, "chain8", (broken, (None,), "chain8-elementwise"))
    rows = bench.run_table(cpu(0), quick=True, workloads=[("chain8", None), ("mlp", 1)],
                           progress=False, repeat=1)
    assert rows[0] == {"workload": "chain8-elementwise", "device": "cpu(0)",
                       "error": "RuntimeError: no kernel today"}
    assert rows[1]["hybridized_us"] > 0
    table = bench.format_table(rows)
    assert "chain8-elementwise: FAILED, RuntimeError: no kernel today" in table
    assert "mlp-batch1" in table.splitlines()[2]


@pytest.mark.gpu
def test_by_hand_on_gpu_computes_what_the_network_computes(gpu_available):
    """The by-hand versions run unchanged on CuPy (or the virtual GPU): out= everywhere."""
    work = bench.MODELS["mlp"][0](gpu_available, 3)
    np.testing.assert_allclose(work.by_hand().get(), work.imperative().asnumpy(), rtol=1e-4,
                               atol=1e-5)
    train = bench.MODELS["mlp-train"][0](gpu_available, 2)
    for _ in range(2):
        train.imperative()
        train.by_hand()
    for layer, (w, _) in zip(train.net, train.by_hand.params):
        np.testing.assert_allclose(layer.weight.data().asnumpy(), w.get(), rtol=1e-4,
                                   atol=1e-6)
