"""``python -m hybridgpu gpucheck``: the PyTorch peers compute what hybridgpu computes, the
verdicts judge the targets as written, and the whole check runs on the virtual GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd
from hybridgpu.bench import seed_mlp
from hybridgpu.gpucheck import main, verdicts
from hybridgpu.gpucheck.targets import Chain8
from hybridgpu.timing import time_calls


def _resnet():
    from hybridgpu.gluon.model_zoo import vision

    return vision.resnet18_v1()


@pytest.mark.parametrize("make, shape", [(seed_mlp, (2, 512)), (Chain8, (64,)),
                                         (_resnet, (1, 3, 32, 32))],
                         ids=["mlp", "chain8", "resnet18"])
def test_torch_peer_matches_hybridgpu(make, shape):
    torch = pytest.importorskip("torch")
    from hybridgpu.gpucheck.torch_peer import TorchPeer

    net = make()
    net.initialize(mx.init.Xavier())
    rng = np.random.RandomState(1)
    x = nd.array(rng.rand(*shape).astype(np.float32) * 2 - 0.5)
    # BatchNorm statistics away from (0, 1), so the peer must really use them
    for name, param in net.collect_params().items():
        if name.endswith("running_mean") or name.endswith("running_var"):
            param.initialize(force_reinit=True)
    net(x)
    for name, param in net.collect_params().items():
        if name.endswith("running_var"):
            param.set_data(nd.array(rng.rand(*param.shape).astype(np.float32) + 0.5))
        elif name.endswith("running_mean"):
            param.set_data(nd.array(rng.randn(*param.shape).astype(np.float32) * 0.1))
    expected = net(x).asnumpy()
    peer = TorchPeer(net, mx.cpu(), torch, device="cpu")
    got = peer(torch.from_numpy(x.asnumpy())).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_torch_peer_refuses_an_op_it_cannot_translate():
    torch = pytest.importorskip("torch")
    from hybridgpu.gpucheck.torch_peer import TorchPeer

    net = mx.gluon.nn.HybridLambda(lambda F, x: F.tanh(F.sin(x)))
    with pytest.raises(NotImplementedError, match="'sin'"):
        TorchPeer(net, mx.cpu(), torch, device="cpu")


def _t(us):
    return {"median_us": us}


def test_verdicts_judge_each_target():
    rows = [{"name": "mlp", "imperative": _t(150.0), "hybridized": _t(18.0),
             "torch_cuda_graph": _t(20.0)},
            {"name": "chain8", "hybridized": _t(300.0), "device_copy": _t(100.0),
             "kernels": {"fused": _t(130.0)}},
            {"name": "resnet18", "hybridized": _t(700.0), "torch_cuda_graph": _t(500.0)},
            {"name": "fused_update", "per_parameter": _t(400.0), "fused": _t(100.0)},
            {"name": "train_step", "imperative": _t(600.0), "hybridized": _t(300.0),
             "captured": _t(150.0)},
            {"name": "broken", "error": "AssertionError: results differ"}]
    got = {v[0]: v[1:] for v in verdicts(rows, device="NVIDIA H100 80GB HBM3")}
    assert got["mlp b1 vs PyTorch CUDA graph"] == ("0.90x", "<= 1.0x", "met")
    assert got["mlp b1 imperative / hybridized"] == ("8.33x", ">= 5x", "met")
    assert got["mlp b1 per call"] == ("18.0 us", "<= 20 us", "met")
    assert got["chain8 fused kernel / device copy"] == ("1.30x", "<= 1.25x", "MISSED")
    assert got["resnet18 vs PyTorch CUDA graph"] == ("1.40x", "<= 1.2x", "MISSED")
    assert got["fused optimizer update / per-parameter"] == ("0.25x", "< 1.0x", "met")
    assert got["mlp training step b1: imperative / captured"] == ("4.00x", ">= 5x", "MISSED")
    assert got["mlp training step b1: hybridized / captured"] == ("2.00x", "(reported)",
                                                                 "reported")
    assert got["broken"][2] == "FAILED"
    # without a peer nothing is claimed
    none = verdicts([{"name": "resnet18", "hybridized": _t(1.0)}])
    assert none == [("resnet18 vs PyTorch CUDA graph", "-", "<= 1.2x", "not measured")]


def test_time_calls_reports_median_and_spread():
    stats = time_calls(lambda: np.ones(1000).sum(), np, repeat=5, warmup=1,
                       min_seconds=0.002)
    assert stats["min_us"] <= stats["median_us"] <= stats["max_us"]
    assert stats["calls"] >= 1 and stats["repeat"] == 5


def test_gpucheck_without_a_gpu_says_so(capsys):
    if mx.context.num_gpus() > 0:
        pytest.skip("a GPU (real or virtual) is present")
    assert main(["--quick", "--skip-tests"]) == 2
    assert "no GPU" in capsys.readouterr().err


@pytest.mark.gpu
def test_gpucheck_runs_every_target(tmp_path):
    code = main(["--quick", "--skip-tests", "--out", str(tmp_path)])
    files = list(tmp_path.glob("gpucheck-*.json"))
    assert len(files) == 1
    result = json.loads(files[0].read_text())
    errors = [r for r in result["targets"] if "error" in r]
    assert not errors, errors
    assert code == 0
    assert {r["name"] for r in result["targets"]} == {"mlp", "chain8", "resnet18",
                                                      "fused_update", "train_step", "float16"}
    chain8 = next(r for r in result["targets"] if r["name"] == "chain8")
    assert chain8["kernels"]["fused"]["median_us"] > 0  # the fused kernel timed alone
    mlp = next(r for r in result["targets"] if r["name"] == "mlp")
    assert mlp["call_floor"]["median_us"] > 0
    assert result["environment"]["commit"]


_QUICK = {"repeat": 2, "warmup": 1, "min_seconds": 0.001}


def _train_step_row(ctx):
    from hybridgpu.gpucheck.train_step import MODES, train_step

    row = train_step(ctx, True, _QUICK, None)
    assert row["name"] == "train_step" and row["check_steps"] == 3
    for mode in MODES:
        assert row[mode]["median_us"] > 0 and row[mode]["repeat"] == 2
    got = {v[0]: v[1:] for v in verdicts([row])}
    assert got["mlp training step b1: imperative / captured"][1] == ">= 5x"
    assert got["mlp training step b1: imperative / captured"][2] in ("met", "MISSED")
    assert got["mlp training step b1: hybridized / captured"][2] == "reported"
    return row


def test_train_step_target_on_cpu_runs_compiled():
    row = _train_step_row(mx.cpu())
    assert row["step_mode"] == "compiled"
    assert "cpu" in row["step_reason"]


@pytest.mark.gpu
def test_train_step_target_captures_on_gpu():
    row = _train_step_row(mx.gpu(0))
    assert (row["step_mode"], row["step_reason"]) == ("captured", "")


def test_train_step_target_refuses_modes_that_disagree(monkeypatch):
    from hybridgpu.gpucheck import train_step as target

    real = target._step_fn

    def skewed(mode, net, loss_fn, trainer):  # the hybridized mode trains at 2x the rate
        if mode == "hybridized":
            trainer.set_learning_rate(2e-3)
        return real(mode, net, loss_fn, trainer)

    monkeypatch.setattr(target, "_step_fn", skewed)
    with pytest.raises(AssertionError, match="hybridized weights .* differ"):
        target.train_step(mx.cpu(), True, _QUICK, None)
    # run by gpucheck, the row carries the error instead of times
    from hybridgpu.gpucheck.targets import run_targets

    [row] = run_targets(mx.cpu(), quick=True, only=["train_step"])
    assert "differ from imperative" in row["error"] and "imperative" not in row


_SHARD_FILES = {
    "test_ok.py": "import pytest\n\n@pytest.mark.gpu\ndef test_a():\n    pass\n\n"
                  "@pytest.mark.gpu\ndef test_b():\n    pass\n\ndef test_not_gpu():\n"
                  "    pass\n",
    "test_bad.py": "import pytest\n\n@pytest.mark.gpu\ndef test_broken():\n"
                   "    assert 1 == 2\n",
    "test_skip.py": "import pytest\n\n@pytest.mark.gpu\ndef test_s():\n"
                    "    pytest.skip('no')\n",
    "test_none.py": "def test_plain():\n    pass\n",  # no gpu test: not even collected
}


def test_gpu_tests_run_in_shards_and_add_up(tmp_path):
    from hybridgpu.gpucheck.gpu_tests import run_gpu_tests

    for name, text in _SHARD_FILES.items():
        (tmp_path / name).write_text(text)
    result = run_gpu_tests(timeout=120, shards=2, tests=str(tmp_path),
                           extra=["-W", "ignore::pytest.PytestUnknownMarkWarning"])
    assert result["counts"] == {"passed": 2, "failed": 1, "skipped": 1, "deselected": 1}
    assert result["returncode"] == 1 and "in 2 shards" in result["summary"]
    assert "FAILED" in result["tail"] and "test_broken" in result["tail"]


def test_a_shard_past_the_deadline_is_killed_and_said(tmp_path):
    from hybridgpu.gpucheck.gpu_tests import run_gpu_tests

    (tmp_path / "test_slow.py").write_text(
        "import time\nimport pytest\n\n@pytest.mark.gpu\ndef test_slow():\n"
        "    time.sleep(60)\n")
    (tmp_path / "test_ok.py").write_text(_SHARD_FILES["test_ok.py"])
    # The deadline leaves the quick shard time to start pytest on a loaded 2-core machine
    # (8 s was not always enough there): only the sleeping shard may be killed.
    result = run_gpu_tests(timeout=30, shards=2, tests=str(tmp_path),
                           extra=["-W", "ignore::pytest.PytestUnknownMarkWarning"])
    assert result["returncode"] == "timeout"
    assert "1 shard(s) killed at the 30 s deadline" in result["summary"]
    assert result["counts"].get("passed") == 2


def test_float16_target_checks_against_float32_and_reports_ratios():
    from hybridgpu.gpucheck.half import half

    row = half(mx.cpu(), True, _QUICK, None)
    assert row["shape"] == [2, 3, 32, 32] and 0 <= row["max_relative_error"] < 3e-2
    assert row["float16"]["median_us"] > 0 and row["float32"]["median_us"] > 0
    got = {v[0]: v[1:] for v in verdicts([row])}
    assert got["resnet18 b32 float16 / float32"][2] == "reported"
    assert got["resnet18 b32 float16 vs PyTorch float16"][0] == "-"


def test_torch_peer_in_float16_keeps_batchnorm_float32():
    torch = pytest.importorskip("torch")
    from hybridgpu.gpucheck.torch_peer import TorchPeer

    net = _resnet()
    net.initialize()
    x = np.random.RandomState(2).rand(1, 3, 32, 32).astype(np.float32)
    net(nd.array(x))
    peer = TorchPeer(net, mx.cpu(), torch, device="cpu")
    want = peer(torch.as_tensor(x)).numpy()
    peer.half()
    kinds = {name.rsplit("_", 1)[-1]: str(t.dtype) for name, t in peer.weights.items()}
    assert kinds["weight"] == "torch.float16" and kinds["gamma"] == "torch.float32"
    got = peer(torch.as_tensor(x).half()).float().numpy()
    assert np.max(np.abs(got - want)) < 3e-2 * np.max(np.abs(want))


@pytest.mark.gpu
def test_results_are_written_after_each_target(tmp_path, monkeypatch):
    """A device call killed at its time limit still leaves the JSON of every target done:
    when the second target runs, the first one's row is already on disk."""
    import hybridgpu.gpucheck as gpucheck
    from hybridgpu.gpucheck import targets

    seen = []

    def first(ctx, quick, opts, torch):
        return {"name": "first", "value": 1}

    def second(ctx, quick, opts, torch):
        (written,) = tmp_path.glob("gpucheck-*.json")
        seen.append(json.loads(written.read_text()))
        return {"name": "second", "value": 2}

    monkeypatch.setitem(targets.TARGETS, "first", first)
    monkeypatch.setitem(targets.TARGETS, "second", second)
    assert gpucheck.main(["--skip-tests", "--only", "first", "second",
                          "--out", str(tmp_path)]) == 0
    assert [r["name"] for r in seen[0]["targets"]] == ["first"]
    assert seen[0]["tests"]["summary"] == "skipped"
    final = json.loads(next(tmp_path.glob("gpucheck-*.json")).read_text())
    assert [r["name"] for r in final["targets"]] == ["first", "second"]


def test_gpu_test_shards_write_their_logs_as_they_run(tmp_path):
    from hybridgpu.gpucheck.gpu_tests import run_gpu_tests

    tests = tmp_path / "tests"
    tests.mkdir()
    for name in ("test_ok.py", "test_bad.py"):
        (tests / name).write_text(_SHARD_FILES[name])
    logs = tmp_path / "logs"
    result = run_gpu_tests(timeout=120, shards=2, tests=str(tests), log_dir=str(logs),
                           extra=["-W", "ignore::pytest.PytestUnknownMarkWarning"])
    written = sorted(p.name for p in logs.iterdir())
    assert written == ["shard-0.log", "shard-1.log"]
    text = "".join((logs / name).read_text() for name in written)
    assert "-m gpu" in text and "test_broken" in text and "2 passed" in text
    assert result["counts"] == {"passed": 2, "failed": 1, "deselected": 1}


def test_smoke_checks_report_pass_fail_and_skip_as_they_end(monkeypatch):
    from hybridgpu.gpucheck import smoke

    def broken(ctx):
        raise ValueError("cuBLAS said no")

    monkeypatch.setitem(smoke.CHECKS, "broken", broken)
    lines = []
    rows = smoke.run_smoke(mx.cpu(), only=["fused_kernel", "broken", "capture_replay"],
                           progress=lines.append)
    assert [r["status"] for r in rows] == ["pass", "FAIL", "skip"]
    assert rows[1]["error"] == "ValueError: cuBLAS said no" and "broken" in rows[1]["traceback"]
    assert lines[1].startswith("[smoke] broken: FAIL") and "cuBLAS said no" in lines[1]
    assert "gpu feature" in lines[2]


def test_smoke_check_catches_a_wrong_result(monkeypatch):
    from hybridgpu.gpucheck import smoke

    monkeypatch.setattr(smoke, "_chain_host", lambda x: np.sqrt(x * x + 1))
    [row] = smoke.run_smoke(mx.cpu(), only=["fused_kernel"], progress=lambda line: None)
    assert row["status"] == "FAIL" and "differs from NumPy's" in row["error"]


def test_smoke_on_two_virtual_gpus_writes_everything_to_out(tmp_path):
    """``gpucheck --smoke --out DIR`` on the virtual GPU, cold kernel cache: under 2 minutes,
    every check passes, and DIR holds the JSON, the log and the environment."""
    from hybridgpu.gpucheck.smoke import CHECKS

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "HYBRIDGPU_VIRTUAL_GPU": "2", "HYBRIDGPU_CACHE": str(tmp_path / "c"),
           "PYTHONPATH": os.path.join(root, "src")}
    env.pop("HYBRIDGPU_VGPU_RECORD", None)
    out = tmp_path / "gc"
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "hybridgpu", "gpucheck", "--smoke", "--out",
                           str(out)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=root)
    seconds = time.monotonic() - start
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert seconds < 120, f"the smoke stage took {seconds:.0f} s"
    (result_file,) = out.glob("gpucheck-*.json")
    result = json.loads(result_file.read_text())
    assert [r["name"] for r in result["smoke"]] == list(CHECKS)
    assert all(r["status"] == "pass" for r in result["smoke"]), result["smoke"]
    assert result["tests"]["summary"] == "skipped (--smoke)" and result["targets"] == []
    log = (out / "gpucheck.log").read_text()
    for name in CHECKS:  # the log says what started, so a hang shows which check it was
        assert log.index(f"[smoke] {name}: started") < log.index(f"[smoke] {name}: pass")
        assert f"[smoke] {name}: pass" in done.stderr
    environment = json.loads((out / "environment.json").read_text())
    assert environment["virtual_gpu"] is True and "numpy" in environment["packages"]


@pytest.mark.gpu
def test_targets_leave_the_gpu_tests_their_time(tmp_path, monkeypatch):
    """No target starts once less than --test-reserve seconds of the budget are left, and
    the tests get what is left: here none, so they are not run, and the JSON says so."""
    import hybridgpu.gpucheck as gpucheck
    from hybridgpu.gpucheck import smoke, targets

    ran = []
    monkeypatch.setitem(targets.TARGETS, "first", lambda *a: ran.append(1) or {"name": "x"})
    monkeypatch.setattr(gpucheck, "CHECKS", {})
    monkeypatch.setattr(smoke, "CHECKS", {})
    code = gpucheck.main(["--only", "first", "--budget", "10", "--test-reserve", "60",
                          "--out", str(tmp_path)])
    result = json.loads(next(tmp_path.glob("gpucheck-*.json")).read_text())
    assert not ran and "skipped" in result["targets"][0]
    assert result["verdicts"][0][3] == "skipped (no time left)"
    assert result["tests"]["summary"].startswith("not run") and code == 0


@pytest.mark.gpu
def test_each_verdict_is_printed_as_known_and_the_tests_get_the_rest(tmp_path, monkeypatch,
                                                                     capsys):
    import hybridgpu.gpucheck as gpucheck
    from hybridgpu.gpucheck import targets

    def broken(ctx, quick, opts, torch):
        raise RuntimeError("no cuBLAS")

    def timed(ctx, quick, opts, torch):
        assert "[verdict] broken: error" in capsys.readouterr().err  # printed before this ran
        return {"name": "resnet18", "hybridized": {"median_us": 100.0},
                "torch_cuda_graph": {"median_us": 90.0}}

    given = {}

    def tests(timeout, log_dir=None):
        given.update(timeout=timeout, log_dir=log_dir)
        return {"returncode": 0, "summary": "3 passed", "tail": ""}

    monkeypatch.setitem(targets.TARGETS, "broken", broken)
    monkeypatch.setitem(targets.TARGETS, "timed", timed)
    monkeypatch.setattr(gpucheck, "CHECKS", {})
    monkeypatch.setattr(gpucheck, "run_gpu_tests", tests)
    code = gpucheck.main(["--only", "broken", "timed", "--budget", "200", "--test-reserve", "10",
                          "--out", str(tmp_path)])
    assert code == 1  # a target failed
    assert "[verdict] resnet18 vs PyTorch CUDA graph: 1.11x (wanted <= 1.2x) met" in \
        capsys.readouterr().err
    assert 150 < given["timeout"] <= 195 and given["log_dir"] == str(tmp_path / "tests")
    result = json.loads(next(tmp_path.glob("gpucheck-*.json")).read_text())
    assert result["tests"]["summary"] == "3 passed"
    assert "[tests] 3 passed" in (tmp_path / "gpucheck.log").read_text()


@pytest.mark.gpu
def test_a_hanging_smoke_check_leaves_its_stack_in_the_log(tmp_path, monkeypatch):
    import hybridgpu.gpucheck as gpucheck
    from hybridgpu.gpucheck import smoke

    def hangs_a_while(ctx):
        time.sleep(2.5)

    monkeypatch.setattr(gpucheck, "HANG_REPORT_S", 1)
    monkeypatch.setattr(gpucheck, "CHECKS", {"slow": hangs_a_while})
    monkeypatch.setitem(smoke.CHECKS, "slow", hangs_a_while)
    assert gpucheck.main(["--smoke", "--out", str(tmp_path)]) == 0
    log = (tmp_path / "gpucheck.log").read_text()
    assert "[smoke] slow: started" in log and "hangs_a_while" in log  # the stack, mid-sleep
    assert "[smoke] slow: pass" in log
