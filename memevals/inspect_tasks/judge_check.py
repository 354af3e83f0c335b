"""`judge_check`: the model under test is the *grader* (benchmarks/judge_check/README.md).

Each sample is one judge prompt of memevals' own LoCoMo judge (core/criteria_judge.py) around one
candidate answer: the gold answer, the audit's specific-but-wrong answer, or its vague-but-on-
topic one. The solver sends the prompt (temperature 0; one repair request after an unreadable
verdict, as the llm_judge scorer does); the scorer reads the verdict strictly
(benchmarks/judge_check/scoring.py).

    inspect eval memevals/judge_check --model openai/gpt-4o-mini
"""

from __future__ import annotations

from inspect_ai import Task
from inspect_ai.model import ChatMessageUser
from inspect_ai.scorer import Metric, SampleScore, Scorer, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.benchmarks.judge_check import samples
from memevals.benchmarks.judge_check.scoring import REPLIES_KEY, figures, verdict_score
from memevals.core.criteria_judge import parse_verdict, repair_message
from memevals.core.options import options_from
from memevals.inspect_tasks.dataset import task_from_build
from memevals.inspect_tasks.task_parts import from_fields, with_solver
from memevals.inspect_tasks.tasks import declared_tasks, memevals_task

__all__ = ["grade_candidate", "judge_check", "judge_check_metrics", "judge_check_scorer"]


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
        state.metadata[REPLIES_KEY] = replies
        return state

    return solve


@metric(name="judge_check")
def judge_check_metrics() -> Metric:
    """The grader's separation of right from wrong answers, headline first: `balanced`, the
    acceptance rate per candidate kind (`<kind>_accept`), the audit's own acceptance
    (`<kind>_audit_accept`), `unscored`, then `<category>_balanced` (scoring.figures)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return figures([(s.score.value, s.sample_metadata or {}) for s in scores])

    return compute


@scorer(metrics=[judge_check_metrics()])
def judge_check_scorer() -> Scorer:
    """1 when the grader's verdict gives the candidate any credit, 0 when none, NaN (unscored)
    when no reply could be read."""

    return from_fields(verdict_score)


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
    options = options_from(samples.JudgeCheckOptions, locals(), where="judge_check")
    built = task_from_build(samples.build(options), [judge_check_scorer()], name="judge_check")
    return with_solver(built, grade_candidate())


__all_tasks__ = declared_tasks(judge_check)
