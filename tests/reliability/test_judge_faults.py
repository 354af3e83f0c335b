"""Judge faults: an unreadable verdict is retried once, then the sample is unscored.

Malformed, empty, truncated and contradictory verdicts each get exactly one retry; a second
unreadable reply leaves the sample unscored (NaN under "judge", 1 under "unscored"). The unscored
count is a metric in the log on disk, and the judge mean is over the scored samples only, never
with the unscored ones folded in as 0. Transport-level grader faults (errors, hangs, empty
streams) are Inspect's to retry: they never make a sample unscored or change a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faulty_model
import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from inspect_ai.solver import generate
from log_values import metrics, scores_by_id
from logged_figures import figures
from reliability_figures import count
from scripted_judge import quoted_candidate

from memevals.core.criteria_judge import repair_message
from memevals.inspect_tasks.judge_scorer import llm_judge
from memevals.inspect_tasks.locomo import locomo

UNREADABLE = {
    "malformed prose": "The reply is correct.",
    "empty": "",
    "whitespace only": "  \n\t ",
    "truncated label": '{"label": "corr',
    "truncated reason": '{"label": "correct", "reason": "the reply mat',
    "cut after the object opened": "{",
    "duplicate label keys": '{"label": "correct", "label": "wrong"}',
    "two verdicts": '{"label": "correct", "reason": "a"}\n{"label": "wrong", "reason": "b"}',
    "hedged label": '{"label": "correct or wrong", "reason": "unsure"}',
    "label of another criterion": '{"label": "yes", "reason": "fine"}',
    "label not text": '{"label": 1, "reason": "fine"}',
    "verdict inside prose": 'My verdict: {"label": "wrong", "reason": "x"}',
    "unclosed think": '<think>the reply seems right {"label": "correct"}',
    "reason not text": '{"label": "correct", "reason": ["a"]}',
}
READABLE = {
    "correct": '{"label": "correct", "reason": "same answer"}',
    "partial": '```json\n{"label": "Partial", "reason": "half"}\n```',
    "wrong": '<think>compare</think>{"label": "wrong", "reason": "differs"}',
}
SCORE = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}


def _plan() -> dict[str, tuple[list[str], str | None]]:
    """candidate text -> (the grader's replies by attempt, the label it should end with)."""
    plan: dict[str, tuple[list[str], str | None]] = {}
    labels = list(READABLE)
    for i, (name, bad) in enumerate(UNREADABLE.items()):
        label = labels[i % 3]
        plan[f"{name}, then readable"] = ([bad, READABLE[label]], label)
        plan[f"{name}, twice"] = ([bad, bad], None)
        plan[f"{name}, then another fault"] = ([bad, "", READABLE[label]], None)
    for label, good in READABLE.items():
        plan[f"readable {label}"] = ([good], label)
    return plan


PLAN = _plan()


def _echo(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> ModelOutput:
    return ModelOutput.from_content("mockllm", input[-1].text)


def _grader(calls: dict[str, int]) -> Callable[..., ModelOutput]:
    def grade(input: list[ChatMessage], tools: Any, tc: Any, config: GenerateConfig) -> ModelOutput:
        candidate = quoted_candidate(input[0].text)
        attempt = (len(input) - 1) // 2
        if attempt:  # a retry carries the unreadable reply and the repair request
            assert input[-1].text == repair_message("factual")
        calls[candidate] = calls.get(candidate, 0) + 1
        replies, _ = PLAN[candidate]
        return ModelOutput.from_content("mockllm", replies[attempt])

    return grade


def test_unreadable_verdicts_get_one_retry_then_stay_unscored(tmp_path: Path) -> None:
    samples = [
        Sample(
            id=f"s{i}",
            input=candidate,
            target="",
            metadata={
                "category": "single_hop" if i % 2 else "temporal",
                "judge": {"criterion": "factual", "reference": "ref", "question": "q?"},
            },
        )
        for i, candidate in enumerate(PLAN)
    ]
    task = Task(dataset=MemoryDataset(samples), solver=generate(), scorer=llm_judge())
    calls: dict[str, int] = {}
    [log] = eval(
        task,
        model=get_model("mockllm/model", custom_outputs=_echo),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=_grader(calls))},
        display="none",
        log_dir=str(tmp_path),
    )
    assert log.status == "success"
    served = [r for replies, _ in PLAN.values() for r in replies[: min(len(replies), 2)]]
    count("unreadable verdicts injected", sum(r not in READABLE.values() for r in served))
    # exactly one retry: a readable first reply costs 1 call, everything else 2
    for candidate, (replies, _) in PLAN.items():
        assert calls[candidate] == min(len(replies), 2), candidate
    by_candidate = {str(s.input): s for s in log.samples or []}
    scored: list[float] = []
    unscored = 0
    for candidate, (_, label) in PLAN.items():
        score = by_candidate[candidate].scores["llm_judge"]  # type: ignore[index]
        assert isinstance(score.value, dict)
        if label is None:
            unscored += 1
            assert math.isnan(score.value["judge"]) and score.value["unscored"] == 1, candidate
            assert score.reason == "grader_failed" and score.metadata["label"] is None
            assert len(score.metadata["judge_replies"]) == 2
        else:
            assert score.value == {"judge": SCORE[label], "unscored": 0}, candidate
            scored.append(SCORE[label])
    count("unscored samples checked", unscored)

    # the figures that reach the log on disk
    on_disk = read_eval_log(log.location)
    m = figures(on_disk)
    assert m[("unscored", "count")] == unscored == 2 * len(UNREADABLE)
    assert m[("judge", "mean")] == pytest.approx(sum(scored) / len(scored), abs=1e-12)
    folded = sum(scored) / (len(scored) + unscored)  # what counting unscored as 0 would give
    assert m[("judge", "mean")] != pytest.approx(folded, abs=1e-6)
    for category in ("single_hop", "temporal"):
        values = [
            SCORE[label]  # type: ignore[index]
            for i, (_, label) in enumerate(PLAN.values())
            if label is not None and ("single_hop" if i % 2 else "temporal") == category
        ]
        assert m[("judge", category)] == pytest.approx(sum(values) / len(values), abs=1e-12)


def test_a_flaky_grader_connection_changes_nothing(tmp_path: Path) -> None:
    """Grader errors, hangs and empty streams are retried by Inspect: every sample is judged,
    none unscored, the same verdicts as with a healthy grader."""
    ids = [str(s.id) for s in locomo(context="none", protocol="memevals").dataset][::60]

    def run(name: str, **grader_args: Any) -> EvalLog:
        return eval(
            locomo(context="none", judge=True, protocol="memevals"),
            model=get_model("faulty/answerer"),
            model_roles={"grader": get_model("faulty/judge", judge=True, **grader_args)},
            sample_id=ids,
            display="none",
            log_dir=str(tmp_path / name),
            max_retries=10,
            attempt_timeout=1,
            # every sample at once: a hung call's second before its timeout overlaps the others
            # (a call's faults depend on its input and attempt only, never on the schedule)
            max_connections=len(ids),
        )[0]

    healthy = run("healthy")
    before = sum(faulty_model.INJECTED.values())
    flaky = run("flaky", fault_rate=0.35, faults="error,empty,timeout", seed=2, hang=5)
    injected = sum(faulty_model.INJECTED.values()) - before
    count("provider faults injected", injected)
    assert injected >= 5
    assert flaky.status == healthy.status == "success"
    m = metrics(flaky)
    assert figures(flaky)[("unscored", "count")] == 0.0
    assert scores_by_id(flaky) == scores_by_id(healthy)
    assert m == metrics(healthy)
    judged = [s.scores["llm_judge"].metadata["label"] for s in flaky.samples or []]  # type: ignore[index]
    assert len(judged) == len(ids) and None not in judged
    assert len(set(judged)) == 2  # both verdicts occur: the comparison is not trivially equal
    # no NaN sneaked into the metrics (log_values.metrics writes NaN as "nan")

    def leaves(value: object) -> list[object]:
        return (
            [x for v in value.values() for x in leaves(v)] if isinstance(value, dict) else [value]
        )

    assert "nan" not in leaves(m), m
