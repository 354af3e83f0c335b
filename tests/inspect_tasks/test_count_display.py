"""Counts and names on Inspect's run screen (issue 28, point 7; issue 38, point 1): through the
real `inspect eval` CLI every count is integral in the log and drawn in Inspect's own format
(three decimals: Inspect's public API has no integer format, and memevals changes no renderer),
every row has memevals' short name and none is NaN. A dict-valued score's metrics are `keyed`
list metrics (memevals.inspect_tasks.metrics): their rows' names and the figures left out come
from Inspect's public metric API, and no Inspect function is replaced.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.scorer import SampleScore, Score, grouped, mean
from logged_figures import is_count

from memevals.inspect_tasks.metrics import count, keyed, stderr_clustered

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
            kind = "count" if is_count(m) else m.name.rsplit("/", 1)[-1]
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


def _sample(i: int, value: Any, cluster: str, category: str = "temporal") -> SampleScore:
    md = {"cluster": cluster, "category": category}
    return SampleScore(score=Score(value=value), sample_id=i, sample_metadata=md)


def _rows(metrics: list[Any], scores: list[SampleScore]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in metrics:
        out |= m(scores)
    return out


def test_keyed_rows_leave_out_unscored_samples_and_undefined_figures() -> None:
    """A judge's dict scores, worked by hand: two of three samples scored (1 and 0, two
    clusters), the third's judge NaN and counted unscored."""
    nan = math.nan
    scores = [
        _sample(1, {"judge": 1.0, "unscored": 0}, "a"),
        _sample(2, {"judge": 0.0, "unscored": 0}, "b", "multi_hop"),
        _sample(3, {"judge": nan, "unscored": 1}, "b"),
    ]
    figures = {"judge": [mean(), grouped(mean(), "category", all=False)], "unscored": [count()]}
    assert _rows(keyed(figures), scores) == {
        "mean": 0.5,
        "temporal": 1.0,
        "multi_hop": 0.0,
        "unscored": 1.0,
    }
    # peers: every key's rows prefixed, its mean named by the key
    peers = keyed({"rouge1": [mean(), stderr_clustered()], "judge": [mean()]}, lead=False)
    rows = _rows(
        peers,
        [
            _sample(1, {"rouge1": 0.2, "judge": 1.0}, "a"),
            _sample(2, {"rouge1": 0.4, "judge": nan}, "b"),
        ],
    )
    assert rows == {"rouge1": pytest.approx(0.3), "rouge1_stderr": pytest.approx(0.1), "judge": 1.0}
    # every sample unscored: no figure (None, which Inspect draws no row for), the count stays
    unscored = [_sample(i, {"judge": nan, "unscored": 1}, "a") for i in (1, 2)]
    assert _rows(keyed(figures), unscored) == {"mean": None, "unscored": 2.0}
    # `*`: every key the scores have, each prefixed
    [each] = keyed({"*": [mean()]})
    assert each([_sample(1, {"recall@5": 1.0, "ndcg@5": 0.5}, "a")]) == {
        "recall@5": 1.0,
        "ndcg@5": 0.5,
    }


def test_keyed_names_the_sample_and_key_of_a_score_that_is_not_a_dict() -> None:
    [judge] = keyed({"judge": [mean()]})
    with pytest.raises(ValueError, match=r"sample 7: a 'judge' figure needs a dict score"):
        judge([_sample(7, 0.5, "a")])


def test_no_inspect_function_is_replaced() -> None:
    """With every memevals metric made, Inspect's results functions are its own (issue 38)."""
    from inspect_ai._eval.task import results

    import memevals.inspect_tasks.locomo  # noqa: F401  (its scorers' metrics are made)

    for name in ("empty_metric_value", "scorers_from_metric_dict", "scorer_for_metrics"):
        fn = getattr(results, name)
        assert fn.__module__ == results.__name__ and not hasattr(fn, "__wrapped__"), name
