"""LongMemEval reader prompts: date order, dates shown, has_answer hidden, formats, notes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memevals.benchmarks.longmemeval.data import Instance, load_longmemeval
from memevals.benchmarks.longmemeval.memory import (
    LongMemEvalMemory,
    history_text,
    render_turns,
    select_sessions,
    session_blocks,
)
from memevals.benchmarks.longmemeval.prompts import (
    NO_NOTES,
    is_empty_note,
    judge_inputs,
    note_prompt,
    notes_text,
    question_text,
)
from memevals.benchmarks.longmemeval.samples import build_item, in_categories, parse_categories
from memevals.core.tokens import get_token_counter

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def instances(variant: str) -> dict[str, Instance]:
    return {i.question_id: i for i in load_longmemeval(variant, FIXTURES, verify_checksum=False)}


ORACLE = instances("oracle")
S = instances("s")


def session_dates(text: str) -> list[str]:
    return re.findall(r"^Session date: (.*)$", text, flags=re.MULTILINE)


def test_oracle_history_is_rendered_in_date_order() -> None:
    inst = ORACLE["fx11c3d4"]  # the file lists the wedding (Apr 15) before the dentist (Apr 3)
    text = history_text(session_blocks(inst.sessions, "json"))
    assert session_dates(text) == ["2024/04/03 (Wed) 12:00", "2024/04/15 (Mon) 22:10"]
    assert text.index("dentist") < text.index("wedding")
    assert re.findall(r"^### Session (\d+)$", text, flags=re.MULTILINE) == ["1", "2"]


def test_every_session_has_its_date_and_the_question_its_date() -> None:
    inst = S["fx09e9f0"]
    text = history_text(session_blocks(inst.sessions, "text"))
    assert session_dates(text) == sorted(inst.haystack_dates)
    assert len(session_dates(text)) == len(inst.sessions) == 6
    assert question_text(inst) == (
        "Current Date: 2023/12/01 (Fri) 09:00\n"
        "Question: How much did I spend in total on the bike and the helmet?\nAnswer:"
    )


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_has_answer_is_never_shown(fmt: str) -> None:
    for inst in S.values():
        text = history_text(session_blocks(inst.sessions, fmt))
        assert "has_answer" not in text
        assert "true" not in text.lower().split()


def test_json_body_is_role_and_content_only() -> None:
    (session,) = ORACLE["fx01a2b3"].sessions
    body = render_turns(session.turns, "json")
    assert json.loads(body) == [{"role": t.role, "content": t.content} for t in session.turns]
    assert "Business Administration" in body


def test_text_body_is_role_lines() -> None:
    (session,) = ORACLE["fx02c4d5"].sessions
    assert render_turns(session.turns, "text").split("\n") == [
        "user: Can you recommend podcasts for my commute?",
        "assistant: Sure. How long is the commute, so I can match episode lengths?",
        "user: It's 45 minutes each way on the train.",
        "assistant: Then 40-50 minute episodes fit well: try a history or science show.",
    ]


def test_unknown_history_format() -> None:
    with pytest.raises(ValueError, match="history_format='xml' is not one of json, text"):
        render_turns(ORACLE["fx01a2b3"].sessions[0].turns, "xml")


def test_context_selection() -> None:
    inst = S["fx08c7d8"]
    assert len(select_sessions(inst, "full")) == 6
    assert {s.session_id for s in select_sessions(inst, "oracle")} == {
        "answer_a4e8d1f6_1",
        "answer_a4e8d1f6_2",
    }
    assert select_sessions(inst, "none") == ()
    assert history_text(session_blocks(select_sessions(inst, "none"))) == ""
    with pytest.raises(ValueError, match="context='rag' is not one of full, oracle, none"):
        select_sessions(inst, "rag")


def test_same_date_sessions_keep_file_order() -> None:
    inst = S["fx16a3b4_abs"]
    blocks = session_blocks(list(inst.sessions) + list(inst.sessions), "text")
    ids = [b.session_id for b in blocks]
    # each session appears twice in a row, first copy first (stable sort)
    assert ids[0::2] == ids[1::2]


def test_build_item_and_judge_inputs() -> None:
    inst = S["fx13a7b8_abs"]
    item = build_item(inst, LongMemEvalMemory("oracle"), variant="s")
    assert item.id == "fx13a7b8_abs"
    assert item.target == inst.answer_text
    # one user message: the history, a blank line, the current date and the question
    assert item.system == ""
    assert "\n\nCurrent Date: 2024/05/20 (Mon) 09:00\n" in item.user
    assert "Korean" in item.user.split("\n\nCurrent Date:")[0]
    md = item.metadata
    assert md["category"] == "temporal_reasoning" and md["abstention"] is True
    assert md["session_ids_shown"] == ["answer_3a9f7c55_1"]
    # one prompt size for both frameworks: the one message, by the memory's counter
    counter = get_token_counter()
    assert md["token_counter"] == counter.name
    assert md["prompt_tokens"] == counter(item.user)
    assert md["judge"] == {
        "criterion": "lme_abstention",  # any _abs id, whatever its type
        "question": "How many weeks ago did I start learning Japanese?",
        "reference": inst.answer_text,
        "question_date": "2024/05/20 (Mon) 09:00",
    }


@pytest.mark.parametrize(
    ("qid", "criterion"),
    [
        ("fx01a2b3", "lme_standard"),
        ("fx04a8b9", "lme_standard"),
        ("fx06e3f4", "lme_preference"),
        ("fx08c7d8", "lme_standard"),
        ("fx11c3d4", "lme_temporal"),
        ("fx14c9d0", "lme_knowledge_update"),
        ("fx16a3b4_abs", "lme_abstention"),
    ],
)
def test_judge_criterion_per_type(qid: str, criterion: str) -> None:
    assert judge_inputs(S[qid])["criterion"] == criterion


def test_preference_reference_is_the_rubric() -> None:
    assert "Mediterranean" in str(judge_inputs(S["fx07a5b6"])["reference"])


def test_categories() -> None:
    assert parse_categories(None)[-1] == "abstention"
    assert parse_categories("temporal-reasoning, knowledge_update") == [
        "temporal_reasoning",
        "knowledge_update",
    ]
    assert parse_categories("single-session-user") == ["single_session_user"]
    with pytest.raises(ValueError, match="unknown LongMemEval category 'temporal'"):
        parse_categories("temporal")
    with pytest.raises(ValueError, match="categories is empty"):
        parse_categories(" , ")
    for qid, categories, belongs in [
        ("fx13a7b8_abs", ["abstention"], True),
        ("fx13a7b8_abs", ["temporal_reasoning"], True),
        ("fx11c3d4", ["abstention"], False),
    ]:
        inst = S[qid]
        assert in_categories(inst.category, inst.is_abstention, categories) is belongs


def test_note_prompt_and_notes_text() -> None:
    inst = ORACLE["fx12e5f6"]
    blocks = session_blocks(inst.sessions, "json")
    prompt = note_prompt(blocks[0], inst.question, inst.question_date)
    assert "Session date: 2024/02/03 (Sat) 10:05" in prompt
    assert "pottery" in prompt and inst.question in prompt
    assert "Current date: 2024/03/10 (Sun) 11:00" in prompt
    assert "has_answer" not in prompt
    text = notes_text(blocks, ["Pottery class started.", " Empty. "])
    assert session_dates(text) == ["2024/02/03 (Sat) 10:05"]
    assert "Pottery class started." in text and "dog" not in text
    assert NO_NOTES in notes_text(blocks, ["empty", "EMPTY"])
    with pytest.raises(ValueError, match="1 notes for 2 sessions"):
        notes_text(blocks, ["x"])


@pytest.mark.parametrize(
    ("note", "empty"),
    [("empty", True), ("Empty.", True), ('"empty"', True), ("", True), ("empty of news", False)],
)
def test_is_empty_note(note: str, empty: bool) -> None:
    assert is_empty_note(note) is empty
