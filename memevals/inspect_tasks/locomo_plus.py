"""LoCoMo-Plus on Inspect: `locomo_plus` (2,387 samples) and `locomo_plus_cognitive` (401).

The LoCoMo questions keep their official F1 beside the judge so the two metric families can be
compared on the same replies; cognitive samples have no reference reply and are judged only.
With a memory system under test (`-T memory=<name>`) the LoCoMo questions also get LoCoMo's
retrieval scorers, the cognitive samples `cue_recall`, and every sample the `memory_system`
record (latency, items, ingestions).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, cast

from inspect_ai import Task
from inspect_ai.model import GenerateConfig
from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Score,
    Scorer,
    Target,
    Value,
    grouped,
    mean,
    metric,
    scorer,
)
from inspect_ai.solver import TaskState

from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.locomo_plus import samples
from memevals.benchmarks.locomo_plus.data import LOCOMO_PLUS_FILE, RELATION_TYPES
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE, parse_plus_categories
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import protocol_fix
from memevals.inspect_tasks.common import (
    category_uncertainty,
    count,
    fixed_param_task,
    memevals_task,
    stderr_clustered,
    to_dataset,
    uncertainty_metrics,
)
from memevals.inspect_tasks.judge import judge_runs_args, llm_judge, repeated_judging
from memevals.inspect_tasks.locomo import locomo_f1_scorer
from memevals.inspect_tasks.memory_system import memory_system, solver_chain
from memevals.inspect_tasks.official_judge import judge_officially, official_request
from memevals.inspect_tasks.retrieval import (
    evidence_recall,
    selected_k,
    turn_precision,
    turn_recall,
)

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TEMPERATURE",
    "EMPTY_REPLY",
    "JUDGE_MAX_TOKENS",
    "cue_recall",
    "locomo_plus",
    "locomo_plus_evidence_recall",
    "locomo_plus_f1",
    "locomo_plus_judge",
    "locomo_plus_selected_k",
    "locomo_plus_turn_precision",
    "locomo_plus_turn_recall",
    "posthoc_scorers",
    "relation_type_mean",
    "relation_type_uncertainty",
]

#: Official answering defaults of the LoCoMo-Plus framework
# (benchmarks/locomo_plus/README.md#protocol).
DEFAULT_MAX_TOKENS = 1024
DEFAULT_TEMPERATURE = 0.3
#: What LoCoMo-Plus's model call returns for an empty reply (and its judge then reads).
EMPTY_REPLY = "(empty)"


@metric(name="relation_type")
def relation_type_mean() -> Metric:
    """Mean per cognitive relation type (causal, state, goal, value); other samples are ignored.

    `grouped()` needs the key on every sample, and the LoCoMo questions have no relation type.
    """

    def compute(scores: list[SampleScore]) -> Value:
        groups: dict[str, list[float]] = defaultdict(list)
        for s in scores:
            relation = (s.sample_metadata or {}).get("relation_type")
            if relation is not None:
                groups[str(relation)].append(s.score.as_float())
        order = [r for r in RELATION_TYPES if r in groups] + sorted(
            r for r in groups if r not in RELATION_TYPES
        )
        return {r: sum(groups[r]) / len(groups[r]) for r in order}

    return compute


@metric(name="by_relation_type")
def relation_type_uncertainty() -> Metric:
    """With `-T uncertainty=full`, per cognitive relation type: `<relation>_stderr`
    (clustered by host conversation) and the clustered Wilson interval `<relation>_ci_lower` /
    `_ci_upper`; other samples ignored."""
    inner = cast(MetricProtocol, category_uncertainty(wilson=True, group_key="relation_type"))

    def compute(scores: list[SampleScore]) -> Value:
        cognitive = [s for s in scores if (s.sample_metadata or {}).get("relation_type")]
        return inner(cognitive) if cognitive else {}

    return compute


@scorer(metrics=uncertainty_metrics())
def locomo_plus_f1() -> Scorer:
    """Official LoCoMo F1 for the LoCoMo questions; cognitive samples get no F1 (no reference)."""
    inner = locomo_f1_scorer()

    async def score(state: TaskState, target: Target) -> Score | None:
        if state.metadata.get("category") == COGNITIVE:
            return None
        result: Score | None = await inner(state, target)
        return result

    return score


def _locomo_questions_only(inner: Scorer) -> Scorer:
    """`inner` on the LoCoMo questions; cognitive samples are left unscored (they have no
    evidence ids, and counting them as zero recall would pull LoCoMo's figures down)."""

    async def score(state: TaskState, target: Target) -> Score | None:
        if state.metadata.get("category") == COGNITIVE:
            return None
        result: Score | None = await inner(state, target)
        return result

    return score


@scorer(metrics=[mean(), stderr_clustered(), grouped(mean(), "category", all=False)])
def locomo_plus_evidence_recall() -> Scorer:
    """LoCoMo's official evidence recall, LoCoMo questions only (`retrieval.evidence_recall`)."""
    return _locomo_questions_only(evidence_recall())


@scorer(metrics=[mean(), stderr_clustered(), grouped(mean(), "category", all=False)])
def locomo_plus_turn_precision() -> Scorer:
    """HiGMem turn precision, LoCoMo questions only (`retrieval.turn_precision`)."""
    return _locomo_questions_only(turn_precision())


@scorer(metrics=[mean(), stderr_clustered(), grouped(mean(), "category", all=False)])
def locomo_plus_turn_recall() -> Scorer:
    """HiGMem turn recall, LoCoMo questions only (`retrieval.turn_recall`)."""
    return _locomo_questions_only(turn_recall())


@scorer(metrics=[mean(), stderr_clustered(), grouped(mean(), "category", all=False)])
def locomo_plus_selected_k() -> Scorer:
    """HiGMem K (distinct ids selected), LoCoMo questions only (`retrieval.selected_k`)."""
    return _locomo_questions_only(selected_k())


@scorer(metrics=[mean(), stderr_clustered(), relation_type_mean()])
def cue_recall() -> Scorer:
    """Cognitive samples: the share of the cue turns among the retrieved ids (the sample's
    `cue_recall`, from the turn ids its items cite), overall and per relation type; LoCoMo
    questions are left unscored."""

    async def score(state: TaskState, target: Target) -> Score | None:
        md = state.metadata
        if md.get("category") != COGNITIVE:
            return None
        if md.get("cue_recall") is None:
            raise ValueError(
                f"sample {state.sample_id}: no 'cue_recall' in the metadata; the memory_context "
                "solver did not run"
            )
        return Score(
            value=float(md["cue_recall"]),
            explanation=f"retrieved {md.get('retrieved_ids')}",
            metadata={"retrieved_ids": list(md.get("retrieved_ids") or [])},
        )

    return score


def _memory_scorers(wanted: list[str]) -> list[Scorer]:
    """The retrieval scorers of a memory system under test and its `memory_system` record."""
    out: list[Scorer] = []
    if wanted != [COGNITIVE]:
        out += [
            locomo_plus_evidence_recall(),
            locomo_plus_turn_precision(),
            locomo_plus_turn_recall(),
            locomo_plus_selected_k(),
        ]
    if COGNITIVE in wanted:
        out.append(cue_recall())
    return [*out, memory_system()]


#: The memevals judge's token limit (the official judge's is upstream's, in each sample).
JUDGE_MAX_TOKENS = 256


@scorer(
    metrics={
        "judge": [
            *uncertainty_metrics(wilson=True),
            relation_type_mean(),
            relation_type_uncertainty(),
            repeated_judging(),
        ],
        "unscored": [count()],
        "unclear": [count()],
    }
)
def locomo_plus_judge(max_tokens: int = JUDGE_MAX_TOKENS, judge_runs: int = 1) -> Scorer:
    """The judge, reported overall, per category and, for cognitive samples, per relation type.

    A sample built under protocol=official (its metadata holds upstream's judge request) is
    judged by LoCoMo-Plus's judge: its template for the sample's category around the stripped
    reply ("(empty)" for an empty one, as upstream's model call returns), 512 tokens at
    temperature 0, read by its label rule (correct 1, partial 0.5, else 0), with `unclear`
    counting the grader replies that were no clear verdict. A protocol=memevals sample gets the
    shared LLM judge (`llm_judge`): unreadable verdicts stay unscored and are counted."""
    inner = llm_judge(max_tokens=max_tokens, **judge_runs_args(judge_runs))

    async def score(state: TaskState, target: Target) -> Score | None:
        request = official_request(state)
        if request is not None:
            if judge_runs != 1 or max_tokens != JUDGE_MAX_TOKENS:
                raise ValueError(
                    f"sample {state.sample_id}: protocol=official judges once with upstream's "
                    f"{request.max_tokens} tokens; judge_runs and judge_max_tokens apply to "
                    f"protocol=memevals: {protocol_fix('memevals', lm_eval=False)}"
                )
            reply = state.output.completion.strip() or EMPTY_REPLY
            return await judge_officially(state, request, reply=reply)
        result: Score | None = await inner(state, target)
        if result is None or not isinstance(result.value, dict):
            return result
        return result.model_copy(update={"value": {**result.value, "unclear": 0}})

    return score


@memevals_task(option_values={"context": CONTEXT_MODES, "retrieval_unit": RETRIEVAL_UNITS})
def locomo_plus(
    categories: str | None = None,
    disclose_task: bool = False,
    gap_fix: bool = False,
    context: str = "full",
    max_context_tokens: int | None = None,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
    token_counter: str = "auto",
    adversarial: str = "choice",
    seed: int = 0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
    judge_max_tokens: int = JUDGE_MAX_TOKENS,
    judge_runs: int = 1,
    sample_order: str = "file",
    data_dir: str | None = None,
    gold: str = "original",
    memory: str | None = None,
    memory_args: str | dict[str, Any] | None = None,
    memory_cache: bool | None = None,
    memory_answers: bool | None = None,
    protocol: str = "official",
    uncertainty: str = "default",
) -> Task:
    """LoCoMo-Plus: LoCoMo's 1,986 questions plus 401 cognitive cue-trigger samples, LLM-judged
    (grader model role), with official F1 beside the judge for the LoCoMo questions.

    Args:
        categories: comma-separated subset of single_hop, multi_hop, temporal, open_domain,
            adversarial, cognitive; default all six.
        disclose_task: false (default) = the unified input, one instruction for every category;
            true = category-specific instructions (LoCoMo's short-answer, date-hint and
            two-option forms; an explicit memory instruction for cognitive samples).
        gap_fix: read vague gaps ("several months later") as numbers instead of the official
            0 days; moves 15 cues. Off by default for parity.
        adversarial: with disclose_task, "choice" (two options, seeded order) or "open".
        seed: seed of the two-option order.
        max_tokens: answer length limit (official default 1024).
        sample_order: file (default: LoCoMo questions, then plus-0, plus-1, ...) or host (each
            conversation's questions, then the cognitive samples stitched into it: more of
            each prompt is shared with the previous one, for provider prompt caches).
        data_dir: folder holding locomo/locomo10.json and locomo_plus/locomo_plus.json
            (overrides MEMEVALS_DATA_DIR).
        gold: the LoCoMo questions' gold: original (default) or audited (locomo-audit's
            corrections).
    """
    # The memory knobs are this task's parameters of the same names.
    memory_options = MemoryOptions.from_mapping(locals())
    wanted = parse_plus_categories(categories)
    runs_args = judge_runs_args(judge_runs)
    items, memory_log, subject = samples.build(
        samples.LocomoPlusOptions(
            categories=categories,
            disclose_task=disclose_task,
            gap_fix=gap_fix,
            sample_order=sample_order,
            adversarial=adversarial,
            seed=seed,
            data_dir=data_dir,
            memory=memory_options,
            gold=gold,
            protocol=protocol,
        )
    )
    # The judge is the headline, so it is the first score on Inspect's screen and in the log.
    scorers: list[Scorer] = [locomo_plus_judge(max_tokens=judge_max_tokens, **runs_args)]
    if wanted != [COGNITIVE]:  # LoCoMo questions get their official F1
        scorers.append(locomo_plus_f1())
    if subject is not None:
        scorers += _memory_scorers(wanted)
    return Task(
        dataset=to_dataset(items, "locomo_plus"),
        solver=solver_chain(subject),
        scorer=scorers,
        config=GenerateConfig(max_tokens=max_tokens, temperature=DEFAULT_TEMPERATURE),
        metadata={
            "benchmark": "locomo_plus",
            "protocol": protocol,
            "categories": wanted,
            "disclose_task": disclose_task,
            "gap_fix": gap_fix,
            "adversarial": adversarial,
            "seed": seed,
            "sample_order": sample_order,
            "memory": memory_log,
            "gold": gold,
            "gold_ceilings": memory_log["gold"]["gold_ceilings"],
            "data_sha256": {
                "locomo": LOCOMO_FILE.sha256,
                "locomo_plus": LOCOMO_PLUS_FILE.sha256,
            },
        },
    )


locomo_plus_cognitive = fixed_param_task(
    locomo_plus,
    "locomo_plus_cognitive",
    {"categories": COGNITIVE},
    "LoCoMo-Plus cognitive samples only (401 cue-trigger pairs), LLM-judged.",
)

__all_tasks__ = ["locomo_plus", "locomo_plus_cognitive"]


def posthoc_scorers(
    metadata: list[dict[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorers `python -m memevals.tools.judge` gives logged LoCoMo-Plus replies: F1 when
    any LoCoMo question is among them (cognitive samples have no reference), and the judge.

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the judge's token limit (None: the scorer's default).
        judge_runs: how many times each reply is judged.

    Returns:
        The scorers.
    """
    limit = {} if max_tokens is None else {"max_tokens": max_tokens}
    # The judge first, as the task orders them.
    scorers: list[Scorer] = [locomo_plus_judge(**limit, **judge_runs_args(judge_runs))]
    if any(md.get("category") != COGNITIVE for md in metadata):
        scorers.append(locomo_plus_f1())
    return scorers
