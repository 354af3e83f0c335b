"""Conversation's cached turn lookups equal the scans they replace (LoCoMo data)."""

from __future__ import annotations

from datetime import datetime

import pytest

from memevals.benchmarks.locomo.data import Conversation, Session, Turn


def _conversation() -> Conversation:
    def turn(dia_id: str, session: int) -> Turn:
        return Turn(dia_id=dia_id, speaker="A", text=dia_id, session=session)

    when = datetime(2023, 5, 8)
    sessions = (
        Session(1, "1:56 pm on 8 May, 2023", when, (turn("D1:1", 1), turn("D1:2", 1))),
        Session(2, "1:56 pm on 9 May, 2023", when, ()),
        # an id repeated (files have such slips): positions keep the scans' choices
        Session(3, "1:56 pm on 10 May, 2023", when, (turn("D3:1", 3), turn("D1:2", 3))),
    )
    return Conversation("conv-x", "A", "B", sessions, ())


def test_turns_and_positions_are_computed_once_and_read_only() -> None:
    conv = _conversation()
    assert conv.turns is conv.turns
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D3:1", "D1:2"]
    # as `{t.dia_id: i for i, t in enumerate(turns)}`: the last turn of a repeated id
    assert dict(conv.turn_positions) == {"D1:1": 0, "D1:2": 3, "D3:1": 2}
    # as `turns.index(id)` and the first session holding it
    assert dict(conv.first_turn_places) == {"D1:1": (0, 0), "D1:2": (1, 0), "D3:1": (2, 2)}
    with pytest.raises(TypeError):
        conv.turn_positions["D1:1"] = 5  # type: ignore[index]
    assert conv == _conversation()  # cached values take no part in equality
