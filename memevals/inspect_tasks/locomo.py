"""LoCoMo QA on Inspect: `locomo` and its per-category tasks (from its record), official F1."""

from __future__ import annotations

from typing import Any

from inspect_ai import Task
from inspect_ai.scorer import Scorer, scorer

from memevals.benchmarks.locomo import samples
from memevals.benchmarks.locomo.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.locomo.prompts import answer_f1, prediction_for_scoring
from memevals.benchmarks.locomo.scoring import evidence_recall_rule
from memevals.core.memory_options import MemoryOptions as _M
from memevals.core.options import options_from
from memevals.core.protocol import DEFAULT, MEMEVALS, OFFICIAL
from memevals.core.upstream_judge import OFFICIAL_JUDGE_KEY
from memevals.inspect_tasks import agent_task as agent_mode
from memevals.inspect_tasks import context_scorers, dataset, metrics, tasks
from memevals.inspect_tasks import official_scorer as upstream
from memevals.inspect_tasks.answer import answer_scorer

__all__ = [
    "evidence_recall", "locomo", "locomo_f1_scorer", "locomo_official_judge", "posthoc_scorers"
]  # fmt: skip
_O = samples.LocomoOptions


@scorer(metrics=metrics.uncertainty_metrics())
def locomo_f1_scorer() -> Scorer:
    """Official LoCoMo QA F1 per sample (a letter reply scored as the option it chose), with
    conversation-clustered uncertainty, more with `-T uncertainty=full` (README)."""
    return answer_scorer(answer_f1)


@scorer(metrics=upstream.official_judge_metrics())
def locomo_official_judge() -> Scorer:
    """LoCoMo-Plus's upstream judge of each LoCoMo question (protocol=official); a letter reply
    is judged as the option it chose (upstream's `get_cat_5_answer`)."""
    return upstream.official_judge_score(prediction_for_scoring)


@scorer(metrics=context_scorers.retrieval_metrics())
def evidence_recall() -> Scorer:
    """Official LoCoMo R@k: the mean per category is the official per-category recall."""
    return context_scorers.recall_scorer(evidence_recall_rule)


@tasks.memevals_task(option_values=agent_mode.option_values(CONTEXT_MODES, RETRIEVAL_UNITS))
def locomo(
    categories: str | None = _O.categories,
    context: str = _M.context,
    adversarial: str = _O.adversarial,
    seed: int = _O.seed,
    max_tokens: int = _O.max_tokens,
    data_dir: str | None = None,
    gold: str = _O.gold,
    judge: bool = _O.judge,
    judge_runs: int = _O.judge_runs,
    max_context_tokens: int | None = _M.max_context_tokens,
    retrieval_unit: str | None = _M.retrieval_unit,
    top_k: int | None = _M.top_k,
    retriever: str | None = _M.retriever,
    embedding_model: str | None = _M.embedding_model,
    token_counter: str = _M.token_counter,
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
    protocol: str = DEFAULT.name,
    uncertainty: str = _O.uncertainty,
) -> Task:
    """LoCoMo QA (1,986 questions over 10 long conversations), official F1.

    Args:
        categories: comma-separated subset of the five categories (README); default all.
        adversarial: "choice" (the paper's two-option question, seeded order) or "open".
        seed: seed of the two-option order.
        max_tokens: answer length limit (the paper used 32).
        data_dir: folder holding locomo/locomo10.json (overrides MEMEVALS_DATA_DIR).
        gold: original (the official answers) or audited (locomo-audit's corrections).
    """
    given = dict(locals())
    agent = agent_mode.options_of(given)
    options = options_from(_O, agent_mode.host_values(given), where="locomo")
    official, runs = locomo_official_judge, options.judge_runs
    judges = [upstream.protocol_judge(options.protocol, runs, official)] if options.judge else []
    build, subject = agent_mode.split(samples.build(options), agent)
    recall = context_scorers.retrieval_scorers_for(build, evidence_recall())
    scorers = [locomo_f1_scorer(), *recall, *judges, context_scorers.prompt_tokens()]
    built = dataset.task_from_build(build, scorers, name="locomo")
    return agent_mode.agent_task(built, subject, agent, options.memory.memory_cache is not False)


__all_tasks__ = tasks.declared_tasks(locomo)


def posthoc_scorers(
    metadata: list[dict[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """F1 and the protocol's judge for logged LoCoMo replies (`python -m memevals.tools.judge`)."""
    p = OFFICIAL if any(OFFICIAL_JUDGE_KEY in md for md in metadata) else MEMEVALS
    judge = upstream.protocol_judge(p, judge_runs, locomo_official_judge, max_tokens=max_tokens)
    return [locomo_f1_scorer(), judge]
