"""BEAM data: the pinned files against the shared manifest and git, sample counts and ids on the
shared 100K and 500K data, streaming of the 10M layout, and bad input named precisely."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.beam.data import (
    ABILITIES,
    Conversation,
    beam_files,
    conversations,
    git_blob_id,
    iter_messages,
    load_questions,
)
from memevals.benchmarks.beam.samples import BeamOptions, build
from memevals.core.files import DataError
from memevals.core.memory_options import MemoryOptions


def data_root() -> Path:
    import os

    root = Path(os.environ["MEMEVALS_DATA_DIR"])
    if not (root / "beam" / "MANIFEST.tsv").is_file():
        pytest.fail(f"BEAM data not found under {root}; set MEMEVALS_DATA_DIR")
    return root


def test_pinned_files_equal_the_shared_manifest() -> None:
    with (data_root() / "beam" / "MANIFEST.tsv").open(encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if "/plan-" not in r["path"]]
    pinned = beam_files()
    assert sorted(pinned) == sorted(r["path"] for r in rows)
    for r in rows:
        f = pinned[r["path"]]
        assert f.git_blob == r["git_blob_sha1"]
        assert f.size == (None if r["bytes"] == "-" else int(r["bytes"]))
        assert f.sha256 == (None if r["sha256"] == "-" else r["sha256"])
    sizes = Counter(p.split("/")[1] for p in pinned if p.endswith("probing_questions.json"))
    assert sizes == {"100K": 20, "500K": 35, "1M": 35, "10M": 10}


def test_blob_id_is_gits(tmp_path: Path) -> None:
    path = tmp_path / "x.json"
    path.write_bytes(b'[{"turns": []}]\n')
    git = subprocess.run(
        ["git", "hash-object", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert git_blob_id(path) == git


def test_conversations_use_the_truncated_chat_where_upstream_has_one() -> None:
    convs = conversations("100K")
    assert [c.number for c in convs] == list(range(1, 21))
    truncated = [c.number for c in convs if c.chat.name == "chat_trunecated.json"]
    assert truncated == [5, 7, 10, 11, 12, 16, 17, 18, 19, 20]
    assert len(conversations("500k")) == 35  # sizes are case-insensitive


@pytest.mark.parametrize(("size", "per_ability"), [("100K", 40), ("500K", 70)])
def test_counts_and_stable_ids(size: str, per_ability: int) -> None:
    options = BeamOptions(size=size, memory=MemoryOptions(context="none"))
    items = build(options).items
    assert len(items) == 10 * per_ability
    assert Counter(i.metadata["category"] for i in items) == {a: per_ability for a in ABILITIES}
    n = per_ability // 2
    expected = [
        f"beam-{size}-{c}-{a}-{i}" for c in range(1, n + 1) for a in ABILITIES for i in range(2)
    ]
    assert [i.id for i in items] == expected
    assert {i.metadata["cluster"] for i in items} == {f"{size}-{c}" for c in range(1, n + 1)}


def _conversation(tmp_path: Path, chat: Any, questions: Any, size: str = "100K") -> Path:
    """A data dir holding one unpinned conversation (read with verify_checksum=False)."""
    folder = tmp_path / "beam" / "chats" / size / "1"
    (folder / "probing_questions").mkdir(parents=True)
    (folder / "chat.json").write_text(json.dumps(chat), encoding="utf-8")
    (folder / "probing_questions" / "probing_questions.json").write_text(
        json.dumps(questions), encoding="utf-8"
    )
    return tmp_path


def _turn(k: int) -> list[dict[str, str]]:
    return [
        {"role": "user", "content": f"question {k}"},
        {"role": "assistant", "content": f"answer {k}"},
    ]


QUESTIONS = {"abstention": [{"question": "Q?", "rubric": ["says so"], "ideal_response": "no"}]}


def test_ten_million_layout_streams_plans_then_batches(tmp_path: Path) -> None:
    chat = [
        {"plan-0": [{"turns": [_turn(1)]}, {"turns": [_turn(2)], "time_anchor": "May-1-2024"}]},
        {"plan-1": [{"turns": [_turn(3), _turn(4)]}]},
    ]
    [conv] = conversations(
        "10M", _conversation(tmp_path, chat, QUESTIONS, "10M"), verify_checksum=False
    )
    msgs = list(iter_messages(conv))
    assert [m.content for m in msgs][::2] == [
        "question 1",
        "question 2",
        "question 3",
        "question 4",
    ]
    assert [(m.batch, m.turn) for m in msgs][::2] == [(1, 1), (2, 1), (3, 1), (3, 2)]
    assert msgs[2].time_anchor == "May-1-2024"
    assert [m.position for m in msgs] == list(range(8))


def _error(conv_dir: Path, size: str = "100K") -> str:
    with pytest.raises(DataError) as info:
        [conv] = conversations(size, conv_dir, verify_checksum=False)
        load_questions(conv)
        list(iter_messages(conv))
    return str(info.value)


def test_question_without_rubric_names_file_conversation_question_field(tmp_path: Path) -> None:
    questions = {"abstention": [{"question": "Q?", "rubric": [], "ideal_response": "x"}]}
    msg = _error(_conversation(tmp_path, [{"turns": [_turn(1)]}], questions))
    assert "probing_questions.json" in msg
    assert "conversation 100K/1" in msg
    assert "question abstention[0]" in msg
    assert "field 'rubric'" in msg


def test_unknown_ability_names_the_closest(tmp_path: Path) -> None:
    questions = {"abstension": [{"question": "Q?", "rubric": ["x"]}]}
    msg = _error(_conversation(tmp_path, [{"turns": [_turn(1)]}], questions))
    assert "conversation 100K/1" in msg and "field 'abstension'" in msg
    assert "did you mean 'abstention'" in msg


@pytest.mark.parametrize(
    ("chat", "where", "field"),
    [
        ([{"turns": {"a": 1}}], "batch 1", "turns"),
        ([{"turns": [_turn(1), "oops"]}], "batch 1, turn 2", "turns"),
        ([{"turns": [[{"role": "system", "content": "x"}]]}], "batch 1, turn 1, message 1", "role"),
        ([{"turns": [[{"role": "user"}]]}], "batch 1, turn 1, message 1", "content"),
    ],
)
def test_malformed_batch_names_file_conversation_batch_field(
    tmp_path: Path, chat: Any, where: str, field: str
) -> None:
    msg = _error(_conversation(tmp_path, chat, QUESTIONS))
    assert (
        "chat.json" in msg and f"conversation 100K/1, {where}" in msg and f"field '{field}'" in msg
    )


def test_malformed_plan(tmp_path: Path) -> None:
    chat = [{"plan-0": [{"turns": [_turn(1)]}], "plan-1": []}]
    msg = _error(_conversation(tmp_path, chat, QUESTIONS, "10M"), "10M")
    assert "conversation 10M/1, plan 1" in msg and "one-key object" in msg


def test_blob_mismatch_names_file_and_both_ids(tmp_path: Path) -> None:
    src = data_root() / "beam" / "chats" / "100K"
    dst = tmp_path / "beam" / "chats" / "100K"
    shutil.copytree(src, dst)
    chat = dst / "3" / "chat.json"
    chat.write_bytes(chat.read_bytes().replace(b"the", b"teh", 1))
    with pytest.raises(DataError) as info:
        conversations("100K", tmp_path)
    msg = str(info.value)
    expected = beam_files()["chats/100K/3/chat.json"].git_blob
    assert str(chat) in msg and expected in msg and git_blob_id(chat) in msg


def test_questions_are_read_in_file_order(tmp_path: Path) -> None:
    conv = conversations("100K")[0]
    questions = load_questions(conv)
    assert [q.order for q in questions] == list(range(20))
    assert [q.ability for q in questions][::2] == list(ABILITIES)
    assert all(q.rubric for q in questions)
    assert isinstance(conv, Conversation)


def test_ten_million_layout_with_a_memory_system(tmp_path: Path) -> None:
    chat = [{"plan-0": [{"turns": [_turn(1), _turn(2)]}]}, {"plan-1": [{"turns": [_turn(3)]}]}]
    data = _conversation(tmp_path, chat, QUESTIONS, "10M")
    memory = MemoryOptions(memory="bm25", memory_cache=False, top_k=1)
    built = build(BeamOptions(size="10M", memory=memory, data_dir=str(data), verify_checksum=False))
    assert built.subject is not None and [i.id for i in built.items] == ["beam-10M-1-abstention-0"]
    filled = built.subject.fill(built.items[0], None)
    assert built.subject.run.ingestions == 1
    # "Q?" holds no indexed word: BM25 keeps the turns in order, so the first is shown
    assert filled.metadata["retrieved_ids"] == ["b1t1"]
    history = built.subject.histories["10M-1"]
    assert [s.session_id for s in history.sessions] == ["b1t1", "b1t2", "b2t1"]
