"""Scoring a task whose samples are of several kinds (questions with a reference beside samples
without one, say): a scorer that scores one kind only, a sample's own metadata value as its
score, means and uncertainty per a key only some samples carry, and a judge scorer that
follows each sample's build (scorer_parts.judge_as_built) with a judge's metrics. Names no
benchmark; a benchmark's thin module registers these under its own scorer and metric names.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from inspect_ai.scorer import Metric, MetricProtocol, SampleScore, Score, Scorer, Target, Value
from inspect_ai.scorer import metric as register_metric
from inspect_ai.scorer import scorer as register_scorer
from inspect_ai.solver import TaskState

from memevals.inspect_tasks.judge_scorer import repeated_judging
from memevals.inspect_tasks.metrics import category_uncertainty, judge_metrics, uncertainty_metrics
from memevals.inspect_tasks.scorer_parts import judge_as_built

__all__ = [
    "Keep",
    "judge_scorer",
    "mean_by",
    "only",
    "subset_scorers",
    "uncertainty_by",
    "value_score",
    "values_by",
]

#: Which samples a scorer scores, by their metadata.
Keep = Callable[[Mapping[str, Any]], bool]


def only(inner: Scorer, keep: Keep) -> Scorer:
    """`inner` on the samples `keep` accepts; the others are left unscored (None).

    Args:
        inner: the scorer's score function.
        keep: which samples it scores.

    Returns:
        The score function.
    """

    async def score(state: TaskState, target: Target) -> Score | None:
        if not keep(state.metadata):
            return None
        result: Score | None = await inner(state, target)
        return result

    return score


def subset_scorers(
    prefix: str,
    scorers: Sequence[Callable[[], Scorer]],
    keep: Keep,
    metrics: Callable[[], list[Metric]],
) -> list[Callable[[], Scorer]]:
    """Each scorer on the samples `keep` accepts, registered as `<prefix>_<its name>`.

    Args:
        prefix: the registered names' prefix (the benchmark's name).
        scorers: the scorer factories (registered Inspect scorers, by their function names).
        keep: which samples they score.
        metrics: makes the metrics of each.

    Returns:
        The registered scorer factories, in order.
    """
    out: list[Callable[[], Scorer]] = []
    for make in scorers:
        factory = _kept(make, keep)
        factory.__name__ = factory.__qualname__ = f"{prefix}_{make.__name__}"
        factory.__doc__ = f"{make.__name__} of the samples this task's kind rule keeps."
        out.append(register_scorer(metrics=metrics(), name=factory.__name__)(factory))
    return out


def _kept(make: Callable[[], Scorer], keep: Keep) -> Callable[[], Scorer]:
    def factory() -> Scorer:
        return only(make(), keep)

    return factory


def value_score(key: str, keep: Keep, ids_key: str) -> Scorer:
    """The sample's own `metadata[key]` as its score, on the samples `keep` accepts; the ids
    under `ids_key` are its explanation. A kept sample without the value is an error (the
    solver that sets it did not run).

    Args:
        key: the metadata key of the value.
        keep: which samples are scored.
        ids_key: the metadata key of the ids the value was computed from.

    Returns:
        The score function.
    """

    async def score(state: TaskState, target: Target) -> Score | None:
        md = state.metadata
        if not keep(md):
            return None
        if md.get(key) is None:
            raise ValueError(
                f"sample {state.sample_id}: no {key!r} in the metadata; the memory_context "
                "solver did not run"
            )
        return Score(
            value=float(md[key]),
            explanation=f"retrieved {md.get(ids_key)}",
            metadata={ids_key: list(md.get(ids_key) or [])},
        )

    return score


def mean_by(key: str, order: Sequence[str], name: str) -> Metric:
    """A metric registered as `name`: the mean per value of `metadata[key]`, over the samples
    that carry the key (Inspect's `grouped()` needs it on every sample), the values in `order`
    first, then any other sorted.

    Args:
        key: the metadata key.
        order: the expected values, in reporting order.
        name: the metric's registered name.

    Returns:
        The metric.
    """

    def factory() -> Metric:
        def compute(scores: list[SampleScore]) -> Value:
            groups: dict[str, list[float]] = defaultdict(list)
            for s in scores:
                value = (s.sample_metadata or {}).get(key)
                if value is not None:
                    groups[str(value)].append(s.score.as_float())
            ranked = [v for v in order if v in groups] + sorted(g for g in groups if g not in order)
            return {v: sum(groups[v]) / len(groups[v]) for v in ranked}

        return compute

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"Mean per {key}; samples without one are ignored."
    return register_metric(name=name)(factory)()


def uncertainty_by(key: str, name: str) -> Metric:
    """A metric registered as `name`: with `-T uncertainty=full`, per value of `metadata[key]`,
    `<value>_stderr` (clustered) and the clustered Wilson interval `<value>_ci_lower` /
    `_ci_upper`, over the samples that carry the key.

    Args:
        key: the metadata key.
        name: the metric's registered name.

    Returns:
        The metric.
    """

    def factory() -> Metric:
        inner = cast(MetricProtocol, category_uncertainty(wilson=True, group_key=key))

        def compute(scores: list[SampleScore]) -> Value:
            carried = [s for s in scores if (s.sample_metadata or {}).get(key)]
            return inner(carried) if carried else {}

        return compute

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = f"Clustered uncertainty per {key} (uncertainty=full)."
    return register_metric(name=name)(factory)()


def values_by(key: str, order: Sequence[str]) -> list[Metric]:
    """`mean_by` and `uncertainty_by` of one key, registered as `<key>` and `by_<key>`.

    Args:
        key: the metadata key.
        order: its expected values, in reporting order.

    Returns:
        The two metrics.
    """
    return [mean_by(key, order, key), uncertainty_by(key, f"by_{key}")]


def judge_scorer(
    name: str, default_max_tokens: int, empty_reply: str, metrics: Sequence[Metric] = ()
) -> Callable[..., Scorer]:
    """A judge scorer registered as `name` (scorer_parts.judge_as_built: each sample by the
    judge it was built for; upstream's grades the stripped reply, `empty_reply` for an empty
    one), taking `max_tokens` and `judge_runs`, with a judge's metrics: the mean with its
    clustered uncertainty (Wilson) and per category, `metrics`, the repeated judges' agreement,
    and the unscored and unclear counts.

    Args:
        name: the scorer's registered name.
        default_max_tokens: memevals' judge's default token limit.
        empty_reply: what upstream's model call returns for an empty reply.
        metrics: more metrics of the judge's score.

    Returns:
        The registered scorer factory.
    """

    def factory(max_tokens: int = default_max_tokens, judge_runs: int = 1) -> Scorer:
        return judge_as_built(max_tokens, default_max_tokens, judge_runs, reply=stripped)

    def stripped(completion: str) -> str:
        return completion.strip() or empty_reply

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = (
        "The judge, overall and per category: a sample's upstream judge when it was built under "
        "protocol=official, else memevals' LLM judge (judge_as_built)."
    )
    judged = [*uncertainty_metrics(wilson=True), *metrics, repeated_judging()]
    return register_scorer(metrics=judge_metrics(judged), name=name)(factory)
