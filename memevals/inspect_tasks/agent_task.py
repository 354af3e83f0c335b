"""`-T context=agent` on Inspect (docs/agent_memory.md): the model under test keeps its own memory
of each history and answers from it. A thin module calls, in order:

    agent = agent_mode.options_of(locals())            # None unless context=agent
    options = options_from(_O, agent_mode.host_values(locals()), where=...)
    build, subject = agent_mode.split(samples.build(options), agent)
    ... its scorers of `build`, its task from `build` ...
    return agent_mode.agent_task(task, subject, agent, cache=...)

The task's solver becomes `agent_answer`: the sample's history is written once (the write pass,
memevals.inspect_tasks.agent_solver; one writer per history while its other questions wait,
kept in the disk cache), then a fresh agent answers from the stored memory and the benchmark's
unchanged scorers score its reply. `agent_write` logs per sample what the write pass cost and
kept, and the answer pass's tool calls.
"""

from __future__ import annotations

import dataclasses
import functools
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio
from inspect_ai import Task
from inspect_ai.model import GenerateConfig, Model, get_model
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from memevals.core.agent_memory import (
    AGENT_KEY,
    NOTE_SHARE,
    AgentCache,
    AgentOptions,
    StoredMemory,
    WriteRecord,
    agent_options,
    answer_prompt,
    cache_key,
    host_values,
    session_texts,
    write_estimate,
)
from memevals.core.build import Build
from memevals.core.memory_harness import RESULT_CHARS, MemorySubject
from memevals.core.memory_system import MemorySystemError
from memevals.core.options import AGENT_CONTEXT
from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.agent_solver import (
    answer_pass,
    check_tool_calls,
    dump_messages,
    load_messages,
    write_pass,
)
from memevals.inspect_tasks.metrics import named_metric

__all__ = [
    "AgentPlan",
    "agent_answer",
    "agent_task",
    "agent_write",
    "host_values",
    "option_values",
    "options_of",
    "split",
    "write_estimates",
]

options_of = agent_options


def option_values(
    context_modes: tuple[str, ...], units: tuple[str, ...] | None = None
) -> dict[str, tuple[str, ...]]:
    """A benchmark's allowed values of the shared options, `context=agent` among its modes.

    Args:
        context_modes: its context modes.
        units: its retrieval units (None: it names none).

    Returns:
        The `option_values` of its `memevals_task`.
    """
    out = {"context": (*context_modes, AGENT_CONTEXT)}
    return out if units is None else {**out, "retrieval_unit": units}


def split(build: Build, agent: AgentOptions | None) -> tuple[Build, MemorySubject | None]:
    """The build as its scorers and task see it (no memory system: the agent gives the
    context) and the binding of its questions to their histories (None unless agent).

    Args:
        build: the benchmark's build.
        agent: the agent options (None: another context mode, the build as it is).

    Returns:
        (the build, its memory binding).
    """
    if agent is None:
        return build, None
    if build.subject is None:
        raise ValueError(
            f"context={AGENT_CONTEXT}: the benchmark bound no history to its questions"
        )
    return dataclasses.replace(build, subject=None), build.subject


class AgentPlan:
    """The write passes of one task: per history, one writer while its other questions wait,
    the result kept in memory for this run and on disk for the next."""

    def __init__(self, subject: MemorySubject, options: AgentOptions, cache: AgentCache) -> None:
        self.subject = subject
        self.options = options
        self.cache = cache
        self._locks: dict[str, anyio.Lock] = {}
        self._done: dict[str, StoredMemory] = {}
        self._failed: dict[str, MemorySystemError] = {}
        self._checked: set[str] = set()

    def key(self, item: PromptItem, model: Model) -> str:
        """The cache key of `item`'s history under `model`."""
        _, history = self.subject.asked(item)
        generation = model.config.model_dump(exclude_none=True)
        return cache_key(str(model), generation, self.options, history)

    async def memory_for(self, item: PromptItem, model: Model) -> StoredMemory:
        """The stored write pass of `item`'s history: this run's, the cache's, or written now
        (MemorySystemError for every question of a history whose write pass failed)."""
        key = self.key(item, model)
        lock = self._locks.setdefault(key, anyio.Lock())
        async with lock:
            if key in self._failed:
                raise self._failed[key]
            if key in self._done:
                return self._done[key]
            stored = self.cache.load(key)
            if stored is None:
                try:
                    stored = await self._write(item, model, key)
                except MemorySystemError as exc:
                    self._failed[key] = exc
                    raise
            self._done[key] = stored
            return stored

    async def _write(self, item: PromptItem, model: Model, key: str) -> StoredMemory:
        _, history = self.subject.asked(item)
        if self.options.needs_tools and str(model) not in self._checked:
            await check_tool_calls(model, self.options)
            self._checked.add(str(model))
        record = WriteRecord(history.history_id, key)
        config = GenerateConfig(max_tokens=self.options.write_tokens)
        sessions = session_texts(self.subject, item)
        files, messages = await write_pass(model, sessions, self.options, record, config)
        if self.options.needs_tools and not any(files.values()):
            where = "with the MCP server" if self.options.memory == "mcp" else "under /memories"
            raise MemorySystemError(
                f"agent memory: the write pass of {history.history_id} stored nothing (model "
                f"{model} wrote nothing {where} in {len(sessions)} sessions)"
            )
        if self.options.compacts and not messages:
            raise MemorySystemError(
                f"agent memory: the write pass of {history.history_id} kept no message"
            )
        return self.cache.save(key, files, dump_messages(messages), record)


def _item(state: TaskState) -> PromptItem:
    return PromptItem(
        id=str(state.sample_id),
        system="",
        user=state.user_prompt.text,
        target="",
        metadata=dict(state.metadata),
    )


#: How a sample logs a compaction's stored context, beside the `/memories` files.
CONTEXT_ENTRY = "messages.json"


def _logged_memory(stored: StoredMemory) -> list[dict[str, Any]]:
    """The stored memory as a sample logs it (and the report's question view shows it): each
    `/memories` file, then a compaction's stored context (`messages.json`: one `role: text`
    paragraph per message, with the message count), each cut to RESULT_CHARS, with its
    length."""
    rows: list[dict[str, Any]] = [
        {"path": path, "text": text[:RESULT_CHARS], "chars": len(text)}
        for path, text in sorted(stored.files.items())
    ]
    if stored.messages:
        messages = load_messages(stored.messages)
        text = "\n\n".join(f"{m.role}: {m.text}" for m in messages)
        rows.append(
            {
                "path": CONTEXT_ENTRY,
                "text": text[:RESULT_CHARS],
                "chars": len(text),
                "messages": len(messages),
            }
        )
    return rows


@solver
def agent_answer(plan: AgentPlan) -> Solver:
    """The history's write pass (once), then the answer pass of the sample's question."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        item = _item(state)
        stored = await plan.memory_for(item, get_model())
        system, user, _ = answer_prompt(plan.subject, item)
        counter = plan.subject.counter
        state, calls = await answer_pass(state, generate, (system, user), stored, plan.options)
        stored_texts = [m.text for m in load_messages(stored.messages)]
        sent = [system, user, *stored_texts]
        state.metadata["prompt_tokens"] = sum(counter(t) for t in sent if t)
        state.metadata[AGENT_KEY] = {
            **plan.options.settings(),
            "write": stored.record.as_dict(),
            "answer_tool_calls": calls,
            "store": str(stored.path),
            "memory": _logged_memory(stored),
        }
        return state

    return solve


#: The agent plan of each task built in this process (memevals.tools.estimate reads it).
PLANS: weakref.WeakKeyDictionary[Task, AgentPlan] = weakref.WeakKeyDictionary()


def write_estimates(
    task: Task,
    note_share: float = NOTE_SHARE,
    sample_ids: Iterable[str] | None = None,
    counter: Callable[[str], int] | None = None,
) -> dict[str, dict[str, int]]:
    """Each history's write-pass input tokens under every `agent_memory`, for a task built
    with `context=agent` (memevals.core.agent_memory.write_estimate), before any call.

    Args:
        task: the task.
        note_share: the share of a session assumed kept as notes (read back later).
        sample_ids: only the histories these samples ask about (default: every history).
        counter: the token counter (default: the task's own, its `token_counter`).

    Returns:
        history id -> agent_memory -> tokens (empty for a task of another context mode).
    """
    plan = PLANS.get(task)
    if plan is None:
        return {}
    out: dict[str, dict[str, int]] = {}
    subject = plan.subject
    wanted = None if sample_ids is None else set(sample_ids)
    for sample_id, query in subject.queries.items():
        if query.history_id in out or (wanted is not None and sample_id not in wanted):
            continue
        item = PromptItem(id=sample_id, system="", user="", target="")
        sessions = session_texts(subject, item)
        out[query.history_id] = write_estimate(
            sessions, counter or subject.counter, plan.options.window, note_share
        )
    return out


def agent_task(
    task: Task, subject: MemorySubject | None, agent: AgentOptions | None, cache: bool = True
) -> Task:
    """`task` in the agent mode (unchanged when `agent` is None): `agent_answer` as its solver,
    `agent_write` beside its scorers, the agent options in its log metadata.

    Args:
        task: the task its thin module built.
        subject: the memory binding `split` returned.
        agent: the agent options.
        cache: keep write passes in the disk cache (`memory_cache`, default on).

    Returns:
        The task.
    """
    if agent is None or subject is None:
        return task
    plan = AgentPlan(subject, agent, AgentCache(cache))
    task.solver = agent_answer(plan)
    PLANS[task] = plan
    task.scorer = [*(task.scorer or []), agent_write()]
    settings = {**agent.settings(), "memory_cache": cache}
    task.metadata = {**_without_host(task.metadata or {}), "agent": settings}
    return task


def _without_host(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """Log metadata with the borrowed memory system's settings (`HOST_SYSTEM`) taken out and
    the context named `agent`, at the top and in a benchmark's `memory` log alike."""

    def clean(fields: Mapping[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in fields.items() if not k.startswith("memory") and k not in _HOST}
        return out | ({"context": AGENT_CONTEXT} if "context" in fields else {})

    out = clean(metadata) | {"context": AGENT_CONTEXT}
    memory = metadata.get("memory")
    out["memory"] = clean(memory) if isinstance(memory, Mapping) else AGENT_CONTEXT
    return out


_HOST = ("top_k", "retrieval_depth")


# --------------------------------------------------------------------------------------------
# The record: per sample, and totals over the distinct write passes


def _writes(scores: list[SampleScore]) -> list[dict[str, Any]]:
    by_key: dict[str, dict[str, Any]] = {}
    for s in scores:
        md = s.score.metadata or {}
        if "write" in md:
            by_key[str(md["write"]["key"])] = md["write"]
    return list(by_key.values())


def _total(field: str, *, fresh: bool = True) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        rows = [w for w in _writes(scores) if not (fresh and w["cached"])]
        if field == "write_passes":
            return float(len(rows))
        return float(sum(float(w[field]) for w in rows))

    return compute


def _metric(name: str, field: str, doc: str, fresh: bool = True) -> Any:
    return named_metric(name, doc, _total(field, fresh=fresh))


write_passes = _metric("write_passes", "write_passes", "Write passes run now (not cached).")
write_model_calls = _metric("write_model_calls", "model_calls", "Model calls of those passes.")
write_input_tokens = _metric("write_input_tokens", "input_tokens", "Their input tokens.")
write_output_tokens = _metric("write_output_tokens", "output_tokens", "Their output tokens.")
write_seconds = _metric("write_seconds", "seconds", "Their seconds.")
compactions = _metric("compactions", "compactions", "Compactions over every history.", False)
memory_bytes = _metric("memory_bytes", "memory_bytes", "Stored bytes over every history.", False)


@functools.cache
def _agent_metrics() -> list[Metric]:
    return [
        write_passes(),
        write_model_calls(),
        write_input_tokens(),
        write_output_tokens(),
        write_seconds(),
        compactions(),
        memory_bytes(),
    ]


@scorer(metrics=_agent_metrics())
def agent_write() -> Scorer:
    """Per sample: the answer pass's tool calls (the value) and its history's write-pass record
    (Score.metadata: calls, tokens, tool calls by command, compactions, memory size, seconds);
    the metrics total the write passes, each history once."""

    async def score(state: TaskState, target: Target) -> Score:
        md = state.metadata.get(AGENT_KEY)
        if not isinstance(md, dict):
            raise ValueError(f"sample {state.sample_id}: no agent record; agent_answer did not run")
        calls = md["answer_tool_calls"]
        return Score(
            value=float(sum(calls.values())),
            metadata={"write": md["write"], "answer_tool_calls": calls},
        )

    return score
