"""`llm_judge()`: the Inspect scorer around memevals.core.judge.

Each sample carries ``metadata["judge"]`` — the JudgeInput fields except the prediction (the
criterion, question, reference, evidence, dates). The prediction is the model's completion,
optionally mapped first (e.g. a LoCoMo two-option letter -> its option text); the map is named
by the scorer argument ``prediction`` or by ``metadata["judge"]["prediction_map"]``, so
re-judging a log with ``inspect score LOG --scorer memevals/llm_judge`` needs no arguments.

The judge is ``get_model(role="grader")``: pass ``--model-role grader=<model>``. Without a grader
role it falls back to the model under test; every Score records which model judged and whether
that was the fallback. Temperature 0, bounded tokens; one retry on an unreadable verdict, then
the sample is left unscored (value NaN under the "judge" key, so means and stderrs exclude it)
and counted by the "unscored" metric.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageUser,
    GenerateConfig,
    Model,
    get_model,
    model_roles,
)
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from memevals.benchmarks.locomo.prompts import prediction_for_scoring
from memevals.core.judge import JudgeInput, Verdict, judge_prompt, parse_verdict, repair_message
from memevals.inspect_tasks.common import count, uncertainty_metrics

__all__ = [
    "GRADER_ROLE",
    "PREDICTION_MAPS",
    "PredictionMap",
    "llm_judge",
]

logger = logging.getLogger(__name__)

GRADER_ROLE = "grader"
#: The judge's token limit unless the scorer argument or the grader role sets one.
DEFAULT_MAX_TOKENS = 256

#: (model completion, sample metadata) -> the text the judge grades.
PredictionMap = Callable[[str, Mapping[str, Any]], str]


def _completion(reply: str, metadata: Mapping[str, Any]) -> str:
    return reply


def _locomo(reply: str, metadata: Mapping[str, Any]) -> str:
    return prediction_for_scoring(reply, dict(metadata))


#: Named prediction maps (a task with its own answer format adds its map here).
PREDICTION_MAPS: dict[str, PredictionMap] = {"completion": _completion, "locomo": _locomo}


def _prediction_map(name: str, sample_id: object) -> PredictionMap:
    try:
        return PREDICTION_MAPS[name]
    except KeyError:
        raise ValueError(
            f"sample {sample_id}: unknown prediction map {name!r}; "
            f"registered: {', '.join(PREDICTION_MAPS)}"
        ) from None


_fallback_warned = False


def grader_model() -> tuple[Model, bool]:
    """The grader model and whether it is the fallback (the model under test)."""
    global _fallback_warned
    bound = GRADER_ROLE in model_roles()
    model = get_model(role=GRADER_ROLE)
    if not bound and not _fallback_warned:
        _fallback_warned = True
        logger.warning(
            "llm_judge: no '%s' model role given; the model under test (%s) judges its own "
            "answers. Pass --model-role grader=<model> for an independent judge.",
            GRADER_ROLE,
            model,
        )
    return model, not bound


@scorer(
    metrics={
        "judge": uncertainty_metrics(wilson=True),
        "unscored": [count()],
    }
)
def llm_judge(
    prediction: str | None = None, max_tokens: int | None = None, retries: int = 1
) -> Scorer:
    """LLM-judge score per sample (criterion from ``metadata["judge"]``), with the clustered
    standard error and the clustered Wilson interval (a judge accuracy is a proportion),
    overall and per category.

    Args:
        prediction: name of the prediction map (see PREDICTION_MAPS); default: the sample's
            ``judge.prediction_map``, else the raw completion.
        max_tokens: the judge's token limit per reply. Default: the grader role's own
            max_tokens if it was configured with one (``--model-role
            grader="{model: ..., max_tokens: 64}"``), else 256.
        retries: extra attempts after an unreadable verdict (the issue's rule is one).
    """
    if max_tokens is not None and max_tokens < 1:
        raise ValueError(f"llm_judge: max_tokens must be positive, got {max_tokens}")
    if retries < 0:
        raise ValueError(f"llm_judge: retries must be >= 0, got {retries}")

    async def score(state: TaskState, target: Target) -> Score:
        judge_md = state.metadata.get("judge")
        if not isinstance(judge_md, Mapping):
            raise ValueError(
                f"sample {state.sample_id}: llm_judge needs metadata['judge'] (a dict of judge "
                "inputs); this task does not provide one"
            )
        map_name = prediction or str(judge_md.get("prediction_map") or "completion")
        mapped = _prediction_map(map_name, state.sample_id)(state.output.completion, state.metadata)
        try:
            inp = JudgeInput.from_metadata(judge_md, mapped, ignore=("prediction_map",))
            prompt = judge_prompt(inp)
        except ValueError as exc:
            raise ValueError(f"sample {state.sample_id}: metadata['judge']: {exc}") from exc

        grader, fallback = grader_model()
        limit = max_tokens or (not fallback and grader.config.max_tokens) or DEFAULT_MAX_TOKENS
        config = GenerateConfig(temperature=0.0, max_tokens=limit)
        messages: list[ChatMessage] = [ChatMessageUser(content=prompt)]
        replies: list[str] = []
        verdict: Verdict | None = None
        for _ in range(1 + retries):
            output = await grader.generate(messages, config=config)
            reply = output.completion
            replies.append(reply)
            verdict = parse_verdict(reply, inp.criterion)
            if verdict is not None:
                break
            messages = [
                *messages,
                ChatMessageAssistant(content=reply),
                ChatMessageUser(content=repair_message(inp.criterion)),
            ]

        metadata: dict[str, Any] = {
            "criterion": inp.criterion,
            "label": verdict.label if verdict else None,
            "grader": str(grader),
            "grader_fallback": fallback,
            "judge_replies": replies,
            "prediction_map": map_name,
            "category": state.metadata.get("category"),
        }
        if verdict is None:
            return Score(
                value={"judge": math.nan, "unscored": 1},
                answer=mapped,
                reason="grader_failed",
                explanation=(
                    f"UNSCORED: no readable verdict from {grader} after {len(replies)} "
                    f"attempt(s). Raw replies: {replies!r}"
                ),
                metadata=metadata,
            )
        return Score(
            value={"judge": verdict.score, "unscored": 0},
            answer=mapped,
            explanation=f"{verdict.label}: {verdict.reason}",
            metadata=metadata,
        )

    return score
