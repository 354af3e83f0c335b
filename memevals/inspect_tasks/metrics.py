"""The metrics every memevals scorer uses: the summing counts and totals, and the clustered
uncertainty (standard error, interval, per category) every benchmark README explains."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from inspect_ai import Task
from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Value,
    ci,
    ci_wilson,
    grouped,
    mean,
    metric,
    stderr,
)
from inspect_ai.util import registry_info

from memevals.core.statistics import CLUSTER_KEY

__all__ = [
    "SCORE_RANGE",
    "UNCERTAINTY_KEY",
    "category_uncertainty",
    "ci_clustered",
    "ci_lower",
    "ci_upper",
    "count",
    "full_uncertainty",
    "judge_metrics",
    "keyed",
    "mark_uncertainty",
    "named_metric",
    "stderr_clustered",
    "stderr_naive",
    "total",
    "uncertainty_metrics",
    "uncertainty_note",
]

logger = logging.getLogger(__name__)


def uncertainty_note(level: str) -> dict[str, str]:
    """What the log says about the run's uncertainty figures (Task(metadata=)["uncertainty"]):
    which are shown, how they are computed, and why one can be missing.

    Args:
        level: the `-T uncertainty=` value.

    Returns:
        The note.
    """
    shown = "stderr, ci_lower, ci_upper and the per-category means"
    if level == "full":
        shown += (
            ", stderr_naive and per category <category>_stderr, <category>_ci_lower, "
            "<category>_ci_upper"
        )
    return {
        "level": level,
        "shown": shown,
        "method": "clustered on each sample's metadata 'cluster': Inspect's stderr(cluster=) "
        "and ci(cluster=) clipped to [0, 1], or ci_wilson(cluster=) for a judge's accuracy",
        "left_out": "a figure the scores leave undefined (fewer than two clusters, as under "
        "--limit, or samples without a cluster) is left out rather than shown as NaN",
    }


def mark_uncertainty(built: Task, level: str) -> None:
    """Mark each sample's metadata with the run's `uncertainty` level, which the uncertainty
    metrics read (Inspect hands a metric the samples' metadata, not the task's options). Only a
    run that asks for the full figures is marked: a default run's samples are unchanged.

    Args:
        built: the task.
        level: the `-T uncertainty=` value.
    """
    for sample in built.dataset:
        sample.metadata = {**(sample.metadata or {}), UNCERTAINTY_KEY: level}


def _sum_of_values() -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        return float(sum(s.score.as_float() for s in scores))

    return compute


# One sum, under the two names the logs already use.
#: Sum of the values: with a 0/1 key such as "unscored", the number of samples that have it.
count = metric(name="count")(_sum_of_values)
#: Sum of the values: e.g. all prompt tokens of a run.
total = metric(name="total")(_sum_of_values)


# ---------------------------------------------------------------------------------------------
# Uncertainty (every benchmark README's "Standard errors" section says why).
#
# The numbers are Inspect's own `stderr(cluster=)`, `ci(cluster=)`, `ci_wilson(cluster=)` and
# `stderr()` over `metadata["cluster"]`. What these wrappers add is what the terminal shows:
#
# - a default run shows, per score, the mean, `stderr` (the clustered standard error: *the*
#   standard error of these benchmarks) and its 95 % interval `ci_lower` / `ci_upper`, then the
#   per-category means; with `-T uncertainty=full` also the naive `stderr_naive` and each
#   category's clustered `<category>_stderr`, `<category>_ci_lower`, `<category>_ci_upper`
#   (the task marks its samples' metadata `uncertainty: full`, which the metrics read);
# - a figure that is undefined (fewer than two clusters, as with `--limit 10`, or samples without
#   cluster ids) is left out, not shown as NaN: a metric then returns an empty mapping, which
#   Inspect turns into no row, and the log's messages (level info) say why;
# - a score none of whose samples is scored (a grader with no readable verdict) shows no
#   figure: a dict-valued score's metrics are `keyed` list metrics, which return None for a
#   figure that no scored sample defines (Inspect draws no row for None, where its metrics
#   dict would log NaN); the score's `unscored` count says why;
# - an interval never leaves the score's range: the t interval (mean ± t·se) is clipped to
#   [0, 1], the range of every score that gets one (F1, recall, ROUGE, BLEU, BERTScore F1);
#   a proportion (a judge's accuracy) gets the clustered Wilson interval, within [0, 1] by
#   construction.
#
# A one-number figure is a metric of that name returning its value, or {} when undefined (no
# row): under `keyed` (below) the row keeps the metric's name, `<key>_<name>` for a peer key.

#: Sample-metadata key marking a run whose metrics include the full uncertainty figures.
UNCERTAINTY_KEY = "uncertainty"
#: The interval's bounds: the range of every score memevals gives an interval.
SCORE_RANGE = (0.0, 1.0)


def _cluster_count(scores: list[SampleScore]) -> int:
    """Distinct `metadata["cluster"]` values; 0 when a sample has none (a log written before
    the key existed, re-scored with `inspect score`): its clustered figures are left out."""
    ids: set[object] = set()
    for s in scores:
        cid = (s.sample_metadata or {}).get(CLUSTER_KEY)
        if cid is None:
            return 0
        ids.add(cid)
    return len(ids)


def full_uncertainty(scores: list[SampleScore]) -> bool:
    """Whether the run asked for the full uncertainty figures (`-T uncertainty=full`).

    Args:
        scores: the scores a metric is given.

    Returns:
        True when the samples are marked `uncertainty: full`.
    """
    return any((s.sample_metadata or {}).get(UNCERTAINTY_KEY) == "full" for s in scores)


_full = full_uncertainty


def _undefined(scores: list[SampleScore], figure: str) -> bool:
    """Whether a clustered figure is undefined on these scores; if so the log says why."""
    clusters = _cluster_count(scores)
    if clusters >= 2:
        return False
    why = (
        "some samples have no metadata 'cluster'"
        if clusters == 0 and scores
        else f"the {len(scores)} scores come from {clusters} cluster(s), and a clustered "
        "standard error needs at least two"
    )
    logger.info("%s left out: %s", figure, why)
    return True


def _bounds(value: object, bounds: tuple[float, float] | None) -> tuple[float, float]:
    assert isinstance(value, Mapping)
    lower, upper = float(value["lower"]), float(value["upper"])
    if bounds is not None:
        lower, upper = max(lower, bounds[0]), min(upper, bounds[1])
    return lower, upper


def _interval(
    scores: list[SampleScore], wilson: bool, bounds: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The clustered 95 % interval of the mean, or None when undefined."""
    if _undefined(scores, "the clustered 95 % interval"):
        return None
    inner = ci_wilson(cluster=CLUSTER_KEY) if wilson else ci(cluster=CLUSTER_KEY)
    return _bounds(cast(MetricProtocol, inner)(scores), bounds)


@metric(name="stderr")
def stderr_clustered() -> Metric:
    """The standard error of the mean, clustered (Inspect's `stderr(cluster="cluster")`): the
    one these benchmarks report as `stderr`. Left out when undefined (fewer than two
    clusters)."""
    inner = cast(MetricProtocol, stderr(cluster=CLUSTER_KEY))

    def compute(scores: list[SampleScore]) -> Value:
        if _undefined(scores, "the clustered stderr"):
            return {}
        return inner(scores)

    return compute


def _interval_bound(which: str) -> Callable[..., Metric]:
    def make(
        wilson: bool = False,
        bounds: tuple[float, float] | None = SCORE_RANGE,
        full_only: bool = False,
    ) -> Metric:
        def compute(scores: list[SampleScore]) -> Value:
            if full_only and not _full(scores):
                return {}
            interval = _interval(scores, wilson, bounds)
            if interval is None:
                return {}
            return interval[0] if which == "lower" else interval[1]

        return compute

    make.__doc__ = (
        f"The {which} bound of the clustered 95 % interval of the mean: Inspect's "
        "`ci(cluster=)` (mean ± t·se) clipped to `bounds` or, with `wilson` (a proportion), "
        "`ci_wilson(cluster=)`. Left out when undefined, and with `full_only` unless the run "
        "asks for `-T uncertainty=full`."
    )
    return make


ci_lower = metric(name="ci_lower")(_interval_bound("lower"))
ci_upper = metric(name="ci_upper")(_interval_bound("upper"))


@metric(name="stderr_naive")
def stderr_naive() -> Metric:
    """The naive standard error (Inspect's `stderr()`, samples independent), with
    `-T uncertainty=full` only: it understates the error of these benchmarks, whose
    questions share a history."""
    inner = cast(MetricProtocol, stderr())

    def compute(scores: list[SampleScore]) -> Value:
        return inner(scores) if _full(scores) else {}

    return compute


@metric(name="ci_clustered")
def ci_clustered(wilson: bool = False, bounds: tuple[float, float] | None = SCORE_RANGE) -> Metric:
    """The clustered 95 % interval as one mapping, `ci_lower` / `ci_upper` (for a metric that
    builds on it; a score's own interval is `ci_lower()` and `ci_upper()`); {} when
    undefined."""

    def compute(scores: list[SampleScore]) -> Value:
        interval = _interval(scores, wilson, bounds)
        return {} if interval is None else {"ci_lower": interval[0], "ci_upper": interval[1]}

    return compute


@metric(name="by_category")
def category_uncertainty(
    wilson: bool = False,
    group_key: str = "category",
    bounds: tuple[float, float] | None = SCORE_RANGE,
) -> Metric:
    """With `-T uncertainty=full`, per category: `<category>_stderr` (clustered) and its 95 %
    interval `<category>_ci_lower` / `_ci_upper` (Wilson with `wilson`); a category whose
    figures are undefined is left out. The per-category means are
    `grouped(mean(), "category")`, under the bare category names, in every run."""

    def compute(scores: list[SampleScore]) -> Value:
        if not _full(scores):
            return {}
        groups: dict[str, list[SampleScore]] = {}
        for s in scores:
            groups.setdefault(str((s.sample_metadata or {}).get(group_key)), []).append(s)
        out: dict[str, float] = {}
        for name, chosen in groups.items():
            interval = _interval(chosen, wilson, bounds)
            if interval is None:
                continue
            se = cast(MetricProtocol, stderr(cluster=CLUSTER_KEY))(chosen)
            out |= {
                f"{name}_stderr": float(cast(float, se)),
                f"{name}_ci_lower": interval[0],
                f"{name}_ci_upper": interval[1],
            }
        return out

    return compute


def uncertainty_metrics(
    *, wilson: bool = False, by_category: bool = True, intervals: str = "always"
) -> list[Metric]:
    """The metrics every answer score reports: the mean, the clustered `stderr` and its 95 %
    interval (`ci_lower`, `ci_upper`: Wilson for a proportion such as a judge's accuracy) and,
    with `by_category`, the per-category means; with `-T uncertainty=full` also the naive
    `stderr_naive` and the per-category clustered errors and intervals (benchmarks' README
    "Standard errors" says why the clustered figures are the ones to read).

    Args:
        wilson: the Wilson interval (a proportion).
        by_category: the per-category means and, under full, their uncertainty.
        intervals: "always", or "full" (only under `-T uncertainty=full`: a score of several
            peer figures, whose screen would otherwise be four rows per figure).

    Returns:
        Fresh metric instances.
    """
    full_only = intervals == "full"
    out: list[Metric] = [
        mean(),
        stderr_clustered(),
        ci_lower(wilson=wilson, full_only=full_only),
        ci_upper(wilson=wilson, full_only=full_only),
        stderr_naive(),
    ]
    if by_category:
        out += [
            grouped(mean(), "category", all=False),
            category_uncertainty(wilson=wilson),
        ]
    return out


# ---------------------------------------------------------------------------------------------
# Dict-valued scores (a judge's `judge`, `unscored`, `unclear`; BLEU-1/2 and ROUGE-L).
#
# Inspect gives a scorer declared with a metrics *dict* one result per key, and logs NaN for
# each metric of a key none of whose samples is scored; it names a memevals metric's row
# `memevals/stderr`. Declared as a *list* (`keyed`), each key's metrics run inside one metric
# that picks that key's values, so the scorer is one result whose rows carry the names below,
# and a figure no sample defines is None, which Inspect leaves out. No Inspect internal is used.

def _short_name(m: Metric) -> str:
    return str(registry_info(m).name).rsplit("/", 1)[-1]


def _picked(scores: list[SampleScore], key: str) -> list[SampleScore]:
    """The samples scored on `key`: each as a plain score of that key's value (NaN: left out)."""
    out: list[SampleScore] = []
    for s in scores:
        value = s.score.value
        if not isinstance(value, Mapping) or key not in value:
            raise ValueError(
                f"sample {s.sample_id}: a {key!r} figure needs a dict score with key {key!r}, "
                f"got {value!r}"
            )
        v = value[key]
        if isinstance(v, float) and math.isnan(v):
            continue
        out.append(s.model_copy(update={"score": s.score.model_copy(update={"value": v})}))
    return out


def _row(key: str, name: str, lead: bool) -> str:
    """A row's name: a lead key's rows keep their metric's name; another key's mean or count is
    named by the key, its other figures `<key>_<figure>`."""
    if lead:
        return name
    return key if name in ("mean", "count", key) else f"{key}_{name}"


def _figures_of(
    scores: list[SampleScore], key: str, inner: Sequence[Metric], names: list[str], lead: bool
) -> dict[str, Any]:
    picked = _picked(scores, key)
    if not picked:  # no scored sample: no figure (None), rather than NaN
        return {_row(key, names[0], lead): None}
    rows: dict[str, Any] = {}
    for name, m in zip(names, inner, strict=True):
        value = cast(MetricProtocol, m)(picked)
        if isinstance(value, Mapping):
            rows |= {(k if lead else f"{key}_{k}"): v for k, v in value.items()}
        elif isinstance(value, (int, float)):
            rows[_row(key, name, lead)] = value
        else:
            raise TypeError(f"metric {name} of {key!r} gave {type(value).__name__}")
    return rows


def _all_keys(scores: list[SampleScore]) -> list[str]:
    """Every key of the samples' dict scores, in first-seen order (a `*` declaration)."""
    keys: dict[str, None] = {}
    for s in scores:
        if isinstance(s.score.value, Mapping):
            keys |= dict.fromkeys(str(k) for k in s.score.value)
    return list(keys)


def _key_figures(key: str, inner: Sequence[Metric], lead: bool) -> Metric:
    names = [_short_name(m) for m in inner]

    # the params are logged with every row: which key and figures it shows, named how
    def factory(key: str, figures: list[str], lead: bool) -> Metric:
        def compute(scores: list[SampleScore]) -> Value:
            if key != "*":
                return _figures_of(scores, key, inner, names, lead)
            rows: dict[str, Any] = {}
            for each in _all_keys(scores):
                rows |= _figures_of(scores, each, inner, names, False)
            return rows or {"none": None}

        return compute

    return metric(name="keyed")(factory)(key=key, figures=names, lead=lead)


def keyed(figures: Mapping[str, Sequence[Metric]], *, lead: bool = True) -> list[Metric]:
    """A dict-valued score's metrics, key by key, as the list a scorer declares
    (`@scorer(metrics=keyed({...}))`): one result named by the scorer, whose rows are the
    first key's figures under their metric names (`mean`, `stderr`, the categories) when
    `lead`, and every other key's as `<key>` (its mean or count) and `<key>_<figure>`. A
    sample whose value of a key is NaN is left out of that key's figures; a key no sample
    scores shows no row (where a metrics dict would log NaN). A `*` key stands for every key
    the samples' scores have, each prefixed.

    Args:
        figures: score key -> the metrics of that key's values (as a metrics dict declares).
        lead: name the first key's rows by their metric names (False: every key prefixed,
            for a score of several peer figures such as ROUGE-1/2/L).

    Returns:
        One metric per key, in order.
    """
    return [
        _key_figures(key, inner, lead and i == 0) for i, (key, inner) in enumerate(figures.items())
    ]



def judge_metrics(
    figures: Sequence[Metric], counts: Sequence[str] = ("unscored", "unclear")
) -> list[Metric]:
    """A judge's metrics (`keyed`): its `judge` figures, then the count of each flag.

    Args:
        figures: the metrics of the judge's score.
        counts: the flags the judge logs (0/1 per sample), each counted.

    Returns:
        The metric list a judge scorer declares.
    """
    return keyed({"judge": figures, **{flag: [count()] for flag in counts}})


def named_metric(name: str, doc: str, compute: Metric) -> Callable[[], Metric]:
    """A metric factory registered as `name` whose metric is `compute` (a figure a scorer's
    records total, such as a memory system's ingestions or the agent's write passes).

    Args:
        name: the registered name, as the log's row shows it.
        doc: the factory's docstring.
        compute: the figure over the scores.

    Returns:
        The registered factory.
    """

    def factory() -> Metric:
        return compute

    factory.__name__ = name
    factory.__doc__ = doc
    return metric(name=name)(factory)
