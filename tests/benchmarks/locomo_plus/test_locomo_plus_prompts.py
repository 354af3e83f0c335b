"""LoCoMo-Plus prompts and memory strategies: unified vs disclosed input, judge inputs, context
modes for cognitive samples, and byte-identical inputs across builds."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.memory import locomo_memory
from memevals.benchmarks.locomo.prompts import CHOICE_INSTRUCTION, TEMPORAL_INSTRUCTION, build_items
from memevals.benchmarks.locomo_plus.data import load_locomo_plus, load_locomo_plus_file
from memevals.benchmarks.locomo_plus.memory import (
    cognitive_context,
    render_history,
    truncate_history,
    turn_id,
)
from memevals.benchmarks.locomo_plus.prompts import (
    CATEGORIES,
    UNIFIED_INSTRUCTION,
    build_plus_items,
    cognitive_instruction,
    format_locomo_time,
    parse_plus_categories,
)
from memevals.benchmarks.locomo_plus.samples import LocomoPlusOptions, build
from memevals.benchmarks.locomo_plus.stitch import stitch_all
from memevals.core.memory_options import MemoryOptions
from memevals.core.tokens import get_token_counter


@pytest.fixture(scope="module")
def convs(data_dir: Path) -> list[Any]:
    return load_locomo(data_dir)


@pytest.fixture(scope="module")
def stitched(data_dir: Path, convs: list[Any]) -> list[Any]:
    return stitch_all(load_locomo_plus(data_dir), convs)


@pytest.fixture(scope="module")
def unified(convs: list[Any], stitched: list[Any]) -> dict[str, Any]:
    return {i.id: i for i in build_plus_items(convs, stitched)}


@pytest.fixture(scope="module")
def disclosed(convs: list[Any], stitched: list[Any]) -> dict[str, Any]:
    return {i.id: i for i in build_plus_items(convs, stitched, disclose_task=True)}


def test_sample_counts_ids_and_order(unified: dict[str, Any]) -> None:
    ids = list(unified)
    assert len(ids) == 2387
    assert ids[:2] == ["conv-26-q0", "conv-26-q1"]
    assert ids[1986:] == [f"plus-{i}" for i in range(401)]
    cats = [unified[i].metadata["category"] for i in ids]
    assert {c: cats.count(c) for c in CATEGORIES} == {
        "multi_hop": 282,
        "temporal": 321,
        "open_domain": 96,
        "single_hop": 841,
        "adversarial": 446,
        "cognitive": 401,
    }


def test_unified_input_discloses_nothing(unified: dict[str, Any]) -> None:
    for item in unified.values():
        assert item.user.endswith("\n\n" + UNIFIED_INSTRUCTION)
        assert item.user.count(UNIFIED_INSTRUCTION) == 1
        if item.metadata["category"] != "cognitive":
            assert item.metadata["choices"] is None  # adversarial: no two-option form
    # one instruction text, whatever the category
    instructions = {i.user.rsplit("\n\n", 1)[1] for i in unified.values()}
    assert instructions == {UNIFIED_INSTRUCTION}
    words = ("memory", "cognitive", "cue", "remember", "causal", "temporal", "date")
    assert not any(w in UNIFIED_INSTRUCTION.lower() for w in words)
    q = unified["conv-26-q0"]  # a temporal question gets no date hint
    assert q.user == f"Question: {q.metadata['question']}\n\n{UNIFIED_INSTRUCTION}"
    assert TEMPORAL_INSTRUCTION not in q.user


def test_cognitive_sample_layout(unified: dict[str, Any], stitched: list[Any]) -> None:
    st = stitched[5]
    item = unified["plus-5"]
    host = st.host
    assert item.system.startswith(f"Below is a conversation between {host.speaker_a} and ")
    assert "DATE:" not in item.system and "shared" not in item.system.split("\n")[0]
    trigger = st.trigger_turns[0]
    assert item.user.split("\n\n")[0] == f'{trigger.speaker} said, "{trigger.text}"'
    assert trigger.text not in item.system  # the trigger is the query, not history
    assert item.target == ""
    md = item.metadata
    assert md["host"] == "conv-44" and md["host_index"] == 5
    assert md["relation_type"] == "causal" and md["time_gap"] == "about one week later"
    assert md["gap_days"] == 7 and md["sessions_between"] == 0
    assert md["cue_position"] == st.cue_position
    judge = md["judge"]
    assert judge["criterion"] == "cognitive" and judge["reference"] is None
    assert judge["evidence"] == md["cue"]
    assert judge["evidence"].startswith(f"{host.speaker_a}：Running out of gas")
    assert judge["question"] is None  # the official judge sees only the cue and the reply
    assert judge["question_date"] == "9:02 am on 29 November, 2023"
    assert judge["session_dates"][-1] == "9:02 am on 22 November, 2023"


def test_locomo_samples_match_the_locomo_task(
    unified: dict[str, Any], disclosed: dict[str, Any], convs: list[Any]
) -> None:
    """Same context and judge inputs as `locomo`; disclosed questions are `locomo`'s exactly."""
    base = {i.id: i for i in build_items(convs)}
    for sid, item in base.items():
        assert unified[sid].system == item.system
        assert disclosed[sid].user == item.user
        assert disclosed[sid].metadata["choices"] == item.metadata["choices"]
        assert unified[sid].metadata["judge"] == item.metadata["judge"]
        assert unified[sid].metadata["relation_type"] is None
        assert unified[sid].target == item.target


def test_disclosed_instructions(disclosed: dict[str, Any], stitched: list[Any]) -> None:
    temporal = next(i for i in disclosed.values() if i.metadata["category"] == "temporal")
    assert TEMPORAL_INSTRUCTION in temporal.user
    adversarial = next(i for i in disclosed.values() if i.metadata["category"] == "adversarial")
    assert CHOICE_INSTRUCTION in adversarial.user and "(b)" in adversarial.user
    st = stitched[0]
    cog = disclosed["plus-0"]
    assert cog.user.endswith(cognitive_instruction(st.host.speaker_a, st.host.speaker_b))
    assert UNIFIED_INSTRUCTION not in cog.user
    assert st.instance.relation_type not in cog.user.lower()


def test_parse_categories() -> None:
    assert parse_plus_categories(None) == list(CATEGORIES)
    assert parse_plus_categories("cognitive, 2,temporal") == ["cognitive", "temporal"]
    with pytest.raises(ValueError, match="unknown LoCoMo-Plus category 'memory'"):
        parse_plus_categories("memory")
    with pytest.raises(ValueError, match="categories is empty"):
        parse_plus_categories(" , ")


def test_format_locomo_time() -> None:
    assert format_locomo_time(datetime(2023, 5, 8, 13, 56)) == "1:56 pm on 8 May, 2023"
    assert format_locomo_time(datetime(2023, 5, 8, 0, 5)) == "12:05 am on 8 May, 2023"
    assert format_locomo_time(datetime(2023, 5, 8, 12, 0)) == "12:00 pm on 8 May, 2023"


# --------------------------------------------------------------------------- context modes


def _cog(convs: list[Any], stitched: list[Any], context: str, **kw: Any) -> dict[str, Any]:
    memory = locomo_memory(MemoryOptions(context, **kw))
    items = build_plus_items(
        convs,
        stitched,
        categories="cognitive",
        context=memory,
        cognitive=cognitive_context(memory),
        context_mode=context,
    )
    return {i.id: i for i in items}


def test_none_and_oracle(convs: list[Any], stitched: list[Any]) -> None:
    none = _cog(convs, stitched, "none")
    assert all(i.system == "" and i.metadata["shown_turns"] == [] for i in none.values())
    oracle = _cog(convs, stitched, "oracle")
    for st in stitched:
        item = oracle[st.instance.sample_id]
        lines = item.system.split("\n\n", 1)[1].split("\n")
        assert lines == [f'{t.speaker} said, "{t.text}"' for t in st.cue_turns]
        assert item.metadata["retrieved_ids"] == [
            f"cue:{n}" for n in range(1, len(st.cue_turns) + 1)
        ]


def test_truncated_keeps_recent_lines_within_budget(convs: list[Any], stitched: list[Any]) -> None:
    counter = get_token_counter("approx")
    for st in stitched[:12]:
        text, shown = truncate_history(st, 800, counter)
        assert counter(text) <= 800
        history_len = len(st.dialogue) - len(st.trigger_turns)
        assert shown == tuple(range(history_len - len(shown), history_len))
        # one more line would not fit
        longer = truncate_history(st, 10**9, counter)[1][-(len(shown) + 1) :]
        assert counter(render_history(st, longer)) > 800
        cue_kept = st.cue_position >= history_len - len(shown)
        assert cue_kept == (st.cue_turns[0].text in text)
    with pytest.raises(ValueError, match="max_context_tokens=5 is smaller than one turn"):
        truncate_history(stitched[0], 5, counter)


def test_rag_retrieves_history_turns_by_the_trigger(convs: list[Any], stitched: list[Any]) -> None:
    pytest.importorskip("bm25s")
    sub = stitched[:20]
    rag = _cog(convs, sub, "rag", top_k=3)
    for st in sub:
        md = rag[st.instance.sample_id].metadata
        assert len(md["retrieved_ids"]) == 3
        assert md["shown_turns"] == sorted(md["shown_turns"])
        # the shown lines are exactly the retrieved turns, in dialogue order
        assert sorted(turn_id(st, p) for p in md["shown_turns"]) == sorted(md["retrieved_ids"])
        lines = rag[st.instance.sample_id].system.split("\n\n", 1)[1].split("\n")
        assert lines == [
            f'{st.dialogue[p].speaker} said, "{st.dialogue[p].text}"' for p in md["shown_turns"]
        ]
        assert st.trigger_turns[0].text not in rag[st.instance.sample_id].system
    with pytest.raises(ValueError, match="retrieval_unit='summary' does not apply"):
        cognitive_context(locomo_memory(MemoryOptions("rag", retrieval_unit="summary")))


# --------------------------------------------------------------------------- determinism

_DIGEST = """
import hashlib, json, sys
from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo_plus.data import load_locomo_plus
from memevals.benchmarks.locomo_plus.prompts import build_plus_items
from memevals.benchmarks.locomo_plus.stitch import stitch_all
convs = load_locomo(sys.argv[1])
st = stitch_all(load_locomo_plus(sys.argv[1]), convs, gap_fix=sys.argv[2] == "1")
h = hashlib.sha256()
for i in build_plus_items(convs, st, disclose_task=sys.argv[3] == "1"):
    h.update(json.dumps([i.id, i.system, i.user, i.target, i.metadata], sort_keys=True,
                        ensure_ascii=False, default=str).encode("utf-8"))
print(h.hexdigest())
"""


#: A string whose hash shows which hash seed a process has (equal seeds, equal hashes).
PROBE = "memevals hash seed probe"


def _digest(data_dir: Path, gap_fix: bool, disclose: bool) -> str:
    """The digest of every built sample, computed in this interpreter."""
    argv = [str(data_dir), str(int(gap_fix)), str(int(disclose))]
    saved, printed = sys.argv, io.StringIO()
    sys.argv = ["-c", *argv]
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(_DIGEST, "<digest>", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = saved
    return printed.getvalue().strip()


def test_building_twice_gives_byte_identical_inputs(data_dir: Path) -> None:
    """A fresh process with another hash seed than this one builds identical samples: no
    unseeded choice."""
    # a real process: the seed is what varies, fixed when an interpreter starts. This process
    # is the other build (one interpreter start instead of two, building while the other one
    # does); the hash of a probe string shows the two seeds differ.
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    argv = [str(data_dir), "0", "1"]  # gap_fix off, task disclosed
    proc = subprocess.Popen(
        [sys.executable, "-c", _DIGEST + f"print(hash({PROBE!r}))\n", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )
    try:
        first = _digest(data_dir, gap_fix=False, disclose=True)
    finally:
        out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    other, probe = out.split()
    assert int(probe) != hash(PROBE)  # another hash seed than this process's
    assert len(first) == 64
    assert other == first
    # and the digest does see the options: gap_fix changes 15 samples
    assert _digest(data_dir, gap_fix=True, disclose=True) != first


def test_in_process_rebuild_is_identical(
    convs: list[Any], stitched: list[Any], data_dir: Path
) -> None:
    fresh = stitch_all(load_locomo_plus_file(data_dir / "locomo_plus" / "locomo_plus.json"), convs)
    a = build_plus_items(convs, stitched, categories="cognitive")
    b = build_plus_items(convs, fresh, categories="cognitive")

    def dump(items: list[Any]) -> bytes:
        return json.dumps(
            [[i.id, i.system, i.user, i.metadata] for i in items], sort_keys=True
        ).encode()

    assert hashlib.sha256(dump(a)).digest() == hashlib.sha256(dump(b)).digest()


# --------------------------------------------------------------------------- samples.build


def test_build_checks_the_options_before_reading_any_file(tmp_path: Path) -> None:
    empty = tmp_path  # no data here: an option error must come first
    with pytest.raises(ValueError, match="sample_order='shuffled' is not one of file, host"):
        build(LocomoPlusOptions(protocol="memevals", data_dir=empty, sample_order="shuffled"))
    with pytest.raises(ValueError, match="unknown LoCoMo-Plus category 'memory'"):
        build(LocomoPlusOptions(protocol="memevals", data_dir=empty, categories="memory"))
    rag_summary = MemoryOptions("rag", retrieval_unit="summary")
    with pytest.raises(ValueError, match="retrieval_unit='summary' does not apply"):
        build(
            LocomoPlusOptions(
                protocol="memevals", data_dir=empty, categories="cognitive", memory=rag_summary
            )
        )


def test_build_annotates_both_kinds_and_logs_both_summaries(
    convs: list[Any], stitched: list[Any]
) -> None:
    options = LocomoPlusOptions(
        protocol="memevals", categories="temporal,cognitive", memory=MemoryOptions("oracle")
    )
    built = build(options)
    items, log = built.items, built.metadata["memory"]
    memory = locomo_memory(MemoryOptions("oracle"))
    plain = build_plus_items(
        convs,
        stitched,
        categories="temporal,cognitive",
        context=memory,
        cognitive=cognitive_context(memory),
        context_mode="oracle",
    )
    # one user message: the context, a blank line, the question (as lm-eval sends it)
    assert [(i.id, i.system, i.user) for i in items] == [(i.id, "", i.as_text()) for i in plain]
    counter = get_token_counter()
    for item in items:
        md = item.metadata
        # one count for both frameworks: the one message sent
        assert md["prompt_tokens"] == counter(item.user)
        assert md["token_counter"] == counter.name and md["turn_level"] is True
        assert ("cue_recall" in md) == (md["category"] == "cognitive")
        assert ("unmatched_evidence" in md) == (md["category"] != "cognitive")
    cognitive = [i for i in items if i.metadata["category"] == "cognitive"]
    assert all(i.metadata["cue_recall"] == 1.0 for i in cognitive)  # the oracle shows the cue
    assert log["context"] == "oracle" and log["cognitive_cue_recall_mean"] == 1.0
    assert log["prompt_tokens_total"] + log["cognitive_prompt_tokens_total"] == sum(
        i.metadata["prompt_tokens"] for i in items
    )
