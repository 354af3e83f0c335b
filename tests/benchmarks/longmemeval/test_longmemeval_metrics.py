"""LongMemEval aggregation (benchmarks/longmemeval/README.md#scoring) on hand-computed examples,
plain and as metrics."""

from __future__ import annotations

import math

import pytest
from inspect_ai._util.registry import registry_unqualified_name
from inspect_ai.scorer import Metric, SampleScore, Score

from memevals.benchmarks.longmemeval.scoring import LmeLabel, summarize
from memevals.inspect_tasks.longmemeval import LME_METRICS

#: The task's metrics by the names its logs show.
METRICS = {registry_unqualified_name(m): m for m in LME_METRICS}


def overall_accuracy() -> Metric:
    return METRICS["overall_accuracy"]


def task_averaged_accuracy() -> Metric:
    return METRICS["task_averaged_accuracy"]


def abstention_accuracy() -> Metric:
    return METRICS["abstention_accuracy"]


def type_accuracy() -> Metric:
    return METRICS["type_accuracy"]


# 10 judged questions:
#   single_session_user:  1, 1, 0(_abs)          -> 2/3
#   multi_session:        1, 0, 0, 0             -> 1/4
#   knowledge_update:     1(_abs), 1             -> 1
#   temporal_reasoning:   0                      -> 0
# overall 5/10; task-averaged (2/3 + 1/4 + 1 + 0) / 4 = 23/48; abstention 1/2
LABELS = [
    LmeLabel("single_session_user", False, 1.0),
    LmeLabel("single_session_user", False, 1.0),
    LmeLabel("single_session_user", True, 0.0),
    LmeLabel("multi_session", False, 1.0),
    LmeLabel("multi_session", False, 0.0),
    LmeLabel("multi_session", False, 0.0),
    LmeLabel("multi_session", False, 0.0),
    LmeLabel("knowledge_update", True, 1.0),
    LmeLabel("knowledge_update", False, 1.0),
    LmeLabel("temporal_reasoning", False, 0.0),
]


def test_summary_hand_computed() -> None:
    s = summarize(LABELS)
    assert s.overall == pytest.approx(5 / 10)
    assert s.task_averaged == pytest.approx(23 / 48)
    assert s.abstention == pytest.approx(1 / 2)
    assert s.per_type == pytest.approx(
        {
            "single_session_user": 2 / 3,
            "multi_session": 1 / 4,
            "temporal_reasoning": 0.0,
            "knowledge_update": 1.0,
        }
    )
    # paper order, whatever order the items came in
    assert list(s.per_type) == [
        "single_session_user",
        "multi_session",
        "temporal_reasoning",
        "knowledge_update",
    ]
    assert (s.n_scored, s.n_unscored) == (10, 0)


def test_task_average_differs_from_micro_average() -> None:
    # 1 of 1 single-session-user right, 0 of 3 multi-session: micro 1/4, task-averaged 1/2
    s = summarize(
        [LmeLabel("single_session_user", False, 1.0)] + [LmeLabel("multi_session", False, 0.0)] * 3
    )
    assert s.overall == pytest.approx(0.25)
    assert s.task_averaged == pytest.approx(0.5)
    assert s.abstention is None


def test_unscored_items_are_left_out_and_counted() -> None:
    s = summarize(
        [
            *LABELS,
            LmeLabel("multi_session", False, None),
            LmeLabel("temporal_reasoning", True, math.nan),
        ]
    )
    assert s.overall == pytest.approx(5 / 10)
    assert s.abstention == pytest.approx(1 / 2)
    assert s.per_type["temporal_reasoning"] == 0.0
    assert (s.n_scored, s.n_unscored) == (10, 2)


def test_empty() -> None:
    s = summarize([])
    assert (s.overall, s.task_averaged, s.abstention, s.per_type) == (None, None, None, {})
    only_unscored = summarize([LmeLabel("multi_session", False, None)])
    assert only_unscored.overall is None and only_unscored.n_unscored == 1


def test_unknown_type_is_kept_not_dropped() -> None:
    s = summarize([LmeLabel("multi_session", False, 1.0), LmeLabel("mystery", False, 0.0)])
    assert list(s.per_type) == ["multi_session", "mystery"]
    assert s.task_averaged == pytest.approx(0.5)


def sample_scores(labels: list[LmeLabel]) -> list[SampleScore]:
    return [
        SampleScore(
            score=Score(value=label.label if label.label is not None else math.nan),
            sample_id=f"q{i}" + ("_abs" if label.abstention else ""),
            sample_metadata={"category": label.question_type, "abstention": label.abstention},
        )
        for i, label in enumerate(labels)
    ]


def test_inspect_metrics_match_the_hand_computed_values() -> None:
    scores = sample_scores(LABELS)
    assert overall_accuracy()(scores) == pytest.approx(0.5)
    assert task_averaged_accuracy()(scores) == pytest.approx(23 / 48)
    assert abstention_accuracy()(scores) == pytest.approx(0.5)
    assert type_accuracy()(scores) == pytest.approx(
        {
            "single_session_user": 2 / 3,
            "multi_session": 1 / 4,
            "temporal_reasoning": 0.0,
            "knowledge_update": 1.0,
        }
    )


def test_inspect_metrics_without_abstention_items_are_left_out() -> None:
    scores = sample_scores([LmeLabel("multi_session", False, 1.0)])
    # nothing to average: no figure at all (the terminal shows no NaN row)
    assert abstention_accuracy()(scores) == {}
    assert overall_accuracy()(scores) == 1.0


def test_inspect_metrics_need_the_metadata() -> None:
    bad = [SampleScore(score=Score(value=1.0), sample_id="x", sample_metadata={})]
    with pytest.raises(ValueError, match="sample x: LongMemEval metrics need metadata"):
        overall_accuracy()(bad)
