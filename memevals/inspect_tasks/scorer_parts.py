"""Scorer and metric pieces a thin Inspect module registers under its own names, naming no
benchmark: a judge that scores each sample as the protocol it was built under asks
(`judge_as_built`), a score read from what the sample logged (`logged_score`), and the clustered
interval of the samples a metadata flag marks (`flagged_interval`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, cast

from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    metric,
)
from inspect_ai.solver import TaskState

from memevals.core.protocol import MEMEVALS, OFFICIAL
from memevals.inspect_tasks.judge_scorer import judge_runs_args, llm_judge
from memevals.inspect_tasks.metrics import ci_clustered, full_uncertainty
from memevals.inspect_tasks.official_scorer import judge_officially, official_request

__all__ = ["LoggedScore", "flagged_interval", "judge_as_built", "logged_score"]

#: (sample id, sample metadata) -> (the value, None when unscored; the explanation; the
#: score's metadata): a score the benchmark computed from what the sample logged.
LoggedScore = Callable[[object, Mapping[str, Any]], tuple[Any, str, dict[str, Any]]]


def judge_as_built(
    max_tokens: int,
    default_max_tokens: int,
    judge_runs: int = 1,
    retries: int = 1,
    *,
    reply: Callable[[str], str] | None = None,
) -> Scorer:
    """A judge's score function: a sample built under protocol=official (its metadata holds the
    upstream request) judged once by upstream's judge with its own token limit (`judge_runs`
    other than 1 or `max_tokens` other than `default_max_tokens` is an error: they belong to
    memevals' judge), any other by `llm_judge`, with `unclear` 0 beside its verdict (its
    strict verdicts are never unclear).

    Args:
        max_tokens: memevals' judge's token limit.
        default_max_tokens: its default (the only value an official sample accepts).
        judge_runs: how many times memevals' judge judges each reply.
        retries: memevals' judge's retries after an unreadable verdict.
        reply: the text upstream's judge grades, from the completion (None: the completion).

    Returns:
        The score function.
    """
    inner = llm_judge(max_tokens=max_tokens, retries=retries, **judge_runs_args(judge_runs))

    async def score(state: TaskState, target: Target) -> Score | None:
        request = official_request(state)
        if request is not None:
            if judge_runs != 1 or max_tokens != default_max_tokens:
                raise ValueError(
                    f"sample {state.sample_id}: protocol={OFFICIAL} judges once with upstream's "
                    f"{request.max_tokens} tokens; judge_runs and judge_max_tokens apply to "
                    f"protocol={MEMEVALS}: {MEMEVALS.fix(lm_eval=False)}"
                )
            text = None if reply is None else reply(state.output.completion)
            return await judge_officially(state, request, reply=text)
        result: Score | None = await inner(state, target)
        if result is None or not isinstance(result.value, dict):
            return result
        return result.model_copy(update={"value": {**result.value, "unclear": 0}})

    return score


def logged_score(read: LoggedScore) -> Scorer:
    """A score function whose score the benchmark reads from the sample's metadata (NaN, so
    unscored, where it gives no value).

    Args:
        read: the benchmark's framework-free reading.

    Returns:
        The score function.
    """

    async def score(state: TaskState, target: Target) -> Score:
        value, explanation, md = read(state.sample_id, state.metadata)
        return Score(
            value=math.nan if value is None else value, explanation=explanation, metadata=md
        )

    return score


def flagged_interval(flag: str, name: str) -> Metric:
    """With `-T uncertainty=full`: the clustered Wilson interval of the samples whose metadata
    `flag` is true, as `<name>_lower` / `<name>_upper` (left out where undefined).

    Args:
        flag: the metadata key marking the samples (e.g. a subgroup's flag).
        name: the metric's registered name and its figures' prefix.

    Returns:
        The metric (its factory registered under `name`).
    """

    def factory() -> Metric:
        inner = cast(MetricProtocol, ci_clustered(wilson=True))

        def compute(scores: list[SampleScore]) -> Value:
            if not full_uncertainty(scores):
                return {}
            chosen = [s for s in scores if (s.sample_metadata or {}).get(flag)]
            value = cast(Mapping[str, float], inner(chosen))
            return {f"{name}_{k.removeprefix('ci_')}": v for k, v in value.items()}

        return compute

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = flagged_interval.__doc__
    return metric(name=name)(factory)()
