"""LoCoMo-Plus adapter: stitching parity on all 401 instances, the
benchmarks/locomo_plus/README.md#measured-on-the-pinned-files counts,
gap parsing, gap_fix, bad input, determinism.

The reference below restates the official unified builder
(benchmarks/locomo_plus/README.md#stitching) as
plainly as possible, working on the raw JSON rather than on our dataclasses, so that a mistake
in our adapter cannot be repeated by the reference.
"""

from __future__ import annotations

import copy
import json
import re
import statistics
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo_plus.data import (
    LOCOMO_PLUS_FILE,
    load_locomo_plus,
    load_locomo_plus_file,
    parse_locomo_plus,
)
from memevals.benchmarks.locomo_plus.prompts import build_plus_items, cue_evidence
from memevals.benchmarks.locomo_plus.stitch import (
    parse_time_gap,
    parse_time_gap_fixed,
    stitch,
    stitch_all,
)
from memevals.core.files import DataError

# --------------------------------------------------------------------------- reference

# largest first (the test's own order)
_REF_WORDS = {
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
}
_REF_GAP = re.compile(
    r"\b(\d+|twelve|eleven|ten|nine|eight|seven|six|five|four|three|two|one|an|a)\b"
    r"\s*(week|weeks|month|months|year|years)\b"
)


def ref_gap_days(text: str) -> int:
    m = _REF_GAP.search(text.lower().strip())
    if not m:
        return 0
    num, unit = m.groups()
    if num.isdigit():
        count = int(num)
    elif num in ("a", "an"):
        count = 1
    else:
        count = _REF_WORDS[num]
    if unit.startswith("week"):
        return count * 7
    if unit.startswith("month"):
        return count * 30
    return count * 365


def ref_lines(text: str) -> list[tuple[str, str]]:
    out = []
    for line in text.split("\n"):
        line = line.strip()
        if line.startswith("A:"):
            out.append(("A", line[2:].strip()))
        elif line.startswith("B:"):
            out.append(("B", line[2:].strip()))
    return out


def ref_stitch(plus: dict[str, Any], host: dict[str, Any]) -> dict[str, Any]:
    conv = host["conversation"]
    sessions, times = [], []
    k = 1
    while f"session_{k}" in conv:
        sessions.append(conv[f"session_{k}"])
        times.append(datetime.strptime(conv[f"session_{k}_date_time"], "%I:%M %p on %d %B, %Y"))
        k += 1
    query_time = times[-1] + timedelta(days=7)
    cue_time = query_time - timedelta(days=ref_gap_days(plus["time_gap"]))
    cue_idx = None
    for i, t in enumerate(times):
        if t <= cue_time:
            cue_idx = i
        else:
            break

    def who(role: str) -> str:
        return str(conv["speaker_a"] if role == "A" else conv["speaker_b"])

    cue = [(who(r), t) for r, t in ref_lines(plus["cue_dialogue"])]
    trigger = [(who(r), t) for r, t in ref_lines(plus["trigger_query"])]
    events: list[tuple[datetime, list[tuple[str, str]]]] = [
        (t, [(turn["speaker"], turn["text"]) for turn in s])
        for s, t in zip(sessions, times, strict=True)
    ]
    events.append((cue_time, cue))
    events.append((query_time, trigger))
    events.sort(key=lambda e: e[0])  # Python's sort is stable
    dialogue = [turn for _, turns in events for turn in turns]
    return {
        "dialogue": dialogue,
        "cue_idx": cue_idx,
        "cue_time": cue_time,
        "query_time": query_time,
        "cue": cue,
        "trigger": trigger,
        # the official model input: stripped texts, no captions, no dates
        "input_prompt": "\n".join(f'{s} said, "{(t or "").strip()}"' for s, t in dialogue),
        "evidence": "\n".join(f"{s}：{t.strip()}" for s, t in cue if t),
    }


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def raw(data_dir: Path) -> tuple[list[Any], list[Any]]:
    plus = json.loads((data_dir / "locomo_plus" / "locomo_plus.json").read_text("utf-8"))
    locomo = json.loads((data_dir / "locomo" / "locomo10.json").read_text("utf-8"))
    return plus, locomo


@pytest.fixture(scope="module")
def stitched(data_dir: Path) -> list[Any]:
    return stitch_all(load_locomo_plus(data_dir), load_locomo(data_dir))


# --------------------------------------------------------------------------- parity


def test_all_401_match_the_official_construction_turn_for_turn(
    raw: tuple[list[Any], list[Any]], stitched: list[Any], data_dir: Path
) -> None:
    plus, locomo = raw
    assert len(plus) == len(stitched) == 401
    items = {
        i.id: i
        for i in build_plus_items(
            load_locomo(data_dir), stitched, categories="cognitive", gap_fix=False
        )
    }
    for i, (p, st) in enumerate(zip(plus, stitched, strict=True)):
        ref = ref_stitch(p, locomo[i % 10])
        ours = [(t.speaker, t.text) for t in st.dialogue]
        assert len(ours) == len(ref["dialogue"]), i
        assert ours == [(s, t.strip()) for s, t in ref["dialogue"]], i
        assert st.cue_session_idx == ref["cue_idx"], i
        assert st.cue_time == ref["cue_time"] and st.query_time == ref["query_time"], i
        assert [(t.speaker, t.text) for t in st.cue_turns] == ref["cue"], i
        assert st.dialogue[-len(st.trigger_turns) :] == st.trigger_turns, i
        assert [(t.speaker, t.text) for t in st.trigger_turns] == ref["trigger"], i
        # the model input: history (system, after our one-line preamble) + trigger (user)
        item = items[f"plus-{i}"]
        history = item.system.split("\n\n", 1)[1]
        trigger_line = item.user.split("\n\n", 1)[0]
        assert f"{history}\n{trigger_line}" == ref["input_prompt"], i
        assert item.metadata["judge"]["evidence"] == ref["evidence"] == cue_evidence(st), i
        assert item.metadata["host"] == locomo[i % 10]["sample_id"], i


def test_cue_position_is_where_the_cue_turns_sit(stitched: list[Any]) -> None:
    for st in stitched:
        n = len(st.cue_turns)
        assert st.dialogue[st.cue_position : st.cue_position + n] == st.cue_turns
        assert all(t.source == "cue" for t in st.cue_turns)
        before = {t.session for t in st.dialogue[: st.cue_position] if t.session}
        expected = 0 if st.cue_session_idx is None else st.cue_session_idx + 1
        assert len(before) == st.sessions_before_cue == expected
        # inserted turns carry no dia_id, original turns keep theirs
        assert all(t.dia_id is None for t in (*st.cue_turns, *st.trigger_turns))


# ---------------------------------------------------------------------------
# benchmarks/locomo_plus/README.md#measured-on-the-pinned-files


def test_counts_from_benchmarks_md(stitched: list[Any]) -> None:
    relations = Counter(st.instance.relation_type for st in stitched)
    assert relations == {"causal": 101, "state": 100, "goal": 100, "value": 100}
    hosts = Counter(st.host.sample_id for st in stitched)
    assert hosts["conv-26"] == 41
    assert sorted(v for k, v in hosts.items() if k != "conv-26") == [40] * 9
    assert sum(st.cue_session_idx is None for st in stitched) == 28
    assert sum(st.sessions_between == 0 for st in stitched) == 33
    after_last = Counter(st.gap_days for st in stitched if st.sessions_between == 0)
    assert after_last == {0: 15, 7: 18}
    between = [st.sessions_between for st in stitched]
    assert (min(between), max(between)) == (0, 31)

    days_table = {0: 15, 7: 18, 14: 13, 21: 20, 30: 57, 42: 36, 49: 1, 56: 1, 60: 61, 90: 64}
    days_table |= {120: 30, 150: 11, 180: 41, 210: 6, 240: 10, 270: 8, 365: 9}
    assert Counter(st.gap_days for st in stitched) == days_table

    unparsed = Counter(st.instance.time_gap for st in stitched if not st.gap_parsed)
    assert unparsed == {
        "several months later": 11,
        "several years later": 1,
        "a couple of months later": 1,
        "several weeks later": 1,
        "a few weeks later": 1,
    }
    assert all(st.gap_days == 0 for st in stitched if not st.gap_parsed)
    medians = {
        r: statistics.median(st.gap_days for st in stitched if st.instance.relation_type == r)
        for r in relations
    }
    assert medians == {"causal": 60, "state": 60, "value": 60, "goal": 90}
    assert len({st.instance.time_gap for st in stitched}) == 50


def test_cue_shapes_and_the_literal_backslash_n_quirk(stitched: list[Any]) -> None:
    shapes = Counter(len(st.cue_turns) for st in stitched)
    assert shapes == {2: 357, 1: 44}
    quirk = [st for st in stitched if "\\n" in st.instance.cue_dialogue]
    assert len(quirk) == 31
    assert {st.instance.model_name for st in quirk} == {"gpt-5-nano"}
    for st in quirk:
        # one line, spoken by A (speaker_a), that still contains the two characters \n and "B:"
        assert len(st.cue_turns) == 1
        assert st.cue_turns[0].speaker == st.host.speaker_a
        assert "\\nB:" in st.cue_turns[0].text
    assert all(len(st.trigger_turns) == 1 for st in stitched)
    assert all(st.trigger_turns[0].speaker == st.host.speaker_a for st in stitched)


def test_original_turn_texts_are_stripped(stitched: list[Any]) -> None:
    conv26 = next(st for st in stitched if st.host.sample_id == "conv-26")
    raw_turn = next(t for t in conv26.host.turns if t.dia_id == "D5:3")
    assert raw_turn.text != raw_turn.text.strip()  # the file has padding here
    ours = next(t for t in conv26.dialogue if t.dia_id == "D5:3")
    assert ours.text == raw_turn.text.strip()
    assert all(t.text == t.text.strip() for st in stitched for t in st.dialogue)


# --------------------------------------------------------------------------- gap parsing


@pytest.mark.parametrize(
    ("phrase", "days"),
    [
        ("two weeks later", 14),
        ("About THREE months later", 90),
        ("a year after", 365),
        ("an month later", 30),
        ("a month later", 30),
        ("12 months later", 360),
        ("3 weeks later", 21),
        ("3weeks later", 0),  # no word boundary between the count and the unit
        ("two months after the challenge ended", 60),
        ("around one week after the birth", 7),
        ("eleven years", 4015),
        ("thirteen weeks later", 0),  # counts stop at twelve
        ("several months later", 0),
        ("a couple of months later", 0),
        ("a few weeks later", 0),
        ("one day later", 0),  # days are not a unit
        ("later, about two  weeks", 14),
        ("one weekend later", 0),  # "weekend" is not "week" + boundary
    ],
)
def test_parse_time_gap(phrase: str, days: int) -> None:
    assert parse_time_gap(phrase) == days == ref_gap_days(phrase)


@pytest.mark.parametrize(
    ("phrase", "days"),
    [
        ("several months later", 90),
        ("several years later", 1095),
        ("a couple of months later", 60),
        ("several weeks later", 21),
        ("a few weeks later", 21),
        ("two weeks later", 14),  # parseable phrases are unchanged
        ("one day later", 0),
    ],
)
def test_gap_fix(phrase: str, days: int) -> None:
    assert parse_time_gap_fixed(phrase) == days


def test_gap_fix_moves_only_the_15_vague_items(data_dir: Path, stitched: list[Any]) -> None:
    fixed = stitch_all(load_locomo_plus(data_dir), load_locomo(data_dir), gap_fix=True)
    changed = [(a, b) for a, b in zip(stitched, fixed, strict=True) if a.dialogue != b.dialogue]
    assert all(not a.gap_parsed for a, _ in changed)
    assert sum(a.gap_days != b.gap_days for a, b in zip(stitched, fixed, strict=True)) == 15
    assert all(b.gap_days > 0 for b in fixed)
    assert sum(st.sessions_between == 0 for st in fixed) == 18  # was 33
    assert sum(st.cue_session_idx is None for st in fixed) == 29  # "several years" -> 3 years
    assert len(changed) == 15


# --------------------------------------------------------------------------- bad input


def _record(raw_plus: list[Any], **changes: Any) -> list[Any]:
    rec = copy.deepcopy(raw_plus[0])
    rec.update(changes)
    return [copy.deepcopy(raw_plus[1]), rec]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"relation_type": "emotional"}, "relation_type", "unknown relation type"),
        ({"cue_dialogue": "   "}, "cue_dialogue", "is empty"),
        ({"trigger_query": ""}, "trigger_query", "is empty"),
        ({"trigger_query": "I went there."}, "trigger_query", "no line starting"),
        ({"cue_dialogue": "A: fine\nB:"}, "cue_dialogue", "line 2 has a speaker but no text"),
        ({"time_gap": 14}, "time_gap", "expected str"),
        ({"time_gap": ""}, "time_gap", "is empty"),
        ({"relation_type": None}, "relation_type", "expected str"),
    ],
)
def test_bad_instance_names_index_and_field(
    raw: tuple[list[Any], list[Any]], changes: dict[str, Any], field: str, message: str
) -> None:
    bad = _record(raw[0], **changes)
    with pytest.raises(DataError) as err:
        parse_locomo_plus(bad, Path("plus.json"))
    assert err.value.record == "instance 1"
    assert err.value.field == field
    assert message in str(err.value)
    assert "instance 1" in str(err.value) and f"'{field}'" in str(err.value)


def test_missing_field_and_wrong_shapes(raw: tuple[list[Any], list[Any]]) -> None:
    rec = copy.deepcopy(raw[0][0])
    del rec["cue_dialogue"]
    with pytest.raises(DataError, match=r"instance 0, field 'cue_dialogue': missing"):
        parse_locomo_plus([rec], Path("plus.json"))
    with pytest.raises(DataError, match="expected a list of instances"):
        parse_locomo_plus({"a": 1}, Path("plus.json"))
    with pytest.raises(DataError, match="record instance 0: expected a JSON object"):
        parse_locomo_plus(["x"], Path("plus.json"))


def test_host_index_out_of_range(data_dir: Path) -> None:
    instances = load_locomo_plus(data_dir)
    five = load_locomo(data_dir)[:5]
    assert stitch(instances[14], five).host.sample_id == five[4].sample_id
    with pytest.raises(DataError) as err:
        stitch(instances[17], five)
    assert err.value.record == "instance 17" and err.value.field == "host"
    assert "host index 7" in str(err.value) and "only 5" in str(err.value)


def test_corrupt_file_and_checksum(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "locomo_plus" / "locomo_plus.json"
    path.parent.mkdir()
    path.write_text('[{"relation_type": "causal",', encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON"):
        load_locomo_plus_file(path)
    with pytest.raises(DataError, match=LOCOMO_PLUS_FILE.sha256):
        load_locomo_plus(tmp_path)
    assert len(load_locomo_plus_file(data_dir / LOCOMO_PLUS_FILE.relpath)) == 401


# --------------------------------------------------------------------------- determinism


def test_stitching_is_deterministic(data_dir: Path, stitched: list[Any]) -> None:
    plus = load_locomo_plus_file(data_dir / LOCOMO_PLUS_FILE.relpath)  # fresh parse, no cache
    again = stitch_all(plus, load_locomo(data_dir))
    assert [s.dialogue for s in again] == [s.dialogue for s in stitched]
    assert [s.cue_time for s in again] == [s.cue_time for s in stitched]
