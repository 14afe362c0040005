"""Attribute keys and values from a model file are data, never code (docs/security.md, issue #20
item 1).

A ``Custom`` node keeps attribute keys of any text (MXNet hands them to the registered
``CustomOpProp`` as ``**kwargs``), and every node may carry free-form ``__key__`` attributes.
Each hostile key and value below would create a marker file if a code generator ever pasted it
into a program. Each model goes through the four ways a user loads one: ``SymbolBlock.imports``
+ call (imperative and hybridized), ``Symbol.bind``, ``simple_bind`` and ``Symbol.eval``, and
``mx.mod.Module``; on cpu and (``-m gpu``, e.g. ``HYBRIDGPU_VIRTUAL_GPU=1``) on the GPU path. The
tests assert that the marker never appears, that the prop received every key and value
unchanged, and that the outputs are what MXNet computes for the model (here with NumPy).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import gluon, nd

from optional_hypothesis import given, settings, st

_SEEN = []  # the kwargs of the prop of each forward run, in order


class _Affine(mx.operator.CustomOp):
    """``out = 2 * x + 1``, recording its prop's kwargs."""

    def __init__(self, kwargs):
        super().__init__()
        self.kwargs = kwargs

    def forward(self, is_train, req, in_data, out_data, aux):
        _SEEN.append(self.kwargs)
        self.assign(out_data[0], req[0], in_data[0] * 2 + 1)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.assign(in_grad[0], req[0], out_grad[0] * 2)


@mx.operator.register("security_affine")
class _AffineProp(mx.operator.CustomOpProp):
    """Takes any keyword arguments, as a model's Custom op may."""

    def __init__(self, **kwargs):
        super().__init__(need_top_grad=True)
        self.kwargs = dict(kwargs)

    def create_operator(self, ctx, shapes, dtypes):
        return _Affine(self.kwargs)


def _payloads(marker):
    """Keys and values that would touch ``marker`` if they reached generated source."""
    run = f"__import__('os').system('touch {marker}')"
    opened = f"open({str(marker)!r}, 'w')"
    return [
        f"a=1)\n{run}\nzz=dict(b",                 # the reported key
        f"a=1); {opened}; zz=dict(b=1",            # one line
        f"x']; {opened}; y=ATTRS['",                # breaks out of a string subscript
        f'x"); {opened}; ("',
        f"k\r{run}\r#",                            # bare carriage return
        f"k\\\n{run}",                             # backslash-newline
        f"k\u2028{run}",                           # Unicode line separator
        f"**{{{opened!r}: 1}}",                    # keyword unpacking
        f"*/ {run}; /*",                           # C comment
        "xp", "ATTRS", "np", "bind", "forward", "inputs",  # names the program itself uses
        "ünï 名前 with spaces", "k" * 3000, "1leading_digit", "lambda",
    ]


def _hostile_attrs(marker):
    """``{key: value}`` with each payload as a key and, under a plain key, as a value."""
    attrs = {}
    for n, text in enumerate(_payloads(marker)):
        attrs[text] = f"v{n}"
        attrs[f"value{n}"] = text
    return attrs


def _files(tmp_path, attrs, dunder):
    """``(symbol file, params file, input, expected output)`` of ``relu(Custom(fc(x)))`` whose
    Custom node carries ``attrs`` and whose every node carries the ``__key__`` attributes
    ``dunder``."""
    data = mx.sym.var("data")
    fc = mx.sym.FullyConnected(data, num_hidden=3, name="fc")
    out = mx.sym.relu(mx.sym.Custom(fc, op_type="security_affine", name="c"), name="r")
    doc = json.loads(out.tojson())
    for node in doc["nodes"]:
        node.setdefault("attrs", {}).update(dunder)
        if node["op"] == "Custom":
            node["attrs"].update(attrs)
    sym_file, params_file = tmp_path / "m-symbol.json", tmp_path / "m-0000.params"
    sym_file.write_text(json.dumps(doc), encoding="utf-8")
    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (3, 4)).astype(np.float32)
    b = rng.uniform(-1, 1, (3,)).astype(np.float32)
    nd.save(str(params_file), {"arg:fc_weight": nd.array(w), "arg:fc_bias": nd.array(b)})
    x = rng.uniform(-1, 1, (2, 4)).astype(np.float32)
    expected = np.maximum((x @ w.T + b) * 2 + 1, 0)
    return str(sym_file), str(params_file), x, expected


def _via_imports(sym_file, params_file, x, ctx):
    net = gluon.SymbolBlock.imports(sym_file, ["data"], params_file, ctx=ctx)
    outs = [net(nd.array(x, ctx=ctx)).asnumpy()]
    net.hybridize()
    outs += [net(nd.array(x, ctx=ctx)).asnumpy() for _ in range(2)]
    return outs


def _args(params_file, x, ctx):
    args = {k.split(":", 1)[1]: v.as_in_context(ctx) for k, v in nd.load(params_file).items()}
    args["data"] = nd.array(x, ctx=ctx)
    return args


def _via_bind(sym_file, params_file, x, ctx):
    exe = mx.sym.load(sym_file).bind(ctx, _args(params_file, x, ctx))
    return [exe.forward()[0].asnumpy(), exe.forward(is_train=True)[0].asnumpy()]


def _via_simple_bind_and_eval(sym_file, params_file, x, ctx):
    sym, args = mx.sym.load(sym_file), _args(params_file, x, ctx)
    exe = sym.simple_bind(ctx, data=x.shape)
    for name, value in args.items():
        exe.arg_dict[name][:] = value
    return [exe.forward()[0].asnumpy(), sym.eval(ctx, **args)[0].asnumpy()]


def _via_module(sym_file, params_file, x, ctx):
    params = {k.split(":", 1)[1]: v for k, v in nd.load(params_file).items()}
    mod = mx.mod.Module(mx.sym.load(sym_file), data_names=["data"], label_names=None,
                        context=ctx)
    mod.bind(data_shapes=[("data", x.shape)], for_training=False)
    mod.set_params(params, {})
    mod.forward(mx.io.DataBatch([nd.array(x, ctx=ctx)]), is_train=False)
    return [mod.get_outputs()[0].asnumpy()]


PATHS = {"imports": _via_imports, "bind": _via_bind,
         "simple_bind+eval": _via_simple_bind_and_eval, "module": _via_module}


def _check_path(tmp_path, ctx, path, attrs, dunder=None):
    marker = tmp_path / "MARKER"
    sym_file, params_file, x, expected = _files(tmp_path, attrs, dunder or {})
    _SEEN.clear()
    outs = PATHS[path](sym_file, params_file, x, ctx)
    assert not marker.exists(), f"a hostile attribute ran code through {path}"
    for out in outs:
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    assert len(_SEEN) >= len(outs), "the Custom op did not run on every call"
    for kwargs in _SEEN:  # every key and value reaches the prop unchanged, as strings
        assert kwargs == attrs


@pytest.mark.parametrize("path", sorted(PATHS))
def test_hostile_custom_keys_and_values_run_nothing_on_cpu(tmp_path, path):
    _check_path(tmp_path, mx.cpu(), path, _hostile_attrs(tmp_path / "MARKER"))


@pytest.mark.gpu
@pytest.mark.parametrize("path", sorted(PATHS))
def test_hostile_custom_keys_and_values_run_nothing_on_gpu(tmp_path, gpu_available, path):
    _check_path(tmp_path, gpu_available, path, _hostile_attrs(tmp_path / "MARKER"))


def _dunder(marker):
    return {f"__{text}__": text for text in _payloads(marker)}


@pytest.mark.parametrize("path", sorted(PATHS))
def test_hostile_free_form_attributes_of_every_node_run_nothing(tmp_path, path):
    """``__key__`` attributes (MXNet keeps any on any node) with hostile keys and values."""
    marker = tmp_path / "MARKER"
    _check_path(tmp_path, mx.cpu(), path, {"plain": "1"}, _dunder(marker))


@pytest.mark.gpu
@pytest.mark.parametrize("path", sorted(PATHS))
def test_hostile_free_form_attributes_run_nothing_on_gpu(tmp_path, gpu_available, path):
    marker = tmp_path / "MARKER"
    _check_path(tmp_path, gpu_available, path, {"plain": "1"}, _dunder(marker))


def test_generated_program_holds_no_attribute_text(tmp_path):
    """The source of the compiled program names the attributes only through ``ATTRS``:
    no key appears outside an escaped comment line."""
    marker = tmp_path / "MARKER"
    attrs = _hostile_attrs(marker)
    sym_file, params_file, x, _ = _files(tmp_path, attrs, {})
    net = gluon.SymbolBlock.imports(sym_file, ["data"], params_file)
    net.hybridize()
    net(nd.array(x))
    source = net.last_executable.source
    if True:
        assert source.isascii()
        code = [line.split("#", 1)[0] for line in source.splitlines()]
        assert "ATTRS[" in "\n".join(code)
        for line in code:
            assert "system" not in line and "MARKER" not in line and "value0" not in line


@settings(max_examples=25, deadline=None)
@given(keys=st.lists(st.text(min_size=1, max_size=40).filter(
    lambda k: k != "op_type" and not (k.startswith("__") and k.endswith("__"))),
    min_size=1, max_size=4, unique=True), value=st.text(max_size=40))
def test_generated_keys_reach_the_prop_unchanged(tmp_path_factory, keys, value):
    tmp_path = tmp_path_factory.mktemp("gen")
    attrs = {k: value for k in keys}
    try:
        json.dumps(attrs).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate cannot be stored in a file (refused at load, tested apart)
    _check_path(tmp_path, mx.cpu(), "bind", attrs)


@pytest.mark.parametrize("n", range(len(_payloads("M"))))
def test_each_payload_alone_as_a_key_runs_nothing(tmp_path, n):
    """One hostile key at a time (the reported key alone ran ``touch`` before the fix)."""
    text = _payloads(tmp_path / "MARKER")[n]
    _check_path(tmp_path, mx.cpu(), "bind", {text: "1", "other": text})


def _nonfinite_cases():
    x, g, b = mx.sym.var("x"), mx.sym.var("g"), mx.sym.var("b")
    mm, mv = mx.sym.var("mm"), mx.sym.var("mv")
    nan, inf = float("nan"), float("inf")
    return {
        "bn_eps_nan": mx.sym.BatchNorm(x, g, b, mm, mv, eps=nan),
        "bn_eps_inf": mx.sym.BatchNorm(x, g, b, mm, mv, eps=inf),
        "bn_momentum_nan": mx.sym.BatchNorm(x, g, b, mm, mv, momentum=nan),
        "ln_eps_nan": mx.sym.LayerNorm(x, g, b, eps=nan),
        "ln_eps_inf": mx.sym.LayerNorm(x, g, b, eps=inf),
        "softmax_temperature_nan": mx.sym.softmax(x, temperature=nan),
        "softmax_temperature_inf": mx.sym.softmax(x, temperature=inf),
        "log_softmax_temperature_inf": mx.sym.log_softmax(x, temperature=inf),
    }


def _run_nonfinite(sym, ctx, is_train):
    """Outputs and moving statistics of ``sym`` on a (2, 3, 4) input."""
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7
    width = 4 if "LayerNorm" in sym.tojson() else 3
    args = {"x": nd.array(x, ctx=ctx), "g": nd.ones((width,), ctx=ctx),
            "b": nd.zeros((width,), ctx=ctx)}
    args = {k: v for k, v in args.items() if k in sym.list_arguments()}
    aux = {"mm": nd.zeros((3,), ctx=ctx), "mv": nd.ones((3,), ctx=ctx)}
    aux = {k: v for k, v in aux.items() if k in sym.list_auxiliary_states()}
    out = sym.bind(ctx, args, aux_states=aux).forward(is_train=is_train)[0].asnumpy()
    return [out] + [a.asnumpy() for a in aux.values()]


@pytest.mark.gpu
@pytest.mark.parametrize("is_train", [False, True])
@pytest.mark.parametrize("case", sorted(_nonfinite_cases()))
def test_nan_and_inf_attributes_run_on_gpu_as_on_cpu(gpu_available, case, is_train):
    """``nan``/``inf`` in a float attribute compile into valid CUDA C (bit patterns, not the
    words ``nan``/``inf``) and give cpu's numbers."""
    sym = _nonfinite_cases()[case]
    want = _run_nonfinite(sym, mx.cpu(), is_train)
    got = _run_nonfinite(sym, gpu_available, is_train)
    for w, g in zip(want, got):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, equal_nan=True)
