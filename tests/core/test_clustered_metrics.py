"""Clustered standard errors and Wilson intervals (issue 16, items 1 and 4).

memevals.core.statistics against a hand computation, an explicit sandwich formula, statsmodels
and Inspect's own `stderr(cluster=)` / `ci(cluster=)` / `ci_wilson(cluster=)`; then the Inspect
task metrics and the lm-eval aggregation on the same scripted replies, each equal to the core
value computed from the logged per-sample scores.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from inspect_ai.scorer import SampleScore, Score, ci, ci_wilson, stderr

from memevals.core import statistics
from memevals.core.prompt_item import PromptItem

# Worked example: 9 values in 3 clusters.
VALUES = [1.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0]
CLUSTERS = ["a", "a", "a", "b", "b", "c", "c", "c", "c"]


def _sample_scores(values: list[float], clusters: list[str]) -> list[SampleScore]:
    return [
        SampleScore(score=Score(value=v), sample_id=i, sample_metadata={"cluster": c})
        for i, (v, c) in enumerate(zip(values, clusters, strict=True))
    ]


def test_clustered_stderr_by_hand() -> None:
    # mean 5/9; per-cluster sums of deviations: a 2 - 15/9 = 1/3, b -10/9, c 3 - 20/9 = 7/9;
    # meat 1/9 + 100/81 + 49/81 = 158/81; times C/(C-1) = 3/2: 79/27; se = sqrt(79/27) / 9
    assert statistics.clustered_stderr(VALUES, CLUSTERS) == pytest.approx(
        math.sqrt(79 / 27) / 9, abs=1e-15
    )


def test_clustered_stderr_is_the_sandwich_estimator() -> None:
    """(X'X)^-1 (sum_c X_c' e_c e_c' X_c) (X'X)^-1 · C/(C-1) for the regression on a constant."""
    y = np.array(VALUES)
    x = np.ones((len(y), 1))
    bread = np.linalg.inv(x.T @ x)
    e = y - x @ (bread @ x.T @ y)
    meat = np.zeros((1, 1))
    groups = sorted(set(CLUSTERS))
    for g in groups:
        rows = [i for i, c in enumerate(CLUSTERS) if c == g]
        score = x[rows].T @ e[rows]
        meat += np.outer(score, score)
    v = bread @ meat @ bread * len(groups) / (len(groups) - 1)
    assert statistics.clustered_stderr(VALUES, CLUSTERS) == pytest.approx(
        math.sqrt(v[0, 0]), abs=1e-15
    )


def test_clustered_stderr_equals_statsmodels_cluster_robust_ols() -> None:
    # the OLS module alone: statsmodels.api imports every model, formulas and graphics too
    sm = pytest.importorskip("statsmodels.regression.linear_model")
    rng = np.random.default_rng(7)
    clusters = [f"conv-{i % 10}" for i in range(200)]
    values = [float(rng.random() < 0.3 + 0.04 * (i % 10)) for i in range(200)]
    groups = np.array([int(c.split("-")[1]) for c in clusters])
    fit = sm.OLS(np.array(values), np.ones(200)).fit(
        cov_type="cluster", cov_kwds={"groups": groups}
    )
    # statsmodels' small-sample factor is C/(C-1) · (n-1)/(n-k), and k = 1 here
    assert statistics.clustered_stderr(values, clusters) == pytest.approx(
        float(fit.bse[0]), rel=1e-12
    )


def test_core_equals_inspect_on_the_same_values() -> None:
    rng = np.random.default_rng(3)
    clusters = [f"conv-{i % 7}" for i in range(60)]
    f1 = [float(x) for x in rng.random(60)]
    correct = [float(x < 0.4) for x in rng.random(60)]
    for values in (f1, correct, VALUES):
        cl = clusters[: len(values)] if values is not VALUES else CLUSTERS
        scores = _sample_scores(values, cl)
        assert statistics.clustered_stderr(values, cl) == pytest.approx(
            stderr(cluster="cluster")(scores), abs=1e-15
        )
        t = ci(cluster="cluster")(scores)
        mine = statistics.clustered_ci(values, cl)
        assert (mine.lower, mine.upper) == pytest.approx((t["lower"], t["upper"]), abs=1e-12)
    w = ci_wilson(cluster="cluster")(_sample_scores(correct, clusters))
    mine = statistics.wilson_interval(correct, clusters)
    assert (mine.lower, mine.upper) == pytest.approx((w["lower"], w["upper"]), abs=1e-12)
    # one value per cluster: the clustered error is the naive one
    alone = [str(i) for i in range(60)]
    assert statistics.clustered_stderr(f1, alone) == pytest.approx(
        float(np.std(f1, ddof=1) / math.sqrt(60)), abs=1e-15
    )


def test_wilson_by_hand_and_against_scipy() -> None:
    # 8 of 10: p = 0.8, z = 1.959964; centre (p + z²/2n) / (1 + z²/n), half-width
    # z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n): the textbook [0.4902, 0.9433]
    values = [1.0] * 8 + [0.0] * 2
    z = 1.959963984540054
    centre = (0.8 + z * z / 20) / (1 + z * z / 10)
    half = z * math.sqrt(0.016 + z * z / 400) / (1 + z * z / 10)
    got = statistics.wilson_interval(values)
    assert (got.lower, got.upper) == pytest.approx((centre - half, centre + half), abs=1e-12)
    assert (round(got.lower, 4), round(got.upper, 4)) == (0.4902, 0.9433)
    from scipy.stats import binomtest

    ref = binomtest(8, 10).proportion_ci(method="wilson")
    assert (got.lower, got.upper) == pytest.approx((ref.low, ref.high), abs=1e-12)
    # bounds stay within [0, 1] where mean ± t·se would not
    assert statistics.wilson_interval([1.0] * 5).upper == 1.0
    with pytest.raises(ValueError, match="between 0 and 1"):
        statistics.wilson_interval([1.5])


def test_fewer_than_two_clusters_is_nan_not_zero() -> None:
    assert math.isnan(statistics.clustered_stderr([0.0, 1.0], ["a", "a"]))
    assert math.isnan(statistics.wilson_interval([0.0, 1.0], ["a", "a"]).lower)
    assert math.isnan(statistics.clustered_ci([0.0, 1.0], ["a", "a"]).upper)
    with pytest.raises(ValueError, match="no cluster id"):
        statistics.clustered_stderr([0.0], [None])  # type: ignore[list-item]


# --------------------------------------------------------------------------- end to end


def _temporal_items() -> tuple[list[PromptItem], list[int]]:
    """Four temporal questions from each of four conversations, with their document indices
    in the lm-eval `locomo_temporal` task."""
    from memevals.benchmarks.locomo import samples
    from memevals.core.memory_options import MemoryOptions

    items = samples.build(
        samples.LocomoOptions(
            protocol="memevals", categories="temporal", memory=MemoryOptions("none")
        )
    ).items
    indices: list[int] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        conv = item.metadata["cluster"]
        if (len(seen) < 4 or conv in seen) and seen.get(conv, 0) < 4:
            seen[conv] = seen.get(conv, 0) + 1
            indices.append(index)
    assert len(indices) == 16 and len(seen) == 4
    return [items[i] for i in indices], indices


def _reply(n: int, item: PromptItem) -> str:
    """Conversation-dependent quality, so the clustered error differs from the naive one."""
    conv = int(str(item.metadata["cluster"]).split("-")[1])
    if conv % 2 == 0 or n % 4 == 0:
        return str(item.target)
    return "no idea" if n % 3 else str(item.target).split()[0]


def test_inspect_metrics_equal_core_values(data_dir: Path, tmp_path: Path) -> None:
    import scripted_judge  # noqa: F401  (registers the scripted/ grader)
    from inspect_ai.model import get_model
    from lm_eval_support import run_inspect
    from logged_figures import figures

    from memevals.inspect_tasks.locomo import locomo

    items, _ = _temporal_items()
    answers = {item.as_text(): _reply(n, item) for n, item in enumerate(items)}
    log = run_inspect(
        locomo(
            categories="temporal",
            context="none",
            judge=True,
            uncertainty="full",
            protocol="memevals",  # the prompts _temporal_items built; the memevals judge
        ),
        answers,
        tmp_path,
        [i.id for i in items],
        roles={"grader": get_model("scripted/lenient")},
    )
    assert log.samples is not None and log.results is not None
    clusters = [str(s.metadata["cluster"]) for s in log.samples]
    assert clusters == [str(s.metadata["conversation_id"]) for s in log.samples]
    f1 = [float(s.scores["locomo_f1_scorer"].value) for s in log.samples]  # type: ignore[index, arg-type]
    judged = [float(s.scores["llm_judge"].value["judge"]) for s in log.samples]  # type: ignore[index, call-overload]
    assert len(set(f1)) >= 3 and 0 < sum(judged) < len(judged)

    by_scorer = {s.name: {k.rsplit("/", 1)[-1]: m.value for k, m in s.metrics.items()}
                 for s in log.results.scores}  # fmt: skip
    m = by_scorer["locomo_f1_scorer"]
    se = statistics.clustered_stderr(f1, clusters)
    naive = float(np.std(f1, ddof=1) / math.sqrt(len(f1)))
    assert se != pytest.approx(naive, rel=1e-3)  # clustering matters on these replies
    assert m["stderr"] == pytest.approx(se, abs=1e-12)  # the clustered error is the stderr
    assert m["stderr_naive"] == pytest.approx(naive, abs=1e-12)  # with uncertainty=full
    assert m["temporal_stderr"] == pytest.approx(se, abs=1e-12)  # one category: the same
    interval = statistics.clustered_ci(f1, clusters)
    clipped = (max(interval.lower, 0.0), min(interval.upper, 1.0))  # within F1's range
    assert (m["ci_lower"], m["ci_upper"]) == pytest.approx(clipped)
    assert (m["temporal_ci_lower"], m["temporal_ci_upper"]) == pytest.approx(clipped)

    # the judge is one result named by its scorer; its `judge` key's figures by figure name
    assert "judge" not in by_scorer and "llm_judge" in by_scorer
    j = {figure: v for (key, figure), v in figures(log).items() if key == "judge"}
    wilson = statistics.wilson_interval(judged, clusters)
    assert j["stderr"] == pytest.approx(statistics.clustered_stderr(judged, clusters), abs=1e-12)
    assert (j["ci_lower"], j["ci_upper"]) == pytest.approx(
        (wilson.lower, wilson.upper), abs=1e-12
    )
    assert (j["temporal_ci_lower"], j["temporal_ci_upper"]) == (
        pytest.approx((wilson.lower, wilson.upper), abs=1e-12)
    )

    # memevals-compare recomputes the same figures from the samples of the log
    from memevals.tools.compare import load_rows

    [row] = load_rows([str(tmp_path)])
    assert row.kinds["f1"].clustered[""].stderr_clustered == pytest.approx(se, abs=1e-12)
    # four conversations are too few for compare to state an interval (docs/compare.md), while
    # the same figure with the floor lowered is the Wilson interval Inspect logs
    t = row.kinds["judge"].clustered["temporal"]
    assert t.clusters == 4 and t.too_few_clusters and math.isnan(t.interval.lower)
    lowered = statistics.summarize(judged, clusters, proportion=True, minimum=2)
    assert lowered.interval == pytest.approx(wilson)


def test_lm_eval_aggregation_equals_core_value(data_dir: Path) -> None:
    pytest.importorskip("lm_eval")
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager
    from lm_eval_support import TableLM

    from memevals.lm_eval_tasks import include_path

    items, indices = _temporal_items()
    answers = {item.as_text(): _reply(n, item) for n, item in enumerate(items)}
    results: dict[str, Any] | None = simple_evaluate(
        model=TableLM(answers),
        tasks=["locomo_temporal"],
        task_manager=TaskManager(
            include_path=include_path(),
            include_defaults=False,
            metadata={"context": "none", "protocol": "memevals"},
        ),
        samples={"locomo_temporal": indices},
        log_samples=True,
        bootstrap_iters=100,  # lm-eval's own stderr must not choke on the (value, cluster) pairs
    )
    assert results is not None
    logged = results["samples"]["locomo_temporal"]
    assert [s["doc"]["id"] for s in logged] == [i.id for i in items]
    f1 = [float(s["f1"]) for s in logged]
    clusters = [str(s["f1_stderr_clustered"][1]) for s in logged]
    assert clusters == [str(i.metadata["conversation_id"]) for i in items]
    assert [s["f1_stderr_clustered"][0] for s in logged] == f1
    row = results["results"]["locomo_temporal"]
    assert row["f1_stderr_clustered,none"] == pytest.approx(
        statistics.clustered_stderr(f1, clusters), abs=1e-15
    )
    assert row["f1_stderr_clustered_stderr,none"] == "N/A"
    assert row["f1_stderr,none"] == pytest.approx(np.std(f1, ddof=1) / math.sqrt(len(f1)))
