"""How loading scales with model size (issue #20 item 4): hybridgpu against MXNet 1.9.1 on the
same files.

Three files, written once into ``--dir`` (plain JSON text and MXNet's ``.params`` layout, made
by this script without either library):

* ``addn``: one ``add_n`` of N inputs (N variables); load, bind, run.
* ``chain``: N ``_plus_scalar`` nodes in a chain over one variable; load, bind, run.
* ``params``: a ``.params`` of M float32 arrays of 4 elements each; ``nd.load``.

Run both and compare::

    PYTHONPATH=src python benchmarks/load_scale.py --dir /tmp/ls          # hybridgpu
    .oracle/bin/python benchmarks/load_scale.py --dir /tmp/ls --mxnet     # MXNet 1.9.1

Each prints one JSON line per case: ``{"case", "n", "load_s", "bind_s", "run_s", "total_s",
"cpu_s", "check"}`` (``cpu_s``: the process's CPU seconds in those steps, every thread counted,
steadier than wall time on a shared machine; ``check``: the output's first value, the same for
both libraries). Sizes default to
the issue's (100,000 inputs, a 100,000-node chain, 400,000 arrays); ``--scale 0.1`` runs a
tenth of them.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import time

_VERSION = {"mxnet_version": ["int", 10901]}


def _addn_json(n):
    nodes = [{"op": "null", "name": f"x{i}", "inputs": []} for i in range(n)]
    nodes.append({"op": "add_n", "name": "total", "attrs": {"num_args": str(n)},
                  "inputs": [[i, 0, 0] for i in range(n)]})
    return {"nodes": nodes, "arg_nodes": list(range(n)), "node_row_ptr": list(range(n + 2)),
            "heads": [[n, 0, 0]], "attrs": _VERSION}


def _chain_json(n):
    nodes = [{"op": "null", "name": "x", "inputs": []}]
    for i in range(n):
        nodes.append({"op": "_plus_scalar", "name": f"p{i}", "attrs": {"scalar": "1"},
                      "inputs": [[i, 0, 0]]})
    return {"nodes": nodes, "arg_nodes": [0], "node_row_ptr": list(range(n + 2)),
            "heads": [[n, 0, 0]], "attrs": _VERSION}


def _params_bytes(m):
    """MXNet's NDArray-list file of ``m`` float32 arrays of shape (4,), keys ``arg:w<i>``."""
    out = [struct.pack("<QQQ", 0x112, 0, m)]
    one = (struct.pack("<I", 0xF993FAC9) + struct.pack("<i", 0)      # v2 magic, dense
           + struct.pack("<I", 1) + struct.pack("<q", 4)             # shape (4,)
           + struct.pack("<ii", 1, 0) + struct.pack("<i", 0)         # cpu(0), float32
           + struct.pack("<4f", 1.0, 2.0, 3.0, 4.0))
    out.append(one * m)
    out.append(struct.pack("<Q", m))
    for i in range(m):
        key = f"arg:w{i}".encode()
        out.append(struct.pack("<Q", len(key)) + key)
    return b"".join(out)


def write_files(folder, n_addn, n_chain, m_params):
    os.makedirs(folder, exist_ok=True)
    files = {"addn": os.path.join(folder, f"addn{n_addn}-symbol.json"),
             "chain": os.path.join(folder, f"chain{n_chain}-symbol.json"),
             "params": os.path.join(folder, f"p{m_params}.params")}
    if not os.path.exists(files["addn"]):
        with open(files["addn"], "w") as f:
            json.dump(_addn_json(n_addn), f)
    if not os.path.exists(files["chain"]):
        with open(files["chain"], "w") as f:
            json.dump(_chain_json(n_chain), f)
    if not os.path.exists(files["params"]):
        with open(files["params"], "wb") as f:
            f.write(_params_bytes(m_params))
    return files


_CPU = [0.0]  # process CPU seconds (all threads) of the timed steps so far


def _timed(fn):
    start, cpu = time.perf_counter(), time.process_time()
    value = fn()
    _CPU[0] += time.process_time() - cpu
    return value, time.perf_counter() - start


def run_symbol(mx, path, args):
    """Load, bind and run the symbol at ``path`` with every argument in ``args``."""
    sym, load_s = _timed(lambda: mx.sym.load(path))
    arrays = {k: mx.nd.array(v) for k, v in args.items()}
    exe, bind_s = _timed(lambda: sym.bind(mx.cpu(), arrays, grad_req="null"))
    out, run_s = _timed(lambda: exe.forward()[0].asnumpy())
    return {"load_s": load_s, "bind_s": bind_s, "run_s": run_s,
            "total_s": load_s + bind_s + run_s, "check": float(out.ravel()[0])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dir", default="/tmp/hybridgpu-load-scale")
    parser.add_argument("--mxnet", action="store_true", help="time MXNet (the oracle venv)")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--cases", default="addn,chain,params")
    opts = parser.parse_args()
    if opts.mxnet:
        import mxnet as mx
    else:
        import hybridgpu as mx
    import numpy as np

    n_addn, n_chain = int(100_000 * opts.scale), int(100_000 * opts.scale)
    m_params = int(400_000 * opts.scale)
    files = write_files(opts.dir, n_addn, n_chain, m_params)
    lib = "mxnet" if opts.mxnet else "hybridgpu"
    for case in opts.cases.split(","):
        _CPU[0] = 0.0
        if case == "addn":
            args = {f"x{i}": np.full((2,), 1.0, np.float32) for i in range(n_addn)}
            row = run_symbol(mx, files["addn"], args)
            n = n_addn
        elif case == "chain":
            row = run_symbol(mx, files["chain"], {"x": np.zeros((2,), np.float32)})
            n = n_chain
        else:
            loaded, load_s = _timed(lambda: mx.nd.load(files["params"]))
            row = {"load_s": load_s, "total_s": load_s, "check": len(loaded)}
            n = m_params
        row["cpu_s"] = _CPU[0]
        print(json.dumps({"lib": lib, "case": case, "n": n,
                          **{k: round(v, 3) if isinstance(v, float) else v
                             for k, v in row.items()}}), flush=True)


if __name__ == "__main__":
    main()
