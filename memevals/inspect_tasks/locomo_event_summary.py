"""`locomo_event_summary`: LoCoMo's event summarisation on Inspect (its README#protocol): the
whole conversation at once or, `incremental=true`, session by session (the paper's protocol for
short-context models); ROUGE and FactScore fact precision/recall/F1 by the grader model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import TaskState

from memevals.benchmarks.locomo.data import load_conversations
from memevals.benchmarks.locomo_event_summary import prompts, samples, scoring
from memevals.core.options import options_from
from memevals.inspect_tasks import dataset, metrics, tasks
from memevals.inspect_tasks.adapters import ask_model
from memevals.inspect_tasks.judge_scorer import grader_model
from memevals.inspect_tasks.metrics import keyed
from memevals.inspect_tasks.task_parts import stepwise, with_solver

__all__ = ["event_summary_scorer", "locomo_event_summary", "posthoc_scorers"]

_O = samples.EventSummaryOptions
# six peer figures: each its mean and clustered stderr on the screen, intervals under full
_METRICS = {
    k: metrics.uncertainty_metrics(by_category=False, intervals="full") for k in scoring.SCORE_KEYS
}


@scorer(metrics=keyed({**_METRICS, "unscored": [metrics.count()]}, lead=False))
def event_summary_scorer(
    reference_facts: str = _O.reference_facts,
    lines_per_call: int = _O.lines_per_call,
    facts_per_call: int = _O.facts_per_call,
    grader_max_tokens: int = _O.grader_max_tokens,
    retries: int = 1,
) -> Scorer:
    """ROUGE-1/2/L plus fact precision/recall/F1 from the `grader` model role; after `retries`
    unreadable grader replies the sample's fact scores are unscored (NaN, counted)."""
    scoring.check_grading(reference_facts, grader_max_tokens, retries)
    grading = scoring.Grading(
        reference_facts, lines_per_call, facts_per_call, retries, grader_max_tokens
    )

    async def score(state: TaskState, target: Target) -> Score:
        grader, fallback = grader_model()
        reply, md = state.output.completion, state.metadata
        parts = await scoring.summary_score(reply, target.text, md, ask_model(grader), grading)
        md = {"grader": str(grader), "grader_fallback": fallback, **parts.pop("metadata")}
        return Score(**parts, metadata=md)

    return score


@tasks.memevals_task
def locomo_event_summary(
    incremental: bool = _O.incremental,
    sessions: int | None = None,
    conversations: str | None = None,
    reference_facts: str = _O.reference_facts,
    max_tokens: int = _O.max_tokens,
    lines_per_call: int = _O.lines_per_call,
    facts_per_call: int = _O.facts_per_call,
    grader_max_tokens: int = _O.grader_max_tokens,
    data_dir: str | None = None,
    uncertainty: str = _O.uncertainty,
) -> Task:
    """LoCoMo event summarisation: each speaker's dated life events, 20 samples.

    Args:
        incremental: summarise session by session, the summary so far carried forward.
        sessions: use only the first N sessions (the reference keeps their events); default all.
        conversations: comma-separated conversation ids (e.g. conv-26); default all 10.
        reference_facts: "decompose" (the grader splits the reference into atomic facts) or
            "events" (one fact per annotated event, fewer grader calls).
        max_tokens: the summary's token limit (per step when incremental).
        lines_per_call: text lines per grader decomposition call.
        facts_per_call: facts per grader support-check call.
        grader_max_tokens: the grader's token limit per reply.
        data_dir: folder holding locomo/locomo10.json (overrides MEMEVALS_DATA_DIR).
    """
    options = options_from(_O, locals(), where="locomo_event_summary")
    score = event_summary_scorer(reference_facts, lines_per_call, facts_per_call, grader_max_tokens)
    built = dataset.task_from_build(samples.build(options), [score], name="locomo_event_summary")
    if not options.incremental:
        return built
    chats = {c.sample_id: c for c in load_conversations(data_dir, conversations)}
    return with_solver(built, stepwise(prompts.incremental_steps(chats), "incremental_summaries"))


__all_tasks__ = tasks.declared_tasks(locomo_event_summary)


def posthoc_scorers(
    metadata: Sequence[Mapping[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """`python -m memevals.tools.judge`'s scorer of logged summaries, as the task's (the grader's
    token limit `max_tokens`, None: the default); judged once (`judge_runs` must be 1)."""
    scoring.check_judged_once(judge_runs)
    if max_tokens is None:  # the scorer as the task's default logs it
        return [event_summary_scorer()]
    return [event_summary_scorer(grader_max_tokens=max_tokens)]
