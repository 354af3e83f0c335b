"""The build contract: what every benchmark's `samples.build(options)` returns.

Both frameworks call one assembly per benchmark and read the same typed result: the prompt
items (the samples or documents), the run's log metadata (Inspect's `Task(metadata=)`), the
reader's generation settings, and the memory system under test when a run names one. The
Inspect glue turns a Build into a Task without knowing the benchmark
(memevals.inspect_tasks.dataset.task_from_build); the lm-eval glue turns its items into
documents. This module names no benchmark and imports no framework.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from memevals.core.memory_harness import MemorySubject
from memevals.core.prompt_item import PromptItem

__all__ = ["Build", "Generation", "SampleNote"]


@dataclass(frozen=True)
class Generation:
    """The reader's call settings: its token limit and temperature (None: not sent, the run's
    or the provider's default applies)."""

    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(frozen=True)
class SampleNote:
    """A warning about some samples only, said once per run when the first of them runs (not
    when the task is built: a run that `--limit` or `--sample-id` keeps them out of stays
    quiet)."""

    #: the warning, one line
    message: str
    #: the ids of the samples it concerns
    samples: frozenset[str]


def _frozen(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(value))


@dataclass(frozen=True)
class Build:
    """One benchmark build: its items, log metadata, generation settings and memory system."""

    #: the samples (Inspect) or documents (lm-eval), in order
    items: tuple[PromptItem, ...]
    #: what the run logs about its configuration (Inspect's Task(metadata=)); every key the
    #: benchmark logged before the contract existed, unchanged
    metadata: Mapping[str, Any]
    #: the reader's token limit and temperature under the run's protocol
    generation: Generation = field(default_factory=Generation)
    #: the memory system under test (-T memory=...), None when the context is built in
    subject: MemorySubject | None = None
    #: the dataset's name in the log (default: the benchmark's)
    dataset: str = ""
    #: warnings about some samples, said once per run when the first of them runs
    notes: tuple[SampleNote, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))
        object.__setattr__(self, "metadata", _frozen(self.metadata))
        object.__setattr__(self, "notes", tuple(self.notes))

    @classmethod
    def of(
        cls,
        items: Sequence[PromptItem],
        metadata: Mapping[str, Any],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        subject: MemorySubject | None = None,
        dataset: str = "",
        notes: Sequence[SampleNote] = (),
    ) -> Build:
        """A Build from its parts, the generation settings given flat.

        Args:
            items: the prompt items.
            metadata: the run's log metadata.
            max_tokens: the reader's token limit (None: none sent).
            temperature: the reader's temperature (None: the run's).
            subject: the memory system under test, if any.
            dataset: the dataset's name in the log.
            notes: warnings about some samples (`SampleNote`).

        Returns:
            The Build.
        """
        return cls(
            items=tuple(items),
            metadata=metadata,
            generation=Generation(max_tokens=max_tokens, temperature=temperature),
            subject=subject,
            dataset=dataset,
            notes=tuple(notes),
        )
