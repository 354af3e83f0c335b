"""The one assembly of the locomo_event_summary samples, called by the Inspect task and by the
lm-eval task alike: options record in, `PromptItem`s and the task-log summary out."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from memevals.benchmarks.locomo.data import Conversation, load_conversations
from memevals.benchmarks.locomo_event_summary.memory import conversation_text, shown_sessions
from memevals.benchmarks.locomo_event_summary.prompts import (
    empty_events,
    reference_events,
    sample_id,
    summary_item,
)
from memevals.core.prompt_item import PromptItem
from memevals.core.statistics import CLUSTER_KEY
from memevals.core.tokens import get_token_counter

logger = logging.getLogger(__name__)

__all__ = ["EventSummaryOptions", "build", "build_for"]


@dataclass(frozen=True)
class EventSummaryOptions:
    """What decides the samples (the scorer's options belong to the frameworks' scorers)."""

    conversations: str | None = None  # comma-separated sample ids; None = all 10
    sessions: int | None = None  # the first N sessions (the reference keeps their events)
    incremental: bool = False  # one session per model call, the summary so far carried forward
    data_dir: str | None = None

    def __post_init__(self) -> None:
        s = self.sessions
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 1):
            raise ValueError(f"sessions must be a positive number of sessions, got {s!r}")


def build(options: EventSummaryOptions) -> tuple[list[PromptItem], dict[str, Any]]:
    """The samples of the chosen conversations (read from `options.data_dir`); see `build_for`."""
    return build_for(load_conversations(options.data_dir, options.conversations), options)


def build_for(
    conversations: Iterable[Conversation], options: EventSummaryOptions
) -> tuple[list[PromptItem], dict[str, Any]]:
    """One item per conversation and speaker (speaker A first), and the log summary.

    The system message is the conversation's first `sessions` sessions; the target is the
    speaker's reference events of those sessions. A speaker without any has nothing to score
    against: the item is left out, logged and listed under `skipped_without_events`. Empty
    event strings are left out of the references, logged and listed under
    `empty_events_ignored`. Each item's `prompt_tokens` (system plus user, by the default
    counter, named in the log) is stored unless `incremental`, where each call sends one
    session instead.
    """
    counter = get_token_counter()
    items: list[PromptItem] = []
    skipped: list[str] = []
    empty: list[str] = []
    for conv in conversations:
        empty += empty_events(conv)
        shown = shown_sessions(conv, options.sessions)
        context = conversation_text(conv, shown)
        for speaker in (conv.speaker_a, conv.speaker_b):
            events = reference_events(conv, speaker, options.sessions)
            if not events:
                skipped.append(sample_id(conv, speaker))
                continue
            item = summary_item(conv, speaker, context, shown, events)
            # both speakers' summaries come from one conversation (README.md#standard-errors)
            item = replace(item, metadata={**item.metadata, CLUSTER_KEY: conv.sample_id})
            if not options.incremental:
                tokens = counter(item.system) + counter(item.user)
                item = replace(item, metadata={**item.metadata, "prompt_tokens": tokens})
            items.append(item)
    if skipped:
        logger.warning(
            "locomo_event_summary: %d sample(s) have no annotated events in the chosen sessions "
            "and are left out: %s",
            len(skipped),
            ", ".join(skipped),
        )
    if empty:
        logger.warning(
            "locomo_event_summary: %d empty event string(s) in 'event_summary' are left out of "
            "the references: %s",
            len(empty),
            ", ".join(empty),
        )
    if not items:
        raise ValueError(
            f"no speaker has annotated events in the first {options.sessions} session(s) of "
            "the chosen conversations; use more sessions"
        )
    log: dict[str, Any] = {"skipped_without_events": skipped, "empty_events_ignored": empty}
    if not options.incremental:
        log["prompt_tokens_total"] = sum(int(i.metadata["prompt_tokens"]) for i in items)
        log["token_counter"] = counter.name
    return items, log
