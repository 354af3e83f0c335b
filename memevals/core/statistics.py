"""Cluster-robust uncertainty of a mean, from plain values (no framework).

LoCoMo's 1,986 questions come from 10 conversations, and questions about one conversation
succeed or fail together, so the naive standard error (independent questions) is too small.
These functions give the figures the Inspect tasks report with Inspect's own
`stderr(cluster=)`, `ci(cluster=)` and `ci_wilson(cluster=)`, for the places that only have the
values: lm-eval aggregations and `memevals-compare`. The arithmetic is Inspect's, so both
frameworks print the same number; tests/core/test_clustered_metrics.py checks it against Inspect,
statsmodels and a hand computation.

One difference from Inspect, on purpose: with fewer than two clusters the clustered variance
cannot be estimated, and these functions return NaN where Inspect's `stderr` returns 0 (which
reads as "no uncertainty"). The memevals Inspect metrics do the same.

What the tools state beside a mean (`summarize`) adds two rules to that arithmetic:

- **Too few clusters, no interval.** A 95 % interval needs at least `min_clusters()` clusters
  (6 at 95 %). With C clusters the exact sign-flip (randomisation) test of the C cluster totals,
  which assumes nothing but symmetry, cannot give a two-sided p-value below 2 / 2^C; 2 / 2^C
  <= 0.05 first holds at C = 6. With 5 or fewer clusters no such test rejects any mean at 5 %,
  so the assumption-light 95 % interval is the whole range: the t interval's finite bounds then
  come from assuming normal cluster totals, which C <= 5 totals cannot check, and its t(C - 1)
  critical value (12.7 for two clusters) makes them absurd. The tools say "too few clusters"
  instead of printing one (docs/compare.md#too-few-clusters).
- **Within the score's range.** An interval never leaves the range its score can take: the
  unit range [0, 1] when every value lies in it (every memevals score: F1, recall, ROUGE, BLEU,
  BERTScore F1, a judge's verdict), as the Inspect metrics clip theirs (`SCORE_RANGE`).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

__all__ = [
    "CLUSTER_KEY",
    "MIN_CLUSTERS",
    "UNIT_RANGE",
    "Interval",
    "Summary",
    "clipped",
    "cluster_count",
    "clustered_ci",
    "clustered_stderr",
    "min_clusters",
    "score_range",
    "summarize",
    "wilson_interval",
]

#: The sample-metadata key that holds a sample's cluster (LoCoMo: the host conversation id).
CLUSTER_KEY = "cluster"

#: The confidence level of every interval memevals reports.
LEVEL = 0.95

#: The range of every memevals score that gets an interval.
UNIT_RANGE = (0.0, 1.0)


def min_clusters(level: float = LEVEL) -> int:
    """The fewest clusters for which a two-sided interval at `level` is stated.

    The smallest C with 2 / 2^C <= 1 - level: with fewer clusters the exact sign-flip test of
    the cluster totals cannot reject any value at 1 - level, so the interval it implies is
    unbounded (the module doc). 6 at 95 %, 8 at 99 %.

    Args:
        level: the confidence level, strictly between 0 and 1.

    Returns:
        The minimum number of clusters.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    return max(2, math.ceil(math.log2(2.0 / (1.0 - level)) - 1e-12))


#: `min_clusters()` at the level of every interval memevals reports.
MIN_CLUSTERS = min_clusters(LEVEL)


@dataclass(frozen=True)
class Interval:
    """A two-sided confidence interval (NaN bounds when it cannot be estimated)."""

    lower: float
    upper: float


def score_range(values: Iterable[float]) -> tuple[float, float] | None:
    """The range a score can take, as far as its values tell: the unit range when every value
    lies in it, else None (unknown: no clipping).

    Args:
        values: the score's values.

    Returns:
        UNIT_RANGE or None.
    """
    return UNIT_RANGE if all(0.0 <= v <= 1.0 for v in values) else None


def clipped(interval: Interval, bounds: tuple[float, float] | None) -> Interval:
    """`interval` cut to `bounds` (None: unchanged); NaN bounds stay NaN.

    Args:
        interval: the interval.
        bounds: (lowest, highest) value the quantity can take, or None.

    Returns:
        The clipped interval.
    """
    if bounds is None or math.isnan(interval.lower) or math.isnan(interval.upper):
        return interval
    return Interval(max(interval.lower, bounds[0]), min(interval.upper, bounds[1]))


def _checked(values: Sequence[float], clusters: Sequence[Hashable]) -> np.ndarray:
    if len(values) != len(clusters):
        raise ValueError(f"{len(values)} values but {len(clusters)} cluster ids")
    for i, c in enumerate(clusters):
        if c is None or (isinstance(c, float) and math.isnan(c)):
            raise ValueError(f"value {i} has no cluster id")
    return np.asarray(values, dtype=float)


def cluster_count(clusters: Sequence[Hashable]) -> int:
    return len(set(clusters))


def clustered_stderr(values: Sequence[float], clusters: Sequence[Hashable]) -> float:
    """Cluster-robust (sandwich) standard error of the mean of `values`.

    se = sqrt(C / (C - 1) * sum_c (sum_{i in c} (x_i - mean))^2) / n, with C clusters and n
    values: Inspect's `stderr(cluster=)` (its finite-cluster correction C / (C - 1)), which for
    one value per cluster equals the naive s / sqrt(n). NaN with fewer than two clusters.
    """
    x = _checked(values, clusters)
    _, index = np.unique(np.asarray([str(c) for c in clusters], dtype=object), return_inverse=True)
    index = np.asarray(index, dtype=np.intp).reshape(len(x))
    sums = np.bincount(index, weights=x).astype(np.float64)
    sizes = np.bincount(index).astype(np.float64)
    return clustered_stderr_of_totals(sums, sizes)


def clustered_stderr_of_totals(sums: np.ndarray, sizes: np.ndarray) -> float:
    """The same standard error from per-cluster sums and sizes (what a vectorised caller, such
    as the paired comparison, already holds); NaN with fewer than two clusters."""
    count = int(sums.size)
    if count < 2:
        return math.nan
    n = float(sizes.sum())
    deviations = sums - sizes * (float(sums.sum()) / n)  # per cluster: sum of (x_i - mean)
    return math.sqrt(float(np.sum(deviations**2)) * count / (count - 1)) / n


def _t_critical(level: float, df: int) -> float:
    try:
        from scipy.stats import t
    except ImportError as exc:  # a broken install: say what is missing
        raise ImportError(
            "clustered intervals need scipy, a memevals dependency: reinstall memevals"
        ) from exc
    return float(t.ppf(1.0 - (1.0 - level) / 2.0, df))


def clustered_ci(
    values: Sequence[float], clusters: Sequence[Hashable], level: float = LEVEL
) -> Interval:
    """mean ± t(C - 1) · clustered se: Inspect's `ci(cluster=)` (method "t")."""
    se = clustered_stderr(values, clusters)
    if math.isnan(se):
        return Interval(math.nan, math.nan)
    mean = float(np.mean(values))
    half = _t_critical(level, cluster_count(clusters) - 1) * se
    return Interval(mean - half, mean + half)


def wilson_interval(
    values: Sequence[float],
    clusters: Sequence[Hashable] | None = None,
    level: float = LEVEL,
) -> Interval:
    """Wilson score interval of the proportion mean(values) (values in [0, 1]).

    Without clusters: the textbook Wilson interval (normal critical value). With clusters:
    Inspect's `ci_wilson(cluster=)`: the Korn–Graubard effective size p(1 - p) / v (v the
    clustered variance of the mean, capped at n) and a t critical value with C - 1 degrees of
    freedom. Unlike mean ± t·se its bounds stay in [0, 1], which matters for the small
    categories (96 open-domain questions) and for accuracies near 0 or 1. NaN with fewer than
    two clusters; NaN bounds for no values.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return Interval(math.nan, math.nan)
    if np.any((x < 0.0) | (x > 1.0)):
        raise ValueError("a Wilson interval needs values between 0 and 1")
    n = float(x.size)
    p = float(x.mean())
    if clusters is None:
        critical = NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)
    else:
        se = clustered_stderr(values, clusters)
        if math.isnan(se):
            return Interval(math.nan, math.nan)
        variance, spread = se * se, p * (1.0 - p)
        if spread > 0.0 and variance > 0.0:
            n = min(spread / variance, n)
        critical = _t_critical(level, cluster_count(clusters) - 1)
    z2 = critical * critical
    centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n)
    half = critical * math.sqrt(p * (1.0 - p) / n + z2 / (4.0 * n * n)) / (1.0 + z2 / n)
    return Interval(max(centre - half, 0.0), min(centre + half, 1.0))


@dataclass(frozen=True)
class Summary:
    """Mean, naive and clustered standard error and the 95 % interval of one set of values.

    `interval` is the Wilson interval for a proportion (`proportion=True`), else the clustered
    t interval, clipped to the score's range; NaN bounds when it cannot be estimated, or when
    `too_few_clusters` (fewer than `min_clusters` clusters: the tools say so instead).
    """

    n: int
    clusters: int
    mean: float
    stderr: float
    stderr_clustered: float
    interval: Interval
    #: the fewest clusters an interval needs (MIN_CLUSTERS at 95 %)
    min_clusters: int = MIN_CLUSTERS

    @property
    def too_few_clusters(self) -> bool:
        """Whether the interval is left out for want of clusters (there are values, but fewer
        than `min_clusters` clusters)."""
        return 0 < self.clusters < self.min_clusters


def summarize(
    values: Sequence[float],
    clusters: Sequence[Hashable],
    *,
    proportion: bool = False,
    minimum: int = MIN_CLUSTERS,
) -> Summary:
    """Every figure memevals shows beside a mean, from the values and their cluster ids.

    Args:
        values: the values (one per sample).
        clusters: each value's cluster id.
        proportion: the values are a proportion's 0/1 (or [0, 1]) verdicts: a Wilson interval.
        minimum: the fewest clusters for an interval (the module doc's rule).

    Returns:
        The summary; its interval clipped to the values' range (`score_range`).
    """
    x = _checked(values, clusters)
    n = int(x.size)
    mean = float(x.mean()) if n else math.nan
    naive = float(x.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan
    count = cluster_count(clusters)
    if count < minimum:
        interval = Interval(math.nan, math.nan)
    elif proportion:
        interval = wilson_interval(values, clusters)
    else:
        interval = clustered_ci(values, clusters)
    return Summary(
        n=n,
        clusters=count,
        mean=mean,
        stderr=naive,
        stderr_clustered=clustered_stderr(values, clusters) if n else math.nan,
        interval=clipped(interval, score_range(x.tolist())),
        min_clusters=minimum,
    )
