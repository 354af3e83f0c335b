"""Inspect glue shared by all benchmarks: PromptItem -> Sample, per-category task factories."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessage, ChatMessageSystem, ChatMessageUser

from memevals.core.prompt_item import PromptItem


def to_sample(item: PromptItem) -> Sample:
    """The context goes into a system message (identical across a conversation's questions, so
    provider prefix caches hit); the question goes into the user message."""
    messages: list[ChatMessage] = []
    if item.system:
        messages.append(ChatMessageSystem(content=item.system))
    messages.append(ChatMessageUser(content=item.user))
    return Sample(id=item.id, input=messages, target=item.target, metadata=dict(item.metadata))


def to_dataset(items: Iterable[PromptItem], name: str) -> MemoryDataset:
    samples = [to_sample(i) for i in items]
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"{name}: duplicate sample id {dup!r}")
    return MemoryDataset(samples, name=name, shuffled=False)


def fixed_param_task(
    base: Callable[..., Task], name: str, fixed: dict[str, Any], doc: str
) -> Callable[..., Task]:
    """Register a task that is `base` with some parameters fixed (e.g. one category).

    The new task keeps every other typed `-T` parameter of `base`, so the per-category tasks
    stay in step with the main task without repeating its signature.
    """
    sig = inspect.signature(base)
    params = [p for p in sig.parameters.values() if p.name not in fixed]

    def run(**kwargs: Any) -> Task:
        return base(**fixed, **kwargs)

    run.__name__ = name
    run.__qualname__ = name
    run.__doc__ = doc
    run.__module__ = base.__module__
    setattr(run, "__signature__", sig.replace(parameters=params))  # noqa: B010
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": Task}
    registered: Callable[..., Task] = task(name=name)(run)
    return registered
