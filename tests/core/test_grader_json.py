"""One strict reader for every grader reply (judge verdicts and FactScore steps)."""

from __future__ import annotations

from memevals.benchmarks.locomo_event_summary import scoring as event_summary
from memevals.core.criteria_judge import json_object_reply, parse_verdict


def test_strict_json_reader() -> None:
    assert json_object_reply('{"label": "correct", "reason": "ok"}') == {
        "label": "correct",
        "reason": "ok",
    }
    assert json_object_reply('<think>hm</think>\n```json\n{"a": 1}\n```') == {"a": 1}
    assert json_object_reply('Sure! {"a": 1}') is None
    assert json_object_reply('{"a": 1} {"b": 2}') is None
    assert json_object_reply('{"a": 1, "a": 2}') is None
    assert json_object_reply("[1, 2]") is None


def test_deeply_nested_reply_is_unreadable_not_a_crash() -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    assert json_object_reply(deep) is None
    assert parse_verdict(deep, "factual") is None
    # the FactScore steps read grader replies through the same reader
    assert event_summary.parse_facts(deep) is None
    assert event_summary.parse_support(deep, 1) is None
