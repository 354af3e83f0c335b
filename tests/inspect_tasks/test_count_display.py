"""Counts on Inspect's run screen (issue 28, point 7): through the real `inspect eval` CLI a count
prints as an integer (`4`, not Inspect's `4.000`), every other figure keeps Inspect's three
decimals, and the log keeps its values. The patch behind it degrades to a warning, never an
error, when Inspect moves what it builds on.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalMetric, EvalScore, list_eval_logs, read_eval_log

from memevals.inspect_tasks import inspect_internals
from memevals.inspect_tasks.inspect_internals import (
    InspectInternalsWarning,
    counts_as_integers,
    integral_counts_on_screen,
)

LIMIT = 4


def test_counts_print_as_integers_on_the_inspect_eval_screen(
    inspect_cli: Any, data_dir: Path, tmp_path: Path
) -> None:
    res = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "mockllm/model",
        "--limit",
        str(LIMIT),
        "-T",
        "categories=temporal",
        "-T",
        "judge=true",
        "--display",
        "plain",
        "--log-dir",
        str(tmp_path / "logs"),
    )
    assert res.returncode == 0, (res.stdout + res.stderr)[-3000:]
    [info] = list_eval_logs(str(tmp_path / "logs"))
    log = read_eval_log(info)
    assert log.results is not None
    screen = res.stdout
    by_kind: dict[str, list[str]] = {"count": [], "total": [], "other": []}
    for score in log.results.scores:
        for key, m in score.metrics.items():
            kind = m.name.rsplit("/", 1)[-1]
            if kind in ("count", "total"):
                assert float(m.value).is_integer(), (score.name, key, m.value)
                drawn = rf"\b{re.escape(key)} +{int(m.value)}(?![.\d])"
                by_kind[kind].append(key)
            else:
                assert math.isfinite(m.value)
                drawn = rf"\b{re.escape(key)} +{m.value:.3f}(?!\d)"
                by_kind["other"].append(key)
            assert re.search(drawn, screen), (score.name, key, m.value, screen)
    assert by_kind["count"] and by_kind["total"] and by_kind["other"], by_kind
    assert not re.search(r"\b(count|total) +\d+\.\d", screen), screen
    # what the screen drew as an integer is the total of the logged samples
    tokens = {s.name: s for s in log.results.scores}["prompt_tokens"]
    logged = sum(
        float(s.scores["prompt_tokens"].value)  # type: ignore[index, arg-type]
        for s in log.samples or []
    )
    assert tokens.metrics["total"].value == logged and logged > 0


def _score(**values: float) -> EvalScore:
    return EvalScore(
        name="s",
        scorer="s",
        metrics={k: EvalMetric(name=f"memevals/{k}", value=v) for k, v in values.items()},
    )


def test_only_integral_counts_change_format() -> None:
    [drawn] = counts_as_integers([_score(count=4.0, total=12345.0, mean=1.0)])
    assert f"{drawn.metrics['count'].value:.3f}" == "4"
    assert f"{drawn.metrics['total'].value:,.3f}" == "12,345"
    assert f"{drawn.metrics['mean'].value:.3f}" == "1.000"  # a mean of 1 is not a count
    assert drawn.metrics["count"].value == 4.0
    [fraction] = counts_as_integers([_score(count=2.5)])  # not integral: Inspect's format
    assert f"{fraction.metrics['count'].value:.3f}" == "2.500"


def test_a_moved_inspect_renderer_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai._display.core import results as display

    monkeypatch.setattr(inspect_internals, "_WARNED", set())
    monkeypatch.delattr(display, "task_scores")
    with pytest.warns(InspectInternalsWarning, match="integral counts on the run screen"):
        integral_counts_on_screen()

    def task_scores(scores: list[Any]) -> list[str]:  # Inspect's format on what it is given
        return [f"{m.value:.3f}" for s in scores for m in getattr(s, "metrics", {}).values()]

    monkeypatch.setattr(display, "task_scores", task_scores, raising=False)
    integral_counts_on_screen()
    assert display.task_scores([_score(count=3.0)]) == ["3"]
    # scores of a shape the copy cannot take: drawn as Inspect draws them, with a warning
    monkeypatch.setattr(inspect_internals, "_WARNED", set())
    with pytest.warns(InspectInternalsWarning, match="integral counts"):
        assert display.task_scores(["not a score"]) == []


def test_a_changed_metric_dict_builder_keeps_inspect_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inspect_ai._eval.task import results

    def empty_metric_value(metric: Any) -> Any:
        return math.nan

    def scorers_from_metric_dict(name: str, info: Any) -> list[EvalScore]:  # renamed arguments
        return [EvalScore(name="judge", scorer=name, metrics={})]

    monkeypatch.setattr(inspect_internals, "_WARNED", set())
    monkeypatch.setattr(results, "empty_metric_value", empty_metric_value)
    monkeypatch.setattr(results, "scorers_from_metric_dict", scorers_from_metric_dict)
    inspect_internals.leave_out_empty_metrics()
    with pytest.warns(InspectInternalsWarning, match="unique names for appended scores"):
        [score] = results.scorers_from_metric_dict("llm_judge1", object())
    assert score.name == "judge"  # Inspect's own name, no error
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process
        results.scorers_from_metric_dict("llm_judge1", object())
