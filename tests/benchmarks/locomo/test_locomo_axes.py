"""LoCoMo's analysis axes (issue 29, "where memory fails"): how far back a question's evidence
lies from the end of its conversation, where the question is asked, in sessions, turns and
tokens (with the task's token counter).

Worked example: conv-26-q0 ("When did Caroline go to the LGBTQ support group?") cites D1:3, the
third turn of the first of 19 sessions: 18 sessions and 416 turns follow it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.memory import render_conversation, turn_line
from memevals.benchmarks.locomo.record import RECORD
from memevals.benchmarks.locomo.samples import LocomoOptions, build, tokens_after_turns
from memevals.core.memory_options import MemoryOptions
from memevals.core.tokens import get_token_counter
from memevals.tools.report import bucket


def _after(text: str, line: str) -> str:
    """The conversation text after `line` (and the newlines that end it)."""
    assert text.count(line) == 1, line
    return text[text.index(line) + len(line) :].lstrip("\n")


@pytest.mark.parametrize("counter", ["cl100k_base", "approx"])
def test_tokens_after_each_turn_are_the_text_after_it_counted_at_once(
    data_dir: Path, counter: str
) -> None:
    """Summing the lines' counts equals counting the whole text after a turn at once, for every
    turn of conv-26, with both kinds of counter."""
    count = get_token_counter(counter)
    conv = next(c for c in load_locomo(data_dir) if c.sample_id == "conv-26")
    after = tokens_after_turns(conv, count)
    text = render_conversation(conv)
    assert len(after) == len(conv.turns) == 419
    for turn in conv.turns:
        assert after[turn.dia_id] == count(_after(text, turn_line(turn))), turn.dia_id
    assert after[conv.turns[-1].dia_id] == 0


def test_worked_example_and_every_question(data_dir: Path) -> None:
    items = build(
        LocomoOptions(data_dir=data_dir, memory=MemoryOptions("none"), protocol="memevals")
    ).items
    md = {i.id: i.metadata for i in items}
    q0 = md["conv-26-q0"]
    assert q0["evidence_ids"] == ["D1:3"]
    assert (q0["sessions_after_evidence"], q0["turns_after_evidence"]) == (18, 416)
    conv = next(c for c in load_locomo(data_dir) if c.sample_id == "conv-26")
    (d13,) = [t for t in conv.turns if t.dia_id == "D1:3"]
    count = get_token_counter("auto")
    assert q0["token_counter"] == count.name == "cl100k_base"
    rest = _after(render_conversation(conv), turn_line(d13))
    assert rest.startswith("Melanie said,")
    assert q0["tokens_after_evidence"] == count(rest) == 17357
    # every question with matched evidence has the three figures; the four without have none
    keys = ("sessions_after_evidence", "turns_after_evidence", "tokens_after_evidence")
    missing = sorted(sid for sid, m in md.items() if keys[2] not in m)
    assert missing == ["conv-26-q30", "conv-26-q46", "conv-50-q39", "conv-50-q42"]
    assert all(all(k in m for k in keys) == (sid not in missing) for sid, m in md.items())
    # the record declares them as the report's axes, and the token buckets over all 1,986
    axes = {a.key: a for a in RECORD.analysis_axes}
    assert list(axes) == list(keys)
    by_bucket = Counter(bucket(axes[keys[2]], m.get(keys[2])) for m in md.values())
    assert by_bucket == {
        "0–999": 100,
        "1,000–1,999": 123,
        "2,000–3,999": 216,
        "4,000–7,999": 372,
        "8,000–15,999": 701,
        "≥ 16,000": 470,
        None: 4,
    }


def test_the_token_count_follows_the_task_s_counter(data_dir: Path) -> None:
    """`token_counter=approx` counts the same text with the approximate counter."""
    options = MemoryOptions("none", token_counter="approx")
    items = build(LocomoOptions(data_dir=data_dir, memory=options, protocol="memevals")).items
    q0 = next(i.metadata for i in items if i.id == "conv-26-q0")
    assert q0["token_counter"] == "approx"
    conv = next(c for c in load_locomo(data_dir) if c.sample_id == "conv-26")
    (d13,) = [t for t in conv.turns if t.dia_id == "D1:3"]
    rest = _after(render_conversation(conv), turn_line(d13))
    assert q0["tokens_after_evidence"] == get_token_counter("approx")(rest)
