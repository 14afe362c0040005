"""GluonNLP 0.10 models on hybridgpu against MXNet 1.9.1, on the same weights and inputs.

    .oracle/bin/python benchmarks/ecosystem_nlp.py mxnet --dir /tmp/nlp_ref
    python benchmarks/ecosystem_nlp.py hybridgpu --dir /tmp/nlp_ref \
        --table benchmarks/results/ecosystem_nlp.md

Pass 1 (real MXNet) builds each model small, initializes it (seeded), runs one forward in
predict mode and saves parameters, inputs and outputs; pass 2 (hybridgpu through the alias)
loads the parameters into the same model and compares its imperative forward with MXNet's
(max |diff| within 2e-6 of the output's scale) and, where the model can be hybridized, its
hybridized forward with its imperative one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np

TOLERANCE = 2e-6


def _standard_lm(nlp, mx):
    net = nlp.model.StandardRNN("lstm", vocab_size=50, embed_size=16, hidden_size=16,
                                num_layers=2, dropout=0.0, tie_weights=False)
    rng = np.random.RandomState(1)
    tokens = mx.nd.array(rng.randint(0, 50, (6, 3)))
    return net, lambda n: n(tokens, n.begin_state(batch_size=3, func=mx.nd.zeros))[0], True


def _awd_lm(nlp, mx):
    net = nlp.model.AWDRNN("lstm", vocab_size=50, embed_size=16, hidden_size=16, num_layers=2,
                           tie_weights=True, dropout=0.2, weight_drop=0.5, drop_h=0.2,
                           drop_i=0.2, drop_e=0.1)
    rng = np.random.RandomState(2)
    tokens = mx.nd.array(rng.randint(0, 50, (6, 3)))
    return net, lambda n: n(tokens, n.begin_state(batch_size=3, func=mx.nd.zeros))[0], True


def _bert(nlp, mx):
    encoder = nlp.model.BERTEncoder(num_layers=2, units=16, hidden_size=32, max_length=32,
                                    num_heads=2, dropout=0.0)
    net = nlp.model.BERTModel(encoder, vocab_size=30, token_type_vocab_size=2, units=16,
                              embed_size=16, use_pooler=True, use_decoder=True,
                              use_classifier=True)
    rng = np.random.RandomState(3)
    args = (mx.nd.array(rng.randint(0, 30, (2, 7))), mx.nd.array(rng.randint(0, 2, (2, 7))),
            mx.nd.array([7, 5]), mx.nd.array([[1, 2], [3, 4]]))
    return net, lambda n: n(*args), True


def _transformer(nlp, mx):
    enc, dec, one_step = nlp.model.transformer.get_transformer_encoder_decoder(
        num_layers=2, units=16, hidden_size=32, num_heads=2, max_src_length=20,
        max_tgt_length=20, dropout=0.0)
    vocab = nlp.Vocab(nlp.data.count_tokens(list("abcdefgh")))
    net = nlp.model.translation.NMTModel(src_vocab=vocab, tgt_vocab=vocab, encoder=enc,
                                         decoder=dec, one_step_ahead_decoder=one_step,
                                         embed_size=16, prefix="nmt_")
    rng = np.random.RandomState(4)
    args = (mx.nd.array(rng.randint(0, 12, (2, 6))), mx.nd.array(rng.randint(0, 12, (2, 5))),
            mx.nd.array([6, 4]), mx.nd.array([5, 3]))
    return net, lambda n: n(*args)[0], True


def _elmo_encoder(nlp, mx):
    net = nlp.model.BiLMEncoder(mode="lstmpc", num_layers=2, input_size=8, hidden_size=16,
                                dropout=0.0, skip_connection=True, proj_size=8, cell_clip=3,
                                proj_clip=3)
    x = mx.nd.array(np.random.RandomState(5).uniform(-1, 1, (5, 2, 8)))
    return net, lambda n: n(x, n.begin_state(mx.nd.zeros, batch_size=2),
                            mx.nd.ones((2, 5)))[0], False


MODELS = {"StandardRNN (LSTM LM)": _standard_lm, "AWDRNN (AWD-LSTM LM)": _awd_lm,
          "BERT (2 layers, 16 units)": _bert, "Transformer NMT (2 layers)": _transformer,
          "ELMo BiLMEncoder (LSTMP)": _elmo_encoder}


def _key(name):
    return name.split()[0].lower()


def _outputs(out):
    return [o.asnumpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def reference(args):
    """Pass 1, real MXNet."""
    import gluonnlp as nlp
    import mxnet as mx

    os.makedirs(args.dir, exist_ok=True)
    for name, build in MODELS.items():
        mx.random.seed(0)
        with mx.name.NameManager():
            net, run, _ = build(nlp, mx)
        net.initialize(mx.init.Uniform(0.3))
        outs = _outputs(run(net))
        net.save_parameters(os.path.join(args.dir, f"{_key(name)}.params"))
        np.savez(os.path.join(args.dir, f"{_key(name)}.npz"),
                 **{f"out{i}": o for i, o in enumerate(outs)})
        print(name, [o.shape for o in outs], flush=True)


def _rel(got, want):
    scale = max(float(np.abs(w).max()) for w in want) or 1.0
    return max(float(np.abs(g - w).max()) for g, w in zip(got, want)) / scale


def compare(args):
    """Pass 2, hybridgpu through the alias."""
    import hybridgpu

    mx = hybridgpu.install_mxnet_alias()
    import gluonnlp as nlp

    rows = []
    for name, build in MODELS.items():
        row = {"model": name}
        try:
            saved = np.load(os.path.join(args.dir, f"{_key(name)}.npz"))
            want = [saved[k] for k in sorted(saved.files)]
            with mx.name.NameManager():
                net, run, hybridizable = build(nlp, mx)
            net.load_parameters(os.path.join(args.dir, f"{_key(name)}.params"))
            eager = _outputs(run(net))
            row["imperative"] = _rel(eager, want)
            if hybridizable:
                net.hybridize()
                row["hybridized"] = _rel(_outputs(run(net)), eager)
        except Exception as err:  # noqa: BLE001  (a failing model is a row of the table)
            row["error"] = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.table:
        _write_table(rows, args.table)


def _cell(value):
    if value is None:
        return "not hybridizable here"
    return f"{'yes' if value <= TOLERANCE else 'NO'} ({value:.1e})"


def _write_table(rows, path):
    lines = ["# GluonNLP models on hybridgpu vs MXNet 1.9.1", "",
             "Written by `benchmarks/ecosystem_nlp.py` (cpu, float32, predict mode, weights "
             "drawn by MXNet (`Uniform(0.3)`) and loaded into both). *Equal* means max |diff| "
             f"<= {TOLERANCE} x max |MXNet output| (the number in brackets); hybridized is "
             "compared with hybridgpu's imperative output.", "",
             "| model | equal to MXNet | hybridized |", "|---|---|---|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | fails: {r['error']} | |")
        else:
            lines.append(f"| {r['model']} | {_cell(r['imperative'])} | "
                         f"{_cell(r.get('hybridized'))} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=("mxnet", "hybridgpu"))
    parser.add_argument("--dir", required=True, help="where pass 1 writes, pass 2 reads")
    parser.add_argument("--table", help="pass 2: write the Markdown table here")
    args = parser.parse_args(argv)
    (reference if args.side == "mxnet" else compare)(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
