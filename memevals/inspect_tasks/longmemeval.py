"""LongMemEval on Inspect: `longmemeval` (-T variant=oracle|s|m), one task per variant and one
per category, judged per question type by the LLM judge with the official aggregation.

`-T protocol=official` (default) sends upstream's one user message and judges with upstream's
judge (memevals.benchmarks.longmemeval.official, memevals.inspect_tasks.official_judge);
`protocol=memevals` sends our own wording, also as one user message, and judges with our
criteria. Either way the lm-eval tasks send the same message."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any, cast

from inspect_ai import Task
from inspect_ai.model import ChatMessageUser, GenerateConfig, get_model
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
)
from inspect_ai.solver import Generate, Solver, TaskState, generate, solver

from memevals.benchmarks.longmemeval.data import CATEGORIES
from memevals.benchmarks.longmemeval.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.longmemeval.retrieval import headline_keys
from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, NotePlan, build
from memevals.benchmarks.longmemeval.scoring import LmeLabel, LmeSummary, summarize
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import protocol_fix
from memevals.inspect_tasks.common import (
    category_uncertainty,
    ci_clustered,
    ci_lower,
    ci_upper,
    count,
    fixed_param_task,
    full_uncertainty,
    memevals_task,
    stderr_clustered,
    stderr_naive,
    to_dataset,
)
from memevals.inspect_tasks.judge import judge_runs_args, llm_judge, repeated_judging
from memevals.inspect_tasks.memory_system import memory_system, solver_chain
from memevals.inspect_tasks.official_judge import judge_officially, official_request
from memevals.inspect_tasks.retrieval import prompt_tokens

__all__ = [
    "JUDGE_MAX_TOKENS",
    "LME_METRICS",
    "abstention_accuracy",
    "abstention_uncertainty",
    "longmemeval",
    "longmemeval_judge",
    "longmemeval_retrieval",
    "overall_accuracy",
    "posthoc_scorers",
    "take_notes",
    "task_averaged_accuracy",
    "type_accuracy",
]

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


def _or_left_out(value: float | None) -> Value:
    # "no item to average" is left out (an empty mapping is no row), never NaN or a made-up 0
    return {} if value is None else value


@metric
def overall_accuracy() -> Metric:
    """Micro mean over all judged questions."""

    def compute(scores: list[SampleScore]) -> Value:
        return _or_left_out(_summary(scores).overall)

    return compute


@metric
def task_averaged_accuracy() -> Metric:
    """Unweighted mean of the per-type accuracies (the types present in the run)."""

    def compute(scores: list[SampleScore]) -> Value:
        return _or_left_out(_summary(scores).task_averaged)

    return compute


@metric
def abstention_accuracy() -> Metric:
    """Mean over the `_abs` questions (left out when the run has none)."""

    def compute(scores: list[SampleScore]) -> Value:
        return _or_left_out(_summary(scores).abstention)

    return compute


@metric
def type_accuracy() -> Metric:
    """Accuracy per question type (`_abs` items count in their type)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return dict(_summary(scores).per_type)

    return compute


@metric(name="abstention_wilson")
def abstention_uncertainty() -> Metric:
    """With `-T uncertainty=full`: the clustered Wilson interval of the abstention accuracy,
    `abstention_wilson_lower` / `_upper` (left out with fewer than two `_abs` questions)."""
    inner = cast(MetricProtocol, ci_clustered(wilson=True))

    def compute(scores: list[SampleScore]) -> Value:
        chosen = [s for s in scores if (s.sample_metadata or {}).get("abstention")]
        if not full_uncertainty(scores):
            return {}
        value = cast(Mapping[str, float], inner(chosen))
        return {f"abstention_wilson_{k.removeprefix('ci_')}": v for k, v in value.items()}

    return compute


#: Official aggregation plus uncertainty: every question is its own cluster (its own
#: haystack), so the clustered `stderr` equals the naive one (`stderr_naive`, with
#: `-T uncertainty=full`, as are the per-type `<type>_ci_lower`, ... and abstention Wilson
#: intervals); `ci_lower` / `ci_upper` are the overall accuracy's clustered Wilson interval.
LME_METRICS: list[Metric] = [
    overall_accuracy(),
    stderr_clustered(),
    ci_lower(wilson=True),
    ci_upper(wilson=True),
    stderr_naive(),
    task_averaged_accuracy(),
    abstention_accuracy(),
    abstention_uncertainty(),
    type_accuracy(),
    category_uncertainty(wilson=True),
    repeated_judging(),
]


#: The memevals judge's token limit (the official judge's is upstream's, in each sample).
JUDGE_MAX_TOKENS = 256


@scorer(metrics={"judge": LME_METRICS, "unscored": [count()], "unclear": [count()]})
def longmemeval_judge(
    max_tokens: int = JUDGE_MAX_TOKENS, retries: int = 1, judge_runs: int = 1
) -> Scorer:
    """The LLM judge with LongMemEval's aggregation: overall, per-type, task-averaged and
    abstention accuracy.

    A sample built under protocol=official (its metadata holds upstream's judge request) is
    judged by upstream's judge: its prompt for the question type (abstention for `_abs` ids),
    10 tokens, temperature 0, label yes when "yes" is in the lower-cased reply, and `unclear`
    counting the replies that are no clear yes or no. A protocol=memevals sample gets our
    criterion per question type with strict JSON verdicts (`unclear` is then 0)."""
    inner = llm_judge(max_tokens=max_tokens, retries=retries, **judge_runs_args(judge_runs))

    async def score(state: TaskState, target: Target) -> Score:
        request = official_request(state)
        if request is not None:
            if judge_runs != 1 or max_tokens != JUDGE_MAX_TOKENS:
                raise ValueError(
                    f"sample {state.sample_id}: protocol=official judges once with upstream's "
                    f"{request.max_tokens} tokens; judge_runs and judge_max_tokens apply to "
                    f"protocol=memevals: {protocol_fix('memevals', lm_eval=False)}"
                )
            return await judge_officially(state, request)
        result = await inner(state, target)
        if result is None:  # llm_judge always scores; keep the contract explicit
            raise RuntimeError(f"sample {state.sample_id}: the judge returned no score")
        assert isinstance(result.value, dict)
        return result.model_copy(update={"value": {**result.value, "unclear": 0}})

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
def take_notes(plans: Mapping[str, NotePlan], note_max_tokens: int = 500) -> Solver:
    """One call per session (or retrieved chunk) asks the model for notes relevant to the
    question; the notes then become the one user message the answer is generated from (the
    protocol's NotePlan: upstream's notes-for-history under official, our notes text then the
    question under memevals).

    `plans` maps each sample id to its note plan, built with the dataset.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        sid = str(state.sample_id)
        if sid not in plans:
            raise ValueError(f"sample {sid}: chain_of_note has no sessions for this sample")
        plan = plans[sid]
        model = get_model()
        config = GenerateConfig(max_tokens=note_max_tokens, temperature=plan.temperature)
        outputs = await asyncio.gather(
            *(model.generate([ChatMessageUser(content=p)], config=config) for p in plan.prompts)
        )
        notes = [o.completion for o in outputs]
        state.metadata["notes_kept"] = plan.kept(notes)
        state.metadata["notes_total"] = len(notes)
        state.messages = [ChatMessageUser(content=plan.compose(notes))]
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
    step_by_step: bool = False,
    max_tokens: int | None = None,
    note_max_tokens: int = 500,
    judge_max_tokens: int = JUDGE_MAX_TOKENS,
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
    protocol: str = "official",
    uncertainty: str = "default",
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
        step_by_step: upstream's step-by-step answer template (protocol=official only).
        max_tokens: answer length limit (default upstream's: 500, 800 with step_by_step).
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
        if value is not None and value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    runs_args = judge_runs_args(judge_runs)
    _check_official_judge(protocol, judge_runs, judge_max_tokens)
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
            protocol=protocol,
            step_by_step=step_by_step,
        )
    )

    if chain_of_note:
        solvers: list[Solver] = [take_notes(built.note_plans, note_max_tokens), generate()]
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
        # upstream's reader decodes at temperature 0
        config=GenerateConfig(
            max_tokens=built.log["answer_tokens"],
            temperature=0.0 if built.protocol == "official" else None,
        ),
        metadata=built.log,
    )


def _check_official_judge(protocol: str, judge_runs: int, judge_max_tokens: int) -> None:
    """Repeated judging and the judge's token limit belong to our judge: under
    protocol=official (upstream judges once, with 10 tokens) setting them is an error."""
    if protocol != "official":
        return
    for name, value, default in (
        ("judge_runs", judge_runs, 1),
        ("judge_max_tokens", judge_max_tokens, JUDGE_MAX_TOKENS),
    ):
        if value != default:
            raise ValueError(
                f"{name}={value}: protocol=official judges once with upstream's 10 tokens; "
                f"{name} applies to protocol=memevals: {protocol_fix('memevals', lm_eval=False)}"
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
