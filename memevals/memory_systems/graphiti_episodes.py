"""graphiti's episodes of a history: the turns of each, its text, its reference time (session
dates read in every benchmark's format) and the history's group.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, timedelta, timezone

from memevals.core.memory_system import History, MemorySystemError, Session, Turn

__all__ = [
    "UNDATED_START",
    "episode_body",
    "episode_chunks",
    "group_id",
    "parse_date",
    "session_times",
]

#: Undated histories (LoCoMo-Plus stitched histories) get ordinal dates from here, one day per
#: session, only so that graphiti sees their sessions in order.
UNDATED_START = datetime(2000, 1, 1, tzinfo=timezone.utc)

_LONGMEMEVAL_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2}) \(\w+\) (\d{1,2}):(\d{2})")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%d %B %Y", "%d %B, %Y", "%B %d, %Y")


def parse_date(value: str) -> datetime | None:
    """A session or question date as a UTC datetime; None for an empty date; ValueError for
    one in no known format (LoCoMo's `1:56 pm on 8 May, 2023`, LongMemEval's
    `2023/05/20 (Sat) 02:21`, `8 May 2023`, ISO 8601)."""
    text = value.strip()
    if not text:
        return None
    m = _LONGMEMEVAL_DATE.fullmatch(text)
    if m:
        year, month, day, hour, minute = (int(g) for g in m.groups())
        return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"cannot read {value!r} as a date (known: '1:56 pm on 8 May, 2023', "
            "'2023/05/20 (Sat) 02:21', '8 May 2023', ISO 8601)"
        ) from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


def session_times(history: History) -> dict[str, datetime]:
    """Each session's reference time: its date, or for a history with no dates at all one
    ordinal day per session (MemorySystemError for a history dated only in part)."""
    dates: dict[str, datetime | None] = {}
    for s in history.sessions:
        try:
            dates[s.session_id] = parse_date(s.date)
        except ValueError as exc:
            raise MemorySystemError(
                f"graphiti: session {s.session_id!r} of {history.history_id!r}: {exc}"
            ) from None
    undated = [sid for sid, d in dates.items() if d is None]
    if undated and len(undated) < len(dates):
        raise MemorySystemError(
            f"graphiti: {history.history_id!r} dates some sessions but not "
            f"{', '.join(map(repr, undated[:3]))}; graphiti needs every episode's time"
        )
    return {
        sid: d if d is not None else UNDATED_START + timedelta(days=n)
        for n, (sid, d) in enumerate(dates.items())
    }


def episode_body(turns: Sequence[Turn]) -> str:
    """The episode text graphiti reads: one `speaker: text` line per turn (its message
    format), an image's caption in brackets."""
    lines = []
    for t in turns:
        text = " ".join(t.text.split())
        if t.image_caption:
            text += f" [shared an image: {' '.join(t.image_caption.split())}]"
        lines.append(f"{t.speaker}: {text}")
    return "\n".join(lines)


def episode_chunks(history: History, size: int) -> list[tuple[Session, tuple[Turn, ...]]]:
    """Consecutive turns of one session, `size` at a time (never across sessions)."""
    return [
        (s, s.turns[i : i + size]) for s in history.sessions for i in range(0, len(s.turns), size)
    ]


def group_id(history: History) -> str:
    """graphiti's group for a history: letters, digits, `-` and `_` only (graphiti's rule)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", history.history_id.strip()).strip("_")
    return f"h-{cleaned or 'history'}"
