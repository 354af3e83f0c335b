"""LongMemEval on Inspect: `longmemeval` and the record's per-variant and per-category tasks."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task
from inspect_ai.scorer import Metric, Scorer, mean, scorer

from memevals.benchmarks.longmemeval import retrieval, samples, scoring
from memevals.benchmarks.longmemeval.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.longmemeval.samples import JUDGE_MAX_TOKENS, LongMemEvalOptions
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import options_from
from memevals.inspect_tasks import agent_task as agent_mode
from memevals.inspect_tasks import dataset, judge_scorer, metrics, notes, scorer_parts, tasks
from memevals.inspect_tasks.adapters import aggregate_metric
from memevals.inspect_tasks.context_scorers import prompt_tokens
from memevals.inspect_tasks.memory_under_test import memory_system
from memevals.inspect_tasks.metrics import judge_metrics, keyed

__all__ = ["longmemeval", "longmemeval_judge", "longmemeval_retrieval", "posthoc_scorers"]

_FIGURES = [aggregate_metric(f.__name__, f) for f in scoring.JUDGE_FIGURES]
#: The official figures; each question is its own cluster (haystack): stderr is the naive one.
LME_METRICS: list[Metric] = [
    _FIGURES[0],
    *metrics.uncertainty_metrics(wilson=True, by_category=False)[1:],
    *_FIGURES[1:3],
    scorer_parts.flagged_interval("abstention", "abstention_wilson"),
    _FIGURES[3],
    metrics.category_uncertainty(wilson=True),
    judge_scorer.repeated_judging(),
]
#: Inspect's answer limit is lm-eval's `answer_tokens` (lm-eval's own limit is the YAML's).
_O, _M, _ALIASES = LongMemEvalOptions(), MemoryOptions(), {"max_tokens": "answer_tokens"}


@scorer(metrics=judge_metrics(LME_METRICS))
def longmemeval_judge(
    max_tokens: int = JUDGE_MAX_TOKENS, retries: int = 1, judge_runs: int = 1
) -> Scorer:
    """Each reply judged (upstream's judge for an official sample, else ours) per question type."""
    return scorer_parts.judge_as_built(max_tokens, JUDGE_MAX_TOKENS, judge_runs, retries)


@scorer(metrics=keyed({"*": [mean(), metrics.stderr_clustered()]}))
def longmemeval_retrieval() -> Scorer:
    """Official recall and nDCG of the rag context or a memory system's items (README)."""
    return scorer_parts.logged_score(retrieval.retrieval_score)


@tasks.memevals_task(
    option_defaults={"max_context_tokens": "context_window - max_tokens - 1000"},
    option_values=agent_mode.option_values(CONTEXT_MODES, RETRIEVAL_UNITS),
)
def longmemeval(
    variant: str = _O.variant,
    categories: str | None = None,
    context: str = _M.context,
    history_format: str = _O.history_format,
    chain_of_note: bool = _O.chain_of_note,
    step_by_step: bool = _O.step_by_step,
    max_tokens: int | None = _O.answer_tokens,
    note_max_tokens: int = _O.note_max_tokens,
    judge_max_tokens: int = _O.judge_max_tokens,
    judge_runs: int = _O.judge_runs,
    retrieval_unit: str | None = _M.retrieval_unit,
    top_k: int | None = _M.top_k,
    retriever: str | None = _M.retriever,
    embedding_model: str | None = _M.embedding_model,
    max_context_tokens: int | None = _M.max_context_tokens,
    context_window: int | None = _O.context_window,
    token_counter: str = _M.token_counter,
    data_dir: str | None = _O.data_dir,
    verify_checksum: bool = _O.verify_checksum,
    memory: str | None = _M.memory,
    memory_args: str | dict[str, Any] | None = None,
    memory_cache: bool | None = _M.memory_cache,
    memory_answers: bool | None = _M.memory_answers,
    agent_memory: str | None = None,
    agent_steps: int | None = None,
    agent_compaction: str | None = None,
    agent_window: int | None = None,
    agent_write_tokens: int | None = None,
    agent_mcp: str | None = None,
    protocol: str = _O.protocol.name,
    uncertainty: str = _O.uncertainty,
) -> Task:
    """LongMemEval's 500 questions (oracle, S or M histories), judged per question type by the
    grader role; its own options (variant, categories, chain_of_note, ...): README#parameters."""
    agent = agent_mode.options_of(given := dict(locals()))
    if agent is not None and chain_of_note:
        raise ValueError("chain_of_note does not apply with context=agent")
    host = agent_mode.host_values(given)
    options = options_from(LongMemEvalOptions, host, where="longmemeval", aliases=_ALIASES)
    lme = samples.build(options)
    build, subject = agent_mode.split(lme, agent)
    scorers = [longmemeval_judge(judge_max_tokens, **judge_scorer.judge_runs_args(judge_runs))]
    scorers += [] if chain_of_note else [prompt_tokens()]
    scorers += [longmemeval_retrieval()] if build.subject or context == "rag" else []
    scorers += [memory_system()] if build.subject else []
    task = dataset.task_from_build(build, scorers, name="longmemeval")
    if agent is not None:
        return agent_mode.agent_task(task, subject, agent, memory_cache is not False)
    return notes.with_notes(task, lme.note_plans, note_max_tokens) if chain_of_note else task


__all_tasks__ = tasks.declared_tasks(longmemeval)


def posthoc_scorers(metadata: list[Any], max_tokens: int | None, judge_runs: int) -> list[Scorer]:
    """The judge with the official aggregation, for logged replies (memevals.tools.judge)."""
    limit = {} if max_tokens is None else {"max_tokens": max_tokens}
    return [longmemeval_judge(**limit, **judge_scorer.judge_runs_args(judge_runs))]
