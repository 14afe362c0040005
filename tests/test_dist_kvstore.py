"""``kvstore='dist_sync'`` over MPI: several processes launched with ``mpiexec -n 2`` agree
with each other and with one process training on the whole batch; a worker that stops
answering makes the others fail with a clear error instead of hanging; workers that make
different calls (key, dtype, shape, operation) all raise ``DistributedError`` at once."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROGRAMS = ROOT / "tests" / "mpi_programs"
MPIEXEC = shutil.which("mpiexec", path=os.path.dirname(sys.executable) + os.pathsep
                       + os.environ.get("PATH", ""))

pytestmark = pytest.mark.skipif(MPIEXEC is None, reason="needs mpiexec (pip install mpich)")
pytest.importorskip("mpi4py")


def _run(args, timeout=120, env=None, workers=2):
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), **(env or {})}
    cmd = [MPIEXEC, "-n", str(workers), sys.executable, *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env,
                          check=False)


def test_kv_api_across_two_workers(tmp_path):
    out = _run([PROGRAMS / "kv_api.py", tmp_path])
    assert out.returncode == 0, out.stderr
    seen = [json.loads((tmp_path / f"kv{r}.json").read_text()) for r in range(2)]
    for rank, s in enumerate(seen):
        assert (s["rank"], s["num_workers"], s["type"]) == (rank, 2, "dist_sync")
        assert s["after_init"] == [10.0] * 3               # rank 0's value everywhere
        assert s["after_push"] == [(1 + 1) + (2 + 1)] * 3  # both devices, both workers
        assert s["after_update"] == [5.0 - 0.5 * 2] * 3    # the sum of 2 workers' ones


@pytest.mark.parametrize("how", [[], ["--train-step"]], ids=["loop", "train_step"])
def test_two_workers_train_like_one_process(tmp_path, how):
    (tmp_path / "dist").mkdir()
    (tmp_path / "one").mkdir()
    out = _run([PROGRAMS / "train_mlp.py", "dist_sync", tmp_path / "dist", *how])
    assert out.returncode == 0, out.stderr
    single = subprocess.run([sys.executable, PROGRAMS / "train_mlp.py", "device",
                             tmp_path / "one"], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "src")}, check=False)
    assert single.returncode == 0, single.stderr
    ranks = [mx.nd.load(str(tmp_path / "dist" / f"rank{r}.params")) for r in range(2)]
    alone = mx.nd.load(str(tmp_path / "one" / "rank0.params"))
    assert sorted(ranks[0]) == sorted(alone)
    for key, value in alone.items():
        np.testing.assert_array_equal(ranks[0][key].asnumpy(), ranks[1][key].asnumpy())
        np.testing.assert_allclose(ranks[0][key].asnumpy(), value.asnumpy(), rtol=1e-5,
                                   atol=1e-6)


def test_a_worker_that_stops_answering_fails_the_job_with_a_clear_error(tmp_path):
    out = _run([PROGRAMS / "train_mlp.py", "dist_sync", tmp_path, "--hang-rank", "1"],
               env={"HYBRIDGPU_DIST_TIMEOUT": "8"}, timeout=90)
    assert out.returncode != 0
    # the ranks' tracebacks, from stderr and from the files they write (mpiexec may stop
    # forwarding a rank's stderr once another failed)
    said = out.stderr + "".join(p.read_text() for p in tmp_path.glob("error.*.txt"))
    assert "DistTimeoutError" in said and "did not complete within 8 s" in said, said[-3000:]
    assert "rank 0 of 2" in said


# what every rank must say about each disagreement of kv_disagree.py (rank 0's call, then rank 1's)
DISAGREEMENTS = {
    "dtype_init": "rank 0 calls init of key 3 (float32, shape (4,)), rank 1 calls init of key 3 "
                  "(float64, shape (4,)): they differ in dtype",
    "dtype_push": "rank 0 calls push of key 3 (float32, shape (4,)), rank 1 calls push of key 3 "
                  "(float64, shape (4,)): they differ in dtype",
    "key": "rank 0 calls push of key 1 (float32, shape (4,)), rank 1 calls push of key 2 "
           "(float32, shape (4,)): they differ in key",
    "barrier": "rank 0 calls push of key 3 (float32, shape (4,)), rank 1 calls barrier: they "
               "differ in operation",
    "shape_init": "rank 0 calls init of key 3 (float32, shape (4,)), rank 1 calls init of key 3 "
                  "(float32, shape (5,)): they differ in shape",
}


def _said(out, tmp_path):
    return out.stderr + "".join(p.read_text() for p in tmp_path.glob("error.*.txt"))


def test_ranks_that_disagree_raise_on_every_rank_and_stay_in_step(tmp_path):
    out = _run([PROGRAMS / "kv_disagree.py", tmp_path, *DISAGREEMENTS, "agree"],
               env={"HYBRIDGPU_DIST_TIMEOUT": "20"}, timeout=120)
    assert out.returncode == 0, _said(out, tmp_path)[-3000:]
    for rank in range(2):
        seen = json.loads((tmp_path / f"cases{rank}.json").read_text())
        for case, words in DISAGREEMENTS.items():
            assert seen[case].get("error") == "DistributedError", (rank, case, seen[case])
            assert f"rank {rank} of 2" in seen[case]["message"]
            assert words in seen[case]["message"], seen[case]["message"]
            assert seen[case]["seconds"] < 20  # at once, well within the deadline
        # after five errors the ranks are still in step: a push of 1 and 2, twice, sums to 3
        assert seen["agree"] == {"values": [3.0] * 4, "seconds": seen["agree"]["seconds"]}


def test_a_rank_waiting_for_a_slow_peer_sleeps_instead_of_spinning(tmp_path):
    out = _run([PROGRAMS / "kv_disagree.py", tmp_path, "idle"], timeout=120)
    assert out.returncode == 0, _said(out, tmp_path)[-3000:]
    idle = json.loads((tmp_path / "cases0.json").read_text())["idle"]
    assert 9.5 < idle["seconds"] < 60
    # 10 s of waiting for rank 1 cost rank 0 ~1.2 CPU-seconds when it spun; ~0.05 now
    assert idle["cpu_seconds"] < 0.4, idle


def test_distributed_example_reaches_its_accuracy():
    out = _run([ROOT / "examples" / "train_dist.py", "--epochs", "12"], timeout=180)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("[Epoch")]
    assert len(lines) == 12  # rank 0 alone prints
    assert float(lines[-1].split("test-acc=")[1].split()[0]) >= 0.95


def test_dist_async_and_unknown_kinds_are_refused():
    with pytest.raises(mx.MXNetError, match="except 'dist_sync'"):
        mx.kv.create("dist_async")
    with pytest.raises(mx.MXNetError, match="except 'dist_sync'"):
        mx.gluon.Trainer(mx.gluon.nn.Dense(1).collect_params(), "sgd", kvstore="horovod")
