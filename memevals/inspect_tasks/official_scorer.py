"""Inspect glue of the upstream judges (protocol=official, memevals.core.upstream_judge).

A sample built under an official protocol carries its upstream judge request in
``metadata["official_judge"]``: upstream's prompt split around the reply, what upstream's model
call does to it before sending (a prefix, a strip), the grader's token limit and temperature,
and the name of upstream's label rule. `judge_officially` inserts the model's reply, applies the
call's wrapper (`OfficialJudge.prompt`), asks the grader (``get_model(role="grader")``, falling
back to the model under test with a warning, as `llm_judge` does) once with exactly that one
user message and applies the rule: no retry, no JSON, no repair message, as upstream has none.
Besides the label it counts the replies that were not a clear verdict (``unclear``), which never
change the label.

`official_judge()` is the same as a scorer of its own, for re-judging a log
(``inspect score LOG --scorer memevals/official_judge``). A benchmark's own upstream-judge
scorer registers `official_judge_score(prediction)` (its prediction map, e.g. the option a
letter reply chose) with `official_judge_metrics()`; a scorer that judges official and other
samples alike calls `judge_officially` for its official ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.model import ChatMessage, ChatMessageUser, GenerateConfig
from inspect_ai.scorer import Metric, Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from memevals.benchmarks import load_upstream_judges
from memevals.core.protocol import OFFICIAL, Protocol
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY, OfficialJudge
from memevals.inspect_tasks.judge_scorer import (
    grader_model,
    judge_runs_args,
    llm_judge,
    other_protocol,
)
from memevals.inspect_tasks.metrics import judge_metrics, uncertainty_metrics

__all__ = [
    "judge_officially",
    "official_judge",
    "official_judge_metrics",
    "official_judge_score",
    "official_request",
    "protocol_judge",
]

#: (model completion, sample metadata) -> the text the judge grades.
Prediction = Callable[[str, Mapping[str, Any]], str]


def official_request(state: TaskState) -> OfficialJudge | None:
    """The sample's upstream judge request, or None when it was built under another protocol.

    Args:
        state: the scored sample.

    Returns:
        The request, read back from the sample's metadata.
    """
    value = state.metadata.get(OFFICIAL_JUDGE_KEY)
    if value is None:
        return None
    load_upstream_judges()  # the request names its rule; its benchmark registers it
    try:
        return OfficialJudge.from_metadata(value)
    except ValueError as exc:
        raise ValueError(f"sample {state.sample_id}: {exc}") from exc


async def judge_officially(
    state: TaskState, request: OfficialJudge, reply: str | None = None
) -> Score:
    """Judge the sample's reply with its upstream request.

    Args:
        state: the scored sample (its completion is the reply).
        request: the sample's upstream judge request.
        reply: the text to judge instead of the completion (a benchmark's prediction, such as
            the option a letter reply chose); None judges the completion.

    Returns:
        A Score with ``judge`` (the rule's score), ``unscored`` (always 0: upstream's rule
        labels every reply) and ``unclear`` (1 when the grader's reply was not a clear
        verdict); the grader's reply, the label and the grader in its metadata.
    """
    reply = request.reply_text(state.output.completion if reply is None else reply)
    grader, fallback = grader_model()
    config = GenerateConfig(temperature=request.temperature, max_tokens=request.max_tokens)
    messages: list[ChatMessage] = [ChatMessageUser(content=request.prompt(reply))]
    output = await grader.generate(messages, config=config)
    grader_reply = output.completion
    verdict = request.label(grader_reply)
    metadata: dict[str, Any] = {
        "protocol": OFFICIAL.name,
        "label": verdict.label,
        "clear": verdict.clear,
        "label_rule": request.rule,
        "grader": str(grader),
        "grader_fallback": fallback,
        "judge_replies": [grader_reply],
        "judge_max_tokens": request.max_tokens,
        "category": state.metadata.get("category"),
    }
    return Score(
        value={"judge": verdict.score, "unscored": 0, "unclear": 0 if verdict.clear else 1},
        answer=reply,
        explanation=f"{verdict.label} (grader replied {grader_reply!r})",
        metadata=metadata,
    )


def official_judge_metrics() -> list[Metric]:
    """The metrics of an upstream judge's scores: the judge's mean with the clustered standard
    error and Wilson interval overall and per category, and the counts of unscored samples and
    unclear grader replies.

    Returns:
        Fresh metric instances (`keyed`: one result, rows `mean`, ..., `unscored`, `unclear`).
    """
    return judge_metrics(uncertainty_metrics(wilson=True))


def official_judge_score(prediction: Prediction | None = None) -> Scorer:
    """The score function of an upstream-judge scorer: each sample judged with its upstream
    request (a sample built under another protocol has none: an error naming the fix).

    Args:
        prediction: the benchmark's prediction map (None judges the completion as it is).

    Returns:
        The score function.
    """

    async def score(state: TaskState, target: Target) -> Score:
        request = official_request(state)
        if request is None:
            built = str(state.metadata.get("protocol") or "memevals")
            raise other_protocol(
                "memevals/official_judge", state.sample_id, built, "memevals/llm_judge"
            )
        reply = None if prediction is None else prediction(state.output.completion, state.metadata)
        return await judge_officially(state, request, reply=reply)

    return score


@scorer(metrics=official_judge_metrics())
def official_judge() -> Scorer:
    """Upstream's judge of each sample (its ``metadata["official_judge"]``), with the clustered
    standard error and Wilson interval overall and per category, and the count of unclear
    grader replies."""
    return official_judge_score()


def protocol_judge(
    protocol: Protocol, judge_runs: int, official: Callable[[], Scorer], **args: Any
) -> Scorer:
    """The judge a protocol scores with: the benchmark's upstream judge under an official
    protocol (once, as upstream judges: `judge_runs` other than 1 is refused), else memevals'
    `llm_judge` with `args`, judging each reply `judge_runs` times.

    Args:
        protocol: the run's protocol.
        judge_runs: how many times each reply is judged.
        official: makes the benchmark's upstream-judge scorer.
        args: `llm_judge` arguments besides `judge_runs` (its token limit, retries).

    Returns:
        The judge scorer.
    """
    protocol.check_judge_runs(judge_runs)
    if protocol.official:
        return official()
    return llm_judge(**args, **judge_runs_args(judge_runs))
