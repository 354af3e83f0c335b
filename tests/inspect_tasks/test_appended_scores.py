"""Re-judging a logged run with `inspect score --action append` (issue 28, point 7): every score
name within the run's results is unique (a judge's result is named by its scorer, `llm_judge1`
for the first appended), the run screen shows it with its count (in Inspect's format), and
memevals-compare reads it as `judge1`.

One LoCoMo run judged by the strict scripted grader (in-process), then the real `inspect score`
CLI appends the lenient grader's judge twice. The answers are the gold, the gold with a word
added, and "I do not know" in turn, so the strict judge accepts 2 of 6 and the lenient one 4 of 6.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import scripted_judge  # noqa: F401  (registers the scripted/ graders in this process)
from cli_support import run_python
from inspect_ai import eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import build_items
from memevals.inspect_tasks.locomo import locomo

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
N = 6


def _answerer(items: list[Any]) -> Any:
    replies = {
        it.user: [it.target, f"{it.target} approximately", "I do not know"][k % 3]
        for k, it in enumerate(items)
    }

    def answer(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> Any:
        return ModelOutput.from_content("mockllm", replies[input[-1].text])

    return get_model("mockllm/model", custom_outputs=answer)


def _append(log: str, out: Path, cwd: Path) -> str:
    """`inspect score LOG --action append` with the lenient grader; returns its screen."""
    res = run_python(
        [
            sys.executable,
            str(TESTS / "support" / "scripted_judge.py"),
            "score",
            log,
            "--scorer",
            "memevals/llm_judge",
            "--model-role",
            "grader=scripted/lenient",
            "--action",
            "append",
            "--output-file",
            str(out),
            "--display",
            "plain",
        ],
        timeout=600,
        cwd=cwd,
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    return res.stdout


def _results(log: EvalLog) -> list[tuple[str, str, dict[str, float]]]:
    assert log.results is not None
    return [
        (s.name, s.scorer, {k: round(m.value, 6) for k, m in s.metrics.items()})
        for s in log.results.scores
    ]


def test_appended_judges_have_unique_names_on_screen_and_in_compare(
    data_dir: Path, tmp_path: Path
) -> None:
    items = build_items(load_locomo(str(data_dir)), categories="temporal")[:N]
    task = locomo(categories="temporal", context="none", judge=True, protocol="memevals")
    [first] = eval(
        task,
        model=_answerer(items),
        model_roles={"grader": get_model("scripted/strict")},
        sample_id=[it.id for it in items],
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert first.status == "success", first.error

    once, twice = tmp_path / "once.eval", tmp_path / "twice.eval"
    screen_once = _append(first.location, once, tmp_path)
    screen_twice = _append(str(once), twice, tmp_path)

    judged = {"mean": round(2 / N, 6), "temporal": round(2 / N, 6), "unscored": 0}
    lenient = {"mean": round(4 / N, 6), "temporal": round(4 / N, 6), "unscored": 0}
    original = [name for name, _, _ in _results(first)]
    assert original[:2] == ["locomo_f1_scorer", "llm_judge"]
    results = _results(read_eval_log(str(twice)))
    names = [name for name, _, _ in results]
    assert len(set(names)) == len(names), names
    assert results[: len(_results(first))] == _results(first)  # the run's own scores kept
    # one result per judge, named by its scorer as Inspect names an appended one
    assert results[len(_results(first)) :] == [
        ("llm_judge1", "llm_judge1", lenient),
        ("llm_judge2", "llm_judge2", lenient),
    ]
    assert ("llm_judge", "llm_judge", judged) in results

    # the screens: the appended judge by its own name, its count drawn
    for screen, new in ((screen_once, "1"), (screen_twice, "2")):
        assert re.search(rf"\bllm_judge{new}\b", screen), screen
        # Inspect draws every metric with three decimals (its public API has no integer format)
        assert re.search(r"\bunscored +0\.000(?!\d)", screen), screen

    # memevals-compare reads each judge under the name the results give it
    table = tmp_path / "compare.csv"
    args = ["-m", "memevals.tools.compare", str(twice), "--csv", str(table), "--no-png"]
    cmp = run_python([sys.executable, *args], timeout=300, cwd=REPO)
    assert cmp.returncode == 0, cmp.stderr[-3000:]
    assert "#### judge1" in cmp.stdout and "#### judge2" in cmp.stdout
    [row] = list(csv.DictReader(table.open(encoding="utf-8")))
    assert float(row["judge"]) == pytest.approx(2 / N)
    assert float(row["judge1"]) == pytest.approx(4 / N)
    assert float(row["judge2"]) == pytest.approx(4 / N)
    assert row["judge1_unscored"] == row["judge2_unscored"] == "0"
