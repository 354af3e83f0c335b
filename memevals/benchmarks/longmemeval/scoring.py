"""LongMemEval aggregation (official, benchmarks/longmemeval/README.md#scoring), framework-free.

- per-type accuracy: mean label within each question type; `_abs` items count in their type;
- task-averaged accuracy: unweighted mean of the per-type accuracies;
- overall accuracy: micro mean over all questions;
- abstention accuracy: mean over the `_abs` questions.

Unscored items (label None or NaN, e.g. an unreadable judge reply) are left out of every mean
and counted, never treated as wrong.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from memevals.core.criteria_judge import YES_NO, CriterionSpec, criterion, register_criteria
from memevals.core.scored import ScoredSample

__all__ = [
    "JUDGE_FIGURES",
    "LME_ABSTENTION",
    "LME_KNOWLEDGE_UPDATE",
    "LME_PREFERENCE",
    "LME_STANDARD",
    "LME_TEMPORAL",
    "LME_TYPES",
    "LONGMEMEVAL_CRITERIA",
    "LmeLabel",
    "LmeSummary",
    "abstention_accuracy",
    "criterion_for_longmemeval",
    "overall_accuracy",
    "summarize",
    "summary_of",
    "task_averaged_accuracy",
    "type_accuracy",
]

#: The six question types in snake case, paper order.
LME_TYPES: tuple[str, ...] = (
    "single_session_user",
    "single_session_assistant",
    "single_session_preference",
    "multi_session",
    "temporal_reasoning",
    "knowledge_update",
)


@dataclass(frozen=True)
class LmeLabel:
    """One judged question: its type (snake case), whether it is `_abs`, its 0/1 label."""

    question_type: str
    abstention: bool
    label: float | None


@dataclass(frozen=True)
class LmeSummary:
    overall: float | None
    task_averaged: float | None
    abstention: float | None
    per_type: dict[str, float] = field(default_factory=dict)
    n_scored: int = 0
    n_unscored: int = 0


def _scored(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(labels: Iterable[LmeLabel]) -> LmeSummary:
    """The official aggregates; a figure with no scored item is None (not 0)."""
    by_type: dict[str, list[float]] = {}
    abstention: list[float] = []
    everything: list[float] = []
    unscored = 0
    for item in labels:
        if not _scored(item.label):
            unscored += 1
            continue
        value = float(item.label)  # type: ignore[arg-type]
        by_type.setdefault(item.question_type, []).append(value)
        everything.append(value)
        if item.abstention:
            abstention.append(value)
    per_type = {t: sum(v) / len(v) for t, v in by_type.items()}
    # official order first, then anything unexpected (kept, never dropped)
    ordered = {t: per_type[t] for t in LME_TYPES if t in per_type}
    ordered.update({t: v for t, v in per_type.items() if t not in ordered})
    return LmeSummary(
        overall=_mean(everything),
        task_averaged=_mean(list(ordered.values())),
        abstention=_mean(abstention),
        per_type=ordered,
        n_scored=len(everything),
        n_unscored=unscored,
    )


# ---------------------------------------------------------------------------------------------
# The judge's figures over judged samples (the run's metrics of the same names)


def summary_of(judged: Iterable[ScoredSample]) -> LmeSummary:
    """The official aggregates of judged samples, by the type and `_abs` flag they carry.

    Args:
        judged: the samples (metadata `category` and `abstention`, as the tasks log them).

    Returns:
        The summary.
    """
    labels = []
    for s in judged:
        md = s.metadata
        if "category" not in md or "abstention" not in md:
            raise ValueError(
                f"sample {s.sample_id}: LongMemEval metrics need metadata 'category' and "
                "'abstention' (samples of the longmemeval tasks carry them)"
            )
        labels.append(LmeLabel(str(md["category"]), bool(md["abstention"]), s.value))
    return summarize(labels)


def _or_left_out(value: float | None) -> float | dict[str, float]:
    # "no item to average" is left out (an empty mapping is no row), never NaN or a made-up 0
    return {} if value is None else value


def overall_accuracy(judged: Sequence[ScoredSample]) -> float | dict[str, float]:
    """Micro mean over all judged questions."""
    return _or_left_out(summary_of(judged).overall)


def task_averaged_accuracy(judged: Sequence[ScoredSample]) -> float | dict[str, float]:
    """Unweighted mean of the per-type accuracies (the types present in the run)."""
    return _or_left_out(summary_of(judged).task_averaged)


def abstention_accuracy(judged: Sequence[ScoredSample]) -> float | dict[str, float]:
    """Mean over the `_abs` questions (left out when the run has none)."""
    return _or_left_out(summary_of(judged).abstention)


def type_accuracy(judged: Sequence[ScoredSample]) -> dict[str, float]:
    """Accuracy per question type (`_abs` items count in their type)."""
    return dict(summary_of(judged).per_type)


#: The judge's figures, in the order a run shows them (each its metric's name).
JUDGE_FIGURES = (overall_accuracy, task_averaged_accuracy, abstention_accuracy, type_accuracy)


# ---------------------------------------------------------------------------------------------
# The LLM judge's criteria (README.md#scoring; memevals.core.criteria_judge holds the
# machinery): our own wording of the official yes/no criterion per question type

_LME_STANDARD_RULE = """\
Compare the candidate response with the reference answer.
- "yes": the response contains the reference answer, states something equivalent to it, or \
works through the steps that lead to it.
- "no": the response gives a different answer, gives only part of the information the \
reference requires, or gives no answer."""

_LME_TEMPORAL_RULE = (
    _LME_STANDARD_RULE
    + """
When the answer is a count of days, weeks or months, a response that is off by one from the \
reference (for example 18 days instead of 19) still earns "yes"."""
)

_LME_UPDATE_RULE = """\
The user's information changed during the chat history; the reference answer is the most \
recent, updated information.
- "yes": the response gives the updated answer. It may also mention older information, as long \
as the updated answer is what it gives as the answer.
- "no": the response gives only the outdated information, a different answer, or no answer."""

_LME_PREFERENCE_RULE = """\
The question asks for a personalised response. The reference is a rubric describing what a \
response tailored to this user should do.
- "yes": the response satisfies the rubric: it recalls and correctly uses the user's personal \
information (preferences, circumstances, earlier statements). It need not cover every point of \
the rubric.
- "no": the response ignores the user's personal information, misuses it, or contradicts the \
rubric."""

_LME_ABSTENTION_RULE = """\
This question cannot be answered from the chat history; the reference, when given, explains \
why (for example the user never mentioned the thing asked about).
- "yes": the response recognises that it cannot answer, for example by saying the information \
was never provided, or that it only knows related but different information.
- "no": the response commits to an answer as if the information were known."""

_ASKED = ("question_date", "question", "reference")

_GRADED = ("question", "reference")

LME_STANDARD = criterion("lme_standard", YES_NO, _LME_STANDARD_RULE, _GRADED, _ASKED)
LME_TEMPORAL = criterion("lme_temporal", YES_NO, _LME_TEMPORAL_RULE, _GRADED, _ASKED)
LME_KNOWLEDGE_UPDATE = criterion(
    "lme_knowledge_update",
    YES_NO,
    _LME_UPDATE_RULE,
    _GRADED,
    _ASKED,
    reference="Reference answer (the updated information)",
)
LME_PREFERENCE = criterion(
    "lme_preference",
    YES_NO,
    _LME_PREFERENCE_RULE,
    _GRADED,
    _ASKED,
    reference="Rubric for a good personalised response",
)
LME_ABSTENTION = criterion(
    "lme_abstention",
    YES_NO,
    _LME_ABSTENTION_RULE,
    ("question",),
    _ASKED,
    reference="Why the question cannot be answered",
)
LONGMEMEVAL_CRITERIA: tuple[CriterionSpec, ...] = (
    LME_STANDARD,
    LME_TEMPORAL,
    LME_KNOWLEDGE_UPDATE,
    LME_PREFERENCE,
    LME_ABSTENTION,
)
register_criteria(*LONGMEMEVAL_CRITERIA)

_LME_CRITERION = {
    "single_session_user": LME_STANDARD.name,
    "single_session_assistant": LME_STANDARD.name,
    "multi_session": LME_STANDARD.name,
    "temporal_reasoning": LME_TEMPORAL.name,
    "knowledge_update": LME_KNOWLEDGE_UPDATE.name,
    "single_session_preference": LME_PREFERENCE.name,
}


def criterion_for_longmemeval(question_type: str, question_id: str) -> str:
    """Judge criterion of a LongMemEval question.

    Any id containing `_abs` is abstention, whatever its type (the official rule); otherwise
    the criterion follows the question type.

    Args:
        question_type: the type, hyphenated as in the data or in snake case.
        question_id: the question's id.

    Returns:
        The criterion's name.
    """
    if "_abs" in question_id:
        return LME_ABSTENTION.name
    key = question_type.strip().lower().replace("-", "_")
    try:
        return _LME_CRITERION[key]
    except KeyError:
        raise ValueError(
            f"{question_id}: no judge criterion for LongMemEval question type "
            f"{question_type!r}; known: {', '.join(_LME_CRITERION)}"
        ) from None
