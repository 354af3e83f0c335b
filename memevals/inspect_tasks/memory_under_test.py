"""Inspect glue of a memory system under test (`-T memory=<name>`, docs/memory_systems.md).

- `memory_context(subject)`: the solver that gives each sample its context. It ingests the
  sample's history once (the harness's disk cache and per-history lock; other samples of the
  history wait for it) and retrieves for the question, both in a worker thread so the event
  loop keeps running other samples. A system that needs a model gets the model role `memory`
  (falling back to the model under test), called back on the event loop. Any failure raises,
  so the sample is an error with the system's message (Inspect's retry path applies), never
  an empty context scored as a wrong answer. A system that returns no items has answered: the
  sample goes on with the benchmark's no-context rendering and is scored, its metadata saying
  `memory_returned` 0 and `memory_items` 0.
- `memory_system()`: the scorer that records, per sample, the retrieval latency, the items
  returned, kept and cut, the context tokens and the history's ingestion record, and reports
  the latency percentiles, means and the ingestion totals (each history counted once).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import anyio
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.core.memory_harness import (
    CONTEXT_TOKENS_KEY,
    CUT_KEY,
    INGEST_KEY,
    ITEMS_KEY,
    LATENCY_KEY,
    RETURNED_KEY,
    MemorySubject,
    ingest_totals,
    latency_percentiles,
)
from memevals.core.memory_system import MemorySystemError, ModelReply
from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.metrics import named_metric

__all__ = [
    "MEMORY_ROLE",
    "InspectTextModel",
    "items_cut",
    "mean_context_tokens",
    "mean_items",
    "memory_answer",
    "memory_context",
    "memory_system",
    "solver_chain",
]

logger = logging.getLogger(__name__)

#: The model role of a memory system's own LLM calls (observations, summaries).
MEMORY_ROLE = "memory"


class InspectTextModel:
    """An Inspect model as the protocol's `TextModel`, callable from the ingestion thread."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.model_name = str(model)

    def __call__(self, system: str, user: str) -> ModelReply:
        return anyio.from_thread.run(self._generate, system, user)

    async def _generate(self, system: str, user: str) -> ModelReply:
        messages: list[ChatMessage] = [
            ChatMessageSystem(content=system),
            ChatMessageUser(content=user),
        ]
        output = await self.model.generate(messages)
        if output.error:
            raise RuntimeError(f"memory model {self.model_name}: {output.error}")
        usage = output.usage
        return ModelReply(
            output.completion,
            usage.input_tokens if usage else None,
            usage.output_tokens if usage else None,
        )


def solver_chain(subject: MemorySubject | None) -> list[Solver]:
    """`generate()` alone, or after `memory_context` when a memory system gives the context;
    with `memory_answers` the system's own `answer()` replaces the model's reply."""
    from inspect_ai.solver import generate

    if subject is None:
        return [generate()]
    if subject.answers:
        return [memory_context(subject), memory_answer(subject)]
    return [memory_context(subject), generate()]


def _memory_model(subject: MemorySubject) -> InspectTextModel | None:
    return InspectTextModel(get_model(role=MEMORY_ROLE)) if subject.run.uses_model else None


def _item(state: TaskState) -> PromptItem:
    return PromptItem(
        id=str(state.sample_id),
        system="",
        user=state.user_prompt.text,
        target="",
        metadata=dict(state.metadata),
    )


def _one_line(exc: MemorySystemError) -> MemorySystemError:
    """The sample's error: the message alone (it names the system, the history and the cause),
    no chained traceback on the screen; the traceback goes to the log (the sample's transcript,
    at info level)."""
    logger.info("memory system failure: the traceback", exc_info=exc)
    return MemorySystemError(str(exc))


@solver
def memory_answer(subject: MemorySubject) -> Solver:
    """The system answers the question by itself; its answer is the sample's output (model
    `memory/<system>`), scored like any reply."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        try:
            text = await anyio.to_thread.run_sync(
                subject.answer, _item(state), _memory_model(subject)
            )
        except MemorySystemError as exc:
            raise _one_line(exc) from None
        name = f"memory/{subject.run.system.name}"
        state.output = ModelOutput.from_content(model=name, content=text)
        state.messages.append(ChatMessageAssistant(content=text, model=name))
        return state

    return solve


@solver
def memory_context(subject: MemorySubject) -> Solver:
    """Give the sample the context its memory system retrieves (see the module docstring)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        item = _item(state)
        try:
            filled = await anyio.to_thread.run_sync(subject.fill, item, _memory_model(subject))
        except MemorySystemError as exc:
            raise _one_line(exc) from None
        if filled.user != item.user:  # the benchmark sends context and question as one message
            state.user_prompt.text = filled.user
        if filled.system:
            state.messages.insert(0, ChatMessageSystem(content=filled.system))
        state.metadata.update(filled.metadata)
        return state

    return solve


# --------------------------------------------------------------------------------------------
# Metrics


def _recorded(scores: list[SampleScore], key: str) -> list[Any]:
    return [s.score.metadata[key] for s in scores if s.score.metadata and key in s.score.metadata]


def _mean_recorded(scores: list[SampleScore], key: str) -> float:
    values = [float(v) for v in _recorded(scores, key)]
    return sum(values) / len(values) if values else float("nan")


def _latency_metric(percentile: int) -> Callable[[], Metric]:
    name = f"latency_p{percentile}_s"

    def factory() -> Metric:
        def compute(scores: list[SampleScore]) -> float:
            return latency_percentiles([float(v) for v in _recorded(scores, LATENCY_KEY)])[name]

        return compute

    factory.__name__ = name
    factory.__doc__ = f"The {percentile}th percentile of the retrieval latency (seconds)."
    return metric(name=name)(factory)


latency_p50_s = _latency_metric(50)
latency_p95_s = _latency_metric(95)
latency_p99_s = _latency_metric(99)


@metric
def mean_items() -> Metric:
    """Mean number of items given to the model (after the cut to k)."""

    def compute(scores: list[SampleScore]) -> float:
        return _mean_recorded(scores, ITEMS_KEY)

    return compute


@metric
def items_cut() -> Metric:
    """Items returned beyond k and cut, summed (0 for a system that honours k)."""

    def compute(scores: list[SampleScore]) -> float:
        return float(sum(int(v) for v in _recorded(scores, CUT_KEY)))

    return compute


@metric
def mean_context_tokens() -> Metric:
    """Mean size of the rendered context (the token counter of the prompt sizes)."""

    def compute(scores: list[SampleScore]) -> float:
        return _mean_recorded(scores, CONTEXT_TOKENS_KEY)

    return compute


def _ingest_metric(field: str) -> Callable[[], Metric]:
    def compute(scores: list[SampleScore]) -> float:
        return float(ingest_totals(_recorded(scores, INGEST_KEY))[field])

    doc = f"Ingestion total {field!r} over the distinct histories of the run."
    return named_metric(field, doc, compute)


ingestions = _ingest_metric("ingestions")
cache_hits = _ingest_metric("cache_hits")
build_seconds = _ingest_metric("build_seconds")
build_model_calls = _ingest_metric("build_model_calls")
build_input_tokens = _ingest_metric("build_input_tokens")
build_output_tokens = _ingest_metric("build_output_tokens")
open_seconds = _ingest_metric("open_seconds")


@functools.cache
def _memory_metrics() -> list[Metric]:
    return [
        latency_p50_s(),
        latency_p95_s(),
        latency_p99_s(),
        mean_items(),
        items_cut(),
        mean_context_tokens(),
        ingestions(),
        cache_hits(),
        build_seconds(),
        build_model_calls(),
        build_input_tokens(),
        build_output_tokens(),
        open_seconds(),
    ]


@scorer(metrics=_memory_metrics())
def memory_system() -> Scorer:
    """Per sample: the retrieval latency (the value), items returned, kept and cut, context
    tokens and the ingestion record of its history (Score.metadata); the metrics aggregate
    them."""

    async def score(state: TaskState, target: Target) -> Score:
        md = state.metadata
        if LATENCY_KEY not in md:
            raise ValueError(
                f"sample {state.sample_id}: no memory record; the memory_context solver did not run"
            )
        keys = (LATENCY_KEY, ITEMS_KEY, RETURNED_KEY, CUT_KEY, CONTEXT_TOKENS_KEY, INGEST_KEY)
        return Score(value=float(md[LATENCY_KEY]), metadata={k: md[k] for k in keys})

    return score
