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
