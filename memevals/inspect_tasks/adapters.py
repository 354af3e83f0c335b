"""Framework-free scoring pieces as Inspect parts: a judge as a scorer on the grader role, an
aggregate over scored samples as a metric.

A benchmark writes its judge and its report's figures without Inspect (in its own folder):
the judge takes a sample's metadata, the reply and a grader callable (messages as
`(role, content)` pairs and a `Generation`, the reply back) and returns a verdict with
`value`, `explanation` and `metadata`; a figure takes the scored samples (`Scored`: id,
metadata, value, score metadata). Its thin Inspect module turns them into Inspect's parts here,
keeping its registered scorer and metric names. This module names no benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, Value, metric
from inspect_ai.solver import TaskState

from memevals.core.build import Generation
from memevals.inspect_tasks.judge_scorer import grader_model

__all__ = [
    "GraderCall",
    "Scored",
    "Verdict",
    "aggregate_metric",
    "ask_model",
    "grader_score",
    "scored",
]

#: One grader call: messages as `(role, content)` pairs (system, user, assistant) and the
#: call's settings -> the reply.
GraderCall = Callable[[Sequence[tuple[str, str]], Generation], Awaitable[str]]

_ROLES: dict[str, type[ChatMessageSystem | ChatMessageUser | ChatMessageAssistant]] = {
    "system": ChatMessageSystem,
    "user": ChatMessageUser,
    "assistant": ChatMessageAssistant,
}


class Verdict(Protocol):
    """What a framework-free judge returns for one sample."""

    @property
    def value(self) -> Mapping[str, float]: ...

    @property
    def explanation(self) -> str: ...

    @property
    def metadata(self) -> Mapping[str, Any]: ...


#: (the sample's metadata, the reply, the grader) -> the verdict
Judge = Callable[[Mapping[str, Any], str, GraderCall], Awaitable[Verdict]]


def ask_model(model: Model) -> GraderCall:
    """A model as a framework-free grader call (RuntimeError naming the model on an error).

    Args:
        model: the grader model.

    Returns:
        The call.
    """

    async def ask(messages: Sequence[tuple[str, str]], sent: Generation) -> str:
        chat: list[ChatMessage] = [_ROLES[role](content=content) for role, content in messages]
        config = GenerateConfig(temperature=sent.temperature, max_tokens=sent.max_tokens)
        output = await model.generate(chat, config=config)
        if output.error:
            raise RuntimeError(f"grader {model}: {output.error}")
        return output.completion

    return ask


def grader_score(judge: Judge) -> Scorer:
    """A scorer's score function judging each reply with `judge` on the grader role
    (`--model-role grader=...`; without one the model under test, with a warning). The
    score's metadata is the verdict's, then `grader` and `grader_fallback`.

    Args:
        judge: the framework-free judge.

    Returns:
        The function a `@scorer` returns.
    """

    async def score(state: TaskState, target: Target) -> Score:
        grader, fallback = grader_model()
        reply = state.output.completion
        verdict = await judge(state.metadata, reply, ask_model(grader))
        return Score(
            value=dict(verdict.value),
            answer=reply,
            explanation=verdict.explanation,
            metadata={**verdict.metadata, "grader": str(grader), "grader_fallback": fallback},
        )

    return score


class Scored(NamedTuple):
    """One scored sample as framework-free figures read it (memevals.core.scored.ScoredSample):
    its id and metadata, the value (None: unscored or not a number) and the score's metadata."""

    sample_id: str | int | None
    metadata: Mapping[str, Any]
    value: float | None
    score_metadata: Mapping[str, Any]


def _value(s: SampleScore) -> float | None:
    try:
        value = s.score.as_float()
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def scored(scores: Sequence[SampleScore]) -> list[Scored]:
    """Inspect's sample scores as `Scored`.

    Args:
        scores: what a metric is given.

    Returns:
        The scored samples.
    """
    return [
        Scored(s.sample_id, s.sample_metadata or {}, _value(s), s.score.metadata or {})
        for s in scores
    ]


def aggregate_metric(
    name: str, figure: Callable[[list[Scored]], Value], doc: str | None = None
) -> Metric:
    """A metric registered under `name` (the name logs show) computing `figure` over the
    scored samples.

    Args:
        name: the metric's registered name.
        figure: the framework-free aggregate.
        doc: the metric's docstring (default: the figure's).

    Returns:
        The metric (its factory is registered, so a log can name it).
    """

    def factory() -> Metric:
        def compute(scores: list[SampleScore]) -> Value:
            return figure(scored(scores))

        return compute

    factory.__name__ = factory.__qualname__ = name
    factory.__doc__ = figure.__doc__ if doc is None else doc
    return metric(name=name)(factory)()
