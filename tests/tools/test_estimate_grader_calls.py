"""The cost estimate counts grader calls from what the benchmark's record declares (issue 28,
point 5): BEAM's grader is called once per rubric item, every other judge once per sample.

The BEAM figure is checked against a count made here from the pinned probing-question files
(every question's `rubric` list), not through memevals' loader.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memevals.tools.estimate import main


def _rubric_items(data_dir: Path, size: str) -> list[int]:
    counts: list[int] = []
    for path in sorted((data_dir / "beam" / "chats" / size).glob("*/probing_questions/*.json")):
        questions = json.loads(path.read_text(encoding="utf-8"))
        counts += [len(q["rubric"]) for ability in questions.values() for q in ability]
    return counts


def _grader_line(out: str) -> str:
    [line] = [line for line in out.splitlines() if line.startswith("grader calls")]
    return line


def test_beam_states_one_grader_call_per_rubric_item(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    counts = _rubric_items(data_dir, "100K")
    assert len(counts) == 400 and sum(counts) > len(counts)  # more calls than questions
    assert main(["beam", "--token-counter", "approx"]) == 0
    line = _grader_line(capsys.readouterr().out)
    total = sum(counts)
    assert line.startswith(
        f"grader calls (beam_judge): {total:,} = {total / len(counts):,.2f} per sample "
        f"(min {min(counts)}, max {max(counts)}): one per rubric item; an event-ordering "
        "answer also makes equivalence calls"
    ), line
    assert line.endswith("their tokens are not included above")


def test_a_criterion_judge_is_called_once_per_sample(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["locomo", "-T", "context=none", "-T", "judge=true", "--limit", "7"]
    assert main([*args, "--token-counter", "approx"]) == 0
    out = capsys.readouterr().out
    assert _grader_line(out).startswith(
        "grader calls (locomo_official_judge): 7 = 1.00 per sample (min 1, max 1): one per "
        "sample; protocol=memevals asks once more after an unreadable verdict"
    )
    # a task without a judge prints no grader line
    assert main(["locomo", "-T", "context=none", "--limit", "2", "--token-counter", "approx"]) == 0
    assert "grader calls" not in capsys.readouterr().out
