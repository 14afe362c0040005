"""GluonCV / GluonNLP models on hybridgpu against MXNet 1.9.1, on the same weights and inputs.

Two passes, one per interpreter:

    # 1. with the real MXNet (the oracle venv, gluoncv installed there with --no-deps):
    .oracle/bin/python benchmarks/ecosystem_models.py mxnet --dir /tmp/eco_ref
    # 2. with hybridgpu, through the `import mxnet` alias:
    python benchmarks/ecosystem_models.py hybridgpu --dir /tmp/eco_ref \
        --table benchmarks/results/ecosystem_models.md

Pass 1 builds each model with ``pretrained=False``, initializes it (seeded), runs one forward
on a seeded input and saves the parameters, the input, the output and its seconds per
forward. Pass 2 loads those parameters into the same model built by the same package on
hybridgpu and checks: imperative forward equal to MXNet's (max |diff| within 2e-6 of the
output's scale, max |MXNet output|), hybridized forward equal to imperative, export then
``SymbolBlock.imports`` equal, and times a hybridized forward. ``--ctx gpu`` runs pass 2 on
``gpu(0)``: a GPU, or the virtual GPU with ``HYBRIDGPU_VIRTUAL_GPU=1`` (its seconds are the
CPU's, not a GPU's). It writes one row per model
(a failure row names the exception). ``--only NAME`` runs some models; ``--list`` lists them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import traceback

import numpy as np

#: (family, model name, input shape): small inputs, each family once or twice
MODELS = [
    ("ResNet v1", "resnet18_v1", (1, 3, 64, 64)),
    ("ResNet v1b", "resnet18_v1b", (1, 3, 64, 64)),
    ("ResNet v1d", "resnet50_v1d", (1, 3, 64, 64)),
    ("ResNet v2", "resnet18_v2", (1, 3, 64, 64)),
    ("ResNeXt", "resnext50_32x4d", (1, 3, 64, 64)),
    ("SE-ResNet", "se_resnet18_v1", (1, 3, 64, 64)),
    ("MobileNet v1", "mobilenet0.25", (1, 3, 64, 64)),
    ("MobileNet v2", "mobilenetv2_0.25", (1, 3, 64, 64)),
    ("MobileNet v3", "mobilenetv3_small", (1, 3, 64, 64)),
    ("DenseNet", "densenet121", (1, 3, 224, 224)),
    ("SqueezeNet", "squeezenet1.1", (1, 3, 224, 224)),
    ("VGG", "vgg11", (1, 3, 32, 32)),
    ("DarkNet", "darknet53", (1, 3, 64, 64)),
    ("Inception", "inceptionv3", (1, 3, 299, 299)),
    ("Xception", "xception", (1, 3, 71, 71)),
    ("CIFAR", "cifar_resnet20_v1", (2, 3, 32, 32)),
    ("CIFAR", "cifar_wideresnet16_10", (1, 3, 32, 32)),
    ("AlexNet", "alexnet", (1, 3, 224, 224)),
    ("SSD", "ssd_300_mobilenet0.25_voc", (1, 3, 128, 128), {"pretrained_base": False}),
    ("YOLOv3", "yolo3_mobilenet0.25_voc", (1, 3, 64, 64), {"pretrained_base": False}),
    ("CenterNet", "center_net_resnet18_v1b_voc", (1, 3, 64, 64), {"pretrained_base": False}),
    ("FCN", "fcn_resnet50_voc", (1, 3, 64, 64),
     {"pretrained_base": False, "crop_size": 64, "base_size": 64}),
    ("PSPNet", "psp_resnet50_ade", (1, 3, 96, 96),
     {"pretrained_base": False, "crop_size": 96, "base_size": 96}),
    ("DeepLab", "deeplab_resnet50_ade", (1, 3, 64, 64),
     {"pretrained_base": False, "crop_size": 64, "base_size": 64}),
    ("SimplePose", "simple_pose_resnet18_v1b", (1, 3, 64, 48), {"pretrained_base": False}),
    ("I3D", "i3d_resnet50_v1_kinetics400", (1, 3, 8, 64, 64), {"pretrained_base": False}),
    ("Faster R-CNN", "faster_rcnn_resnet50_v1b_voc", (1, 3, 128, 128),
     {"pretrained_base": False}),
    # 256 x 256: at 128 its RPN has fewer anchors (8 x 8 x 15 = 960) than it keeps before NMS
    # (1000), which MXNet's slice_axis refuses too
    ("Mask R-CNN", "mask_rcnn_resnet18_v1b_coco", (1, 3, 256, 256), {"pretrained_base": False}),
    ("Mask R-CNN", "mask_rcnn_fpn_resnet18_v1b_coco", (1, 3, 256, 256),
     {"pretrained_base": False}),
]

TOLERANCE = 2e-6


def _build(name):
    import gluoncv
    import mxnet as mx

    kwargs = next(m[3] for m in MODELS if m[1] == name) if len(
        next(m for m in MODELS if m[1] == name)) > 3 else {}
    with mx.name.NameManager():
        net = gluoncv.model_zoo.get_model(name, pretrained=False, **kwargs)
    return net


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _forward_time(net, x, repeat=3):
    import mxnet as mx

    net(x)
    mx.nd.waitall()
    start = time.perf_counter()
    for _ in range(repeat):
        outs = _as_list(net(x))
        for o in outs:
            o.wait_to_read()
    return (time.perf_counter() - start) / repeat


def reference(args):
    """Pass 1, real MXNet: parameters, input, output, seconds per hybridized forward."""
    import mxnet as mx

    os.makedirs(args.dir, exist_ok=True)
    for family, name, shape, *_ in _selected(args):
        mx.random.seed(0)
        np.random.seed(0)
        net = _build(name)
        net.initialize(mx.init.Xavier(magnitude=2.0))
        # random scales and shifts too, so that scores do not tie (NMS and top-k then have
        # one right answer); running statistics as a fresh BatchNorm has them
        net.collect_params(".*gamma$").initialize(mx.init.Uniform(0.5), force_reinit=True)
        net.collect_params(".*(beta|bias)$").initialize(mx.init.Uniform(0.1), force_reinit=True)
        net.collect_params(".*mean$").initialize(mx.init.Zero(), force_reinit=True)
        net.collect_params(".*var$").initialize(mx.init.One(), force_reinit=True)
        x = mx.nd.array(np.random.RandomState(1).uniform(-1, 1, shape).astype("f4"))
        outs = [o.asnumpy() for o in _as_list(net(x))]
        net.save_parameters(os.path.join(args.dir, f"{name}.params"))
        net.hybridize(static_alloc=True, static_shape=True)
        seconds = _forward_time(net, x)
        np.savez(os.path.join(args.dir, f"{name}.npz"), x=x.asnumpy(),
                 **{f"out{i}": o for i, o in enumerate(outs)})
        with open(os.path.join(args.dir, f"{name}.json"), "w") as f:
            json.dump({"family": family, "seconds": seconds}, f)
        print(f"{name}: {[o.shape for o in outs]} {seconds * 1e3:.1f} ms", flush=True)


def _max_rel(got, want):
    scale = max(float(np.abs(w).max()) for w in want) or 1.0
    return max(float(np.abs(g - w).max()) for g, w in zip(got, want)) / scale


def _check_one(name, ref_dir, ctx):
    """One row: equal imperative, hybridized, export/import, seconds per forward."""
    import mxnet as mx

    saved = np.load(os.path.join(ref_dir, f"{name}.npz"))
    want = [saved[k] for k in sorted(k for k in saved.files if k.startswith("out"))]
    with open(os.path.join(ref_dir, f"{name}.json")) as f:
        meta = json.load(f)
    row = {"model": name, "family": meta["family"], "mxnet_s": meta["seconds"]}
    x = mx.nd.array(saved["x"], ctx=ctx)
    net = _build(name)
    net.load_parameters(os.path.join(ref_dir, f"{name}.params"), ctx=ctx)
    imperative = [o.asnumpy() for o in _as_list(net(x))]
    row["imperative"] = _max_rel(imperative, want)
    net.hybridize()
    hybrid = [o.asnumpy() for o in _as_list(net(x))]
    row["hybridized"] = _max_rel(hybrid, imperative)
    row["seconds"] = _forward_time(net, x)
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "model")
        net.export(prefix)
        loaded = mx.gluon.SymbolBlock.imports(f"{prefix}-symbol.json", "data",
                                              f"{prefix}-0000.params", ctx=ctx)
        exported = [o.asnumpy() for o in _as_list(loaded(x))]
    row["export"] = _max_rel(exported, imperative)
    return row


def compare(args):
    """Pass 2, hybridgpu through the alias: one row per model."""
    import hybridgpu

    mx = hybridgpu.install_mxnet_alias()
    rows = []
    for family, name, *_ in _selected(args):
        if not os.path.exists(os.path.join(args.dir, f"{name}.npz")):
            continue
        try:
            row = _check_one(name, args.dir, mx.gpu(0) if args.ctx == "gpu" else mx.cpu())
        except Exception as err:  # noqa: BLE001  (a failing model is a row of the table)
            row = {"model": name, "family": family,
                   "error": f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"}
            if args.verbose:
                traceback.print_exc()
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.table:
        _write_table(rows, args.table, args.ctx)
    return rows


def _equal(value):
    return f"{'yes' if value <= TOLERANCE else 'NO'} ({value:.1e})"


def _write_table(rows, path, ctx="cpu"):
    lines = ["# GluonCV models on hybridgpu vs MXNet 1.9.1", "",
             "Command: `.oracle/bin/python benchmarks/ecosystem_models.py mxnet --dir D`, "
             "then `python benchmarks/ecosystem_models.py hybridgpu --dir D --table "
             "benchmarks/results/ecosystem_models.md`.", "",
             f"Written by `benchmarks/ecosystem_models.py` ({ctx}, float32, `pretrained=False`, "
             "MXNet's Xavier-initialized weights loaded into both). *Equal* means max |diff| "
             f"<= {TOLERANCE} x max |MXNet output|; hybridized and export are compared with "
             "hybridgpu's imperative output; the number in brackets is max |diff| / scale. "
             "Seconds per forward: hybridized, batch as in the table's input, on a shared "
             "2-core machine under other jobs' load (rough; MXNet: `static_alloc=True, "
             "static_shape=True`).", "",
             "| family | model | equal to MXNet | hybridized | export/import | s/forward | "
             "MXNet s/forward |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['family']} | {r['model']} | fails: {r['error']} | | | | |")
            continue
        lines.append(f"| {r['family']} | {r['model']} | {_equal(r['imperative'])} | "
                     f"{_equal(r['hybridized'])} | {_equal(r['export'])} | "
                     f"{r['seconds']:.4f} | {r['mxnet_s']:.4f} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _selected(args):
    return [m for m in MODELS if not args.only or m[1] in args.only]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=("mxnet", "hybridgpu"))
    parser.add_argument("--dir", required=True, help="where pass 1 writes, pass 2 reads")
    parser.add_argument("--table", help="pass 2: write the Markdown table here")
    parser.add_argument("--only", nargs="*", help="model names to run")
    parser.add_argument("--verbose", action="store_true", help="print tracebacks")
    parser.add_argument("--ctx", choices=("cpu", "gpu"), default="cpu",
                        help="pass 2's device (gpu(0): a GPU, or the virtual GPU with "
                        "HYBRIDGPU_VIRTUAL_GPU=1)")
    parser.add_argument("--from-log", help="pass 2: only write --table from the JSON rows "
                        "a previous pass 2 printed (one per line) in this file")
    args = parser.parse_args(argv)
    if args.side == "mxnet":
        reference(args)
    elif args.from_log:
        with open(args.from_log) as f:
            rows = [json.loads(line) for line in f if line.startswith("{")]
        _write_table(rows, args.table, args.ctx)
    else:
        compare(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
