"""LoCoMo-Plus on Inspect: `locomo_plus` and the tasks its record declares, judged, with LoCoMo's
F1 for its questions; samples and log metadata from memevals.benchmarks.locomo_plus."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task
from inspect_ai.scorer import Scorer, mean, scorer

from memevals.benchmarks.locomo.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.locomo_plus import data, official_judge, prompts, samples, scoring
from memevals.core.memory_options import MemoryOptions as _M
from memevals.core.options import options_from
from memevals.inspect_tasks import agent_task as agent_mode
from memevals.inspect_tasks import dataset, metrics, tasks
from memevals.inspect_tasks import sample_kinds as kinds
from memevals.inspect_tasks.context_scorers import (
    retrieval_metrics,
    selected_k,
    turn_precision,
    turn_recall,
)
from memevals.inspect_tasks.judge_scorer import judge_runs_args
from memevals.inspect_tasks.locomo import evidence_recall, locomo_f1_scorer
from memevals.inspect_tasks.memory_under_test import memory_system

__all__ = ["cue_recall", "locomo_plus", "locomo_plus_f1", "locomo_plus_judge", "posthoc_scorers"]
_O, COGNITIVE, QUESTION = samples.LocomoPlusOptions, prompts.COGNITIVE, prompts.is_question


def _by_relation() -> list[Any]:
    """Cognitive samples' mean and uncertainty per relation type (causal, state, goal, value)."""
    return kinds.values_by("relation_type", data.RELATION_TYPES)


@scorer(metrics=metrics.uncertainty_metrics())
def locomo_plus_f1() -> Scorer:
    """Official LoCoMo F1 of the LoCoMo questions; cognitive samples get none."""
    return kinds.only(locomo_f1_scorer(), QUESTION)


#: LoCoMo's retrieval scorers, LoCoMo questions only (cognitive samples have no evidence ids).
_LOCOMO = [evidence_recall, turn_precision, turn_recall, selected_k]
RETRIEVAL = kinds.subset_scorers("locomo_plus", _LOCOMO, QUESTION, retrieval_metrics)


@scorer(metrics=[mean(), metrics.stderr_clustered(), _by_relation()[0]])
def cue_recall() -> Scorer:
    """Cognitive samples: the share of the cue turns among the retrieved (cited) turn ids."""
    return kinds.value_score("cue_recall", prompts.is_cognitive, "retrieved_ids")


locomo_plus_judge = kinds.judge_scorer(
    "locomo_plus_judge", scoring.JUDGE_MAX_TOKENS, official_judge.EMPTY_REPLY, _by_relation()
)


@tasks.memevals_task(option_values=agent_mode.option_values(CONTEXT_MODES, RETRIEVAL_UNITS))
def locomo_plus(
    categories: str | None = _O.categories,
    disclose_task: bool = _O.disclose_task,
    gap_fix: bool = _O.gap_fix,
    context: str = "full",
    max_context_tokens: int | None = _M.max_context_tokens,
    retrieval_unit: str | None = _M.retrieval_unit,
    top_k: int | None = _M.top_k,
    retriever: str | None = _M.retriever,
    embedding_model: str | None = _M.embedding_model,
    token_counter: str = _M.token_counter,
    adversarial: str = _O.adversarial,
    seed: int = _O.seed,
    max_tokens: int = _O.max_tokens,
    judge_max_tokens: int = _O.judge_max_tokens,
    judge_runs: int = _O.judge_runs,
    sample_order: str = _O.sample_order,
    data_dir: str | None = None,
    gold: str = _O.gold,
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
    """LoCoMo-Plus: LoCoMo's 1,986 questions and 401 cognitive cue-trigger samples. Options
    beyond the shared ones (categories, disclose_task, gap_fix, ...): README.md#parameters."""
    given = dict(locals())
    agent = agent_mode.options_of(given)
    options = options_from(_O, agent_mode.host_values(given), where="locomo_plus")
    runs = judge_runs_args(options.judge_runs)
    judge = locomo_plus_judge(max_tokens=options.judge_max_tokens, **runs)
    build, subject = agent_mode.split(samples.build(options), agent)
    wanted = build.metadata["categories"]
    questions, cognitive = wanted != [COGNITIVE], COGNITIVE in wanted
    recall = [*RETRIEVAL] * questions + [cue_recall] * cognitive + [memory_system]
    scorers = [judge, *[locomo_plus_f1()] * questions, *(s() for s in recall if build.subject)]
    built = dataset.task_from_build(build, scorers, name="locomo_plus")
    return agent_mode.agent_task(built, subject, agent, options.memory.memory_cache is not False)


__all_tasks__ = tasks.declared_tasks(locomo_plus)


def posthoc_scorers(md: list[dict[str, Any]], max_tokens: int | None, runs: int) -> list[Scorer]:
    """The judge, then F1 when any LoCoMo question was logged (memevals.tools.judge)."""
    limit = {} if max_tokens is None else {"max_tokens": max_tokens}
    scorers = [locomo_plus_judge(**limit, **judge_runs_args(runs))]
    return scorers + [locomo_plus_f1()] * any(map(QUESTION, md))
