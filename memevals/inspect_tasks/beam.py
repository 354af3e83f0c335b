"""BEAM on Inspect: `beam` (-T size=100K|500K|1M|10M) and one task per ability, each answer
judged item by item against its question's rubric, with upstream's report (per-ability means
over conversations and their mean) and conversation-clustered errors."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import TaskState

from memevals.benchmarks.beam.data import ABILITIES
from memevals.benchmarks.beam.memory import CONTEXT_MODES, RETRIEVAL_UNITS
from memevals.benchmarks.beam.official import OfficialTexts, equivalent, official_texts
from memevals.benchmarks.beam.prompts import (
    EQUIVALENCE_SYSTEM,
    equivalence_user,
    judge_prompt,
    judge_repair,
    memevals_equivalent,
)
from memevals.benchmarks.beam.record import RECORD
from memevals.benchmarks.beam.samples import (
    MEMEVALS_JUDGE_MAX_TOKENS,
    BeamOptions,
    Decoding,
    build,
    decoding,
    upstream_dir,
)
from memevals.benchmarks.beam.scoring import (
    EVENT_ORDERING,
    BeamRow,
    EventOrderScore,
    align,
    beam_event_order,
    memevals_lines,
    memevals_reply_score,
    official_item_score,
    official_lines,
    official_reply_score,
    question_score,
    summarize,
)
from memevals.core.memory_options import MemoryOptions
from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.common import count, fixed_param_task, memevals_task, stderr_clustered
from memevals.inspect_tasks.judge import grader_model
from memevals.inspect_tasks.memory_system import memory_system, solver_chain
from memevals.inspect_tasks.retrieval import prompt_tokens

__all__ = ["beam", "beam_judge", "posthoc_scorers", "to_beam_sample"]


# ---------------------------------------------------------------------------------------------
# Samples


def to_beam_sample(item: PromptItem) -> Sample:
    """A sample's messages: the system text (if any), the replayed chat, then the question."""
    messages: list[ChatMessage] = []
    if item.system:
        messages.append(ChatMessageSystem(content=item.system))
    for role, content in item.messages:
        if role == "assistant":
            messages.append(ChatMessageAssistant(content=content))
        else:
            messages.append(ChatMessageUser(content=content))
    messages.append(ChatMessageUser(content=item.user))
    return Sample(id=item.id, input=messages, target=item.target, metadata=dict(item.metadata))


def _dataset(items: Sequence[PromptItem], name: str) -> MemoryDataset:
    return MemoryDataset([to_beam_sample(i) for i in items], name=name, shuffled=False)


# ---------------------------------------------------------------------------------------------
# Metrics (upstream's report, memevals.benchmarks.beam.scoring)


def _value(s: SampleScore) -> float | None:
    try:
        value = s.score.as_float()
    except (TypeError, ValueError):
        return None
    return None if math.isnan(value) else value


def _rows(scores: list[SampleScore]) -> list[BeamRow]:
    rows = []
    for s in scores:
        md = s.sample_metadata or {}
        if "conversation" not in md or "category" not in md:
            raise ValueError(
                f"sample {s.sample_id}: BEAM metrics need metadata 'conversation' and 'category'"
            )
        rows.append(BeamRow(str(md["conversation"]), str(md["category"]), _value(s)))
    return rows


@metric
def overall() -> Metric:
    """Upstream's overall figure: the mean of the ability means (NaN when nothing is scored)."""

    def compute(scores: list[SampleScore]) -> float:
        value = summarize(_rows(scores)).overall
        return math.nan if value is None else value

    return compute


@metric(name="by_ability")
def ability_means() -> Metric:
    """Per ability, the mean over conversations of each conversation's mean (bare ability
    names; event ordering reports tau_norm, as upstream's report does)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        return dict(summarize(_rows(scores)).per_ability)

    return compute


@metric(name="event_ordering")
def event_ordering_figures() -> Metric:
    """Event ordering's other figures, means over its scored questions: `event_ordering_f1`,
    `event_ordering_final_score` (tau_norm × F1) and `event_ordering_rubric` (its rubric
    score, which upstream computes but does not report). Nothing without such questions."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        found = [
            s.score.metadata["event_order"]
            for s in scores
            if s.score.metadata and s.score.metadata.get("event_order") and _value(s) is not None
        ]
        if not found:
            return {}
        n = len(found)
        return {
            "event_ordering_f1": sum(float(f["f1"]) for f in found) / n,
            "event_ordering_final_score": sum(float(f["final_score"]) for f in found) / n,
            "event_ordering_rubric": sum(float(f["rubric_score"]) for f in found) / n,
        }

    return compute


#: Upstream's report (overall, per ability) with the conversation-clustered error of the
#: question scores: twelve rows, one screen. Inspect leaves unscored (NaN) questions out of
#: every metric. The interval (`ci_clustered`) and event ordering's other figures
#: (`event_ordering_figures`, from each score's `event_order` metadata) are metrics a scorer of
#: one's own may add; memevals-compare computes the interval from the samples.
BEAM_METRICS: list[Metric] = [
    overall(),
    stderr_clustered(),
    ability_means(),
]


# ---------------------------------------------------------------------------------------------
# The judge


async def _ask(grader: Model, messages: list[ChatMessage], config: GenerateConfig) -> str:
    output = await grader.generate(messages, config=config)
    if output.error:
        raise RuntimeError(f"grader {grader}: {output.error}")
    return output.completion


async def _official_item(
    grader: Model, texts: OfficialTexts, ability: str, item: str, reply: str, config: GenerateConfig
) -> tuple[float | None, list[str]]:
    """One rubric item under upstream's rule: one call, read as upstream reads it."""
    answer = await _ask(grader, [ChatMessageUser(content=texts.judge_prompt(item, reply))], config)
    return official_item_score(official_reply_score(answer), ability), [answer]


async def _memevals_item(
    grader: Model, question: str, item: str, reply: str, config: GenerateConfig, retries: int
) -> tuple[float | None, list[str]]:
    """One rubric item under the memevals judge: strict JSON, asked again when unreadable."""
    messages: list[ChatMessage] = [ChatMessageUser(content=judge_prompt(question, item, reply))]
    answers: list[str] = []
    for _ in range(1 + retries):
        answer = await _ask(grader, messages, config)
        answers.append(answer)
        value = memevals_reply_score(answer)
        if value is not None:
            return value, answers
        messages = [
            *messages,
            ChatMessageAssistant(content=answer),
            ChatMessageUser(content=judge_repair()),
        ]
    return None, answers


async def _event_order(
    grader: Model, texts: OfficialTexts | None, rubric: list[str], reply: str, sent: Decoding
) -> tuple[EventOrderScore, int]:
    """Upstream's alignment then `beam_event_order`; returns the score and the calls made."""
    config = GenerateConfig(temperature=sent.temperature, max_tokens=sent.equivalence_max_tokens)
    calls = 0

    async def same(reference_item: str, response_item: str) -> bool:
        nonlocal calls
        calls += 1
        if texts is not None:
            system, user = texts.equivalence_messages(reference_item, response_item)
            read = equivalent
        else:
            system, user = EQUIVALENCE_SYSTEM, equivalence_user(reference_item, response_item)
            read = memevals_equivalent
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=system),
            ChatMessageUser(content=user),
        ]
        return read(await _ask(grader, messages, config))

    lines = official_lines(reply) if texts is not None else memevals_lines(reply)
    if not lines:  # memevals: an answer without items finds nothing, in no order
        return EventOrderScore(0.0, 0.0, 0.0, 0.0, 0.0), 0
    aligned = await align(rubric, lines, same)
    return beam_event_order(rubric, aligned), calls


@scorer(metrics={"beam": BEAM_METRICS, "unscored": [count()]})
def beam_judge(
    max_tokens: int | None = None, retries: int = 1, data_dir: str | None = None
) -> Scorer:
    """Each rubric item judged by the grader (`--model-role grader=...`) as 1, 0.5 or 0, the
    question's score the mean over its items; event ordering's reported score is upstream's
    tau_norm after aligning the answer's lines to the rubric. Under `protocol=official`
    upstream's prompts and reading (an item's 0.5 counts as 0 outside event ordering); under
    `memevals` our prompt with the question, strict JSON, one retry. A question with an
    unreadable item is unscored (value NaN under `beam`, counted by `unscored`). Each call's
    temperature and token limit are the sample's protocol's (memevals.benchmarks.beam.samples
    .decoding): under official no limit is sent, as upstream sends none.

    Args:
        max_tokens: the grader's token limit per rubric item (None: the protocol's; memevals
            only).
        retries: memevals protocol: asks again after an unreadable reply.
        data_dir: where upstream's copies are (default MEMEVALS_DATA_DIR, else the cache).
    """

    async def score(state: TaskState, target: Target) -> Score:
        md = state.metadata
        reply = state.output.completion
        protocol = str(md["protocol"])
        ability = str(md["category"])
        rubric = [str(r) for r in md["rubric"]]
        grader, fallback = grader_model()
        texts = official_texts(data_dir) if protocol == "official" else None
        sent = decoding(protocol, judge_max_tokens=max_tokens)
        config = GenerateConfig(temperature=sent.temperature, max_tokens=sent.judge_max_tokens)
        if texts is not None:
            judged = await asyncio.gather(
                *(_official_item(grader, texts, ability, r, reply, config) for r in rubric)
            )
        else:
            question = str(md["question"])
            judged = await asyncio.gather(
                *(_memevals_item(grader, question, r, reply, config, retries) for r in rubric)
            )
        items = [value for value, _ in judged]
        rubric_score = question_score(items)
        metadata: dict[str, Any] = {
            "protocol": protocol,
            "item_scores": items,
            "grader_replies": [answers for _, answers in judged],
            "rubric_score": rubric_score,
            "grader": str(grader),
            "grader_fallback": fallback,
        }
        reported = rubric_score
        if ability == EVENT_ORDERING and rubric_score is not None:
            order, calls = await _event_order(grader, texts, rubric, reply, sent)
            metadata["event_order"] = {**order.as_dict(), "rubric_score": rubric_score}
            metadata["equivalence_calls"] = calls
            reported = order.tau_norm
        unscored = reported is None or math.isnan(reported)
        return Score(
            value={"beam": math.nan if reported is None else reported, "unscored": int(unscored)},
            answer=reply,
            explanation=_explain(rubric, items, ability, reported),
            metadata=metadata,
        )

    return score


def _explain(
    rubric: list[str], items: list[float | None], ability: str, reported: float | None
) -> str:
    lines = [f"{'?' if v is None else v:>4} {r}" for r, v in zip(rubric, items, strict=True)]
    head = "tau_norm" if ability == EVENT_ORDERING else "rubric score"
    return f"{head}: {reported}\n" + "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Tasks


@memevals_task(option_values={"context": CONTEXT_MODES, "retrieval_unit": RETRIEVAL_UNITS})
def beam(
    size: str = "100K",
    categories: str | None = None,
    protocol: str = "official",
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
    verify_checksum: bool = True,
    memory: str | None = None,
    memory_args: str | dict[str, Any] | None = None,
    memory_cache: bool | None = None,
    memory_answers: bool | None = None,
) -> Task:
    """BEAM (100 conversations of 100K to 10M tokens, 2,000 probing questions over ten
    abilities), each answer judged against its rubric by the grader (`--model-role grader=`).

    Args:
        size: 100K (default; 20 conversations), 500K (35), 1M (35) or 10M (10).
        categories: comma-separated abilities (abstention, contradiction_resolution,
            event_ordering, information_extraction, instruction_following, knowledge_update,
            multi_session_reasoning, preference_following, summarization, temporal_reasoning);
            default all ten.
        context_window: context=full only: the reader's window upstream's pruning is computed
            for (default 1000000, upstream's default).
        max_tokens: answer length limit (default: none under protocol=official, as upstream
            sends none; 2048 under memevals).
        data_dir: folder holding beam/chats/... (and optionally upstream/BEAM/...); overrides
            MEMEVALS_DATA_DIR.
        verify_checksum: check every file's git blob id (false: read a same-schema copy under
            data_dir as found, e.g. a synthetic fixture).
    """
    built = build(
        BeamOptions(
            size=size,
            categories=categories,
            protocol=protocol,
            memory=MemoryOptions.from_mapping(locals()),
            context_window=context_window,
            data_dir=data_dir,
            verify_checksum=verify_checksum,
            max_tokens=max_tokens,
            judge_max_tokens=judge_max_tokens,
        )
    )
    sent = built.decoding
    judge = beam_judge(max_tokens=sent.judge_max_tokens, data_dir=upstream_dir(data_dir))
    scorers = [judge, prompt_tokens()]
    if built.subject is not None:
        scorers.append(memory_system())
    return Task(
        dataset=_dataset(built.items, f"beam_{built.log['size']}"),
        solver=solver_chain(built.subject),
        scorer=scorers,
        config=GenerateConfig(temperature=sent.temperature, max_tokens=sent.max_tokens),
        metadata=built.log,
        version=RECORD.version,
    )


def posthoc_scorers(
    metadata: Sequence[Mapping[str, Any]], max_tokens: int | None, judge_runs: int
) -> list[Scorer]:
    """The scorer `python -m memevals.tools.judge` gives logged BEAM replies: the rubric judge
    with upstream's report, as the task scores them (each sample's protocol in its metadata).

    Args:
        metadata: the logged samples' metadata.
        max_tokens: the grader's token limit per rubric item (None: each sample's protocol's;
            refused for protocol=official samples, whose grader sends none).
        judge_runs: how many times each reply is judged (BEAM judges once).

    Returns:
        The scorers.
    """
    if judge_runs != 1:
        raise ValueError(
            f"judge_runs={judge_runs}: BEAM judges each rubric item once, as upstream does"
        )
    protocols = {str(md.get("protocol")) for md in metadata}
    if max_tokens is not None and "official" in protocols:
        raise ValueError(
            f"judge max_tokens {max_tokens}: these samples were built under protocol=official, "
            "whose grader sends no token limit (as upstream's does); leave the limit out"
        )
    return [beam_judge(max_tokens=max_tokens)]


def _ability_doc(name: str) -> str:
    return (
        f"BEAM, {name.replace('_', ' ')} questions only; -T size=100K|500K|1M|10M, rubric-judged."
    )


beam_abstention = fixed_param_task(
    beam, "beam_abstention", {"categories": "abstention"}, _ability_doc("abstention")
)
beam_contradiction_resolution = fixed_param_task(
    beam,
    "beam_contradiction_resolution",
    {"categories": "contradiction_resolution"},
    _ability_doc("contradiction_resolution"),
)
beam_event_ordering = fixed_param_task(
    beam, "beam_event_ordering", {"categories": "event_ordering"}, _ability_doc("event_ordering")
)
beam_information_extraction = fixed_param_task(
    beam,
    "beam_information_extraction",
    {"categories": "information_extraction"},
    _ability_doc("information_extraction"),
)
beam_instruction_following = fixed_param_task(
    beam,
    "beam_instruction_following",
    {"categories": "instruction_following"},
    _ability_doc("instruction_following"),
)
beam_knowledge_update = fixed_param_task(
    beam,
    "beam_knowledge_update",
    {"categories": "knowledge_update"},
    _ability_doc("knowledge_update"),
)
beam_multi_session_reasoning = fixed_param_task(
    beam,
    "beam_multi_session_reasoning",
    {"categories": "multi_session_reasoning"},
    _ability_doc("multi_session_reasoning"),
)
beam_preference_following = fixed_param_task(
    beam,
    "beam_preference_following",
    {"categories": "preference_following"},
    _ability_doc("preference_following"),
)
beam_summarization = fixed_param_task(
    beam, "beam_summarization", {"categories": "summarization"}, _ability_doc("summarization")
)
beam_temporal_reasoning = fixed_param_task(
    beam,
    "beam_temporal_reasoning",
    {"categories": "temporal_reasoning"},
    _ability_doc("temporal_reasoning"),
)

__all_tasks__ = ["beam"] + [f"beam_{a}" for a in ABILITIES]
