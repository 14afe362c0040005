"""``mx.test_utils``' statistical checks of random generators: chi-square goodness of fit
(``chi_square_check``, repeated by ``verify_generator``), buckets from a quantile function,
and mean / variance checks.

The chi-square p-value is computed here (the regularized upper incomplete gamma function), so
SciPy is not needed; a quantile function for ``gen_buckets_probs_with_ppf`` usually comes
from ``scipy.stats`` in the caller.

Example:
    >>> import numpy as np
    >>> np.random.seed(0)
    >>> buckets, probs = gen_buckets_probs_with_ppf(lambda q: q, 4)  # uniform on [0, 1)
    >>> buckets[1], probs[1]
    ((0.25, 0.5), 0.25)
    >>> p, obs, exp = chi_square_check(lambda n: np.random.uniform(size=n), buckets, probs,
    ...                                nsamples=10000)
    >>> bool(p > 0.05), int(exp[0])
    (True, 2500)
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["gen_buckets_probs_with_ppf", "chi_square_check", "verify_generator",
           "mean_check", "var_check", "chi2_sf"]

_EPS = 1e-15


def _lower_series(a, x):
    """P(a, x) by its power series (converges fast for x < a + 1)."""
    term = total = 1.0 / a
    n = a
    for _ in range(10000):
        n += 1.0
        term *= x / n
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _upper_fraction(a, x):
    """Q(a, x) by its continued fraction (modified Lentz; for x >= a + 1)."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = 1.0 / tiny
    d = 1.0 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1.0 / d
        step = d * c
        h *= step
        if abs(step - 1.0) < _EPS:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(stat, dof):
    """P(X >= ``stat``) for X chi-square distributed with ``dof`` degrees of freedom.

    Example:
        >>> round(chi2_sf(3.841458820694124, 1), 6)  # the 95% quantile of chi2(1)
        0.05
    """
    if dof <= 0:
        raise ValueError(f"chi2_sf: degrees of freedom must be positive, got {dof}")
    if stat <= 0:
        return 1.0
    a, x = dof / 2.0, stat / 2.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _lower_series(a, x))
    return _upper_fraction(a, x)


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets ``[(ppf(i/n), ppf((i+1)/n)), ...]`` and their
    probabilities ``[1/n, ...]``, from a quantile function ``ppf``."""
    if nbuckets <= 0:
        raise ValueError(f"gen_buckets_probs_with_ppf: nbuckets must be positive, got "
                         f"{nbuckets}")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def _bucket_edges(buckets):
    """The flat ascending edges ``[lo0, hi0, lo1, hi1, ...]`` of continuous buckets."""
    edges = np.zeros(2 * len(buckets), dtype=np.float32)
    for i, (lo, hi) in enumerate(buckets):
        if lo > hi or (i + 1 < len(buckets) and hi > buckets[i + 1][0]):
            raise ValueError(f"chi_square_check: bucket {i} {buckets[i]} is not ascending or "
                             f"overlaps the next one")
        edges[2 * i], edges[2 * i + 1] = lo, hi
    return edges


def _observed(samples, buckets):
    """Observed count per bucket (a bucket is a (low, high) range or one discrete value).

    A sample falls in range bucket ``i`` when ``2i`` or ``2i + 1`` of the flat edges are at
    most it (what ``np.searchsorted(edges, sample, side="right") // 2`` says), counted from
    one comparison per edge: ``#{x >= edge}`` falls edge by edge.
    """
    samples = np.asarray(samples.asnumpy() if hasattr(samples, "asnumpy") else samples)
    counts = np.zeros(len(buckets), dtype=np.int64)
    if isinstance(buckets[0], (list, tuple)):
        edges = _bucket_edges(buckets).astype(np.float64)
        values = samples.astype(np.float64, copy=False).ravel()
        # at_least[k]: samples with at least k edges at or below them
        at_least = [values.size] + [int(np.count_nonzero(values >= e)) for e in edges] + [0]
        for i in range(len(buckets)):
            counts[i] = at_least[2 * i] - at_least[2 * i + 2]
    else:
        for i, value in enumerate(buckets):
            counts[i] = int(np.sum(samples == value))
    return counts


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Chi-square test of ``generator(n)`` (n i.i.d. samples) against ``probs`` over
    ``buckets``: ascending, non-overlapping ``(low, high)`` ranges for a continuous
    distribution or the possible values of a discrete one.

    Returns ``(p, observed counts, expected counts)``; a small p says the samples do not
    follow ``probs``.
    """
    if not isinstance(buckets, list) or len(buckets) != len(probs) or not buckets:
        raise ValueError(f"chi_square_check: buckets must be a non-empty list as long as "
                         f"probs; got {type(buckets).__name__} of {len(buckets)} and "
                         f"{len(probs)} probs")
    samples = generator(nsamples)
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    observed = _observed(samples, buckets)
    # SciPy's chisquare: the statistic over the given expected counts, len - 1 dof
    stat = float(np.sum((observed - expected) ** 2 / expected.astype(np.float64)))
    return chi2_sf(stat, len(buckets) - 1), observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Run ``chi_square_check`` ``nrepeat`` times; raise ``AssertionError`` unless at least
    ``nrepeat * success_rate`` of the p-values exceed ``alpha``. Returns the p-values."""
    results = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    pvalues = [r[0] for r in results]
    if int(np.sum(np.array(pvalues) > alpha)) < nrepeat * success_rate:
        raise AssertionError(
            f"generator test failed: chi-square p={pvalues}, observed="
            f"{[r[1].tolist() for r in results]}, expected={[r[2].tolist() for r in results]}"
            f"\nbuckets={buckets}, probs={probs}")
    return pvalues


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the mean of ``generator(nsamples)`` is within 3 standard errors of ``mu``."""
    samples = np.asarray(generator(nsamples))
    bound = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - bound < np.mean(samples) < mu + bound)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the variance of ``generator(nsamples)`` is within 3 standard errors of
    ``sigma ** 2`` (the unbiased variance; the error of a normal sample's variance)."""
    samples = np.asarray(generator(nsamples))
    bound = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - bound < np.var(samples, ddof=1) < sigma ** 2 + bound)
