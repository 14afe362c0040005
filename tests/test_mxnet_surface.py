"""Nothing missing silently: every top-level name of MXNet 1.9.1 is listed with its status,
supported names resolve, missing ones raise an AttributeError that points to the guide."""

from __future__ import annotations

import pathlib
import re

import pytest

import hybridgpu as mx
from hybridgpu.mxnet_surface import GUIDE, SURFACE

ROOT = pathlib.Path(__file__).resolve().parent.parent
# MXNet 1.9.1's public top-level names (dir(mxnet), recorded with the oracle)
MXNET_NAMES = (
    "api attribute autograd base callback context contrib engine error executor "
    "executor_manager gluon image img init initializer io kv kvstore libinfo library log "
    "lr_scheduler metric mod model module mon monitor name nd ndarray ndarray_doc notebook np "
    "np_symbol npx numpy numpy_dispatch_protocol numpy_extension numpy_op_fallback "
    "numpy_op_signature onnx operator optimizer profiler random recordio registry rnd rnn rtc "
    "runtime sym symbol symbol_doc test_utils th torch tvmop util visualization viz AttrScope "
    "Context MXNetError cpu cpu_pinned current_context gpu is_np_array is_np_shape np_array "
    "np_shape set_np_shape use_np use_np_array use_np_shape").split()


def test_every_mxnet_name_has_a_status():
    assert sorted(SURFACE) == sorted(MXNET_NAMES)


@pytest.mark.parametrize("name", sorted(n for n, (s, _) in SURFACE.items()
                                       if s in ("supported", "alias", "differs")))
def test_supported_names_resolve(name):
    assert getattr(mx, name) is not None


@pytest.mark.parametrize("name", sorted(n for n, (s, _) in SURFACE.items() if s == "missing"))
def test_missing_names_say_why(name):
    with pytest.raises(AttributeError, match=re.escape(GUIDE)):
        getattr(mx, name)
    assert not hasattr(mx, name)


def test_the_guide_lists_every_name():
    text = (ROOT / GUIDE).read_text()
    for name in SURFACE:
        assert f"`{name}`" in text, name


def test_unknown_names_are_plain_attribute_errors():
    with pytest.raises(AttributeError, match="has no attribute 'zzz'"):
        mx.zzz  # noqa: B018
    assert getattr(mx, "__wrapped__", None) is None
