"""Counts and names on Inspect's run screen (issue 28, point 7; issue 38, point 1): through the
real `inspect eval` CLI every count is integral in the log and drawn in Inspect's own format
(three decimals: Inspect's public API has no integer format, and memevals changes no renderer),
every row has memevals' short name and none is NaN. What memevals changes in its own results
(inspect_internals.own_results) touches only its own metrics, can be undone, and degrades to a
warning, never an error, when Inspect moves what it builds on.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path
from typing import Any, cast

import pytest
from inspect_ai.log import EvalScore, list_eval_logs, read_eval_log
from inspect_ai.scorer import mean

from memevals.inspect_tasks import inspect_internals
from memevals.inspect_tasks.inspect_internals import (
    InspectInternalsWarning,
    inspect_results,
    is_own_metric,
    own_metric,
    own_results,
)
from memevals.inspect_tasks.metrics import count, stderr_clustered

LIMIT = 4


def test_counts_are_integral_and_drawn_in_inspects_format(
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
            assert "/" not in key, (score.name, key)  # memevals' short names
            assert math.isfinite(m.value), (score.name, key)
            if kind in ("count", "total"):
                assert float(m.value).is_integer(), (score.name, key, m.value)
                by_kind[kind].append(key)
            else:
                by_kind["other"].append(key)
            # Inspect's format for every figure, counts included
            drawn = rf"\b{re.escape(key)} +{m.value:.3f}(?!\d)"
            assert re.search(drawn, screen), (score.name, key, m.value, screen)
    assert by_kind["count"] and by_kind["total"] and by_kind["other"], by_kind
    # the drawn total is the total of the logged samples
    tokens = {s.name: s for s in log.results.scores}["prompt_tokens"]
    logged = sum(
        float(s.scores["prompt_tokens"].value)  # type: ignore[index, arg-type]
        for s in log.samples or []
    )
    assert tokens.metrics["total"].value == logged and logged > 0


def test_only_memevals_metrics_are_its_own() -> None:
    assert is_own_metric(count()) and is_own_metric(stderr_clustered())
    assert not is_own_metric(mean())  # Inspect's, as a foreign task declares it
    assert is_own_metric(own_metric(mean()))  # as memevals' uncertainty_metrics declares it
    assert not is_own_metric(lambda scores: 0.0)  # not a registry object


def test_own_results_are_undone_and_made_again() -> None:
    from inspect_ai._eval.task import results as inspect

    results = cast(Any, inspect)
    own_results()  # idempotent: what importing memevals' metrics did already
    adjusted = results.empty_metric_value, results.scorers_from_metric_dict
    original = [getattr(f, "__wrapped__", None) for f in adjusted]
    assert all(original), adjusted
    try:
        inspect_results()
        assert [results.empty_metric_value, results.scorers_from_metric_dict] == original
        assert math.isnan(results.empty_metric_value(own_metric(mean())))  # Inspect's NaN
    finally:
        own_results()
    assert results.empty_metric_value(own_metric(mean())) == {}  # memevals' own: no row
    assert math.isnan(results.empty_metric_value(mean()))  # anyone else's: Inspect's NaN


def test_a_changed_metric_dict_builder_keeps_inspect_names(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from inspect_ai._eval.task import results as inspect

    results = cast(Any, inspect)

    def empty_metric_value(metric: Any) -> Any:
        return math.nan

    def scorers_from_metric_dict(name: str, info: Any) -> list[EvalScore]:  # renamed arguments
        return [EvalScore(name="judge", scorer=name, metrics={})]

    monkeypatch.setattr(inspect_internals, "_WARNED", set())
    monkeypatch.setattr(results, "empty_metric_value", empty_metric_value)
    monkeypatch.setattr(results, "scorers_from_metric_dict", scorers_from_metric_dict)
    own_results()
    with pytest.warns(InspectInternalsWarning, match="short names for memevals' dict scores"):
        [score] = results.scorers_from_metric_dict("llm_judge1", object())
    assert score.name == "judge"  # Inspect's own name, no error
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once per process
        results.scorers_from_metric_dict("llm_judge1", object())


def test_moved_inspect_internals_are_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    from inspect_ai._eval.task import results

    monkeypatch.setattr(inspect_internals, "_WARNED", set())
    monkeypatch.delattr(results, "empty_metric_value")
    kept = results.scorers_from_metric_dict
    with pytest.warns(InspectInternalsWarning, match="undefined figures"):
        own_results()
    assert results.scorers_from_metric_dict is kept  # nothing changed
