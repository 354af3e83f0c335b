"""LoCoMo event summarisation prompts (benchmarks/locomo_event_summary/README.md#protocol): the
instruction, the per-session
prompts of incremental summarisation (the paper's protocol for short-context models), and the
reference built from the annotated `event_summary`.

The model is asked for dated events, one per line, because the reference is a dated event list;
the wording is ours. What the model reads of the conversation comes from `memory`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memevals.benchmarks.locomo.data import Conversation, Event, Session
from memevals.benchmarks.locomo_event_summary.memory import conversation_text
from memevals.core.prompt_item import PromptItem

__all__ = [
    "Step",
    "empty_events",
    "incremental_prompt",
    "incremental_steps",
    "reference_events",
    "reference_text",
    "sample_id",
    "summary_instruction",
    "summary_item",
]


def summary_instruction(conv: Conversation, speaker: str) -> str:
    """What the model is asked to write: the dated significant events of `speaker`'s life."""
    other = conv.other_speaker(speaker)
    return (
        f"Summarise the significant events in {speaker}'s life that come up in this "
        f"conversation: things that happened to {speaker}, and things {speaker} did, started, "
        "decided or finished. Leave out small talk, opinions, advice and "
        f"{other}'s own events.\n"
        "List the events in chronological order, one per line, each starting with the date it "
        "happened, like this:\n"
        f"D Month, YYYY: {speaker} ...\n"
        'Work out each date from the session dates (for example, "yesterday" in a session '
        "held on 2 January, 2020 means 1 January, 2020). Reply with the list only."
    )


def incremental_prompt(
    conv: Conversation, speaker: str, session: Session, previous: str | None
) -> tuple[str, str]:
    """(system, user) for one step of incremental summarisation.

    The system message holds one session; the user message holds the summary so far and asks
    for the updated, complete summary, so the final step's reply is the whole summary.
    """
    system = conversation_text(conv, [session])
    so_far = previous.strip() if previous and previous.strip() else "(no events yet)"
    user = (
        "This is one session of a longer conversation. The events of "
        f"{speaker}'s life from the earlier sessions, as summarised so far:\n"
        f"{so_far}\n\n"
        f"{summary_instruction(conv, speaker)}\n"
        f"Reply with the updated summary: every event listed so far (corrected only if this "
        f"session shows it was wrong), followed by the new events of {speaker} from this "
        "session."
    )
    return system, user


#: One step of incremental summarisation: the summary so far (None first) -> (system, user).
Step = Callable[[str | None], tuple[str, str]]


def incremental_steps(
    conversations: Mapping[str, Conversation],
) -> Callable[[Mapping[str, Any]], list[Step]]:
    """The steps of a sample (by its metadata: conversation, speaker, sessions shown): one per
    session shown, in order, each made from the summary the step before returned.

    Args:
        conversations: the run's conversations by sample id.

    Returns:
        sample metadata -> its steps.
    """

    def steps(md: Mapping[str, Any]) -> list[Step]:
        conv = conversations[str(md["conversation_id"])]
        wanted = set(md["sessions"])
        return [
            functools.partial(incremental_prompt, conv, str(md["speaker"]), session)
            for session in conv.sessions
            if session.index in wanted
        ]

    return steps


def reference_events(conv: Conversation, speaker: str, sessions: int | None) -> list[Event]:
    """`speaker`'s annotated events of the first `sessions` sessions (all when None).

    Raises ValueError naming the conversation and the field when the conversation has no
    `event_summary` or an event refers to a session or speaker the conversation does not have.
    Empty event strings are left out (see `empty_events`).
    """
    if not conv.events:
        raise ValueError(
            f"conversation {conv.sample_id} has no 'event_summary' field (or it lists no "
            "events), which locomo_event_summary needs as its reference"
        )
    known = {s.index for s in conv.sessions}
    for ev in conv.events:
        if ev.session not in known:
            raise ValueError(
                f"conversation {conv.sample_id}: field 'event_summary' has events for session "
                f"{ev.session}, which does not exist"
            )
        if ev.speaker not in (conv.speaker_a, conv.speaker_b):
            raise ValueError(
                f"conversation {conv.sample_id}: field 'event_summary' names speaker "
                f"{ev.speaker!r}, who is neither {conv.speaker_a!r} nor {conv.speaker_b!r}"
            )
    limit = sessions if sessions is not None else max(known)
    return [
        e for e in conv.events if e.speaker == speaker and e.session <= limit and e.text.strip()
    ]


def empty_events(conv: Conversation) -> list[str]:
    """Empty event strings of `conv` (conv-41 has one), which `reference_events` leaves out."""
    return [
        f"{conv.sample_id} events_session_{e.session} {e.speaker}"
        for e in conv.events
        if not e.text.strip()
    ]


def reference_text(events: Sequence[Event]) -> str:
    """The reference as the model is asked to write it: `<date>: <event>` lines, by session."""
    return "\n".join(f"{e.date}: {e.text.strip()}" for e in events)


def sample_id(conv: Conversation, speaker: str) -> str:
    return f"{conv.sample_id}-events-{speaker}"


def summary_item(
    conv: Conversation,
    speaker: str,
    context: str,
    shown: Sequence[Session],
    events: Sequence[Event],
) -> PromptItem:
    """One sample: `context` (the sessions `shown`) as system, the instruction as user, the
    reference text of `events` as target."""
    return PromptItem(
        id=sample_id(conv, speaker),
        system=context,
        user=summary_instruction(conv, speaker),
        target=reference_text(events),
        metadata={
            "benchmark": "locomo",
            "task": "event_summary",
            "conversation_id": conv.sample_id,
            "speaker": speaker,
            "other_speaker": conv.other_speaker(speaker),
            "sessions": [s.index for s in shown],
            "reference_events": [
                {"session": e.session, "date": e.date, "text": e.text} for e in events
            ],
        },
    )
