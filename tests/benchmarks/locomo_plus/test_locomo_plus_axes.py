"""LoCoMo-Plus's analysis axes (issue 29, "where memory fails"): the cue's time gap, and how far
back the evidence lies, under LoCoMo's keys: a LoCoMo question's from the end of its
conversation (as the locomo task logs it), a cognitive sample's cue from its trigger.

Worked example: plus-0 ("two weeks later") is stitched into conv-26; the trigger comes 7 days
after the last session, so the cue sits 7 days before it, and every session dated after that
moment lies between the cue and the trigger.
"""

from __future__ import annotations

from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.samples import LocomoOptions
from memevals.benchmarks.locomo.samples import build as build_locomo
from memevals.benchmarks.locomo_plus.data import load_locomo_plus
from memevals.benchmarks.locomo_plus.memory import render_history
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE
from memevals.benchmarks.locomo_plus.record import RECORD
from memevals.benchmarks.locomo_plus.samples import LocomoPlusOptions, build
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance, stitch_all
from memevals.core.memory_options import MemoryOptions
from memevals.core.tokens import get_token_counter
from memevals.tools.report import bucket


def stitched(data_dir: Path) -> dict[str, StitchedInstance]:
    plus = load_locomo_plus(data_dir)
    return {st.instance.sample_id: st for st in stitch_all(plus, load_locomo(data_dir))}


def _samples(data_dir: Path, **options: Any) -> dict[str, dict[str, Any]]:
    opts = LocomoPlusOptions(data_dir=data_dir, **options)
    return {i.id: i.metadata for i in build(opts).items}


def test_worked_example_cue_distance(data_dir: Path) -> None:
    md = _samples(data_dir, categories=COGNITIVE)["plus-0"]
    assert (md["host"], md["time_gap"], md["gap_days"]) == ("conv-26", "two weeks later", 14)
    (conv,) = [c for c in load_locomo(data_dir) if c.sample_id == "conv-26"]
    cue_time = conv.sessions[-1].when + timedelta(days=7) - timedelta(days=14)
    later = [s for s in conv.sessions if s.when > cue_time]
    assert md["sessions_after_evidence"] == len(later) == 2
    assert md["turns_after_evidence"] == sum(len(s.turns) for s in later) == 39
    # the tokens of those 39 lines as the full-context prompt shows them, with the task's
    # counter: the whole text between the cue and the trigger counted at once
    full = render_history(stitched(data_dir)["plus-0"])
    between = "\n".join(full.splitlines()[-39:])
    assert between.startswith(f'{later[0].turns[0].speaker} said, "')
    assert md["tokens_after_evidence"] == get_token_counter("auto")(between) == 1345


def test_every_cognitive_sample_and_the_report_buckets(data_dir: Path) -> None:
    cognitive = _samples(data_dir, categories=COGNITIVE, protocol="memevals")
    assert len(cognitive) == 401
    gaps = Counter(md["gap_days"] for md in cognitive.values())
    # the official time-gap rule's days over the 401 items (unreadable phrases are 0)
    assert gaps == {
        0: 15, 7: 18, 14: 13, 21: 20, 30: 57, 42: 36, 49: 1, 56: 1, 60: 61, 90: 64,
        120: 30, 150: 11, 180: 41, 210: 6, 240: 10, 270: 8, 365: 9,
    }  # fmt: skip
    for md in cognitive.values():
        assert md["sessions_after_evidence"] == md["sessions_between"]
        # the turns between the cue and the trigger: none when no session lies between
        assert (md["turns_after_evidence"] == 0) == (md["sessions_between"] == 0)
    # the cue follows the last session in 33 items (the 15 zero gaps, 18 ties at 7 days)
    assert sum(md["sessions_after_evidence"] == 0 for md in cognitive.values()) == 33
    axes = {a.key: a for a in RECORD.analysis_axes}
    assert list(axes) == [
        "gap_days",
        "sessions_after_evidence",
        "turns_after_evidence",
        "tokens_after_evidence",
    ]
    by_bucket = Counter(bucket(axes["gap_days"], md["gap_days"]) for md in cognitive.values())
    assert by_bucket == {
        "0–6": 15,
        "7–29": 51,
        "30–59": 95,
        "60–89": 61,
        "90–179": 105,
        "≥ 180": 74,
    }


def test_locomo_questions_carry_locomo_s_own_figures(data_dir: Path) -> None:
    none = MemoryOptions("none")
    plus = _samples(data_dir, categories="single_hop,temporal", memory=none, protocol="memevals")
    locomo = {
        (md["conversation_id"], md["qa_index"]): md
        for md in (
            i.metadata
            for i in build_locomo(
                LocomoOptions(data_dir=data_dir, memory=none, protocol="memevals")
            ).items
        )
    }
    assert len(plus) > 100
    keys = ("sessions_after_evidence", "turns_after_evidence")
    for md in plus.values():
        assert "gap_days" not in md
        theirs = locomo[(md["conversation_id"], md["qa_index"])]
        assert {k: md.get(k) for k in keys} == {k: theirs.get(k) for k in keys}
    assert sum("sessions_after_evidence" in md for md in plus.values()) >= len(plus) - 4
