"""What a newcomer meets first: documents that speak of this repository only, compiled
programs that print readably and can be reached publicly, the virtual GPU saying what it is,
and misuse that gets an error naming the block, what was wrong and what to write instead (of
the builtin type MXNet 1.9.1 raises, checked against the real MXNet when .oracle/ exists)."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu import nd
from hybridgpu.base import MXNetError, NotPortedError
from hybridgpu.executor import CpuExecutable
from hybridgpu.gluon import HybridBlock, nn
from hybridgpu.gluon.hybrid_block import HybridForwardError
from hybridgpu.gluon.parameter import ParameterMissingError

ROOT = pathlib.Path(__file__).resolve().parent.parent
ORACLE = ROOT / ".oracle" / "bin" / "python"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


# -- documents ------------------------------------------------------------------------------
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_documents_point_only_at_files_of_the_repository(page):
    text = page.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)\)", text):
        if "://" not in target:
            assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
    for word in ("shared/", "DESIGN.md", "shared folder", "seed articles"):
        assert word not in text, f"{page.name} speaks of {word!r}, which is not in the repository"
    prose = re.sub(r"```.*?```", "", text, flags=re.S)  # code may name an onnxruntime session
    said = re.findall(r"\b(lent|lend|lending|sessions?)\b", prose)
    assert not said, f"{page.name} speaks of the team's machinery: {said}"


def test_readme_reaches_the_compiled_program_publicly():
    text = (ROOT / "README.md").read_text()
    assert "_last_trace" not in text and "net.last_executable" in text
    assert "(docs/architecture.md)" in text


# -- compiled programs ----------------------------------------------------------------------
class Scale(HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.traces = 0

    def hybrid_forward(self, F, x):
        self.traces += 1
        return F.relu(x * 2 - 1)


def test_cpu_executable_prints_its_signature_and_program():
    net = nn.Dense(3, in_units=4, prefix="fc_")
    net.initialize()
    assert net.last_executable is None
    net.hybridize()
    net(nd.ones((2, 4)))
    exe = net.last_executable
    assert isinstance(exe, CpuExecutable)
    assert repr(exe) == ("<CpuExecutable 'fc' on cpu(0) predict: data (2, 4) float32 -> "
                         "(2, 3) float32>")
    text = str(exe)
    assert text.startswith("cpu program of 'fc' on cpu(0) predict: data (2, 4) float32")
    assert exe.source in text and "def forward(inputs, rng):" in text
    assert "object at 0x" not in text + repr(exe)


def test_compiled_program_is_what_the_call_runs_without_running_it():
    net = Scale(prefix="scale_")
    net.hybridize()
    x = nd.array([[-1.0, 0.5, 2.0]])
    exe = net.compiled_program(x)
    assert net.traces == 1  # traced once, and the call below reuses that trace
    assert exe.signature() == "'scale' on cpu(0) predict: data (1, 3) float32 -> (1, 3) float32"
    out = net(x)
    assert net.traces == 1 and net.last_executable is exe
    assert net.compiled_program(x) is exe
    np.testing.assert_allclose(out.asnumpy(), [[0.0, 0.0, 3.0]])
    with mx.autograd.train_mode():
        assert "train:" in net.compiled_program(x).signature()


def test_compiled_program_asks_for_hybridize_and_arrays():
    net = Scale(prefix="scale_")
    with pytest.raises(MXNetError, match=r"'scale' is not hybridized.*net.hybridize\(\)"):
        net.compiled_program(nd.ones((1, 3)))
    net.hybridize()
    with pytest.raises(TypeError, match="takes the inputs of a call"):
        net.compiled_program(np.ones((1, 3)))


@pytest.mark.gpu
def test_gpu_executable_prints_its_steps_and_signature(gpu_available):
    net = nn.Dense(3, in_units=4, prefix="fc_")
    net.initialize(ctx=gpu_available)
    net.hybridize()
    net(nd.ones((2, 4), ctx=gpu_available))
    exe = net.last_executable
    assert str(exe).startswith("gpu program: ") and "out 0" in str(exe)
    assert repr(exe) == (f"<GpuExecutable 'fc' on {gpu_available} predict: data (2, 4) "
                         "float32 -> (2, 3) float32>")
    assert repr(exe.program).startswith("<gpu Program: ") and "arena" in repr(exe.program)


# -- the virtual GPU ------------------------------------------------------------------------
def test_the_virtual_gpu_says_once_what_it_is():
    script = ("import hybridgpu as mx\n"
              "a = mx.nd.ones((2,), ctx=mx.gpu(0)); b = mx.nd.ones((2,), ctx=mx.gpu(1))\n"
              "print(mx.gpu(0), str(mx.gpu(0)), mx.gpu(0).is_virtual, mx.cpu(0).is_virtual)\n")
    env = {**os.environ, "HYBRIDGPU_VIRTUAL_GPU": "2", "PYTHONWARNINGS": "default"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env=env, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["gpu(0)", "gpu(0)", "True", "False"]  # MXNet's str stays
    notices = [line for line in run.stderr.splitlines() if "VirtualGPUWarning" in line]
    assert len(notices) == 1, run.stderr
    assert notices[0].startswith("<string>:2: ")  # points at the user's line
    assert ("gpu(0) is hybridgpu's virtual GPU (HYBRIDGPU_VIRTUAL_GPU=2)" in notices[0]
            and "timings are not a GPU's" in notices[0])


# -- misuse in hybrid_forward ---------------------------------------------------------------
class Halve(HybridBlock):
    def hybrid_forward(self, F, x):
        return x[:len(x) // 2]


class HalveRows(HybridBlock):
    def hybrid_forward(self, F, x):
        return F.slice_axis(x, axis=0, begin=0, end=x.shape[0] // 2)


def test_len_and_slices_of_a_traced_input_say_what_to_write():
    x = nd.arange(12).reshape((4, 3))
    net = Halve(prefix="halve_")
    assert net(x).shape == (2, 3)  # imperatively x is an NDArray
    net.hybridize()
    with pytest.raises(HybridForwardError) as info:
        net(x)
    message = str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, MXNetError)
    assert "'halve'" in message and "Halve.hybrid_forward" in message
    assert "len(x) counts its outputs" in message and "F.slice_axis(x, axis=0" in message
    fixed = HalveRows()  # what the message says to write: the same in both modes
    expected = fixed(x).asnumpy()
    fixed.hybridize()
    np.testing.assert_array_equal(fixed(x).asnumpy(), expected)


@pytest.mark.parametrize("body", [lambda F, x: F.relu(x[:0]), lambda F, x: x[1]])
def test_other_output_indexing_of_a_traced_input_is_explained(body):
    class Body(HybridBlock):
        def hybrid_forward(self, F, x):
            return body(F, x)

    net = Body(prefix="body_")
    net.hybridize()
    with pytest.raises(HybridForwardError, match=r"'body'.*x\[i\] / x\[a:b\] select outputs"):
        net(nd.ones((4, 3)))


class AddArray(HybridBlock):
    def hybrid_forward(self, F, x):
        return x + nd.array([1.0, 2.0, 3.0])


class AddConstant(HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.c = self.params.get_constant("c", [1.0, 2.0, 3.0])

    def hybrid_forward(self, F, x, c):
        return F.broadcast_add(x, c)


@pytest.mark.parametrize("expression", ["x + nd.array(...)", "nd.array(...) + x",
                                        "F.broadcast_add(x, nd.array(...))"])
def test_an_ndarray_inside_a_traced_hybrid_forward_says_what_to_write(expression):
    class Mixed(HybridBlock):
        def hybrid_forward(self, F, x):
            other = nd.array([1.0, 2.0, 3.0])
            if expression.startswith("F."):
                return F.broadcast_add(x, other)
            return x + other if expression.startswith("x") else other + x

    net = Mixed(prefix="mixed_")
    net.hybridize()
    with pytest.raises(HybridForwardError) as info:
        net(nd.ones((2, 3)))
    message = str(info.value)
    assert "'mixed'" in message and "while tracing" in message and "NDArray" in message
    assert "self.params.get_constant('c', value)" in message
    fixed = AddConstant()  # what the message says to write
    fixed.initialize()
    fixed.hybridize()
    np.testing.assert_array_equal(fixed(nd.ones((2, 3))).asnumpy(), [[2.0, 3.0, 4.0]] * 2)


def test_an_error_in_a_child_names_the_child():
    net = nn.HybridSequential(prefix="outer_")
    with net.name_scope():
        net.add(AddArray(prefix="inner_"))
    net.hybridize()
    with pytest.raises(HybridForwardError, match="in HybridBlock 'outer_inner'"):
        net(nd.ones((2, 3)))


class Forgets(HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3,), init="ones")

    def hybrid_forward(self, F, x):
        return x * 2


@pytest.mark.parametrize("hybridize", [False, True])
def test_a_parameter_missing_from_the_signature_is_named(hybridize):
    net = Forgets(prefix="forgets_")
    net.initialize()
    if hybridize:
        net.hybridize()
    with pytest.raises(HybridForwardError) as info:
        net(nd.ones((2, 3)))
    message = str(info.value)
    assert isinstance(info.value, TypeError)
    assert "Forgets 'forgets'" in message and "['w']" in message
    assert "def hybrid_forward(self, F, x, w)" in message and "**kwargs" in message


def test_a_type_error_inside_hybrid_forward_is_left_alone():
    class Broken(HybridBlock):
        def hybrid_forward(self, F, x):
            return len(3)

    with pytest.raises(TypeError, match="has no len") as info:
        Broken()(nd.ones((1,)))
    assert not isinstance(info.value, HybridForwardError)


# -- missing names of the op namespaces -----------------------------------------------------
@pytest.mark.parametrize("namespace, public", [
    (mx.nd.contrib, "mx.nd.contrib"), (mx.sym.contrib, "mx.sym.contrib"),
    (mx.nd.linalg, "mx.nd.linalg"), (mx.sym.random, "mx.sym.random"), (mx.nd, "mx.nd"),
    (mx.sym, "mx.sym")])
def test_a_missing_op_points_to_the_guide(namespace, public):
    with pytest.raises(NotPortedError) as info:
        namespace.no_such_op_here  # noqa: B018
    message = str(info.value)
    assert isinstance(info.value, AttributeError)
    assert message.startswith(f"{public}.no_such_op_here is not in hybridgpu")
    assert "docs/coming_from_mxnet.md" in message and (ROOT / "docs/coming_from_mxnet.md").exists()
    assert not hasattr(namespace, "no_such_op_here")
    assert getattr(namespace, "no_such_op_here", 7) == 7


def test_a_misspelt_op_gets_the_close_names():
    with pytest.raises(NotPortedError, match=r"mx\.nd\.rellu .*did you mean relu"):
        mx.nd.rellu  # noqa: B018
    with pytest.raises(AttributeError) as info:
        mx.nd.contrib.__wrapped__  # noqa: B018  (private names: a plain AttributeError)
    assert not isinstance(info.value, NotPortedError)


# -- loading a file of full names -----------------------------------------------------------
def test_load_parameters_of_a_collect_params_file_says_how_to_load_it(tmp_path):
    path = str(tmp_path / "full.params")
    net = nn.Dense(2, in_units=3, prefix="fc_")
    net.initialize()
    net.collect_params().save(path)
    assert sorted(nd.load(path)) == ["fc_bias", "fc_weight"]
    other = nn.Dense(2, in_units=3, prefix="fc_")
    other.initialize(mx.init.Zero())
    with pytest.raises(ParameterMissingError) as info:
        other.load_parameters(path)
    message = str(info.value)
    assert isinstance(info.value, AssertionError)  # MXNet 1.9.1's type
    assert "holds full parameter names (fc_weight, fc_bias)" in message  # what the file holds
    assert "fc_fc_" not in message
    assert "collect_params().save(filename)" in message
    assert "net.collect_params().load(filename)" in message and "save_parameters" in message
    other.collect_params().load(path)  # the advice works
    np.testing.assert_array_equal(other.weight.data().asnumpy(), net.weight.data().asnumpy())


def test_load_parameters_of_an_unrelated_file_lists_what_it_holds(tmp_path):
    path = str(tmp_path / "other.params")
    nd.save(path, {"foo": nd.ones((2,))})
    net = nn.Dense(2, in_units=3, prefix="fc_")
    net.initialize()
    with pytest.raises(ParameterMissingError, match=r"Parameter 'fc_weight' is missing in file "
                                                    r".*other.params' \(as 'weight'\), which "
                                                    r"holds foo; load_parameters reads"):
        net.load_parameters(path)


# -- the same misuse in the real MXNet 1.9.1 ------------------------------------------------
CASES = '''
import json, sys, tempfile, os
name = sys.argv[1]
mx = __import__(name)
nd, gluon = mx.nd, mx.gluon


class Halve(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x[:len(x) // 2]


class AddArray(gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        return x + nd.array([1.0, 2.0, 3.0])


class Forgets(gluon.HybridBlock):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.w = self.params.get("w", shape=(3,), init="ones")

    def hybrid_forward(self, F, x):
        return x * 2


def call(block):
    block.initialize()
    block.hybridize()
    block(nd.ones((4, 3)))


def load_full():
    path = os.path.join(tempfile.mkdtemp(), "full.params")
    net = gluon.nn.Dense(2, in_units=3)
    net.initialize()
    net.collect_params().save(path)
    net.load_parameters(path)


cases = {"halve": lambda: call(Halve()), "add_array": lambda: call(AddArray()),
         "forgets": lambda: call(Forgets()), "contrib": lambda: mx.nd.contrib.no_such_op,
         "load_full": load_full}
raised = {}
for case, fn in cases.items():
    try:
        fn()
        raised[case] = []
    except Exception as err:
        raised[case] = [k.__name__ for k in type(err).__mro__]
print(json.dumps(raised))
'''


def _raised(python, module):
    run = subprocess.run([str(python), "-c", CASES, module], capture_output=True, text=True,
                         timeout=300, check=False, cwd=str(ROOT))
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.oracle
@pytest.mark.skipif(not ORACLE.exists(), reason=f"needs the MXNet 1.9.1 oracle at {ORACLE}")
def test_each_misuse_raises_the_builtin_type_mxnet_raises():
    theirs = _raised(ORACLE, "mxnet")
    ours = _raised(sys.executable, "hybridgpu")
    assert set(theirs) == set(ours)
    for case, mro in theirs.items():
        assert mro, f"MXNet 1.9.1 accepts {case}"
        builtin = next(k for k in mro if k in dir(__builtins__) or k in __builtins__)
        assert builtin in ours[case], f"{case}: MXNet raises {builtin}, hybridgpu {ours[case]}"
