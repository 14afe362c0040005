"""Invariants every OpDef keeps, and the attribute schema's parsing of MXNet's JSON strings."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import ops
from hybridgpu.base import MXNetError
from hybridgpu.ops.attrs import (
    REQUIRED,
    Axis,
    Bool,
    DType,
    Enum,
    Float,
    FloatTuple,
    Int,
    Number,
    Shape,
    Str,
)

ALL = ops.all_ops()


@pytest.mark.parametrize("op", ALL, ids=lambda op: op.name)
def test_op_is_documented_and_consistent(op):
    assert op.doc, f"{op.name} has no doc"
    if op.elementwise:
        assert op.cuda, f"elementwise op {op.name} has no CUDA expression"
        expressions = op.cuda.values() if isinstance(op.cuda, dict) else [op.cuda]
        assert all("in0" in e for e in expressions), op.name
        if isinstance(op.cuda, dict):
            assert op.cuda_key in op.attrs, f"{op.name}: cuda_key must name an attribute"
    assert len(set(op.inputs)) == len(op.inputs)
    assert set(op.aux) <= set(op.inputs)
    assert set(op.nondiff_inputs) <= set(op.inputs)
    if op.grad is not None:
        params = inspect.signature(op.grad).parameters
        assert list(params)[:4] == ["F", "ins", "outs", "gouts"], op.name


@pytest.mark.parametrize("op", ALL, ids=lambda op: op.name)
def test_defaults_survive_format_and_parse(op):
    """Writing an attribute the way MXNet's JSON does and reading it back gives the value."""
    for key, spec in op.attrs.items():
        if spec.default is REQUIRED:
            continue
        text = spec.format(spec.default)
        assert isinstance(text, str)
        assert spec.parse(text) == spec.parse(spec.default), (op.name, key, text)


@pytest.mark.parametrize(("spec", "text", "value"), [
    (Int(), "3", 3), (Int(), 4.0, 4), (Float(), "1e-3", 1e-3), (Float(), 2, 2.0),
    (Bool(), "True", True), (Bool(), "0", False), (Bool(), "false", False), (Bool(), 1, True),
    (Str(), "abc", "abc"), (Enum(["relu", "tanh"]), "'relu'", "relu"),
    (Shape(), "(3, 3)", (3, 3)), (Shape(), "[2,2]", (2, 2)), (Shape(), "(3,)", (3,)),
    (Shape(), 5, (5,)), (Shape(), "()", ()), (Axis(), "1", 1), (Axis(), "(0, 2)", (0, 2)),
    (Axis(default=None), "None", None), (DType(), "float16", "float16"),
    (DType(), np.int32, "int32"), (FloatTuple(), "(0.5, 1)", (0.5, 1.0)),
    (Number(), "1", 1), (Number(), "1.5", 1.5), (Int(default=None), "None", None),
])
def test_attribute_kinds_parse_mxnet_strings(spec, text, value):
    assert spec.parse(text) == value


@pytest.mark.parametrize(("spec", "text"), [
    (Int(), "3.5"), (Int(), True), (Float(), "x"), (Bool(), "yes"), (Bool(), 2),
    (Enum(["relu"]), "tanh"), (Shape(), "(3, a)"), (Shape(), 1.5), (DType(), "complex64"),
    (DType(), "float99"), (Int(), "None"), (Number(), "one"),
])
def test_attribute_kinds_refuse_bad_values(spec, text):
    with pytest.raises(ValueError, match="expected|not supported"):
        spec.parse(text)


def test_cuda_for_picks_the_expression_of_the_attributes():
    act = ops.get("Activation")
    assert act.cuda_for(act.parse_attrs({"act_type": "relu"})) == act.cuda["relu"]
    assert ops.get("relu").cuda_for({}) == ops.get("relu").cuda


def test_attribute_error_names_op_and_attribute():
    with pytest.raises(MXNetError, match=r"_plus_scalar: attribute 'scalar': expected a number"):
        ops.get("_plus_scalar").parse_attrs({"scalar": "abc"})
    with pytest.raises(MXNetError, match=r"unknown attribute 'scalr' \(did you mean 'scalar'"):
        ops.get("_plus_scalar").parse_attrs({"scalr": 1})


def test_double_underscore_attributes_are_graph_level_and_ignored():
    attrs = ops.get("relu").parse_attrs({"__lr_mult__": "2.0"})
    assert attrs == {}


def test_unknown_op_suggests_names():
    with pytest.raises(MXNetError, match="unknown operator 'broadcast_ad'.*broadcast_add"):
        ops.get("broadcast_ad")


def test_names_are_unique_and_aliases_resolve():
    for op in ALL:
        for name in (op.name, *op.aliases):
            assert ops.get(name) is op


def test_format_attrs_writes_mxnet_strings():
    op = ops.get("_plus_scalar")
    assert op.format_attrs({"scalar": 1}) == {"scalar": "1"}
    assert op.format_attrs({"scalar": 1.5, "is_int": False}) == {"scalar": "1.5",
                                                                 "is_int": "False"}


def test_generated_functions_have_real_signatures():
    sig = inspect.signature(mx.nd._plus_scalar)
    assert list(sig.parameters) == ["data", "scalar", "is_int", "out", "name"]
    assert mx.nd.broadcast_add.__name__ == "broadcast_add"
    assert "Elementwise add" in mx.nd.broadcast_add.__doc__
