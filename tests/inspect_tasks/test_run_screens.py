"""Every task's first Inspect screen (issue 28, point 7; issue 38, point 1): its headline first,
at most 12 rows per score, no NaN, names unique and uncut as Inspect lays them out, counts
integral (Inspect draws them in its own format, `4.000`: its public API has no other, and
memevals changes no renderer).

One `eval` of every task (mockllm as the model and as the grader, a few samples each, offline,
samples not logged); the assertions read the logs' results, and Inspect's own renderer of the
closing summary draws them at a 150-column terminal (four scores a row, each name column about
25 characters).
mockllm's replies are no verdict, so every judge below leaves all its samples unscored: the
all-unscored screens (LoCoMo-Plus and LongMemEval under protocol=memevals, BEAM, judge_check)
are checked with the rest.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog, EvalScore
from inspect_ai.model import ModelOutput, get_model
from logged_figures import is_count
from rich.console import Console

from memevals.inspect_tasks.beam import beam
from memevals.inspect_tasks.judge_check import judge_check
from memevals.inspect_tasks.locomo import locomo
from memevals.inspect_tasks.locomo_event_summary import locomo_event_summary
from memevals.inspect_tasks.locomo_plus import locomo_plus
from memevals.inspect_tasks.longmemeval import longmemeval

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
LME: dict[str, Any] = {"data_dir": str(FIXTURES), "verify_checksum": False, "variant": "oracle"}
WIDTH = 150
LIMIT = 4

#: run name -> (task, its first score, that score's first metric: the headline). The headline
#: metric is None where mockllm leaves the first score without a scored sample.
RUNS: dict[str, tuple[Any, str, str | None]] = {
    "locomo": (lambda d: locomo(data_dir=d), "locomo_f1_scorer", "mean"),
    "locomo judge": (lambda d: locomo(judge=True, data_dir=d), "locomo_f1_scorer", "mean"),
    "locomo rag": (
        lambda d: locomo(context="rag", top_k=5, data_dir=d),
        "locomo_f1_scorer",
        "mean",
    ),
    # the judge is LoCoMo-Plus's headline, so it leads; F1 follows
    "locomo_plus": (lambda d: locomo_plus(data_dir=d), "locomo_plus_judge", "mean"),
    "locomo_plus memevals": (
        lambda d: locomo_plus(protocol="memevals", data_dir=d),
        "locomo_plus_judge",
        None,
    ),
    "longmemeval": (lambda d: longmemeval(**LME), "longmemeval_judge", "overall_accuracy"),
    "longmemeval memevals": (
        lambda d: longmemeval(protocol="memevals", **LME),
        "longmemeval_judge",
        None,
    ),
    "beam": (lambda d: beam(data_dir=d), "beam_judge", None),
    "judge_check": (lambda d: judge_check(data_dir=d), "judge_check_scorer", None),
    "locomo_event_summary": (
        lambda d: locomo_event_summary(reference_facts="events", sessions=1, data_dir=d),
        "event_summary_scorer",
        "rouge1",
    ),
}
#: Runs whose judge gets no readable verdict from mockllm: the first score's rows are the ones
#: left (its judge score shows none), so the headline is checked where it is defined.
ALL_UNSCORED = {
    "locomo_plus memevals",
    "longmemeval memevals",
    "beam",
    "judge_check",
    "locomo_event_summary",
}


def _rendered(scores: list[EvalScore], width: int = WIDTH) -> list[str]:
    """The closing summary's score block as Inspect draws it at `width` columns."""
    from inspect_ai._display.core.results import task_scores

    console = Console(width=width, record=True, color_system=None)
    with console.capture() as captured:
        for row in task_scores(scores):
            console.print(row)
    return captured.get().splitlines()


@pytest.fixture(scope="module")
def logs(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, EvalLog]:
    tasks: list[Task] = [build(str(data_dir)) for build, _, _ in RUNS.values()]
    grader = get_model(
        "mockllm/model",
        custom_outputs=[ModelOutput.from_content("mockllm/model", "no verdict here")] * 10_000,
    )
    done = eval(
        tasks,
        model="mockllm/model",
        model_roles={"grader": grader},
        limit=LIMIT,
        display="none",
        log_dir=str(tmp_path_factory.mktemp("screens")),
        max_tasks=len(tasks),
        # the tests read the results only: whole-conversation samples are not written
        log_samples=False,
    )
    out = {}
    for name, log in zip(RUNS, done, strict=True):
        assert log.status == "success", (name, log.error)
        out[name] = log
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_first_screen(logs: dict[str, EvalLog], name: str) -> None:
    log = logs[name]
    assert log.results is not None
    scores = log.results.scores
    _, first, headline = RUNS[name]
    assert scores[0].name == first
    if headline is not None:
        assert next(iter(scores[0].metrics)) == headline
    for score in scores:
        assert len(score.metrics) <= 12, (score.name, list(score.metrics))
        if score.name != "prompt_tokens":  # the prompt size is a score of its own
            assert not [k for k in score.metrics if "prompt_tokens" in k], score.name
        for key, m in score.metrics.items():
            assert not math.isnan(m.value), (score.name, key)
            if "count" in key or "unscored" in key:
                assert float(m.value).is_integer(), (score.name, key, m.value)
    names = [s.name for s in scores]
    assert len(set(names)) == len(names), names
    text = _rendered(scores)
    assert not any("nan" in line.split() for line in text), text
    # a count is integral; Inspect draws it, as every figure, with three decimals
    for score in scores:
        for key, m in score.metrics.items():
            if is_count(m) or m.name.rsplit("/", 1)[-1] == "total":
                assert float(m.value).is_integer(), (score.name, key, m.value)
                drawn = rf"\b{re.escape(key)} +{int(m.value)}\.000(?!\d)"
                assert any(re.search(drawn, line) for line in text), (key, text)
    assert not any("…" in line for line in text), "\n".join(text)
    for score in scores:  # each score's names, as drawn, are distinct
        assert len(set(score.metrics)) == len(score.metrics)


def test_all_unscored_judge_shows_the_count_and_no_figure(logs: dict[str, EvalLog]) -> None:
    """protocol=memevals, a grader that never gives a readable verdict: the judge's figures are
    left out (none NaN: Inspect's public list-metric path drops a figure that is None, no
    Inspect function replaced) and the unscored count shows every sample."""
    for name, judge in (
        ("locomo_plus memevals", "locomo_plus_judge"),
        ("longmemeval memevals", "longmemeval_judge"),
    ):
        results = logs[name].results
        assert results is not None
        by_name = {s.name: s for s in results.scores}
        rows = {k: m.value for k, m in by_name[judge].metrics.items()}
        assert rows == {"unscored": LIMIT, "unclear": 0}
    beam_scores = {s.name: s for s in logs["beam"].results.scores}  # type: ignore[union-attr]
    assert {k: m.value for k, m in beam_scores["beam_judge"].metrics.items()} == {
        "unscored": LIMIT
    }


@pytest.mark.parametrize("name", list(RUNS))
def test_80_columns(logs: dict[str, EvalLog], name: str) -> None:
    """At 80 columns (`--display plain` in a default terminal) Inspect cuts long names; no two
    of memevals' names are cut to the same stub, and no row is NaN."""
    results = logs[name].results
    assert results is not None
    text = _rendered(results.scores, width=80)
    stubs = [word for line in text for word in line.split() if word.endswith("…")]
    assert len(set(stubs)) == len(stubs), "\n".join(text)
    assert not any("nan" in line.split() for line in text), text
