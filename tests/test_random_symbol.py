"""``mx.sym.random`` and ``mx.nd.random`` against MXNet 1.9.1: the JSON of every sampling
function (fixtures written by ``tests/fixtures/make_mxnet_misc_fixtures.py``), the distributions'
moments, and ``F.random.*`` inside hybridized blocks (fresh draws every call, repeatable after
``mx.random.seed``)."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

import hybridgpu as mx
from hybridgpu.base import MXNetError

sys.path.insert(0, str(pathlib.Path(__file__).parent / "fixtures"))
import make_mxnet_misc_fixtures as gen  # noqa: E402

FIXTURE = json.loads((pathlib.Path(__file__).parent / "fixtures" / "mxnet_misc" /
                      "symbols.json").read_text())
RANDOM_CASES = sorted(c for c in gen.CASES if c.startswith("random_"))

# The functions MXNet 1.9.1 has in both mx.sym.random and mx.nd.random.
MXNET_NAMES = ["exponential", "exponential_like", "gamma", "gamma_like",
               "generalized_negative_binomial", "generalized_negative_binomial_like",
               "multinomial", "negative_binomial", "negative_binomial_like", "normal",
               "normal_like", "poisson", "poisson_like", "randint", "randn", "shuffle",
               "uniform", "uniform_like"]


@pytest.mark.parametrize("namespace", [mx.sym.random, mx.nd.random], ids=["sym", "nd"])
def test_every_mxnet_sampling_function_exists(namespace):
    missing = [n for n in MXNET_NAMES if not callable(getattr(namespace, n, None))]
    assert not missing


@pytest.mark.parametrize("case", RANDOM_CASES)
def test_symbol_json_matches_mxnet(case):
    ours = json.loads(gen.build(mx, case).tojson())
    theirs = json.loads(FIXTURE[case]["json"])
    ours["attrs"].pop("mxnet_version"), theirs["attrs"].pop("mxnet_version")
    assert ours == theirs


@pytest.mark.parametrize("case", RANDOM_CASES)
def test_mxnet_json_loads_and_round_trips(case):
    loaded = mx.sym.load_json(FIXTURE[case]["json"])
    assert json.loads(loaded.tojson())["nodes"] == json.loads(FIXTURE[case]["json"])["nodes"]


def _moments(values):
    values = values.asnumpy().astype("float64")
    return values.mean(), values.var()


# (function, args, mean, variance) for 20000 draws
MOMENTS = [
    ("uniform", (-1, 3), 1.0, 16 / 12),
    ("normal", (2, 0.5), 2.0, 0.25),
    ("exponential", (2.0,), 2.0, 4.0),
    ("gamma", (3.0, 0.5), 1.5, 0.75),
    ("poisson", (4.0,), 4.0, 4.0),
    ("negative_binomial", (3, 0.4), 4.5, 11.25),
    ("generalized_negative_binomial", (2.0, 0.5), 2.0, 2.0 + 0.5 * 4.0),
    ("generalized_negative_binomial", (3.0, 0.0), 3.0, 3.0),
]


@pytest.mark.parametrize("fn, args, mean, var", MOMENTS)
def test_scalar_parameter_moments(fn, args, mean, var):
    mx.random.seed(11)
    values = getattr(mx.nd.random, fn)(*args, shape=(20000,))
    assert values.dtype == np.float32 and values.shape == (20000,)
    got_mean, got_var = _moments(values)
    assert abs(got_mean - mean) < 5 * np.sqrt(var / 20000)
    assert abs(got_var - var) < 0.1 * var


@pytest.mark.parametrize("fn, args, mean, var", MOMENTS)
def test_array_parameter_moments(fn, args, mean, var):
    mx.random.seed(12)
    params = [mx.nd.full((2,), a, dtype="float64") for a in args]
    values = getattr(mx.nd.random, fn)(*params, shape=(10000,))
    assert values.shape == (2, 10000)
    got_mean, _ = _moments(values)
    assert abs(got_mean - mean) < 5 * np.sqrt(var / 20000)


def test_counting_distributions_give_whole_numbers():
    for fn, args in [("poisson", (3.0,)), ("negative_binomial", (2, 0.5)),
                     ("generalized_negative_binomial", (2.0, 1.0))]:
        values = getattr(mx.nd.random, fn)(*args, shape=(100,)).asnumpy()
        assert (values == np.round(values)).all() and (values >= 0).all()


def test_multinomial_draws_and_log_probabilities():
    probs = mx.nd.array([[0.0, 1.0, 0.0], [0.25, 0.0, 0.75]])
    mx.random.seed(3)
    draws, logp = mx.nd.random.multinomial(probs, shape=(4000,), get_prob=True)
    assert draws.dtype == np.int32 and draws.shape == (2, 4000)
    draws = draws.asnumpy()
    assert (draws[0] == 1).all()
    assert set(np.unique(draws[1])) == {0, 2}
    assert abs((draws[1] == 2).mean() - 0.75) < 0.03
    expected = np.log(probs.asnumpy()[[[0], [1]], draws])
    np.testing.assert_allclose(logp.asnumpy(), expected, rtol=1e-6)
    assert mx.nd.random.multinomial(mx.nd.array([0.5, 0.5])).shape == (1,)


def test_mixed_parameter_kinds_are_refused():
    with pytest.raises(MXNetError, match="all numbers or all Symbols"):
        mx.sym.random.uniform(mx.sym.var("lo"), 1)
    with pytest.raises(ValueError, match="all numbers or all NDArrays"):
        mx.nd.random.gamma(mx.nd.ones((2,)), 1.0)
    with pytest.raises(MXNetError, match="lam must be positive"):
        mx.nd.random.poisson(-1.0, shape=(2,))


class _Noisy(mx.gluon.HybridBlock):
    def hybrid_forward(self, F, x):
        noise = F.random.uniform(-1, 1, shape=(2, 3)) + F.random.normal_like(x, scale=0.5)
        scale = F.random.gamma(x + 1, x + 2)
        return x + noise, scale, F.random.shuffle(x)


def _run(block, x):
    return [o.asnumpy() for o in block(x)]


def test_hybridized_block_draws_fresh_values_repeatably():
    x = mx.nd.arange(6).reshape((2, 3))
    block = _Noisy()
    block.hybridize()
    mx.random.seed(5)
    first, second = _run(block, x), _run(block, x)
    mx.random.seed(5)
    again = _run(block, x)
    for a, c in zip(first, again):
        np.testing.assert_array_equal(a, c)
    assert not np.array_equal(first[0], second[0])
    assert first[1].shape == (2, 3) and (first[1] > 0).all()
    np.testing.assert_array_equal(np.sort(first[2], axis=0), x.asnumpy())


def test_hybridized_and_imperative_agree_on_shapes_and_dtypes():
    x = mx.nd.ones((2, 3))
    eager = _Noisy()(x)
    block = _Noisy()
    block.hybridize()
    for a, b in zip(eager, block(x)):
        assert a.shape == b.shape and a.dtype == b.dtype


def test_graph_with_symbol_parameters_evaluates():
    mu, sigma = mx.sym.var("mu"), mx.sym.var("sigma")
    out = mx.sym.random.normal(mu, sigma, shape=(5000,))
    mx.random.seed(1)
    value = out.eval(mu=mx.nd.array([0.0, 10.0]), sigma=mx.nd.array([1.0, 0.1]))[0]
    assert value.shape == (2, 5000)
    np.testing.assert_allclose(value.asnumpy().mean(axis=1), [0.0, 10.0], atol=0.06)
