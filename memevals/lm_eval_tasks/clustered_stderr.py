"""Clustered standard errors in lm-eval: each document's score travels with its cluster (the
conversation) as a metric of its own, which an aggregation of this module turns into the
cluster-robust standard error the Inspect tasks report (memevals.core.statistics)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from memevals.core import statistics

__all__ = ["CLUSTERED", "UNDEFINED", "clustered_stderr_of_pairs", "with_clusters"]


#: Suffix of the per-document entries whose aggregation is the clustered standard error.
CLUSTERED = "_stderr_clustered"


def with_clusters(
    scores: Mapping[str, Any], md: Mapping[str, Any], names: Iterable[str]
) -> dict[str, Any]:
    """`scores` plus, for each of `names` present, `<name>_stderr_clustered`: (value, cluster).

    lm-eval aggregates each metric over its per-document values only, and a clustered standard
    error needs each value's cluster (`metadata["cluster"]`, the conversation), so the pair
    travels as the value of a metric of its own, aggregated by `clustered_stderr_of_pairs`.
    """
    cluster = md.get(statistics.CLUSTER_KEY)
    if cluster is None:
        raise ValueError(f"document metadata has no {statistics.CLUSTER_KEY!r}")
    return dict(scores) | {
        f"{name}{CLUSTERED}": (float(scores[name]), str(cluster))
        for name in names
        if name in scores
    }


#: What an lm-eval aggregation gives for a figure the values leave undefined: lm-eval's own word
#: for a missing standard error, printed as it prints its own (never NaN).
UNDEFINED = "N/A"


def clustered_stderr_of_pairs(items: Sequence[Sequence[Any]]) -> float | str:
    """lm-eval aggregation of `(value, cluster)` pairs: the cluster-robust standard error of the
    mean of the values (memevals.core.statistics; the Inspect tasks' `stderr_clustered`).
    `N/A` (UNDEFINED) with fewer than two clusters, as under `--limit`: left out, as the Inspect
    tasks leave it out, rather than NaN. Not one of lm-eval's bootstrappable aggregations, so
    lm-eval reports no `_stderr` of it (`N/A`) whatever `--bootstrap_iters` says."""
    values = [float(value) for value, _ in items]
    clusters = [str(cluster) for _, cluster in items]
    se = statistics.clustered_stderr(values, clusters)
    return UNDEFINED if math.isnan(se) else se
