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


def test_an_uncapped_task_is_estimated_from_a_stated_assumption(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """BEAM's official calls send no token limit, as upstream's: the output figure is the
    estimator's stated assumption (or --output-tokens), never a refusal; under memevals it is
    the task's limit, an upper bound."""
    from memevals.tools.estimate import UNCAPPED_OUTPUT_TOKENS

    args = ["beam", "-T", "context=none", "-T", "categories=abstention"]
    args += ["--token-counter", "approx"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "samples: 40\n" in out
    assert UNCAPPED_OUTPUT_TOKENS == 2048
    assert "output tokens: 2,048 per sample (assumed: the task sends no limit) = 81,920\n" in out
    assert (
        "note: the task sends no token limit (its protocol sends none), so the output figure is "
        "an assumption (2,048 per sample), not a bound: pass --output-tokens N for your own"
    ) in out
    # abstention's rubrics have one item each
    assert "grader calls (beam_judge): 40 = 1.00 per sample (min 1, max 1)" in out

    assert main([*args, "--output-tokens", "300"]) == 0
    out = capsys.readouterr().out
    assert "output tokens: 300 per sample (--output-tokens) = 12,000\n" in out
    assert "assumption" not in out

    assert main([*args, "-T", "protocol=memevals"]) == 0
    out = capsys.readouterr().out
    assert "output tokens: 2,048 per sample (max_tokens of the task, an upper bound)" in out
    assert "assumption" not in out


def test_a_negative_output_figure_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["beam", "--output-tokens", "-5"])
    assert exc.value.code == 2
    assert capsys.readouterr().err.endswith("error: --output-tokens -5: must not be negative\n")
