"""BEAM's rubric judge and report figures without a framework: a scripted grader call, the
items' scores and retries, event ordering's alignment calls, the post-hoc refusals, and the
figures computed from scored samples."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import pytest

from memevals.benchmarks.beam.official import official_texts
from memevals.benchmarks.beam.prompts import judge_prompt, judge_repair
from memevals.benchmarks.beam.rubric_judge import Judgement, check_posthoc, judge_question
from memevals.benchmarks.beam.scoring import ability_figures, event_ordering_figures, overall_figure
from memevals.core.build import Generation

Messages = list[tuple[str, str]]
Calls = list[tuple[Messages, Generation]]


def scripted(reply: Callable[[Messages], str]) -> tuple[Any, Calls]:
    """A grader call answering by `reply`, and the calls it received."""
    seen: Calls = []

    async def ask(messages: Sequence[tuple[str, str]], sent: Generation) -> str:
        seen.append((list(messages), sent))
        return reply(list(messages))

    return ask, seen


def judge(
    md: Mapping[str, Any], reply: str, answer: Callable[[Messages], str]
) -> tuple[Judgement, Calls]:
    ask, seen = scripted(answer)
    return asyncio.run(judge_question(md, reply, ask)), seen


def test_memevals_items_are_asked_again_once_after_an_unreadable_reply() -> None:
    md = {
        "protocol": "memevals",
        "category": "knowledge_update",
        "question": "Which two?",
        "rubric": ["alpha beta", "gamma"],
    }
    asked: dict[str, int] = {}

    def answer(messages: Messages) -> str:
        item = "alpha beta" if "alpha beta" in messages[0][1] else "gamma"
        asked[item] = asked.get(item, 0) + 1
        if item == "gamma":
            return '{"score": 1, "reason": "r"}'
        return "not json" if asked[item] == 1 else '{"score": 0.5, "reason": "r"}'

    verdict, seen = judge(md, "the reply", answer)
    assert verdict.value == {"beam": 0.75, "unscored": 0}
    assert verdict.metadata["item_scores"] == [0.5, 1.0]
    assert verdict.metadata["grader_replies"] == [
        ["not json", '{"score": 0.5, "reason": "r"}'],
        ['{"score": 1, "reason": "r"}'],
    ]
    assert verdict.explanation == "rubric score: 0.75\n 0.5 alpha beta\n 1.0 gamma"
    first = ("user", judge_prompt("Which two?", "alpha beta", "the reply"))
    retry = next(m for m, _ in seen if len(m) == 3)
    assert retry == [first, ("assistant", "not json"), ("user", judge_repair())]
    # memevals' limit per rubric item, temperature 0, on every call
    assert {sent for _, sent in seen} == {Generation(max_tokens=1024, temperature=0.0)}
    assert len(seen) == 3


def test_official_event_ordering_aligns_then_reports_tau_norm() -> None:
    texts = official_texts()
    rubric = ["first event", "second event"]
    md = {"protocol": "official", "category": "event_ordering", "question": "?", "rubric": rubric}

    def answer(messages: Messages) -> str:
        if messages[0][0] == "user":
            return '{"score": 0.5}'  # event ordering keeps the half under upstream's rule
        pairs = (texts.equivalence_messages(r, r) for r in rubric)
        same = [[("system", system), ("user", user)] for system, user in pairs]
        return "YES" if messages in same else "NO"

    verdict, seen = judge(md, "second event\nfirst event", answer)
    # "second event" is compared with both rubric items, "first event" with the first only
    assert verdict.metadata["equivalence_calls"] == 3
    order = verdict.metadata["event_order"]
    assert (order["precision"], order["recall"], order["f1"]) == (1.0, 1.0, 1.0)
    assert order["tau_norm"] == 0.0 and order["rubric_score"] == 0.5  # reversed order
    assert verdict.value == {"beam": 0.0, "unscored": 0}
    assert verdict.explanation.startswith("tau_norm: 0.0\n")
    # upstream sends no token limit on any call
    assert {sent for _, sent in seen} == {Generation(max_tokens=None, temperature=0.0)}
    judged = [m for m, _ in seen if len(m) == 1]
    assert sorted(m[0][1] for m in judged) == sorted(
        texts.judge_prompt(r, "second event\nfirst event") for r in rubric
    )


def test_an_unreadable_official_item_leaves_the_question_unscored() -> None:
    md = {"protocol": "official", "category": "abstention", "question": "?", "rubric": ["a"]}
    verdict, seen = judge(md, "reply", lambda messages: "no verdict here")
    assert len(seen) == 1  # official: no retry
    assert math.isnan(verdict.value["beam"]) and verdict.value["unscored"] == 1
    assert verdict.explanation == "rubric score: None\n   ? a"


def test_posthoc_refusals_name_the_fix() -> None:
    with pytest.raises(ValueError, match="judge_runs=2: BEAM judges each rubric item once"):
        check_posthoc([{"protocol": "memevals"}], None, 2)
    with pytest.raises(ValueError, match="built under protocol=official, whose grader sends no"):
        check_posthoc([{"protocol": "memevals"}, {"protocol": "official"}], 300, 1)
    # memevals samples, and a log written before the option (memevals' texts), take a limit
    check_posthoc([{"protocol": "memevals"}, {}], 300, 1)


class Row(NamedTuple):
    sample_id: str
    metadata: Mapping[str, Any]
    value: float | None
    score_metadata: Mapping[str, Any]


def test_report_figures_from_scored_samples() -> None:
    def row(conv: str, ability: str, value: float | None, **score_md: Any) -> Row:
        return Row(
            f"{conv}-{ability}", {"conversation": conv, "category": ability}, value, score_md
        )

    order = {"f1": 0.5, "final_score": 0.25, "rubric_score": 1.0, "tau_norm": 0.5}
    rows = [
        row("1", "abstention", 1.0),
        row("1", "abstention", 0.0),
        row("2", "abstention", 1.0),
        row("1", "event_ordering", 0.5, event_order=order),
        row("2", "event_ordering", None, event_order=order),  # unscored: left out
    ]
    # abstention: conversation means 0.5 and 1.0 -> 0.75; event ordering 0.5
    assert ability_figures(rows) == {"abstention": 0.75, "event_ordering": 0.5}
    assert overall_figure(rows) == 0.625
    assert event_ordering_figures(rows) == {
        "event_ordering_f1": 0.5,
        "event_ordering_final_score": 0.25,
        "event_ordering_rubric": 1.0,
    }
    assert math.isnan(overall_figure([])) and event_ordering_figures(rows[:3]) == {}
    with pytest.raises(ValueError, match="sample x: BEAM metrics need metadata 'conversation'"):
        overall_figure([Row("x", {"category": "abstention"}, 1.0, {})])
