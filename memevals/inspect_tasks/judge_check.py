"""`judge_check`: the model under test is the *grader* (benchmarks/judge_check/README.md).

Each sample is one judge prompt of memevals' own LoCoMo judge (core/judge.py) around one
candidate answer: the gold answer, the audit's specific-but-wrong answer, or its vague-but-on-
topic one. The solver sends the prompt (temperature 0; one repair request after an unreadable
verdict, as the llm_judge scorer does); the scorer reads the verdict strictly. A readable
verdict with any credit ("correct", or "partial" where the criterion has it) counts as
accepted; an unreadable one leaves the sample unscored (NaN), counted, never wrong.

    inspect eval memevals/judge_check --model openai/gpt-4o-mini
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from inspect_ai import Task
from inspect_ai.model import ChatMessageUser, GenerateConfig
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.benchmarks.judge_check.samples import KINDS, WRONG_KINDS, JudgeCheckOptions, build
from memevals.core.judge import parse_verdict, repair_message
from memevals.inspect_tasks.common import memevals_task, to_dataset

__all__ = ["grade_candidate", "judge_check", "judge_check_metrics", "judge_check_scorer"]

#: The grader's token limit (as the llm_judge scorer's default).
MAX_TOKENS = 256
_REPLIES = "judge_check_replies"


@solver
def grade_candidate(retries: int = 1) -> Solver:
    """Send the judge prompt; after an unreadable verdict ask again (`retries` times)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        criterion = str(state.metadata["criterion"])
        replies: list[str] = []
        for attempt in range(1 + retries):
            if attempt:
                state.messages.append(ChatMessageUser(content=repair_message(criterion)))
            state = await generate(state)
            replies.append(state.output.completion)
            if parse_verdict(state.output.completion, criterion) is not None:
                break
        state.metadata[_REPLIES] = replies
        return state

    return solve


def _rate(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _accepted(s: SampleScore) -> float:
    """The sample's accepted value (NaN when unscored). Scores are dicts: Inspect drops a bare
    NaN score before any metric sees it, and the unscored must still be counted."""
    value = s.score.value
    if not isinstance(value, Mapping) or "accepted" not in value:
        raise ValueError(f"judge_check metric: score {value!r} has no 'accepted' key")
    accepted = value["accepted"]
    if not isinstance(accepted, int | float):
        raise ValueError(f"judge_check metric: score {value!r} has no numeric 'accepted'")
    return float(accepted)


def _rates(scores: list[SampleScore]) -> tuple[dict[str, float], int]:
    """Acceptance rate per candidate kind (kinds without a scored sample left out) and the
    number of unscored samples."""
    accepted: dict[str, list[float]] = {k: [] for k in KINDS}
    unscored = 0
    for s in scores:
        value = _accepted(s)
        if math.isnan(value):
            unscored += 1
        else:
            accepted[str((s.sample_metadata or {})["kind"])].append(value)
    rates = {k: r for k in KINDS if (r := _rate(accepted[k])) is not None}
    return rates, unscored


def _balanced(rates: Mapping[str, float]) -> float | None:
    """Balanced accuracy: the mean over the wrong kinds present of (gold accept rate + wrong
    reject rate) / 2; None without gold or wrong candidates scored."""
    if "gold" not in rates:
        return None
    per_kind = [(rates["gold"] + 1.0 - rates[k]) / 2 for k in WRONG_KINDS if k in rates]
    return sum(per_kind) / len(per_kind) if per_kind else None


@metric(name="judge_check")
def judge_check_metrics() -> Metric:
    """The grader's separation of right from wrong answers, headline first: `balanced` (balanced
    accuracy, gold accepted vs wrong rejected, averaged over the two wrong kinds), the
    acceptance rate per candidate kind (`<kind>_accept`: the false-accept rate of a wrong kind),
    for reference the mean acceptance of the audit's own three gpt-4o-mini verdicts
    (`<kind>_audit_accept`), the number of `unscored` samples, then `<category>_balanced` per
    LoCoMo category. A figure with nothing scored to compute it from is left out (never NaN).
    """

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        rates, unscored = _rates(scores)
        out: dict[str, float] = {}
        if (balanced := _balanced(rates)) is not None:
            out["balanced"] = balanced
        out |= {f"{kind}_accept": rate for kind, rate in rates.items()}
        for kind in WRONG_KINDS:
            audit = [
                sum(bool(v) for v in verdicts) / len(verdicts)
                for s in scores
                if (md := s.sample_metadata or {})["kind"] == kind
                and (verdicts := md.get("audit_verdicts"))
            ]
            if (rate := _rate(audit)) is not None:
                out[f"{kind}_audit_accept"] = rate
        out["unscored"] = float(unscored)
        categories = sorted({str((s.sample_metadata or {})["category"]) for s in scores})
        for category in categories:
            subset = [s for s in scores if (s.sample_metadata or {})["category"] == category]
            if (balanced := _balanced(_rates(subset)[0])) is not None:
                out[f"{category}_balanced"] = balanced
        return out

    return compute


@scorer(metrics=[judge_check_metrics()])
def judge_check_scorer() -> Scorer:
    """1 when the grader's verdict gives the candidate any credit, 0 when none, NaN (unscored)
    when no reply could be read."""

    async def score(state: TaskState, target: Target) -> Score:
        criterion = str(state.metadata["criterion"])
        verdict = parse_verdict(state.output.completion, criterion)
        replies = state.metadata.get(_REPLIES, [state.output.completion])
        md: dict[str, Any] = {
            "kind": state.metadata["kind"],
            "criterion": criterion,
            "label": verdict.label if verdict else None,
            "credit": verdict.score if verdict else None,
            "replies": replies,
        }
        if verdict is None:
            return Score(
                value={"accepted": math.nan, "unscored": 1},
                answer=str(state.metadata["candidate"]),
                reason="grader_failed",
                explanation=f"UNSCORED: no readable verdict in {len(replies)} attempt(s)",
                metadata=md,
            )
        accepted = 1.0 if verdict.score > 0 else 0.0
        return Score(
            value={"accepted": accepted, "unscored": 0},
            answer=str(state.metadata["candidate"]),
            explanation=f"{verdict.label}: {verdict.reason} (should {target.text})",
            metadata=md,
        )

    return score


@memevals_task
def judge_check(
    judge_criteria: str = "default", gold: str = "original", data_dir: str | None = None
) -> Task:
    """Grade the gold, a specific-but-wrong and a vague-but-on-topic answer of each LoCoMo
    question of categories 1-4 (4,620 samples) with the model under test as the grader.

    Args:
        judge_criteria: "default" (memevals' LoCoMo criteria) or "lenient" (the mem0-lineage
            rule, for comparison).
        gold: "original" (all 1,540 questions) or "audited" (skip the questions whose gold
            answer the locomo-audit marks wrong).
        data_dir: folder holding locomo/ and locomo_audit/ (overrides MEMEVALS_DATA_DIR).
    """
    items, log = build(
        JudgeCheckOptions(judge_criteria=judge_criteria, gold=gold, data_dir=data_dir)
    )
    meta: Mapping[str, Any] = {"benchmark": "judge_check", **log}
    return Task(
        dataset=to_dataset(items, "judge_check"),
        solver=grade_candidate(),
        scorer=judge_check_scorer(),
        config=GenerateConfig(temperature=0.0, max_tokens=MAX_TOKENS),
        metadata=dict(meta),
    )


__all_tasks__ = ["judge_check"]
