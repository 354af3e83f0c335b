"""Conversation histories for the memory-system tests, written as short scripts.

A script has a line per session, `<session id> | <date>`, and under it a line per turn,
indented: `<turn id> | <speaker> | <text>`, with ` | <image caption>` when the turn shared an
image. `history` reads one; `caroline_and_melanie` is the eight-turn history the mem0 and
graphiti tests share (langmem's starts with the same FIRST_SESSION).
"""

from __future__ import annotations

from collections.abc import Sequence

from memevals.core.memory_system import History, Session, Turn

#: Session dates as LoCoMo writes them (graphiti parses these).
LOCOMO_DATES = ("1:56 pm on 8 May, 2023", "1:14 pm on 25 May, 2023", "10:31 am on 2 July, 2023")
#: The same days, plainly.
PLAIN_DATES = ("8 May 2023", "25 May 2023", "2 July 2023")

#: Their first session: three turns, one sharing an image.
FIRST_SESSION = """
session_1 | 1:56 pm on 8 May, 2023
  D1:1 | Caroline | I went to a transgender support group yesterday.
  D1:2 | Melanie | I ran a charity race for mental health last week.
  D1:3 | Caroline | Look at what I made. | a photo of a clay pot with blue glaze
"""
#: Eight turns in three sessions; every fact is about one speaker.
CAROLINE_AND_MELANIE = (
    FIRST_SESSION
    + """session_2 | 1:14 pm on 25 May, 2023
  D2:1 | Melanie | My daughter started violin lessons on Tuesday.
  D2:2 | Caroline | I am researching adoption agencies.
  D2:3 | Melanie | We are camping at the lake in June.
session_3 | 10:31 am on 2 July, 2023
  D3:1 | Caroline | My grandmother gave me a necklace from Sweden.
  D3:2 | Melanie | I bought new running shoes for the marathon.
"""
)


def history(script: str, history_id: str, dates: Sequence[str] | None = None) -> History:
    """The history a script describes (the format in the module docstring).

    Args:
        script: the sessions and their turns.
        history_id: the history's id.
        dates: the session dates to use instead of the script's, in order.

    Returns:
        The History; its speakers in the order they first speak.
    """
    sessions: list[tuple[str, str, list[Turn]]] = []
    for line in script.strip().splitlines():
        fields = [f.strip() for f in line.split(" | ")]
        if not line.startswith(" "):
            session_id, date = fields
            sessions.append((session_id, date, []))
            continue
        turn_id, speaker, text, *caption = fields
        sessions[-1][2].append(
            Turn(turn_id, speaker, text, image_caption=caption[0] if caption else None)
        )
    if dates is not None:
        assert len(dates) == len(sessions), (dates, [s[0] for s in sessions])
        sessions = [(s, d, turns) for (s, _, turns), d in zip(sessions, dates, strict=True)]
    speakers = dict.fromkeys(t.speaker for _, _, turns in sessions for t in turns)
    return History(
        history_id=history_id,
        sessions=tuple(Session(s, d, tuple(turns)) for s, d, turns in sessions),
        speakers=tuple(speakers),
    )


def caroline_and_melanie(
    dates: Sequence[str] = LOCOMO_DATES, history_id: str = "conv 7"
) -> History:
    """The eight-turn history of CAROLINE_AND_MELANIE.

    Args:
        dates: the three session dates.
        history_id: its id (the default has a space, which some systems refuse in their ids).

    Returns:
        The History.
    """
    return history(CAROLINE_AND_MELANIE, history_id, dates)
