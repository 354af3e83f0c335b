"""BEAM's scoring rules: the event-ordering formula against scipy, upstream's reading of the
grader, the rubric mean and the report's averages."""

from __future__ import annotations

import asyncio
import math
import random

import pytest
from scipy.stats import kendalltau

from memevals.benchmarks.beam.scoring import (
    BeamRow,
    align,
    beam_event_order,
    memevals_lines,
    memevals_reply_score,
    official_item_score,
    official_lines,
    official_reply_score,
    question_score,
    summarize,
)


def formula(reference: list[str], system: list[str]) -> dict[str, float]:
    """Upstream's event-ordering formula, written out here with scipy's kendalltau."""
    tp = len(set(reference) & set(system))
    fp = sum(1 for x in system if x not in reference)
    fn = sum(1 for x in reference if x not in system)
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    union = list(dict.fromkeys(reference + system))
    tie = len(union) + 1
    ref_rank = {x: i + 1 for i, x in enumerate(reference)}
    sys_rank = {x: i + 1 for i, x in enumerate(system)}
    with pytest.warns(Warning) if len(union) < 2 else _nothing():
        tau = kendalltau(
            [ref_rank.get(u, tie) for u in union],
            [sys_rank.get(u, tie) for u in union],
            variant="b",
        ).statistic
    tau_norm = (tau + 1) / 2
    return {
        "precision": p,
        "recall": r,
        "f1": f1,
        "tau_norm": tau_norm,
        "final_score": tau_norm * f1,
    }


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_event_order_equals_the_formula_on_generated_cases() -> None:
    rng = random.Random(7)
    pool = [f"event {i}" for i in range(12)] + ["other a", "other b", "other c"]
    cases = 0
    for _ in range(400):
        reference = rng.sample(pool[:12], rng.randint(1, 8))
        system = [rng.choice(pool) for _ in range(rng.randint(0, 10))]
        got = beam_event_order(reference, system).as_dict()
        want = formula(reference, system)
        assert all(same(got[k], want[k]) for k in want), (reference, system, got, want)
        cases += 1
    assert cases == 400


def test_event_order_worked_example() -> None:
    # two of three found, in swapped order, plus one extra line
    got = beam_event_order(["a", "b", "c"], ["b", "a", "x"])
    assert got.precision == pytest.approx(2 / 3)
    assert got.recall == pytest.approx(2 / 3)
    assert got.f1 == pytest.approx(2 / 3)
    # union a, b, c, x; reference ranks 1, 2, 3, 5; answer ranks 2, 1, 5, 3
    tau = kendalltau([1, 2, 3, 5], [2, 1, 5, 3], variant="b").statistic
    assert got.tau_norm == pytest.approx((tau + 1) / 2)
    assert got.final_score == pytest.approx((tau + 1) / 2 * 2 / 3)
    perfect = beam_event_order(["a", "b"], ["a", "b"])
    assert (perfect.f1, perfect.tau_norm, perfect.final_score) == (1.0, 1.0, 1.0)


def test_event_order_is_nan_where_tau_is_undefined() -> None:
    one = beam_event_order(["a"], ["a"])
    assert one.f1 == 1.0 and math.isnan(one.tau_norm) and math.isnan(one.final_score)
    empty = beam_event_order(["a", "b"], [])
    assert empty.f1 == 0.0 and math.isnan(empty.tau_norm)


def test_alignment_first_unused_equivalent_wins() -> None:
    asked: list[tuple[str, str]] = []

    async def equal_ignoring_case(ref: str, item: str) -> bool:
        asked.append((ref, item))
        return ref.lower() == item.lower()

    reference = ["Alpha", "Beta", "alpha"]
    aligned = asyncio.run(
        align(reference, ["ALPHA", "alpha", "gamma", "beta"], equal_ignoring_case)
    )
    # the second "alpha" takes the next unused match; "gamma" stays itself
    assert aligned == ["Alpha", "alpha", "gamma", "Beta"]
    assert asked[:3] == [("Alpha", "ALPHA"), ("Beta", "alpha"), ("alpha", "alpha")]
    assert ("Alpha", "alpha") not in asked  # a used item is never asked again


def test_lines() -> None:
    assert official_lines("a\n\nb") == ["a", "", "b"]
    assert memevals_lines(" a \n\n b\n") == ["a", "b"]


@pytest.mark.parametrize(
    ("reply", "raw"),
    [
        ('{"score": 1.0, "reason": "ok"}', 1.0),
        ('```json\n{"score": 0.5, "reason": "half"}\n```', 0.5),
        ('Here you go: {"score": 0.0, "reason": "no"} thanks', 0.0),
        ('{"score": "1", "reason": "text"}', "1"),
        ("no json at all", None),
        ('{"reason": "no score"}', None),
    ],
)
def test_official_reply_reading(reply: str, raw: object) -> None:
    assert official_reply_score(reply) == raw


def test_official_item_score_truncates_outside_event_ordering() -> None:
    assert official_item_score(0.5, "knowledge_update") == 0.0  # upstream's int(0.5)
    assert official_item_score(0.5, "abstention") == 0.0
    assert official_item_score(0.5, "event_ordering") == 0.5  # float() there
    assert official_item_score(1.0, "summarization") == 1.0
    assert official_item_score("1", "summarization") == 1.0
    assert official_item_score("0.5", "summarization") is None  # int("0.5") fails upstream
    assert official_item_score("0.5", "event_ordering") == 0.5
    assert official_item_score(None, "summarization") is None


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"score": 0.5, "reason": "x"}', 0.5),
        ('```json\n{"score": 1, "reason": "x"}\n```', 1.0),
        ('{"score": 0.7, "reason": "x"}', None),
        ('{"score": true}', None),
        ('Sure: {"score": 1}', None),
        ('{"score": 1, "score": 0}', None),
    ],
)
def test_memevals_reply_reading_is_strict(reply: str, value: float | None) -> None:
    assert memevals_reply_score(reply) == value


def test_question_score_is_the_item_mean() -> None:
    assert question_score([1.0, 0.5, 0.0, 0.5]) == pytest.approx(0.5)
    assert question_score([1.0, None]) is None
    assert question_score([]) is None


def test_report_means_over_conversations_then_abilities() -> None:
    rows = [
        BeamRow("100K-1", "abstention", 1.0),
        BeamRow("100K-1", "abstention", 0.0),
        BeamRow("100K-2", "abstention", 1.0),
        BeamRow("100K-1", "summarization", 0.25),
        BeamRow("100K-2", "summarization", None),
    ]
    got = summarize(rows)
    # abstention: conversation means 0.5 and 1.0 -> 0.75 (a question mean would be 2/3)
    assert got.per_ability == {"abstention": pytest.approx(0.75), "summarization": 0.25}
    assert got.overall == pytest.approx((0.75 + 0.25) / 2)
    assert (got.n_scored, got.n_unscored) == (4, 1)
    assert summarize([]).overall is None
