"""LongMemEval on Inspect: `longmemeval` (-T variant=oracle|s|m), one task per variant and one
per category, judged per question type by the LLM judge with the official aggregation."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from inspect_ai import Task
from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from memevals.benchmarks.longmemeval.data import CATEGORIES
from memevals.benchmarks.longmemeval.memory import (
    CONTEXT_MODES,
    RETRIEVAL_UNITS,
    SessionBlock,
    headline_keys,
)
from memevals.benchmarks.longmemeval.prompts import is_empty_note, note_prompt, notes_text
from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, build
from memevals.benchmarks.longmemeval.scoring import LmeLabel, LmeSummary, summarize
from memevals.core.memory_options import MemoryOptions
from memevals.inspect_tasks.common import (
    category_uncertainty,
    ci_clustered,
    count,
    fixed_param_task,
    memevals_task,
    stderr_clustered,
    to_dataset,
)
from memevals.inspect_tasks.judge import judge_runs_args, llm_judge, repeated_judging
from memevals.inspect_tasks.memory_system import memory_system, solver_chain
from memevals.inspect_tasks.retrieval import prompt_tokens

# ---------------------------------------------------------------------------------------------
# Metrics (official aggregation, memevals.benchmarks.longmemeval.scoring)


def _summary(scores: list[SampleScore]) -> LmeSummary:
    labels = []
    for s in scores:
        md = s.sample_metadata or {}
        if "category" not in md or "abstention" not in md:
            raise ValueError(
                f"sample {s.sample_id}: LongMemEval metrics need metadata 'category' and "
                "'abstention' (samples of the longmemeval tasks carry them)"
            )
        try:
            value: float | None = s.score.as_float()
        except (TypeError, ValueError):
            value = None
        labels.append(LmeLabel(str(md["category"]), bool(md["abstention"]), value))
    return summarize(labels)


def _or_nan(value: float | None) -> float:
    # Inspect metrics are numbers; "no item to average" is NaN, never a made-up 0
    return math.nan if value is None else value


@metric
def overall_accuracy() -> Metric:
    """Micro mean over all judged questions."""

    def compute(scores: list[SampleScore]) -> float:
        return _or_nan(_summary(scores).overall)

    return compute


@metric
def task_averaged_accuracy() -> Metric:
    """Unweighted mean of the per-type accuracies (the types present in the run)."""

    def compute(scores: list[SampleScore]) -> float:
        return _or_nan(_summary(scores).task_averaged)

    return compute


@metric
def abstention_accuracy() -> Metric:
    """Mean over the `_abs` questions (NaN when the run has none)."""

    def compute(scores: list[SampleScore]) -> float:
        return _or_nan(_summary(scores).abstention)

    return compute


@metric
def type_accuracy() -> Metric:
    """Accuracy per question type (`_abs` items count in their type)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return dict(_summary(scores).per_type)

    return compute


@metric(name="abstention_wilson")
def abstention_uncertainty() -> Metric:
    """Clustered Wilson interval of the abstention accuracy: `lower` / `upper`, logged as
    `abstention_wilson_lower` / `_upper` (NaN with fewer than two `_abs` questions)."""
    inner = cast(MetricProtocol, ci_clustered(wilson=True))

    def compute(scores: list[SampleScore]) -> Value:
        chosen = [s for s in scores if (s.sample_metadata or {}).get("abstention")]
        value = cast(Mapping[str, float], inner(chosen))
        return {k.removeprefix("wilson_"): v for k, v in value.items()}

    return compute


#: Official aggregation plus uncertainty: every question is its own cluster (its own
#: haystack), so `stderr_clustered` equals the naive `stderr`; the Wilson intervals are of the
#: overall, per-type (`<type>_wilson_lower`, ...) and abstention accuracies.
LME_METRICS: list[Metric] = [
    overall_accuracy(),
    stderr(),
    stderr_clustered(),
    ci_clustered(wilson=True),
    task_averaged_accuracy(),
    abstention_accuracy(),
    abstention_uncertainty(),
    type_accuracy(),
    category_uncertainty(wilson=True),
    repeated_judging(),
]


@scorer(metrics={"judge": LME_METRICS, "unscored": [count()]})
def longmemeval_judge(max_tokens: int = 256, retries: int = 1, judge_runs: int = 1) -> Scorer:
    """The LLM judge (criterion per question type, abstention for `_abs` ids) with
    LongMemEval's aggregation: overall, per-type, task-averaged and abstention accuracy."""
    inner = llm_judge(max_tokens=max_tokens, retries=retries, **judge_runs_args(judge_runs))

    async def score(state: TaskState, target: Target) -> Score:
        result = await inner(state, target)
        if result is None:  # llm_judge always scores; keep the contract explicit
            raise RuntimeError(f"sample {state.sample_id}: the judge returned no score")
        return result

    return score


@scorer(metrics={"*": [mean(), stderr_clustered()]})
def longmemeval_retrieval() -> Scorer:
    """Official LongMemEval retrieval metrics of the rag context (computed when the context was
    built, from the whole ranked haystack) or of a memory system's items (from its ranking,
    max(top_k, 50) deep, when its context was retrieved): recall_any / recall_all / ndcg_any at
    5 and 10 at session level, plus recall_all / ndcg_any at 5, 10, 50 for turn units. Every k
    of 1, 3, 5, 10, 30, 50 is in the score metadata. `_abs` questions and questions without a
    gold unit are skipped (unscored), as in the official runner."""

    async def score(state: TaskState, target: Target) -> Score:
        md = state.metadata
        if md.get("context") not in ("rag", "memory"):
            raise ValueError(
                f"sample {state.sample_id}: retrieval metrics need context=rag or a memory system"
            )
        scores = md.get("retrieval_scores")
        if scores is None:
            return Score(
                value=math.nan,
                explanation=f"skipped for retrieval metrics: {md.get('retrieval_skipped')}",
                metadata={"retrieved_ids": md.get("retrieved_ids")},
            )
        keys = headline_keys(str(md["retrieval_unit"]))
        return Score(
            value={k: scores[k] for k in keys},
            explanation=f"retrieved (best first): {md.get('retrieved_ids')}",
            metadata={"all_k": scores, "retrieved_ids": md.get("retrieved_ids")},
        )

    return score


# ---------------------------------------------------------------------------------------------
# Chain-of-note


@solver
def take_notes(blocks: Mapping[str, Sequence[SessionBlock]], note_max_tokens: int = 500) -> Solver:
    """One call per session asks the model for notes relevant to the question (or "empty");
    the notes then replace the history in the system message before the answer is generated.

    `blocks` maps each sample id to its sessions (chronological), built with the dataset.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sid = str(state.sample_id)
        if sid not in blocks:
            raise ValueError(f"sample {sid}: chain_of_note has no sessions for this sample")
        sample_blocks = list(blocks[sid])
        md = state.metadata
        model = get_model()
        config = GenerateConfig(max_tokens=note_max_tokens)
        outputs = await asyncio.gather(
            *(
                model.generate(
                    [ChatMessageUser(content=note_prompt(b, md["question"], md["question_date"]))],
                    config=config,
                )
                for b in sample_blocks
            )
        )
        notes = [o.completion for o in outputs]
        state.metadata["notes_kept"] = sum(not is_empty_note(n) for n in notes)
        state.metadata["notes_total"] = len(notes)
        rest: list[ChatMessage] = [
            m for m in state.messages if not isinstance(m, ChatMessageSystem)
        ]
        state.messages = [ChatMessageSystem(content=notes_text(sample_blocks, notes)), *rest]
        return state

    return solve


# ---------------------------------------------------------------------------------------------
# Tasks


@memevals_task(
    # without a budget, context=truncated takes the official one from the model's window
    option_defaults={"max_context_tokens": "context_window - max_tokens - 1000"},
    option_values={"context": CONTEXT_MODES, "retrieval_unit": RETRIEVAL_UNITS},
)
def longmemeval(
    variant: str = "s",
    categories: str | None = None,
    context: str = "full",
    history_format: str = "json",
    chain_of_note: bool = False,
    max_tokens: int = 500,
    note_max_tokens: int = 500,
    judge_max_tokens: int = 256,
    judge_runs: int = 1,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
    max_context_tokens: int | None = None,
    context_window: int | None = None,
    token_counter: str = "auto",
    data_dir: str | None = None,
    verify_checksum: bool = True,
    memory: str | None = None,
    memory_args: str | dict[str, Any] | None = None,
    memory_cache: bool | None = None,
    memory_answers: bool | None = None,
) -> Task:
    """LongMemEval (500 questions; oracle, S ≈115K-token or M ≈1.5M-token histories), judged
    per question type by the LLM judge (`--model-role grader=...`).

    Args:
        variant: oracle (evidence sessions only), s (default) or m. M is read streaming.
        categories: comma-separated subset of single_session_user, single_session_assistant,
            single_session_preference, multi_session, temporal_reasoning, knowledge_update,
            abstention (the `_abs` questions of every type); default all.
        history_format: json (each session's turns as a JSON list, default) or text
            (`role: content` lines). `has_answer` is never shown.
        chain_of_note: first take notes on each session (one call per session), then answer
            from the notes (not with memory).
        max_tokens: answer length limit (the paper used 500).
        note_max_tokens: length limit of each chain-of-note call.
        context_window: truncated only: the model's window; the budget is then the official
            context_window - max_tokens - 1000 (default window 128000, gpt-4o's).
        data_dir: folder holding longmemeval/<file> (overrides MEMEVALS_DATA_DIR).
        verify_checksum: check the S file's sha256 (set false for same-schema copies under
            data_dir, such as the test fixture; the log then says the data is unverified).
    """
    for name, value in (
        ("max_tokens", max_tokens),
        ("note_max_tokens", note_max_tokens),
        ("judge_max_tokens", judge_max_tokens),
    ):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    runs_args = judge_runs_args(judge_runs)
    built = build(
        LongMemEvalOptions(
            variant=variant,
            categories=categories,
            memory=MemoryOptions.from_mapping(locals()),
            history_format=history_format,
            context_window=context_window,
            answer_tokens=max_tokens,
            chain_of_note=chain_of_note,
            data_dir=data_dir,
            verify_checksum=verify_checksum,
        )
    )

    if chain_of_note:
        solvers: list[Solver] = [take_notes(built.note_blocks, note_max_tokens), generate()]
    else:
        solvers = solver_chain(built.subject)
    scorers = [longmemeval_judge(max_tokens=judge_max_tokens, **runs_args)]
    if not chain_of_note:
        scorers.append(prompt_tokens())
    if built.subject is not None:
        scorers += [longmemeval_retrieval(), memory_system()]
    elif context == "rag":
        scorers.append(longmemeval_retrieval())
    return Task(
        dataset=to_dataset(built.items, f"longmemeval_{variant}"),
        solver=solvers,
        scorer=scorers,
        config=GenerateConfig(max_tokens=max_tokens),
        metadata=built.log,
    )


def _variant_doc(variant: str) -> str:
    return f"LongMemEval, variant {variant} (all question types), LLM-judged."


def _category_doc(name: str) -> str:
    what = (
        "the `_abs` (abstention) questions of every type"
        if name == "abstention"
        else f"{name.replace('_', '-')} questions only (including their `_abs` items)"
    )
    return f"LongMemEval, {what}; -T variant=oracle|s|m (default s), LLM-judged."


longmemeval_oracle = fixed_param_task(
    longmemeval, "longmemeval_oracle", {"variant": "oracle"}, _variant_doc("oracle")
)
longmemeval_s = fixed_param_task(longmemeval, "longmemeval_s", {"variant": "s"}, _variant_doc("s"))
longmemeval_m = fixed_param_task(longmemeval, "longmemeval_m", {"variant": "m"}, _variant_doc("m"))

longmemeval_single_session_user = fixed_param_task(
    longmemeval,
    "longmemeval_single_session_user",
    {"categories": "single_session_user"},
    _category_doc("single_session_user"),
)
longmemeval_single_session_assistant = fixed_param_task(
    longmemeval,
    "longmemeval_single_session_assistant",
    {"categories": "single_session_assistant"},
    _category_doc("single_session_assistant"),
)
longmemeval_single_session_preference = fixed_param_task(
    longmemeval,
    "longmemeval_single_session_preference",
    {"categories": "single_session_preference"},
    _category_doc("single_session_preference"),
)
longmemeval_multi_session = fixed_param_task(
    longmemeval,
    "longmemeval_multi_session",
    {"categories": "multi_session"},
    _category_doc("multi_session"),
)
longmemeval_temporal_reasoning = fixed_param_task(
    longmemeval,
    "longmemeval_temporal_reasoning",
    {"categories": "temporal_reasoning"},
    _category_doc("temporal_reasoning"),
)
longmemeval_knowledge_update = fixed_param_task(
    longmemeval,
    "longmemeval_knowledge_update",
    {"categories": "knowledge_update"},
    _category_doc("knowledge_update"),
)
longmemeval_abstention = fixed_param_task(
    longmemeval,
    "longmemeval_abstention",
    {"categories": "abstention"},
    _category_doc("abstention"),
)

__all_tasks__ = ["longmemeval", "longmemeval_oracle", "longmemeval_s", "longmemeval_m"] + [
    f"longmemeval_{name}" for name in CATEGORIES
]


def posthoc_scorers(
    metadata: Sequence[Mapping[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorer `python -m memevals.tools.judge` gives logged LongMemEval replies: the judge
    with the official aggregation, as the task scores them.

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the judge's token limit (None: the scorer's default).
        judge_runs: how many times each reply is judged.

    Returns:
        The scorers.
    """
    limit = {} if max_tokens is None else {"max_tokens": max_tokens}
    return [longmemeval_judge(**limit, **judge_runs_args(judge_runs))]
