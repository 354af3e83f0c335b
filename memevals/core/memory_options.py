"""The memory options every QA task shares, as one record.

LoCoMo, LoCoMo-Plus, LongMemEval and the dialogue task all take the same knobs for how the
model is given its history (`context`, the truncation budget, the retrieval settings, the
token counter). They are declared once here; each benchmark's memory module validates them
against its own modes and defaults (`checked`, `rag_choice`), so a rule such as "an option of
another mode is an error" exists once.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field, fields
from typing import Any, Self

from memevals.core.memory_system import MemorySystem, load_memory_system, parse_memory_args
from memevals.core.retrievers import (
    Retriever,
    checked_top_k,
    make_retriever,
    reject_options_outside,
    resolve_embedding_model,
)
from memevals.core.tokens import TokenCounter, get_token_counter

__all__ = [
    "MEMORY_CONTEXT",
    "MemoryOptions",
    "MemoryStrategy",
    "RagChoice",
    "RagDefaults",
    "SystemChoice",
    "rag_choice",
    "system_choice",
]


@dataclass(frozen=True)
class MemoryOptions:
    """How the history is given to the model: the `-T` / `--metadata` memory knobs.

    None means "the benchmark's default" for the mode it applies to; an option given for a mode
    it does not apply to is rejected by `checked`, never ignored.
    """

    context: str = "full"
    max_context_tokens: int | None = None
    retrieval_unit: str | None = None
    top_k: int | None = None
    retriever: str | None = None
    embedding_model: str | None = None
    token_counter: str = "auto"
    #: a memory system under test (docs/memory_systems.md): it gives the context instead of
    #: `context`; its arguments (`memory_args`, read as Inspect reads -M) and the disk cache of
    #: its ingestions (`memory_cache`, None = on)
    memory: str | None = None
    memory_args: Any = None
    memory_cache: bool | None = None
    #: the system answers by itself (`answer()`), instead of the model reading its context
    memory_answers: bool | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The option names, for the frameworks' option checks."""
        return tuple(f.name for f in fields(cls))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> MemoryOptions:
        """The record from the known keys of `values` (other keys are the caller's business).

        An Inspect task passes its `locals()`: its -T knobs carry the same names, so the six
        memory knobs are not spelled out again in every task body."""
        return cls(**{k: values[k] for k in cls.names() if k in values})

    def checked(self, modes: Sequence[str], **truncation_options: object) -> MemoryOptions:
        """Self, after checking `context` is one of `modes` and that no option of another mode
        was given (`truncation_options`: a benchmark's extra truncation knobs).

        With `memory` set the context mode becomes `memory` (the system gives the context);
        only `top_k` (its k) and the token counter apply besides the memory knobs."""
        if self.memory is not None:
            if self.context not in ("full", MEMORY_CONTEXT):
                raise ValueError(
                    f"memory={self.memory!r} gives the context itself; it cannot be combined "
                    f"with context={self.context!r} (leave context unset)"
                )
            reject_options_outside(
                "truncated",
                MEMORY_CONTEXT,
                max_context_tokens=self.max_context_tokens,
                **truncation_options,
            )
            reject_options_outside(
                "rag",
                MEMORY_CONTEXT,
                retrieval_unit=self.retrieval_unit,
                retriever=self.retriever,
                embedding_model=self.embedding_model,
            )
            return dataclasses.replace(self, context=MEMORY_CONTEXT)
        if self.context == MEMORY_CONTEXT:
            raise ValueError("context=memory needs a memory system: -T memory=<name>")
        if self.memory_args is not None or self.memory_cache is not None:
            given = [n for n in ("memory_args", "memory_cache") if getattr(self, n) is not None]
            raise ValueError(f"{', '.join(given)} applies only with memory=<name>")
        if self.context not in modes:
            close = difflib.get_close_matches(str(self.context), modes, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"context={self.context!r} is not supported{hint}; allowed values: "
                f"{', '.join(modes)} (or memory=<name> for a memory system)"
            )
        reject_options_outside(
            "truncated",
            self.context,
            max_context_tokens=self.max_context_tokens,
            **truncation_options,
        )
        reject_options_outside(
            "rag",
            self.context,
            retrieval_unit=self.retrieval_unit,
            top_k=self.top_k,
            retriever=self.retriever,
            embedding_model=self.embedding_model,
        )
        return self


#: The context mode of a memory system under test.
MEMORY_CONTEXT = "memory"


@dataclass(frozen=True)
class SystemChoice:
    """The validated memory-system settings: the system built with its arguments, its k, and
    whether its ingestions are kept in the disk cache."""

    system: MemorySystem
    top_k: int
    cache: bool
    answers: bool = False


def system_choice(options: MemoryOptions, default_top_k: int) -> SystemChoice:
    """Build the memory system of `options.memory` (ValueError naming the closest registered
    name or the bad argument) with the benchmark's default k; the system is built here, before
    any model call, so a missing package or model fails early, and a system with a
    `preflight()` method checks its endpoint (MemorySystemError naming what is missing)."""
    if options.memory is None:
        raise ValueError("no memory system was asked for (-T memory=<name>)")
    for name in ("memory_cache", "memory_answers"):
        value = getattr(options, name)
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{name} must be true or false, got {value!r}")
    system = load_memory_system(options.memory, parse_memory_args(options.memory_args))
    k = checked_top_k(options.top_k, default_top_k)
    # a system that calls its own endpoint checks it here, before any sample: one line naming
    # what is missing, not a traceback per sample from deep inside its first ingestion
    preflight = getattr(system, "preflight", None)
    if callable(preflight):
        preflight()
    return SystemChoice(system, k, options.memory_cache is not False, bool(options.memory_answers))


@dataclass(frozen=True)
class RagChoice:
    """The validated retrieval settings of a context=rag strategy (engine built, model found)."""

    retrieval_unit: str
    top_k: int
    retriever: Retriever
    embedding_model: str | None


@dataclass(frozen=True)
class RagDefaults:
    """A benchmark's retrieval units and the defaults of its context=rag knobs."""

    benchmark: str
    units: tuple[str, ...]
    unit: str
    top_k: int
    retriever: str

    def context_defaults(self, **more: Any) -> dict[str, Any]:
        """The defaults of the context knobs, as a benchmark's record lists them: context=full,
        these retrieval defaults, then `more` (a truncation budget; a key of `more` wins).

        Args:
            **more: the benchmark's other defaults.

        Returns:
            Option name -> default.
        """
        return {
            "context": "full",
            "top_k": self.top_k,
            "retrieval_unit": self.unit,
            "retriever": self.retriever,
            **more,
        }


def rag_choice(options: MemoryOptions, defaults: RagDefaults) -> RagChoice:
    """Check the retrieval options against a benchmark's units and build the retriever.

    Loading an embedding model happens here, before any model call, so one that cannot be
    loaded offline fails early.
    """
    unit = defaults.unit if options.retrieval_unit is None else options.retrieval_unit
    if unit not in defaults.units:
        raise ValueError(
            f"retrieval_unit={unit!r} is not supported for {defaults.benchmark}; allowed "
            f"values: {', '.join(defaults.units)}"
        )
    k = checked_top_k(options.top_k, defaults.top_k)
    kind = defaults.retriever if options.retriever is None else options.retriever
    engine = make_retriever(kind, options.embedding_model)  # rejects an unknown retriever
    resolved = None
    if kind == "embedding":
        resolved = resolve_embedding_model(
            getattr(engine, "model_name", options.embedding_model or "")
        )
    return RagChoice(unit, k, engine, resolved)


@dataclass(frozen=True)
class MemoryStrategy:
    """The validated settings of how a benchmark gives the model its history: the fields every
    benchmark's strategy has (a benchmark's own come after `context`, or as keywords).

    `build` makes one from the options: a memory system for context=memory, a retriever for
    context=rag, the given fields for the benchmark's other modes.
    """

    context: str
    _: KW_ONLY
    token_counter: TokenCounter = field(default_factory=get_token_counter)
    max_context_tokens: int | None = None
    retrieval_unit: str | None = None
    top_k: int | None = None
    retriever: Retriever | None = None
    embedding_model: str | None = None
    #: context=memory: the memory system under test
    system: SystemChoice | None = None

    @classmethod
    def build(
        cls,
        options: MemoryOptions,
        context: str,
        token_counter: TokenCounter,
        *,
        default_top_k: int,
        rag_defaults: RagDefaults,
        **mode_fields: Any,
    ) -> Self:
        """The strategy of `context`, checked (ValueError naming the option).

        Args:
            options: the memory knobs (already `checked`).
            context: the context mode.
            token_counter: the counter the strategy measures with.
            default_top_k: the benchmark's k for a memory system.
            rag_defaults: the benchmark's retrieval units and defaults.
            **mode_fields: the benchmark's fields of this mode (a truncation budget, ...).

        Returns:
            The strategy.
        """
        if context == MEMORY_CONTEXT:
            choice = system_choice(options, default_top_k)
            mode_fields |= {"top_k": choice.top_k, "system": choice}
        elif context == "rag":
            rag = rag_choice(options, rag_defaults)
            mode_fields |= {
                "retrieval_unit": rag.retrieval_unit,
                "top_k": rag.top_k,
                "retriever": rag.retriever,
                "embedding_model": rag.embedding_model,
            }
        return cls(context, token_counter=token_counter, **mode_fields)
