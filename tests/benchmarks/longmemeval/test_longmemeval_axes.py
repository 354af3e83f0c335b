"""LongMemEval's analysis axes (issue 29, "where memory fails"): every sample logs how many
haystack sessions follow its last answer session and how long its whole history is, in every
context mode, in both frameworks; the record declares them and memevals-report buckets them.

Worked example: fx08c7d8 of the S fixture has six sessions in date order; its answer sessions
are the 1st and the 4th (listed in the file as 4th, then 1st), so two sessions follow the last.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from memevals.benchmarks.longmemeval.record import RECORD
from memevals.benchmarks.longmemeval.samples import LongMemEvalOptions, build
from memevals.core.memory_options import MemoryOptions
from memevals.core.tokens import get_token_counter
from memevals.tools.report import bucket

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FX: dict[str, Any] = {"data_dir": str(FIXTURES), "verify_checksum": False}
EXAMPLE = "fx08c7d8"


def _samples(context: str, **options: Any) -> dict[str, dict[str, Any]]:
    memory = MemoryOptions(
        context,
        token_counter="approx",
        max_context_tokens=3000 if context == "truncated" else None,
    )
    opts = LongMemEvalOptions(variant="s", memory=memory, **{**FX, **options})
    return {i.id: i.metadata for i in build(opts).items}


def test_worked_example_sessions_after_the_answer_and_history_tokens() -> None:
    md = _samples("full", protocol="memevals")[EXAMPLE]
    assert md["sessions_after_answer"] == 2
    # the approx counter's pieces of the dated history as context=full shows it
    assert md["history_tokens"] == 666


def test_history_tokens_count_the_history_the_full_prompt_shows() -> None:
    counter = get_token_counter("approx")
    opts = LongMemEvalOptions(
        variant="s", memory=MemoryOptions("full", token_counter="approx"), protocol="memevals", **FX
    )
    items = build(opts).items
    assert len(items) == 16
    for item in items:
        history = item.user[: item.user.rindex("\n\nCurrent Date: ")]
        assert item.metadata["history_tokens"] == counter(history), item.id


@pytest.mark.parametrize("protocol", ["memevals", "official"])
def test_every_context_mode_logs_the_same_figures(protocol: str) -> None:
    full = _samples("full", protocol=protocol)
    for context in ("oracle", "none", "truncated"):
        other = _samples(context, protocol="memevals" if context == "truncated" else protocol)
        assert set(other) == set(full)
        for qid, md in other.items():
            assert md["context"] == context
            assert md["sessions_after_answer"] == full[qid]["sessions_after_answer"], qid
            # truncated mode's own figure (the total its cut counts) is the same count
            assert md["history_tokens"] == full[qid]["history_tokens"], qid


def test_sessions_are_counted_in_date_order_not_file_order(tmp_path: Path) -> None:
    # the example's sessions written to the file newest first: the last answer session is then
    # third in the file, yet still fourth of six by date
    src = FIXTURES / "longmemeval" / "longmemeval_s_cleaned.json"
    data = json.loads(src.read_text())
    (inst,) = [d for d in data if d["question_id"] == EXAMPLE]
    for key in ("haystack_session_ids", "haystack_dates", "haystack_sessions"):
        inst[key] = inst[key][::-1]
    (tmp_path / "longmemeval").mkdir()
    (tmp_path / "longmemeval" / src.name).write_text(json.dumps(data))
    md = _samples("full", protocol="memevals", data_dir=str(tmp_path))[EXAMPLE]
    assert inst["haystack_session_ids"].index("answer_a4e8d1f6_2") == 2
    assert md["sessions_after_answer"] == 2
    assert md["history_tokens"] == 666  # the history is laid out by date either way


def test_fixture_values_and_the_report_buckets_of_the_declared_axes() -> None:
    samples = _samples("full", protocol="memevals")
    after = {qid: md["sessions_after_answer"] for qid, md in samples.items()}
    # by hand from the fixture: the last answer session's place among the sessions by date
    assert after == {
        "fx01a2b3": 1,
        "fx02c4d5": 1,
        "fx03e6f7_abs": 1,
        "fx04a8b9": 2,
        "fx05c1d2": 1,
        "fx06e3f4": 1,
        "fx07a5b6": 1,
        "fx08c7d8": 2,
        "fx09e9f0": 2,
        "fx10a1b2_abs": 1,
        "fx11c3d4": 2,
        "fx12e5f6": 2,
        "fx13a7b8_abs": 3,
        "fx14c9d0": 2,
        "fx15e1f2": 1,
        "fx16a3b4_abs": 1,
    }
    axes = {a.key: a for a in RECORD.analysis_axes}
    assert list(axes) == ["sessions_after_answer", "history_tokens", "n_sessions_shown"]
    assert Counter(bucket(axes["sessions_after_answer"], v) for v in after.values()) == {"1–4": 16}
    assert Counter(
        bucket(axes["history_tokens"], md["history_tokens"]) for md in samples.values()
    ) == {"0–9,999": 16}
    ax = axes["sessions_after_answer"]
    assert [bucket(ax, v) for v in (0, 4, 5, 9, 10, 24, 25, 49, 50, 400)] == [
        "0–0", "1–4", "5–9", "5–9", "10–24", "10–24", "25–49", "25–49", "≥ 50", "≥ 50",
    ]  # fmt: skip
    tokens = axes["history_tokens"]
    assert [bucket(tokens, v) for v in (3_000, 115_000, 1_500_000)] == [
        "0–9,999",
        "110,000–119,999",
        "≥ 1,000,000",
    ]


def test_lm_eval_documents_carry_the_same_figures() -> None:
    pytest.importorskip("lm_eval")
    from lm_eval.tasks import TaskManager, get_task_dict

    from memevals.lm_eval_tasks import include_path

    options = {**FX, "protocol": "memevals", "token_counter": "approx"}
    manager = TaskManager(include_path=include_path(), include_defaults=False, metadata=options)
    docs: dict[str, dict[str, Any]] = {}

    def leaves(tasks: Mapping[Any, Any]) -> None:
        # the group's subtasks (one per question type), nested under the group
        for value in tasks.values():
            if isinstance(value, Mapping):
                leaves(value)
            else:
                docs.update({d["id"]: json.loads(d["metadata"]) for d in value.test_docs()})

    leaves(get_task_dict(["longmemeval_s"], manager))
    inspect = _samples("full", protocol="memevals")
    assert set(docs) == set(inspect)
    for qid, md in docs.items():
        assert md["sessions_after_answer"] == inspect[qid]["sessions_after_answer"], qid
        assert md["history_tokens"] == inspect[qid]["history_tokens"], qid
    assert docs[EXAMPLE]["history_tokens"] == 666
