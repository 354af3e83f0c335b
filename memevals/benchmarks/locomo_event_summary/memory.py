"""What the event summariser reads: which conversations, and which of their sessions.

The model reads the first `sessions` sessions of a conversation (all by default), rendered as
in the LoCoMo QA prompt; incremental summarisation reads them one at a time.
"""

from __future__ import annotations

from collections.abc import Iterable

from memevals.benchmarks.locomo.data import Conversation, Session
from memevals.benchmarks.locomo.memory import preamble, render_sessions

__all__ = ["conversation_text", "shown_sessions"]


def shown_sessions(conv: Conversation, sessions: int | None) -> list[Session]:
    """The first `sessions` sessions of `conv` (all when None)."""
    return [s for s in conv.sessions if sessions is None or s.index <= sessions]


def conversation_text(conv: Conversation, sessions: Iterable[Session]) -> str:
    """The preamble and `sessions` as dated blocks: the summariser's context."""
    return f"{preamble(conv)}\n\n{render_sessions((s, s.turns) for s in sessions)}"
