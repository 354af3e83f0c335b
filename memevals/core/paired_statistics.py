"""Statistics of a paired comparison of two runs over the same questions.

Two runs scored on the same questions are paired: question i of run A and question i of run B
share the question's difficulty, so the difference is judged on the per-question differences
``d_i = b_i - a_i`` rather than by comparing two independent intervals (which wastes that
pairing). Questions are also clustered: LoCoMo's ~2,000 questions come from 10 conversations,
and questions about one conversation succeed or fail together. Every figure here therefore
treats the cluster, not the question, as the independent unit:

- the interval of the difference is a cluster bootstrap (whole clusters resampled);
- the test is exact McNemar only when the questions are independent (no clusters, or every
  cluster a single question); with real clusters McNemar's independence assumption is false and
  a sign-flip test on cluster-level sums is used instead;
- the minimum detectable difference uses the cluster-robust standard error (the same sandwich
  form as Inspect's ``stderr(cluster=...)``) with ``clusters - 1`` degrees of freedom.

Without clusters every question is its own cluster and all three reduce to their usual
unclustered forms.

With fewer than `memevals.core.statistics.min_clusters(level)` clusters (6 at 95 %) the
interval and the minimum detectable difference are not stated (NaN and infinity): the sign-flip
test (and exact McNemar on as few independent questions) cannot reach p <= 1 - level then, so no
difference is detectable and a bootstrap of so few clusters (3 distinct resamples of two) has
no meaning. `PairedResult.too_few_clusters` says so. An interval of differences of scores in
[0, 1] is clipped to [-1, 1].

Framework-free: numpy here; scipy and statsmodels (the ``stats`` extra) are imported only when
a test or the Holm correction needs them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from memevals.core.statistics import clustered_stderr_of_totals, min_clusters, score_range

__all__ = ["PairedResult", "holm_adjust", "paired_comparison"]

FloatArray = npt.NDArray[np.float64]
# Scores as a list or a float array (both are accepted; neither is copied more than once).
Scores = Sequence[float] | npt.NDArray[np.floating[Any]]

# Bootstrap draws are made in blocks of at most this many cluster indices (rows x clusters), so
# an unclustered run of thousands of questions never holds a 10,000 x n index matrix at once.
_BLOCK_ELEMENTS = 1 << 21

_STATS_EXTRA = "they are memevals dependencies: reinstall memevals (pip install memevals)"


@dataclass(frozen=True)
class PairedResult:
    """Paired comparison of run A and run B over the same questions (difference = B - A)."""

    n: int  # paired questions used
    clusters: int  # distinct clusters among them (== n when there are no clusters)
    mean_a: float
    mean_b: float
    difference: float  # mean_b - mean_a
    ci_low: float  # cluster-bootstrap percentile interval of the difference
    ci_high: float
    level: float  # e.g. 0.95
    p_value: float
    test: str  # "mcnemar_exact", "cluster_sign_flip" or "sign_flip"
    mde: float  # minimum detectable difference at `power`, two-sided alpha 1 - level
    a_better: int  # binary: A right & B wrong; continuous: a > b
    b_better: int  # binary: B right & A wrong; continuous: b > a
    binary: bool
    #: the fewest clusters for which the interval and MDE are stated (6 at 95 %)
    min_clusters: int = 2

    @property
    def too_few_clusters(self) -> bool:
        """Whether the interval and MDE are left out for want of clusters."""
        return self.clusters < self.min_clusters


def paired_comparison(
    a: Scores,
    b: Scores,
    clusters: Sequence[str] | None = None,
    *,
    binary: bool | None = None,
    resamples: int = 10_000,
    seed: int = 0,
    level: float = 0.95,
    power: float = 0.8,
    minimum: int | None = None,
) -> PairedResult:
    """Compare paired scores `a` and `b` (index i is one question, epochs already averaged).

    `clusters[i]` names question i's cluster (LoCoMo: its conversation); None means every
    question is its own cluster. `binary=None` detects 0/1 scores (every value of both runs is 0
    or 1). The interval is a cluster-bootstrap percentile interval of mean(b - a) from
    `resamples` seeded resamples; the p-value and its test name follow the rules in the module
    docstring (`_paired_test`); `mde` is `_minimum_detectable_difference`. With fewer than
    `minimum` clusters (None: `min_clusters(level)`) the interval is NaN and the MDE infinite.
    Same inputs and seed, same result.
    """
    a_values, b_values = _paired_arrays(a, b)
    n = int(a_values.size)
    _check_settings(resamples, level, power)
    binary = _resolve_binary(a_values, b_values, binary)

    cluster_index = _cluster_index(clusters, n)
    cluster_count = int(cluster_index.max()) + 1
    differences = b_values - a_values
    sums, sizes = _cluster_totals(differences, cluster_index)

    fewest = min_clusters(level) if minimum is None else minimum
    ci_low, ci_high, mde = math.nan, math.nan, math.inf
    if cluster_count >= fewest:
        ci_low, ci_high = _bootstrap_interval(sums, sizes, resamples, seed, level)
        mde = _minimum_detectable_difference(sums, sizes, level, power)
        if score_range([*a_values.tolist(), *b_values.tolist()]) is not None:
            # differences of two scores in [0, 1] lie in [-1, 1]
            ci_low, ci_high = max(ci_low, -1.0), min(ci_high, 1.0)
    p_value, test = _paired_test(a_values, b_values, sums, sizes, binary, resamples, seed)
    return PairedResult(
        n=n,
        clusters=cluster_count,
        mean_a=float(a_values.mean()),
        mean_b=float(b_values.mean()),
        difference=float(differences.mean()),
        ci_low=ci_low,
        ci_high=ci_high,
        level=level,
        p_value=p_value,
        test=test,
        mde=mde,
        a_better=int(np.count_nonzero(a_values > b_values)),
        b_better=int(np.count_nonzero(b_values > a_values)),
        binary=binary,
        min_clusters=fewest,
    )


def _paired_arrays(a: Scores, b: Scores) -> tuple[FloatArray, FloatArray]:
    """Both runs' scores as finite float arrays of one non-zero length (ValueError otherwise)."""
    a_values = _finite_array(a, "a")
    b_values = _finite_array(b, "b")
    if a_values.size != b_values.size:
        raise ValueError(
            f"a and b must pair question by question: {a_values.size} vs {b_values.size} values"
        )
    if a_values.size == 0:
        raise ValueError("no paired questions to compare (a and b are empty)")
    return a_values, b_values


def _check_settings(resamples: int, level: float, power: float) -> None:
    """Reject a resample count below 1 and a level or power outside (0, 1)."""
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    if not 0.0 < power < 1.0:
        raise ValueError(f"power must lie strictly between 0 and 1, got {power}")


def _resolve_binary(a_values: FloatArray, b_values: FloatArray, binary: bool | None) -> bool:
    """The `binary` setting: detected when None, refused when True but a score is not 0 or 1."""
    is_binary = _is_binary(a_values) and _is_binary(b_values)
    if binary is None:
        return is_binary
    if binary and not is_binary:
        raise ValueError("binary=True but a or b holds a value other than 0 or 1")
    return binary


def holm_adjust(p_values: Sequence[float]) -> list[float]:
    """Holm–Bonferroni adjusted p-values, in the input order (statsmodels' ``holm``).

    Used across the categories of one table: it controls the chance of any false "A and B
    differ" claim among them without assuming the categories are independent.
    """
    values = [float(p) for p in p_values]
    for position, p in enumerate(values):
        if not 0.0 <= p <= 1.0:  # also rejects NaN
            raise ValueError(f"p-value {position} is {p}, not a probability in [0, 1]")
    if not values:
        return []
    try:
        from statsmodels.stats.multitest import multipletests
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ImportError(f"holm_adjust needs statsmodels: {_STATS_EXTRA}") from error
    adjusted = multipletests(values, method="holm")[1]
    return [float(p) for p in adjusted]


def _finite_array(values: Scores, name: str) -> FloatArray:
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} must be a sequence of numbers: {error}") from error
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise ValueError(
            f"{name}[{int(bad[0])}] is {array[bad[0]]}: scores must be finite (exclude unscored "
            f"questions from both runs before pairing; {bad.size} such value(s) in {name})"
        )
    return array


def _is_binary(values: FloatArray) -> bool:
    return bool(np.all((values == 0.0) | (values == 1.0)))


def _cluster_index(clusters: Sequence[str] | None, n: int) -> npt.NDArray[np.intp]:
    """Cluster number (0..C-1) of each question; clusters numbered in sorted order of their ids,
    so the seeded draws do not depend on the order the questions arrive in."""
    if clusters is None:
        return np.arange(n, dtype=np.intp)
    labels = list(clusters)
    if len(labels) != n:
        raise ValueError(f"clusters must name one cluster per question: {len(labels)} for {n}")
    for position, label in enumerate(labels):
        if not isinstance(label, str):
            raise ValueError(f"clusters[{position}] is {label!r}: cluster ids must be strings")
    _, index = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
    return np.asarray(index, dtype=np.intp).reshape(n)


def _cluster_totals(
    differences: FloatArray, cluster_index: npt.NDArray[np.intp]
) -> tuple[FloatArray, FloatArray]:
    """Per-cluster sum of the differences and number of questions, clusters numbered 0..C-1."""
    count = int(cluster_index.max()) + 1
    sums = np.asarray(
        np.bincount(cluster_index, weights=differences, minlength=count), dtype=np.float64
    )
    sizes = np.asarray(np.bincount(cluster_index, minlength=count), dtype=np.float64)
    return sums, sizes


def _bootstrap_interval(
    sums: FloatArray, sizes: FloatArray, resamples: int, seed: int, level: float
) -> tuple[float, float]:
    """Cluster-bootstrap percentile interval of the mean difference.

    Each resample draws C clusters with replacement (``rng.integers(0, C)``, rows drawn in
    fixed-size blocks from one Generator seeded by `seed`) and takes the mean of the
    differences of the questions they bring: sum of the drawn clusters' difference sums over
    the sum of their sizes. Per-cluster sums and sizes make one resample a gather of C numbers,
    whatever the number of questions. The interval is numpy's (linear) quantiles at
    (1 - level) / 2 and (1 + level) / 2 of the resampled means.
    """
    count = sums.size
    rng = np.random.default_rng(seed)
    rows_per_block = max(1, _BLOCK_ELEMENTS // count)
    equal_sizes = bool(np.all(sizes == sizes[0]))
    statistics = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, rows_per_block):
        stop = min(start + rows_per_block, resamples)
        drawn = rng.integers(0, count, size=(stop - start, count))
        total = sums[drawn].sum(axis=1)
        questions = sizes[0] * count if equal_sizes else sizes[drawn].sum(axis=1)
        statistics[start:stop] = total / questions
    alpha = 1.0 - level
    low, high = np.quantile(statistics, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def _paired_test(
    a: FloatArray,
    b: FloatArray,
    sums: FloatArray,
    sizes: FloatArray,
    binary: bool,
    resamples: int,
    seed: int,
) -> tuple[float, str]:
    """Two-sided p-value of "A and B score the same" and the name of the test that gave it.

    - 0/1 scores with independent questions (no clusters, or every cluster one question):
      exact McNemar, i.e. the exact binomial test (scipy ``binomtest``, p = 1/2) of the
      B-right/A-wrong count among the discordant pairs; the concordant pairs carry no
      information about the difference.
    - otherwise (continuous scores, or 0/1 scores with real clusters, where McNemar's
      assumption that the discordant pairs are independent is false): a sign-flip test of the
      cluster-level sums of the differences, with scipy ``permutation_test``
      (``permutation_type="samples"`` on one sample flips signs). Under the null hypothesis each
      cluster's difference is symmetric about zero, so every sign pattern is equally likely.
      Statistic: the total difference (the mean difference times n). Clusters summing to zero
      are left out (they add zero under either sign). scipy enumerates all 2^C' sign patterns
      of the C' remaining clusters exactly when 2^C' <= `resamples` (10 clusters: 1,024
      patterns at the default), otherwise it draws `resamples` seeded random patterns
      (p = (hits + 1) / (resamples + 1)). Named ``cluster_sign_flip`` with real clusters,
      ``sign_flip`` when every question is its own cluster.
    """
    independent = bool(np.all(sizes == 1.0))
    if binary and independent:
        a_only = int(np.count_nonzero((a == 1.0) & (b == 0.0)))
        b_only = int(np.count_nonzero((b == 1.0) & (a == 0.0)))
        if a_only + b_only == 0:
            return 1.0, "mcnemar_exact"
        stats = _scipy_stats()
        result = stats.binomtest(b_only, a_only + b_only, 0.5, alternative="two-sided")
        return float(result.pvalue), "mcnemar_exact"

    name = "sign_flip" if independent else "cluster_sign_flip"
    # A cluster whose differences sum to zero adds zero under either sign: leaving it out gives
    # the same null distribution, and fewer patterns (often few enough to enumerate exactly).
    nonzero = sums[sums != 0.0]
    if nonzero.size <= 1:
        return 1.0, name  # both signs of a lone nonzero cluster reach its |total|: p = 2/2
    stats = _scipy_stats()

    def total(x: FloatArray, axis: int) -> FloatArray:
        return np.asarray(np.sum(x, axis=axis), dtype=np.float64)

    result = stats.permutation_test(
        (nonzero,),
        total,
        permutation_type="samples",
        vectorized=True,
        n_resamples=resamples,
        alternative="two-sided",
        batch=max(1, _BLOCK_ELEMENTS // nonzero.size),
        rng=np.random.default_rng(seed),
    )
    return min(1.0, float(result.pvalue)), name


def _minimum_detectable_difference(
    sums: FloatArray, sizes: FloatArray, level: float, power: float
) -> float:
    """Smallest true difference a two-sided test at alpha = 1 - level detects with `power`.

    (t_{1 - alpha/2} + t_{power}) x SE, SE the cluster-robust standard error of the mean
    difference and t Student's quantiles with C - 1 degrees of freedom, as Inspect's
    ``ci(cluster=..., method="t")`` does: with 10 clusters the normal quantiles would understate
    it by about 15 %. Infinite with fewer than two clusters (no variance to estimate).
    """
    count = sums.size
    if count < 2:
        return math.inf
    se = clustered_stderr_of_totals(sums, sizes)
    stats = _scipy_stats()
    df = count - 1
    factor = float(stats.t.ppf(1.0 - (1.0 - level) / 2.0, df)) + float(stats.t.ppf(power, df))
    return factor * se


def _scipy_stats() -> Any:
    try:
        from scipy import stats
    except ImportError as error:  # pragma: no cover - depends on the installed extras
        raise ImportError(f"paired tests need scipy: {_STATS_EXTRA}") from error
    return stats
