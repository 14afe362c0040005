"""Model files as an attacker or an unlucky user makes them (docs/security.md, issue #20
items 4 to 7): wide and deep graphs load in one linear pass without recursion, sizes are capped
per array (MXNet's 2**31 - 2 elements) and per model (``HYBRIDGPU_MAX_MODEL_BYTES``) before
anything is allocated, loaders read only regular files and check the header first, bad input
raises MXNetError naming what is wrong, and saves leave nothing behind.

Timings against MXNet are in ``benchmarks/load_scale.py``; these tests check behaviour at modest
sizes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import gluon, nd
from hybridgpu.base import MXNetError
from hybridgpu.serialization import files

_VERSION = {"mxnet_version": ["int", 10901]}


def _addn_doc(n):
    nodes = [{"op": "null", "name": f"x{i}", "inputs": []} for i in range(n)]
    nodes.append({"op": "add_n", "name": "total", "attrs": {"num_args": str(n)},
                  "inputs": [[i, 0, 0] for i in range(n)]})
    return {"nodes": nodes, "arg_nodes": list(range(n)), "heads": [[n, 0, 0]],
            "attrs": _VERSION}


def _chain_doc(n):
    nodes = [{"op": "null", "name": "x", "inputs": []}]
    nodes += [{"op": "_plus_scalar", "name": f"p{i}", "attrs": {"scalar": "1"},
               "inputs": [[i, 0, 0]]} for i in range(n)]
    return {"nodes": nodes, "arg_nodes": [0], "heads": [[n, 0, 0]], "attrs": _VERSION}


# -- item 4: wide and deep graphs -------------------------------------------------------------
def test_wide_add_n_loads_binds_and_runs(tmp_path):
    n = 3000
    path = tmp_path / "wide-symbol.json"
    path.write_text(json.dumps(_addn_doc(n)))
    sym = mx.sym.load(str(path))
    args = {f"x{i}": nd.array([i, 1.0]) for i in range(n)}
    out = sym.bind(mx.cpu(), args).forward()[0].asnumpy()
    np.testing.assert_allclose(out, [n * (n - 1) / 2, n], rtol=1e-6)


def test_chain_deeper_than_the_recursion_limit_loads_binds_runs_and_saves(tmp_path):
    n = sys.getrecursionlimit() * 3
    path = tmp_path / "deep-symbol.json"
    path.write_text(json.dumps(_chain_doc(n)))
    sym = mx.sym.load(str(path))
    out = sym.bind(mx.cpu(), {"x": nd.array([0.5])}).forward()[0].asnumpy()
    assert out.tolist() == [n + 0.5]
    again = mx.sym.load_json(sym.tojson())
    assert len(json.loads(again.tojson())["nodes"]) == n + 1


@pytest.mark.parametrize("target", [0, 1, 1500])
def test_a_cycle_anywhere_in_a_long_chain_is_named(target):
    doc = _chain_doc(3000)
    doc["nodes"][target + 1]["inputs"] = [[2500, 0, 0]]  # node target+1 reads a later node
    with pytest.raises(MXNetError, match="cycle"):
        mx.sym.load_json(json.dumps(doc))


def test_params_of_many_small_arrays_round_trip(tmp_path):
    arrays = {f"arg:w{i}": nd.array(np.full((2, 2), i, np.float32)) for i in range(20000)}
    arrays["arg:scalar"] = nd.array(np.float64(2.5))  # a V1 record among V2 ones
    path = str(tmp_path / "many.params")
    nd.save(path, arrays)
    loaded = nd.load(path)
    assert list(loaded) == list(arrays)
    assert loaded["arg:w19999"].asnumpy().tolist() == [[19999.0] * 2] * 2
    assert loaded["arg:scalar"].asnumpy().tolist() == 2.5


# -- item 5: caps before allocation ----------------------------------------------------------
def test_mxnet_per_array_limit_is_the_default():
    """MXNet 1.9.1 refuses 2**31 - 1 elements ("larger than 2^31 elements") and accepts
    2**31 - 2 (checked with the oracle); nothing is allocated either way."""
    assert mx.sym.zeros((2 ** 31 - 2,), dtype="int8").infer_shape()[1] == [(2 ** 31 - 2,)]
    with pytest.raises(MXNetError, match="HYBRIDGPU_MAX_ARRAY_ELEMENTS"):
        mx.sym.zeros((2 ** 31 - 1,), dtype="int8").infer_shape()
    with pytest.raises(MXNetError, match="HYBRIDGPU_MAX_ARRAY_ELEMENTS"):
        nd.zeros((2 ** 31 - 1,), dtype="int8")


def test_per_array_limit_can_be_raised(monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_MAX_ARRAY_ELEMENTS", str(2 ** 32))
    assert mx.sym.zeros((2 ** 31,), dtype="int8").infer_shape()[1] == [(2 ** 31,)]


def _big_model():
    """Four distinct 100,000-element float32 constants added to ``x``: 1.6 MB of outputs."""
    x = mx.sym.var("x")
    return x, mx.sym.Group([mx.sym.broadcast_add(mx.sym.zeros((100_000 + i,)), x)
                            for i in range(4)])


def _model_paths(ctx):
    x, sym = _big_model()
    one = nd.ones((1,), ctx=ctx)
    net = gluon.SymbolBlock(sym, [x])
    net.hybridize()
    return {"bind": lambda: sym.bind(ctx, {"x": one}).forward(),
            "simple_bind": lambda: sym.simple_bind(ctx, x=(1,)),
            "hybridized": lambda: net(one)}


@pytest.mark.parametrize("path", ["bind", "simple_bind", "hybridized"])
def test_model_cap_refuses_before_allocating(monkeypatch, path):
    monkeypatch.setenv("HYBRIDGPU_MAX_MODEL_BYTES", "1000000")
    with pytest.raises(MXNetError, match="HYBRIDGPU_MAX_MODEL_BYTES"):
        _model_paths(mx.cpu())[path]()
    monkeypatch.setenv("HYBRIDGPU_MAX_MODEL_BYTES", "100000000")
    _model_paths(mx.cpu())[path]()


@pytest.mark.gpu
def test_model_cap_refuses_on_gpu(monkeypatch, gpu_available):
    monkeypatch.setenv("HYBRIDGPU_MAX_MODEL_BYTES", "1000000")
    for path in ("bind", "hybridized"):
        with pytest.raises(MXNetError, match="HYBRIDGPU_MAX_MODEL_BYTES"):
            _model_paths(gpu_available)[path]()


def test_model_cap_must_be_a_positive_integer(monkeypatch):
    monkeypatch.setenv("HYBRIDGPU_MAX_MODEL_BYTES", "lots")
    with pytest.raises(MXNetError, match="HYBRIDGPU_MAX_MODEL_BYTES='lots'"):
        _model_paths(mx.cpu())["bind"]()


@pytest.mark.parametrize("load", [nd.load, mx.sym.load])
def test_loaders_refuse_devices_fifos_and_folders(tmp_path, load):
    link = tmp_path / "m-0000.params"
    link.symlink_to("/dev/zero")
    with pytest.raises(MXNetError, match="not a regular file .a character device"):
        load(str(link))
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer: refused instead
    with pytest.raises(MXNetError, match="not a regular file .a FIFO"):
        load(str(fifo))
    with pytest.raises(MXNetError, match="not a regular file .a folder"):
        load(str(tmp_path))


def _sparse_file(path, head, size=2 ** 40):
    """A file of ``size`` bytes (sparse: nothing stored) starting with ``head``."""
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(size)
    return str(path)


def test_nd_load_checks_the_header_before_reading_on(tmp_path):
    """A 1 TiB (sparse) file is refused from its first bytes; reading it whole would run out
    of memory first."""
    bad_magic = _sparse_file(tmp_path / "a.params", b"\x13\x01" + b"\x00" * 22)
    with pytest.raises(MXNetError, match="bad file magic"):
        nd.load(bad_magic)
    too_many = _sparse_file(tmp_path / "b.params", np.array([0x112, 0, 2 ** 60],
                                                            "<u8").tobytes())
    with pytest.raises(MXNetError, match="arrays need at least"):
        nd.load(too_many)


def test_sym_load_checks_the_header_before_reading_on(tmp_path):
    with pytest.raises(MXNetError, match="not a symbol file"):
        mx.sym.load(_sparse_file(tmp_path / "s-symbol.json", b"\x00ELF"))


# -- item 6: bad input is an MXNetError naming it --------------------------------------------
@pytest.mark.parametrize("text", ["[" * 100_000, '{"nodes": ' + "[" * 100_000])
def test_deeply_nested_json_is_an_mxnet_error(tmp_path, text):
    with pytest.raises(MXNetError, match="nested too deeply"):
        mx.sym.load_json(text)
    path = tmp_path / "deep-symbol.json"
    path.write_text(text)
    with pytest.raises(MXNetError, match="nested too deeply" if text.startswith("{")
                       else "not a symbol file"):  # refused from its first byte
        mx.sym.load(str(path))


def _one_node_doc(**variable_attrs):
    doc = json.loads(mx.sym._mul_scalar(mx.sym.var("x"), scalar=2.0, name="m").tojson())
    doc["nodes"][0]["attrs"] = variable_attrs
    return doc


@pytest.mark.parametrize("attrs, match", [
    ({"__shape__": "(2,"}, "node 0 'x': attribute __shape__='\\(2,' is malformed"),
    ({"__shape__": "((2,),)"}, "__shape__"),
    ({"__shape__": "None"}, "__shape__"),
    ({"__dtype__": "float99"}, "__dtype__"),
    ({"__lr_mult__": "fast"}, "__lr_mult__"),
])
def test_malformed_variable_hints_fail_at_load(attrs, match):
    with pytest.raises(MXNetError, match=match):
        mx.sym.load_json(json.dumps(_one_node_doc(**attrs)))


@pytest.mark.parametrize("scalar", ["9" * 400, "-" + "9" * 400, "1e400", "7" * 5000])
def test_scalars_out_of_a_doubles_range_fail_at_load(scalar):
    doc = _one_node_doc()
    doc["nodes"][1]["attrs"]["scalar"] = scalar
    with pytest.raises(MXNetError, match="node 1 'm'.*scalar.*out of range"):
        mx.sym.load_json(json.dumps(doc))


def test_finite_and_infinite_scalars_still_load():
    doc = _one_node_doc()
    for scalar, want in (("inf", np.inf), ("12345678901234567890", 1.2345679e19), ("3", 3)):
        doc["nodes"][1]["attrs"]["scalar"] = scalar
        exe = mx.sym.load_json(json.dumps(doc)).bind(mx.cpu(), {"x": nd.ones((1,))})
        np.testing.assert_allclose(exe.forward()[0].asnumpy(), [want], rtol=1e-6)


def _trainer(scheduler=None):
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize(mx.init.Constant(0.5))
    opts = {"learning_rate": 0.1, "momentum": 0.9}
    if scheduler is not None:
        opts["lr_scheduler"] = scheduler
    return net, gluon.Trainer(net.collect_params(), "sgd", opts)


def _step(net, trainer):
    with mx.autograd.record():
        loss = net(nd.ones((1, 3))).sum()
    loss.backward()
    trainer.step(1)


def _edited_states(tmp_path, edit, scheduler=None):
    """A states file saved after one step, its JSON metadata changed by ``edit(meta)``."""
    net, trainer = _trainer(scheduler)
    _step(net, trainer)
    path = str(tmp_path / "t.states")
    trainer.save_states(path)
    loaded = nd.load(path)
    name = mx.optimizer.states_io.META_NAME
    meta = json.loads(loaded[name].asnumpy().tobytes().decode())
    edit(meta)
    loaded[name] = nd.array(np.frombuffer(json.dumps(meta).encode(), np.uint8), dtype="uint8")
    nd.save(path, loaded)
    return path


def _set_attr(key, value):
    return lambda meta: meta["optimizer"]["attrs"].__setitem__(key, value)


def _set_scheduler_attr(key, value):
    return lambda meta: meta["optimizer"]["lr_scheduler"]["attrs"].__setitem__(key, value)


@pytest.mark.parametrize("edit, match", [
    (_set_attr("lr", "abc"), "lr = 'abc'"),
    (_set_attr("momentum", "x"), "momentum = 'x'"),
    (_set_attr("wd", {"list": [1, 2]}), "wd"),
    (_set_attr("_all_index_update_counts", 1), "_all_index_update_counts"),
    (_set_attr("_all_index_update_counts", {"dict": [[0, {"dict": [[0, "x"]]}]]}),
     "_all_index_update_counts"),
    (_set_attr("num_update", float("nan")), "num_update"),
    (lambda meta: meta["optimizer"].__setitem__("current_device", {"list": []}),
     "current_device"),
])
def test_bad_optimizer_attributes_fail_at_load(tmp_path, edit, match):
    path = _edited_states(tmp_path, edit)
    net, trainer = _trainer()
    with pytest.raises(MXNetError, match=match):
        trainer.load_states(path)


@pytest.mark.parametrize("key, value", [("base_lr", "abc"), ("step", "x"), ("factor", None)])
def test_bad_scheduler_fields_fail_at_load(tmp_path, key, value):
    scheduler = mx.lr_scheduler.FactorScheduler(step=2, factor=0.5)
    path = _edited_states(tmp_path, _set_scheduler_attr(key, value), scheduler)
    net, trainer = _trainer(mx.lr_scheduler.FactorScheduler(step=2, factor=0.5))
    with pytest.raises(MXNetError, match=key):
        trainer.load_states(path)
    net, trainer = _trainer()  # a scheduler made from the file alone is tried too
    with pytest.raises(MXNetError, match="lr_scheduler|" + key):
        trainer.load_states(path)


def test_nested_list_states_fail_naming_the_index(tmp_path):
    def nest(meta):
        for pair in meta["states"]:
            pair[1] = {"list": [{"list": [pair[1]]}]}
    path = _edited_states(tmp_path, nest)
    net, trainer = _trainer()
    trainer.load_states(path)
    with pytest.raises(MXNetError, match="state of index 0 is a list"):
        _step(net, trainer)


def _module(hidden):
    data = mx.sym.var("data")
    out = mx.sym.FullyConnected(data, num_hidden=hidden, name="fc")
    mod = mx.mod.Module(mx.sym.LinearRegressionOutput(out, name="lro"), data_names=["data"],
                        label_names=["lro_label"])
    mod.bind(data_shapes=[("data", (2, 3))], label_shapes=[("lro_label", (2, hidden))])
    mod.init_params(mx.init.Constant(0.1))
    mod.init_optimizer(optimizer="sgd", optimizer_params={"momentum": 0.9})
    batch = mx.io.DataBatch([nd.ones((2, 3))], [nd.ones((2, hidden))])
    mod.forward_backward(batch)
    mod.update()
    return mod


def test_module_load_optimizer_states_checks_shapes_at_load(tmp_path):
    path = str(tmp_path / "m.states")
    _module(4).save_optimizer_states(path)
    other = _module(5)
    with pytest.raises(MXNetError, match="state of index 0.*shape \\(4, 3\\).*\\(5, 3\\)"):
        other.load_optimizer_states(path)
    same = _module(4)
    same.load_optimizer_states(path)
    same.update()


def test_recordio_write_on_a_full_disk_is_an_mxnet_error():
    writer = mx.recordio.MXRecordIO("/dev/full", "w")
    with pytest.raises(MXNetError, match="/dev/full.*No space left"):
        for _ in range(1000):
            writer.write(b"x" * 4096)
        writer.close()


def test_recordio_write_past_the_file_size_limit_is_an_mxnet_error(tmp_path):
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    writer = mx.recordio.MXIndexedRecordIO(str(tmp_path / "r.idx"), str(tmp_path / "r.rec"),
                                           "w")
    resource.setrlimit(resource.RLIMIT_FSIZE, (65536, hard))
    try:
        with pytest.raises(MXNetError, match="r.rec.*failed"):
            for key in range(100):
                writer.write_idx(key, b"y" * 8192)
            writer.close()
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        writer.close()


# -- item 7: saves leave nothing behind --------------------------------------------------------
def _leftover(folder, target, age):
    path = folder / f".{target}.{os.urandom(6).hex()}.tmp"
    path.write_bytes(b"half a file")
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


@pytest.mark.parametrize("kind", ["params", "symbol"])
def test_save_removes_only_its_own_stale_temporaries(tmp_path, kind):
    target = "m-0000.params" if kind == "params" else "m-symbol.json"
    stale = _leftover(tmp_path, target, files.STALE_SECONDS + 60)
    fresh = _leftover(tmp_path, target, 5)                   # a save running elsewhere
    other = _leftover(tmp_path, "other.params", files.STALE_SECONDS + 60)
    odd = tmp_path / f".{target}.not-hex-digits.tmp"
    odd.write_bytes(b"not ours")
    os.utime(odd, (0, 0))
    link = tmp_path / f".{target}.{'a' * 12}.tmp"
    link.symlink_to(other)
    if kind == "params":
        nd.save(str(tmp_path / target), {"w": nd.ones(2)})
    else:
        mx.sym.var("x").save(str(tmp_path / target))
    assert not stale.exists()
    assert fresh.exists() and other.exists() and odd.exists() and link.is_symlink()


_KILLED_SAVE = """
import sys, time
from hybridgpu import nd
from hybridgpu.serialization import ndarray_file
def slow(stream, records, names):
    stream.write(b"x" * 1000); stream.flush(); print("writing", flush=True); time.sleep(600)
ndarray_file._write_body = slow
nd.save(sys.argv[1], {"w": nd.ones(3)})
"""


def test_a_killed_save_leaves_a_temporary_that_the_next_save_removes(tmp_path):
    target = tmp_path / "big.params"
    nd.save(str(target), {"w": nd.zeros(3)})
    child = subprocess.Popen([sys.executable, "-c", _KILLED_SAVE, str(target)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "writing"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    left = [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert len(left) == 1 and nd.load(str(target))["w"].asnumpy().tolist() == [0, 0, 0]
    nd.save(str(target), {"w": nd.ones(3)})
    assert left[0].exists()  # too fresh to be called stale
    old = time.time() - files.STALE_SECONDS - 1
    os.utime(left[0], (old, old))
    nd.save(str(target), {"w": nd.ones(3)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.params"]


def _exported(tmp_path):
    net = gluon.nn.HybridSequential()
    net.add(gluon.nn.Dense(3, in_units=2))
    net.initialize(mx.init.Constant(0.25))
    net.hybridize()
    net(nd.ones((1, 2)))
    prefix = str(tmp_path / "net")
    return net, prefix, net.export(prefix)


def _pair(paths):
    return [open(p, "rb").read() for p in paths]


@pytest.mark.parametrize("failing", ["params", "symbol"])
def test_failed_export_leaves_the_old_pair(tmp_path, monkeypatch, failing):
    net, prefix, paths = _exported(tmp_path)
    old = _pair(paths)
    net.collect_params()[net[0].weight.name].set_data(nd.ones((3, 2)))

    def disk_full(stream, *args):
        stream.write(b"partial")
        raise OSError(28, "No space left on device")

    if failing == "params":
        monkeypatch.setattr("hybridgpu.serialization.ndarray_file._write_body", disk_full)
    else:
        from hybridgpu.symbol import json_format
        monkeypatch.setattr(json_format, "atomic_write",
                            lambda path, body: files.atomic_write(path, disk_full))
    with pytest.raises((MXNetError, OSError), match="No space left"):
        net.export(prefix)
    assert _pair(paths) == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["net-0000.params", "net-symbol.json"]
    monkeypatch.undo()
    net.export(prefix)
    loaded = gluon.SymbolBlock.imports(paths[0], ["data"], paths[1])
    assert loaded(nd.ones((1, 2))).asnumpy().tolist() == [[2.0, 2.0, 2.0]]


def test_file_modes_are_mxnets(tmp_path):
    """MXNet 1.9.1 (checked with the oracle): new files 0o666 less the umask (0644 under 022)
    for both files; a file saved over keeps its mode."""
    previous = os.umask(0o022)
    try:
        net, prefix, paths = _exported(tmp_path)
        assert [os.stat(p).st_mode & 0o777 for p in paths] == [0o644, 0o644]
        for p in paths:
            os.chmod(p, 0o600)
        net.export(prefix)
        assert [os.stat(p).st_mode & 0o777 for p in paths] == [0o600, 0o600]
        os.umask(0o077)
        (tmp_path / "again").mkdir()
        others = _exported(tmp_path / "again")[2]
        assert [os.stat(p).st_mode & 0o777 for p in others] == [0o600, 0o600]
    finally:
        os.umask(previous)
