"""The one assembly of the locomo_event_summary samples, called by the Inspect task and by the
lm-eval task alike: the options in, a `Build` (the items, the task's log metadata, the
summary's token limit) out."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from memevals.benchmarks.locomo.data import LOCOMO_FILE, Conversation, load_conversations
from memevals.benchmarks.locomo_event_summary.memory import conversation_text, shown_sessions
from memevals.benchmarks.locomo_event_summary.prompts import (
    empty_events,
    reference_events,
    sample_id,
    summary_item,
)
from memevals.benchmarks.locomo_event_summary.scoring import (
    DEFAULT_FACTS_PER_CALL,
    DEFAULT_LINES_PER_CALL,
    check_grading,
)
from memevals.core.build import Build
from memevals.core.prompt_item import PromptItem
from memevals.core.statistics import CLUSTER_KEY
from memevals.core.tokens import get_token_counter

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_TOKENS", "EventSummaryOptions", "build", "build_for"]

#: The summary's token limit: the Inspect task's default (per step when incremental) and,
#: through the record, lm-eval's max_gen_toks.
DEFAULT_MAX_TOKENS = 2048


@dataclass(frozen=True)
class EventSummaryOptions:
    """Every option of the event summary task (Inspect's `-T`, lm-eval's `--metadata`), with
    their one set of defaults (the Inspect task's signature takes its defaults from here)."""

    #: one session per model call, the summary so far carried forward (Inspect only)
    incremental: bool = False
    sessions: int | None = None  # the first N sessions (the reference keeps their events)
    conversations: str | None = None  # comma-separated sample ids; None = all 10
    #: the grader's reference facts: "decompose" (split by the grader) or "events"
    reference_facts: str = "decompose"
    max_tokens: int = DEFAULT_MAX_TOKENS  # the summary's token limit (per step when incremental)
    lines_per_call: int = DEFAULT_LINES_PER_CALL  # text lines per decomposition call
    facts_per_call: int = DEFAULT_FACTS_PER_CALL  # facts per support-check call
    grader_max_tokens: int = 2048  # the grader's token limit per reply
    data_dir: str | None = None
    uncertainty: str = "default"  # Inspect: which uncertainty figures are shown

    def __post_init__(self) -> None:
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be positive, got {self.max_tokens}")
        s = self.sessions
        if s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 1):
            raise ValueError(f"sessions must be a positive number of sessions, got {s!r}")
        check_grading(self.reference_facts, self.grader_max_tokens, retries=1)


def _warn_left_out(skipped: list[str], empty: list[str]) -> None:
    """Say which samples had no events and which empty event strings were left out."""
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


def build(options: EventSummaryOptions) -> Build:
    """The samples of the chosen conversations (read from `options.data_dir`); see `build_for`.

    Args:
        options: the task's options.

    Returns:
        The build.
    """
    return build_for(load_conversations(options.data_dir, options.conversations), options)


def build_for(conversations: Iterable[Conversation], options: EventSummaryOptions) -> Build:
    """One item per conversation and speaker (speaker A first), and the task's log metadata.

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
    _warn_left_out(skipped, empty)
    if not items:
        raise ValueError(
            f"no speaker has annotated events in the first {options.sessions} session(s) of "
            "the chosen conversations; use more sessions"
        )
    log: dict[str, Any] = {
        "benchmark": "locomo",
        "task": "event_summary",
        "incremental": options.incremental,
        "sessions": options.sessions,
        "reference_facts": options.reference_facts,
        "skipped_without_events": skipped,
        "empty_events_ignored": empty,
    }
    if not options.incremental:
        log["prompt_tokens_total"] = sum(int(i.metadata["prompt_tokens"]) for i in items)
        log["token_counter"] = counter.name
    log["data_sha256"] = LOCOMO_FILE.sha256
    return Build.of(items, log, max_tokens=options.max_tokens)
