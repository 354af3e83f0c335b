"""BEAM on Inspect: `beam` and its per-ability tasks (judge, report: memevals.benchmarks.beam)."""

from __future__ import annotations

from functools import partial
from typing import Any

from inspect_ai import Task
from inspect_ai.scorer import Metric, Scorer, scorer

from memevals.benchmarks.beam import samples, scoring
from memevals.benchmarks.beam.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.beam.rubric_judge import check_posthoc, judge_question
from memevals.benchmarks.beam.samples import MEMEVALS_JUDGE_MAX_TOKENS, BeamOptions
from memevals.core.options import options_from
from memevals.core.protocol import DEFAULT
from memevals.inspect_tasks import agent_task as agent_mode
from memevals.inspect_tasks import dataset, metrics, tasks
from memevals.inspect_tasks.adapters import aggregate_metric, grader_score
from memevals.inspect_tasks.context_scorers import prompt_tokens
from memevals.inspect_tasks.memory_under_test import memory_system
from memevals.inspect_tasks.metrics import keyed

__all__ = ["beam", "beam_judge", "posthoc_scorers"]

#: Upstream's report (overall, per ability) and the clustered error: twelve rows, one screen;
#: EVENT_ORDERING, event ordering's other figures, is a metric a scorer of one's own may add.
BEAM_METRICS: list[Metric] = [
    aggregate_metric("overall", scoring.overall_figure),
    metrics.stderr_clustered(),
    aggregate_metric("by_ability", scoring.ability_figures),
]
EVENT_ORDERING = aggregate_metric("event_ordering", scoring.event_ordering_figures)


@scorer(metrics=keyed({"beam": BEAM_METRICS, "unscored": [metrics.count()]}))
def beam_judge(
    max_tokens: int | None = None, retries: int = 1, data_dir: str | None = None
) -> Scorer:
    """Each rubric item judged by the grader role as 1, 0.5 or 0; an unscored question is NaN
    under `beam`, counted by `unscored` (arguments: `judge_question`'s)."""
    judge = partial(judge_question, max_tokens=max_tokens, retries=retries, data_dir=data_dir)
    return grader_score(judge)


@tasks.memevals_task(option_values=agent_mode.option_values(CONTEXT_MODES, RETRIEVAL_UNITS))
def beam(
    size: str = BeamOptions.size,
    categories: str | None = None,
    protocol: str = DEFAULT.name,
    context: str = "full",
    context_window: int | None = None,
    max_tokens: int | None = None,
    judge_max_tokens: int = MEMEVALS_JUDGE_MAX_TOKENS,
    max_context_tokens: int | None = None,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
    token_counter: str = "auto",
    data_dir: str | None = None,
    verify_checksum: bool = BeamOptions.verify_checksum,
    memory: str | None = None,
    memory_args: str | dict[str, Any] | None = None,
    memory_cache: bool | None = None,
    memory_answers: bool | None = None,
    agent_memory: str | None = None,
    agent_steps: int | None = None,
    agent_compaction: str | None = None,
    agent_window: int | None = None,
    agent_write_tokens: int | None = None,
    agent_mcp: str | None = None,
) -> Task:
    """BEAM's probing questions, each answer judged against its rubric by the grader role.

    Args:
        size: 100K (default; 20 conversations), 500K (35), 1M (35) or 10M (10).
        categories: comma-separated abilities (README.md#tasks names the ten); default all.
        context_window: context=full only: the window upstream prunes for (default 1000000).
        max_tokens: answer length limit (default: none under official, 2048 under memevals).
        data_dir: folder holding beam/chats/... (and upstream/BEAM/...); over MEMEVALS_DATA_DIR.
        verify_checksum: check every file's git blob id (false: read a same-schema copy as is).
    """
    given = dict(locals())
    agent = agent_mode.options_of(given)
    options = options_from(BeamOptions, agent_mode.host_values(given), where="beam")
    build, subject = agent_mode.split(samples.build(options), agent)
    scorers = [beam_judge(**samples.judge_args(options)), prompt_tokens()]
    scorers += [memory_system()] if build.subject is not None else []
    built = dataset.task_from_build(build, scorers, name="beam")
    return agent_mode.agent_task(built, subject, agent, memory_cache is not False)


def posthoc_scorers(
    metadata: list[dict[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The rubric judge, for logged BEAM replies (`python -m memevals.tools.judge`).

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the grader's token limit per rubric item (None: each sample's protocol's).
        judge_runs: how many times each reply is judged (BEAM judges once).

    Returns:
        The scorers.
    """
    check_posthoc(metadata, max_tokens, judge_runs)
    return [beam_judge(max_tokens=max_tokens)]


__all_tasks__ = tasks.declared_tasks(beam)
