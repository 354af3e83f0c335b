"""A terminal summary that fits a screen (issue 22, point 6).

Per score a default run shows the mean, the clustered standard error (Inspect's
`stderr(cluster=)`, as `stderr`) and its 95 % interval, then the per-category means; the naive
error and per-category intervals come with `-T uncertainty=full`. An undefined figure (one
cluster) is left out, not NaN, and the log's task metadata says why; an interval stays within
[0, 1]. Checked on the metrics against Inspect's own, and through the real CLI on the README's
first command (with mockllm in place of SmolLM2, which the README runs).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, cast

import pytest
from inspect_ai.log import read_eval_log
from inspect_ai.scorer import MetricProtocol, SampleScore, Score, ci, ci_wilson, stderr

from memevals.inspect_tasks.metrics import (
    UNCERTAINTY_KEY,
    category_uncertainty,
    ci_lower,
    ci_upper,
    stderr_clustered,
    stderr_naive,
    uncertainty_metrics,
)

# Mostly zeros in three conversations: the t interval of the mean starts below 0.
VALUES = [0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.2]
CLUSTERS = ["a", "a", "a", "b", "b", "b", "c", "c", "c"]


def _scores(
    values: list[float], clusters: list[str], full: bool = False, category: str = "temporal"
) -> list[SampleScore]:
    extra = {UNCERTAINTY_KEY: "full"} if full else {}
    return [
        SampleScore(
            score=Score(value=v),
            sample_id=i,
            sample_metadata={"cluster": c, "category": category, **extra},
        )
        for i, (v, c) in enumerate(zip(values, clusters, strict=True))
    ]


def _run(metric: Any, scores: list[SampleScore]) -> Any:
    return cast(MetricProtocol, metric)(scores)


def test_stderr_is_inspect_s_clustered_one_and_left_out_with_one_cluster() -> None:
    scores = _scores(VALUES, CLUSTERS)
    assert _run(stderr_clustered(), scores) == _run(stderr(cluster="cluster"), scores)
    one = _scores(VALUES, ["a"] * len(VALUES))
    for metric in (stderr_clustered(), ci_lower(), ci_upper(), ci_lower(wilson=True)):
        assert _run(metric, one) == {}  # no row, where Inspect's stderr would say 0
    assert _run(stderr(cluster="cluster"), one) == 0.0
    unclustered = [SampleScore(score=Score(value=1.0), sample_id=1, sample_metadata={})] * 3
    assert _run(stderr_clustered(), unclustered) == {}


def test_the_interval_never_leaves_the_score_range() -> None:
    scores = _scores(VALUES, CLUSTERS)
    raw = _run(ci(cluster="cluster"), scores)
    assert raw["lower"] < 0.0  # what mean ± t·se gives: a negative F1
    assert _run(ci_lower(), scores) == 0.0
    assert _run(ci_upper(), scores) == pytest.approx(min(raw["upper"], 1.0))
    high = _scores([1.0 - v for v in VALUES], CLUSTERS)
    assert _run(ci(cluster="cluster"), high)["upper"] > 1.0
    assert _run(ci_upper(), high) == 1.0
    # a proportion gets Inspect's clustered Wilson interval, within [0, 1] by construction
    binary = _scores([float(v > 0.5) for v in VALUES], CLUSTERS)
    wilson = _run(ci_wilson(cluster="cluster"), binary)
    assert (_run(ci_lower(wilson=True), binary), _run(ci_upper(wilson=True), binary)) == (
        pytest.approx((wilson["lower"], wilson["upper"]))
    )


def test_full_figures_only_with_uncertainty_full() -> None:
    assert _run(stderr_naive(), _scores(VALUES, CLUSTERS)) == {}
    assert _run(category_uncertainty(), _scores(VALUES, CLUSTERS)) == {}
    full = _scores(VALUES, CLUSTERS, full=True)
    assert _run(stderr_naive(), full) == pytest.approx(_run(stderr(), full))
    by_category = _run(category_uncertainty(), full)
    assert set(by_category) == {"temporal_stderr", "temporal_ci_lower", "temporal_ci_upper"}
    assert by_category["temporal_ci_lower"] == 0.0  # clipped too
    # a category from one cluster is left out, the others stay
    mixed = full + _scores([1.0, 0.0], ["a", "a"], full=True, category="multi_hop")
    assert set(_run(category_uncertainty(), mixed)) == {
        "temporal_stderr",
        "temporal_ci_lower",
        "temporal_ci_upper",
    }
    assert len(uncertainty_metrics()) == 7 and len(uncertainty_metrics(by_category=False)) == 5


def _first_command(inspect_cli: Any, *extra: str) -> tuple[str, Any]:
    res = inspect_cli(
        "eval",
        "memevals/locomo",
        "--model",
        "mockllm/model",
        "-T",
        "context=rag",
        "-T",
        "top_k=5",
        "--limit",
        "10",
        "--log-dir",
        "logs",
        *extra,
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    return out, res


def test_the_readme_s_first_command_fits_a_screen(inspect_cli: Any, tmp_path: Path) -> None:
    out, _ = _first_command(inspect_cli)
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path), header_only=True)
    assert log.results is not None
    rows = {s.name: list(s.metrics) for s in log.results.scores}
    assert set(rows) == {
        "locomo_f1_scorer",
        "evidence_recall",
        "turn_precision",
        "turn_recall",
        "selected_k",
        "prompt_tokens",
    }
    # ten questions of one conversation: the clustered figures are undefined and left out
    assert rows["locomo_f1_scorer"] == [
        "mean",
        "temporal",
        "open_domain",
        "multi_hop",
    ]
    assert rows["prompt_tokens"][:2] == ["mean", "total"]  # the prompt size: a score of its own
    assert all(len(names) <= 12 for names in rows.values())
    values = [m.value for s in log.results.scores for m in s.metrics.values()]
    assert not any(math.isnan(v) for v in values)
    assert "nan" not in out.split("locomo (10 samples)")[-1]  # the summary on the terminal
    # the log says why they are missing
    assert log.eval.metadata is not None
    note = log.eval.metadata["uncertainty"]
    assert note["level"] == "default" and "fewer than two clusters" in note["left_out"]


def test_uncertainty_full_through_the_cli(inspect_cli: Any, tmp_path: Path) -> None:
    _first_command(inspect_cli, "-T", "uncertainty=full", "--display", "none")
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path), header_only=True)
    assert log.results is not None and log.eval.metadata is not None
    f1 = next(s for s in log.results.scores if s.name == "locomo_f1_scorer")
    # the naive error is defined on one conversation; the clustered figures still are not
    assert "stderr_naive" in f1.metrics and "stderr" not in f1.metrics
    assert log.eval.metadata["uncertainty"]["level"] == "full"
    bad = inspect_cli(
        "eval", "memevals/locomo", "-T", "uncertainty=ful", "--model", "mockllm/model"
    )
    assert bad.returncode == 1
    assert "uncertainty='ful' is not supported (did you mean 'full'?)" in " ".join(
        (bad.stdout + bad.stderr).split()
    )
