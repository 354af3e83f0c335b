"""Inspect scorers for the cost and the retrieval quality of a memory strategy.

- `prompt_tokens`: the prompt size of each sample (the same offline counter as the token
  budgets), with its mean, total and per-category mean: what a strategy costs (every
  benchmark's tasks report it as this score of its own; an answer scorer may also record the
  count in its Score.metadata, as LoCoMo's F1 does). `mean_prompt_tokens` / `total_prompt_tokens`
  are the same figures as metrics, for a scorer of one's own.
- `recall_scorer(rule)`: an evidence-recall scorer's work, with the benchmark's rule (LoCoMo's
  official R@k: memevals.benchmarks.locomo.scoring, registered as `evidence_recall` by its
  Inspect module); `retrieval_metrics()` its metrics.
- `turn_precision`, `turn_recall`, `selected_k`: HiGMem's question-level metrics (questions
  without evidence skipped) and K = number of distinct ids selected ("Avg K" is its mean).

The rules live in `memevals.core.retrieval_metrics`; this module only records them per sample
(Score.metadata) and aggregates them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    grouped,
    mean,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState

from memevals.core.build import Build
from memevals.core.retrieval_metrics import turn_precision_recall
from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.memory_under_test import memory_system
from memevals.inspect_tasks.metrics import stderr_clustered, total

__all__ = [
    "RecallRule",
    "mean_prompt_tokens",
    "prompt_tokens",
    "recall_scorer",
    "retrieval_metrics",
    "retrieval_scorers",
    "retrieval_scorers_for",
    "sample_prompt_tokens",
    "selected_k",
    "total_prompt_tokens",
    "turn_precision",
    "turn_recall",
]


def sample_prompt_tokens(state: TaskState) -> dict[str, int | str]:
    """`{"prompt_tokens": n, "token_counter": name}` for one sample's Score.metadata.

    Uses the count stored in the sample metadata when the benchmark built its samples
    (`prompt_tokens`: the sum over the messages sent); otherwise counts the input messages the
    same way.
    """
    md = state.metadata
    if "prompt_tokens" in md:
        return {
            "prompt_tokens": int(md["prompt_tokens"]),
            "token_counter": str(md.get("token_counter", "")),
        }
    tc = get_token_counter()
    texts = [state.input] if isinstance(state.input, str) else [m.text for m in state.input]
    return {"prompt_tokens": sum(tc(t) for t in texts), "token_counter": tc.name}


def _recorded_prompt_tokens(scores: list[SampleScore]) -> list[int]:
    return [
        int(s.score.metadata["prompt_tokens"])
        for s in scores
        if s.score.metadata and "prompt_tokens" in s.score.metadata
    ]


@metric
def mean_prompt_tokens() -> Metric:
    """Mean prompt size over the samples whose Score.metadata records it (NaN if none do).

    Lets an answer scorer report the cost of a strategy itself: a second scorer only for the
    prompt size would double Inspect's per-sample scoring work on every run.
    """

    def compute(scores: list[SampleScore]) -> float:
        counts = _recorded_prompt_tokens(scores)
        return sum(counts) / len(counts) if counts else math.nan

    return compute


@metric
def total_prompt_tokens() -> Metric:
    """Sum of the prompt sizes recorded in Score.metadata."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(_recorded_prompt_tokens(scores)))

    return compute


@scorer(metrics=[mean(), total(), grouped(mean(), "category", all=False)])
def prompt_tokens() -> Scorer:
    """Input tokens of each sample by the offline counter (memevals.core.tokens), as a scorer
    of its own, for tasks whose answer scorer does not record them (LongMemEval's judge)."""

    async def score(state: TaskState, target: Target) -> Score:
        recorded = sample_prompt_tokens(state)
        return Score(value=recorded["prompt_tokens"], metadata=recorded)

    return score


def _retrieval(state: TaskState) -> tuple[list[str], list[str]]:
    md = state.metadata
    retrieved = md.get("retrieved_ids")
    if retrieved is None:
        raise ValueError(
            f"sample {state.sample_id}: no 'retrieved_ids' in the metadata; retrieval scorers "
            "need a context mode that retrieves (rag or oracle)"
        )
    return [str(i) for i in retrieved], [str(e) for e in md.get("evidence", [])]


#: A benchmark's evidence-recall rule: (retrieved ids, evidence ids) -> (the value a question
#: adds to the benchmark's mean, its recall as the benchmark defines it).
RecallRule = Callable[[list[str], list[str]], tuple[float, float]]


def retrieval_metrics() -> list[Metric]:
    """The metrics of a retrieval score: the mean, the clustered standard error and the mean
    per category.

    Returns:
        Fresh metric instances.
    """
    return [mean(), stderr_clustered(), grouped(mean(), "category", all=False)]


def recall_scorer(rule: RecallRule) -> Scorer:
    """The score function of an evidence-recall scorer (register it under the benchmark's
    scorer name with `retrieval_metrics()`).

    Args:
        rule: the benchmark's rule.

    Returns:
        A score function: the rule's value per sample, with the recall, the retrieved ids, the
        evidence and any evidence ids that match no turn in Score.metadata.
    """

    async def score(state: TaskState, target: Target) -> Score:
        retrieved_ids, evidence = _retrieval(state)
        value, recall = rule(retrieved_ids, evidence)
        return Score(
            value=value,
            explanation=f"retrieved {retrieved_ids}; evidence {evidence}",
            metadata={
                "retrieved_ids": retrieved_ids,
                "evidence": evidence,
                "evidence_recall": recall,
                "selected_k": len(set(retrieved_ids)),
                "unmatched_evidence": list(state.metadata.get("unmatched_evidence", [])),
            },
        )

    return score


def _turn_pr(state: TaskState) -> tuple[float, float, int] | None:
    retrieved_ids, evidence = _retrieval(state)
    pr = turn_precision_recall(retrieved_ids, evidence)
    return None if pr is None else (pr[0], pr[1], len(set(retrieved_ids)))


@scorer(metrics=retrieval_metrics())
def turn_precision() -> Scorer:
    """HiGMem precision |G∩F|/|F| over dia-id sets (0 if nothing selected); questions without
    evidence are skipped (unscored), and the mean is the macro average over the rest."""

    async def score(state: TaskState, target: Target) -> Score:
        pr = _turn_pr(state)
        return Score(value=math.nan if pr is None else pr[0])

    return score


@scorer(metrics=retrieval_metrics())
def turn_recall() -> Scorer:
    """HiGMem recall |G∩F|/|G| over dia-id sets; questions without evidence are skipped."""

    async def score(state: TaskState, target: Target) -> Score:
        pr = _turn_pr(state)
        return Score(value=math.nan if pr is None else pr[1])

    return score


@scorer(metrics=retrieval_metrics())
def selected_k() -> Scorer:
    """HiGMem K(q) = number of distinct ids selected; its mean is "Avg K" (same questions as
    turn precision/recall)."""

    async def score(state: TaskState, target: Target) -> Score:
        pr = _turn_pr(state)
        return Score(value=math.nan if pr is None else float(pr[2]))

    return score


def retrieval_scorers(recall: Scorer, turn_level: bool) -> list[Scorer]:
    """The retrieval scorers for a strategy: the benchmark's evidence recall, and HiGMem's turn
    metrics only when ids are dia ids (session-summary ids `S<n>` are not turns).

    Args:
        recall: the benchmark's evidence-recall scorer.
        turn_level: whether the retrieved ids are turn ids.

    Returns:
        The scorers.
    """
    out = [recall]
    if turn_level:
        out += [turn_precision(), turn_recall(), selected_k()]
    return out


def retrieval_scorers_for(build: Build, recall: Scorer) -> list[Scorer]:
    """The retrieval scorers of a build: none when its strategy retrieves nothing; else the
    benchmark's evidence recall, with HiGMem's turn metrics when the samples' ids are turn ids
    (their `turn_level`), and the memory system's score when a memory system under test gives
    the ids at run time (its cited turn ids).

    Args:
        build: the benchmark's build.
        recall: the benchmark's evidence-recall scorer.

    Returns:
        The scorers.
    """
    if build.subject is not None:
        return [*retrieval_scorers(recall, True), memory_system()]
    md = build.items[0].metadata if build.items else {}
    if md.get("retrieved_ids") is None:
        return []
    return retrieval_scorers(recall, bool(md.get("turn_level")))
