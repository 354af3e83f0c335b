"""Inspect samples and tasks from a benchmark's build: PromptItem -> Sample (the context as
a system message, a replayed chat, the question), the dataset, the Task."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
)
from inspect_ai.scorer import Scorer

from memevals.core.build import Build
from memevals.core.prompt_item import PromptItem
from memevals.inspect_tasks.run_notes import run_notes

__all__ = [
    "task_from_build",
    "to_dataset",
    "to_sample",
]


def to_sample(item: PromptItem) -> Sample:
    """The context goes into a system message (identical across a conversation's questions, so
    provider prefix caches hit), then any chat the item replays (`PromptItem.messages`), then
    the question as the user message."""
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


def to_dataset(items: Iterable[PromptItem], name: str) -> MemoryDataset:
    samples = [to_sample(i) for i in items]
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"{name}: duplicate sample id {dup!r}")
    return MemoryDataset(samples, name=name, shuffled=False)


def task_from_build(build: Build, scorers: Sequence[Scorer], *, name: str) -> Task:
    """The Inspect task of one benchmark build: its items as the dataset, the memory system's
    solvers when a run names one, the scorers, the reader's generation settings and the run's
    log metadata, all from the build (its version is the record's, set at registration). Its
    setup step says the build's notes and a prompt too long for a local model's window, once
    per run (memevals.inspect_tasks.run_notes).

    Args:
        build: what the benchmark's `samples.build(options)` returned.
        scorers: the task's scorers, its headline first.
        name: the dataset's name when the build names none (the benchmark's).

    Returns:
        The Task.
    """
    from memevals.inspect_tasks.memory_under_test import solver_chain

    generation = build.generation
    return Task(
        dataset=to_dataset(build.items, build.dataset or name),
        setup=run_notes(build.notes),
        solver=solver_chain(build.subject),
        scorer=list(scorers),
        config=GenerateConfig(max_tokens=generation.max_tokens, temperature=generation.temperature),
        metadata=dict(build.metadata),
    )
