"""LoCoMo-Plus stitching: each cue–trigger pair placed inside a host LoCoMo conversation.

The official unified builder does this deterministically and we reproduce it exactly
(benchmarks/locomo_plus/README.md#stitching):

* host = LoCoMo conversation ``index mod 10`` (file order);
* query time = last session time + 7 days; cue time = query time - days(time_gap);
* days(time_gap): the first ``<count> <unit>`` in the lowercased text, count in digits,
  one..twelve or a/an, unit week/month/year = 7/30/365 days; anything else is 0 days;
* the sessions, the cue and the trigger are stable-sorted by time (ties: session, cue, trigger);
* A is the host's ``speaker_a``, anything else ``speaker_b``.

`gap_fix=True` is our one deliberate deviation, off by default: it gives the vague phrases that
the official parser maps to 0 days ("several months later") a plausible length instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from memevals.benchmarks.locomo.data import Conversation
from memevals.benchmarks.locomo_plus.data import CueLine, PlusInstance
from memevals.core.files import DataError
from memevals.core.memo import per_object

__all__ = [
    "HOST_COUNT",
    "QUERY_OFFSET_DAYS",
    "Source",
    "StitchedInstance",
    "StitchedTurn",
    "host_index_for",
    "parse_time_gap",
    "parse_time_gap_fixed",
    "stitch",
    "stitch_all",
]

#: The unified builder picks hosts modulo the 10 released LoCoMo conversations.
HOST_COUNT = 10
#: The trigger is asked one week after the host's last session.
QUERY_OFFSET_DAYS = 7

# The counts written as words, largest first (the order does not matter to the pattern, which
# tries the longer spellings first).
_NUMBER_WORDS: dict[str, int] = {
    "twelve": 12,
    "eleven": 11,
    "ten": 10,
    "nine": 9,
    "eight": 8,
    "seven": 7,
    "six": 6,
    "five": 5,
    "four": 4,
    "three": 3,
    "two": 2,
    "one": 1,
    "an": 1,
    "a": 1,
}
_UNIT_DAYS: dict[str, int] = {"week": 7, "month": 30, "year": 365}
# Count and unit are whole words; "\s*" lets "3 weeks" and "a  month" match (never "3weeks":
# there is no word boundary between "3" and "w").
_GAP = re.compile(
    r"\b(\d+|" + "|".join(sorted(_NUMBER_WORDS, key=len, reverse=True)) + r")\b"
    r"\s*(week|month|year)s?\b"
)
# gap_fix only: vague quantities the official parser cannot read.
_VAGUE_COUNTS: dict[str, int] = {"couple": 2, "few": 3, "several": 3}
_VAGUE_GAP = re.compile(r"\b(couple|few|several)\b(?:\s+of)?\s+(week|month|year)s?\b")


def parse_time_gap(time_gap: str) -> int:
    """Days in a `time_gap` phrase by the official rule; 0 when it names no count and unit."""
    m = _GAP.search(time_gap.lower().strip())
    if m is None:
        return 0
    count_text, unit = m.groups()
    count = int(count_text) if count_text.isdigit() else _NUMBER_WORDS[count_text]
    return count * _UNIT_DAYS[unit]


def parse_time_gap_fixed(time_gap: str) -> int:
    """Like `parse_time_gap`, but vague counts the official rule drops become numbers:
    "a couple of" = 2, "a few" = 3, "several" = 3 (so "several months later" = 90 days)."""
    days = parse_time_gap(time_gap)
    if days:
        return days
    m = _VAGUE_GAP.search(time_gap.lower().strip())
    if m is None:
        return 0
    return _VAGUE_COUNTS[m.group(1)] * _UNIT_DAYS[m.group(2)]


Source = Literal["session", "cue", "trigger"]


@dataclass(frozen=True)
class StitchedTurn:
    speaker: str
    text: str  # stripped, as the model sees it
    source: Source
    session: int | None = None  # host session number (1-based) for original turns
    dia_id: str | None = None  # original turns only; inserted turns have none
    blip_caption: str | None = None  # kept for reference; the official input omits captions


@dataclass(frozen=True)
class StitchedInstance:
    """An instance placed inside its host conversation."""

    instance: PlusInstance
    host: Conversation
    host_index: int  # position of the host in the LoCoMo file
    gap_days: int  # days used for the cue time (official rule, or gap_fix)
    gap_parsed: bool  # whether the official rule found a count and unit
    query_time: datetime
    cue_time: datetime
    #: 0-based index of the last session at or before the cue (the official
    #: `cue_session_idx`), None when the cue precedes session 1.
    cue_session_idx: int | None
    cue_turns: tuple[StitchedTurn, ...]
    trigger_turns: tuple[StitchedTurn, ...]
    dialogue: tuple[StitchedTurn, ...]  # the whole stitched dialogue; trigger last
    cue_position: int  # index in `dialogue` of the first cue turn

    sessions_before_cue: int  # host sessions placed before the cue (0 = cue opens the dialogue)

    @property
    def sessions_between(self) -> int:
        """Host sessions that lie between the cue and the trigger."""
        return len(self.host.sessions) - self.sessions_before_cue


def _map_speakers(
    lines: Sequence[CueLine], host: Conversation, source: Source
) -> tuple[StitchedTurn, ...]:
    return tuple(
        StitchedTurn(
            speaker=host.speaker_a if line.role == "A" else host.speaker_b,
            text=line.text,
            source=source,
        )
        for line in lines
    )


def host_index_for(instance_index: int) -> int:
    return instance_index % HOST_COUNT


def _host_index(instance: PlusInstance, conversations: Sequence[Conversation]) -> int:
    """The position of the instance's host conversation (a DataError when there is none)."""
    host_index = host_index_for(instance.index)
    if not 0 <= host_index < len(conversations):
        raise DataError(
            f"host index {host_index} (= {instance.index} mod {HOST_COUNT}) is out of range: "
            f"only {len(conversations)} LoCoMo conversations were given",
            record=f"instance {instance.index}",
            field="host",
        )
    return host_index


def _session_blocks(host: Conversation) -> list[tuple[datetime, int, tuple[StitchedTurn, ...]]]:
    """The host's sessions as (time, rank, turns) blocks, in the file's order (a new list)."""
    return list(_host_blocks(host))


@per_object
def _host_blocks(host: Conversation) -> tuple[tuple[datetime, int, tuple[StitchedTurn, ...]], ...]:
    # once per host: every instance it hosts starts from the same blocks
    blocks: list[tuple[datetime, int, tuple[StitchedTurn, ...]]] = []
    for rank, session in enumerate(host.sessions):
        turns = tuple(
            StitchedTurn(
                speaker=t.speaker,
                text=t.text.strip(),
                source="session",
                session=session.index,
                dia_id=t.dia_id,
                blip_caption=t.blip_caption,
            )
            for t in session.turns
        )
        blocks.append((session.when, rank, turns))
    return tuple(blocks)


def stitch(
    instance: PlusInstance, conversations: Sequence[Conversation], *, gap_fix: bool = False
) -> StitchedInstance:
    """Place one instance in its host conversation with the official deterministic algorithm."""
    host_index = _host_index(instance, conversations)
    host = conversations[host_index]
    official_days = parse_time_gap(instance.time_gap)
    days = parse_time_gap_fixed(instance.time_gap) if gap_fix else official_days

    session_times = [s.when for s in host.sessions]
    query_time = session_times[-1] + timedelta(days=QUERY_OFFSET_DAYS)
    cue_time = query_time - timedelta(days=days)
    # The official loop stops at the first session later than the cue.
    cue_idx: int | None = None
    for i, when in enumerate(session_times):
        if when > cue_time:
            break
        cue_idx = i

    cue_turns = _map_speakers(instance.cue_lines, host, "cue")
    trigger_turns = _map_speakers(instance.trigger_lines, host, "trigger")

    # (time, rank, block): rank keeps insertion order on equal times, which is what the
    # official stable sort does with sessions appended first, then the cue, then the trigger.
    blocks = _session_blocks(host)
    blocks.append((cue_time, len(blocks), cue_turns))
    blocks.append((query_time, len(blocks), trigger_turns))
    blocks.sort(key=lambda b: (b[0], b[1]))

    dialogue: list[StitchedTurn] = []
    cue_position = -1
    for _, _, turns in blocks:
        if turns is cue_turns:
            cue_position = len(dialogue)
        dialogue.extend(turns)
    if dialogue[-len(trigger_turns) :] != list(trigger_turns):
        # Only reachable with a host whose session dates run backwards past the query time.
        raise DataError(
            "the trigger is not the last turn after sorting by time; the host's session dates "
            "are out of order",
            record=f"instance {instance.index} (host {host.sample_id})",
            field="time_gap",
        )
    return StitchedInstance(
        instance=instance,
        host=host,
        host_index=host_index,
        gap_days=days,
        gap_parsed=_GAP.search(instance.time_gap.lower().strip()) is not None,
        query_time=query_time,
        cue_time=cue_time,
        cue_session_idx=cue_idx,
        cue_turns=cue_turns,
        trigger_turns=trigger_turns,
        dialogue=tuple(dialogue),
        cue_position=cue_position,
        sessions_before_cue=len({t.session for t in dialogue[:cue_position] if t.session}),
    )


def stitch_all(
    instances: Sequence[PlusInstance],
    conversations: Sequence[Conversation],
    *,
    gap_fix: bool = False,
) -> list[StitchedInstance]:
    return [stitch(inst, conversations, gap_fix=gap_fix) for inst in instances]
