"""`locomo_event_summary` end to end: samples and references from the real data, bad input,
scripted model + scripted grader on mockllm (exact fact scores, unscored samples, incremental
summarisation), the real CLI, and the real SmolLM2."""

from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import Any

import pytest
from event_summary_grader import scripted_grader
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log
from inspect_ai.model import ChatMessage, GenerateConfig, ModelOutput, get_model
from logged_figures import figures

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo_event_summary.prompts import (
    empty_events,
    reference_events,
    reference_text,
)
from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build_for
from memevals.benchmarks.locomo_event_summary.scoring import rouge_scores
from memevals.inspect_tasks.locomo_event_summary import locomo_event_summary


def _score(sample: Any) -> Any:
    """The event summary score (named with or without the `memevals/` prefix)."""
    [score] = [v for k, v in sample.scores.items() if k.endswith("event_summary_scorer")]
    return score


# ----------------------------------------------------------------------------------------------
# Samples and bad input


def test_samples_and_references_from_the_real_data(data_dir: Path) -> None:
    task = locomo_event_summary()
    samples = list(task.dataset)
    assert len(samples) == 20  # 10 conversations x 2 speakers
    assert samples[0].id == "conv-26-events-Caroline" and samples[1].id == "conv-26-events-Melanie"
    ref_lines = [str(s.target).count("\n") + 1 for s in samples]
    assert sum(ref_lines) == 669 - 1  # every event, without conv-41's one empty string
    assert task.metadata is not None
    assert task.metadata["empty_events_ignored"] == ["conv-41 events_session_19 Maria"]
    first = samples[0]
    assert str(first.target).splitlines()[0] == (
        "8 May, 2023: Caroline attends an LGBTQ support group for the first time."
    )
    assert isinstance(first.input, list) and first.input[0].role == "system"
    assert "CONVERSATION (session 19)" in first.input[0].text
    assert (
        "Caroline's life" in first.input[1].text and "Melanie's own events" in first.input[1].text
    )


def test_sessions_and_conversations_filters(data_dir: Path) -> None:
    task = locomo_event_summary(conversations="conv-26", sessions=3)
    [sample] = list(task.dataset)  # Melanie's first event is in session 4
    assert sample.id == "conv-26-events-Caroline"
    assert str(sample.target).count("\n") == 2
    assert "CONVERSATION (session 3)" in sample.input[0].text  # type: ignore[union-attr,index]
    assert "CONVERSATION (session 4)" not in sample.input[0].text  # type: ignore[union-attr,index]
    assert task.metadata is not None
    assert task.metadata["skipped_without_events"] == ["conv-26-events-Melanie"]
    with pytest.raises(ValueError, match=r"unknown conversation id\(s\) \['conv-99'\]"):
        locomo_event_summary(conversations="conv-26,conv-99")
    with pytest.raises(ValueError, match="sessions must be a positive"):
        locomo_event_summary(sessions=0)
    with pytest.raises(ValueError, match="reference_facts='atoms' is not supported"):
        locomo_event_summary(reference_facts="atoms")


def test_bad_event_summary_input_names_conversation_and_field(data_dir: Path) -> None:
    conv = load_locomo()[0]
    without = dataclasses.replace(conv, events=())
    with pytest.raises(ValueError, match="conversation conv-26 has no 'event_summary' field"):
        build_for([without], EventSummaryOptions())
    ghost = dataclasses.replace(conv, events=(dataclasses.replace(conv.events[0], session=40),))
    with pytest.raises(
        ValueError, match="conv-26: field 'event_summary' has events for session 40"
    ):
        build_for([ghost], EventSummaryOptions())
    stranger = dataclasses.replace(
        conv, events=(dataclasses.replace(conv.events[0], speaker="Bob"),)
    )
    with pytest.raises(ValueError, match="names speaker 'Bob'"):
        build_for([stranger], EventSummaryOptions())
    blank = dataclasses.replace(
        conv, events=(*conv.events, dataclasses.replace(conv.events[0], text=" "))
    )
    assert empty_events(blank) == ["conv-26 events_session_1 Caroline"]
    assert len(reference_events(blank, "Caroline", None)) == 13


# ----------------------------------------------------------------------------------------------
# End to end on mockllm


def test_scripted_run_gives_exact_fact_scores_and_unscored_samples(
    data_dir: Path, tmp_path: Path
) -> None:
    conv = load_locomo()[0]
    reference = reference_text(reference_events(conv, "Caroline", None)).splitlines()
    assert len(reference) == 13
    caroline = "\n".join([*reference[:3], "1 January, 2020: Caroline flies to Mars."])
    melanie = "27 June, 2023: Melanie goes camping."

    def model(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        text = caroline if "in Caroline's life" in messages[-1].text else melanie
        return ModelOutput.from_content("mockllm/model", text)

    [log] = inspect_eval(
        locomo_event_summary(conversations="conv-26"),
        model=get_model("mockllm/model", custom_outputs=model),
        model_roles={"grader": scripted_grader()},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and log.samples is not None
    by_id = {s.id: s for s in log.samples}
    c = _score(by_id["conv-26-events-Caroline"])
    # 4 generated facts, 3 supported; 13 reference facts, 3 covered
    p, r = 3 / 4, 3 / 13
    assert c.value["fact_precision"] == p and c.value["fact_recall"] == r
    assert c.value["fact_f1"] == pytest.approx(2 * p * r / (p + r))
    assert c.value["unscored"] == 0
    for k, v in rouge_scores(caroline, "\n".join(reference)).items():
        assert c.value[k] == v
    md = c.metadata
    assert md is not None and md["grader_fallback"] is False
    assert [f["supported"] for f in md["generated_facts"]] == [True, True, True, False]
    assert md["generated_facts"][3]["fact"] == "1 January, 2020: Caroline flies to Mars."
    assert sum(f["covered"] for f in md["reference_facts"]) == 3
    assert md["counts"] == {"generated": 4, "supported": 3, "reference": 13, "covered": 3}
    # Melanie: the grader never answers readably -> unscored, never 0; ROUGE still reported
    m = _score(by_id["conv-26-events-Melanie"])
    assert all(math.isnan(m.value[k]) for k in ("fact_precision", "fact_recall", "fact_f1"))
    assert m.value["unscored"] == 1 and m.value["rouge1"] > 0
    assert m.metadata is not None and len(m.metadata["grader_replies"]) == 2
    assert m.explanation is not None and m.explanation.startswith("UNSCORED")
    metrics = figures(log)
    assert metrics[("fact_precision", "mean")] == p  # the unscored sample is left out
    assert metrics[("fact_recall", "mean")] == r
    assert metrics[("fact_f1", "mean")] == c.value["fact_f1"]
    assert metrics[("unscored", "count")] == 1.0
    for key in ("rouge1", "rouge2", "rougeL"):
        assert metrics[(key, "mean")] == pytest.approx((c.value[key] + m.value[key]) / 2)
    # one result, named by its scorer, every key prefixed (peer figures); one conversation:
    # its clustered stderr is undefined, so it is left out (no NaN row); no intervals by default
    assert log.results is not None
    [result] = log.results.scores
    assert result.name == "event_summary_scorer" and result.scored_samples == 2
    assert list(result.metrics) == [
        "rouge1",
        "rouge2",
        "rougeL",
        "fact_precision",
        "fact_recall",
        "fact_f1",
        "unscored",
    ]


def test_incremental_summarises_session_by_session(data_dir: Path, tmp_path: Path) -> None:
    calls: list[list[ChatMessage]] = []

    def model(messages: list[ChatMessage], _t: Any, _c: Any, config: GenerateConfig) -> ModelOutput:
        calls.append(list(messages))
        assert config.max_tokens == 300
        n = re.search(r"CONVERSATION \(session (\d+)\)", messages[0].text)
        assert n is not None
        return ModelOutput.from_content("mockllm/model", f"line after session {n.group(1)}")

    [log] = inspect_eval(
        locomo_event_summary(
            conversations="conv-26",
            sessions=3,
            incremental=True,
            reference_facts="events",
            max_tokens=300,
        ),
        model=get_model("mockllm/model", custom_outputs=model),
        model_roles={"grader": scripted_grader()},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and log.samples is not None
    [sample] = log.samples
    model_calls = [c for c in calls if "CONVERSATION (session" in c[0].text]
    assert len(model_calls) == 3
    for k, msgs in enumerate(model_calls, 1):
        system, user = msgs[0].text, msgs[1].text
        # one session per step, and the summary so far fed forward
        assert f"CONVERSATION (session {k})" in system
        assert system.count("CONVERSATION (session") == 1
        expected = "(no events yet)" if k == 1 else f"line after session {k - 1}"
        assert expected in user
    assert sample.output.completion == "line after session 3"
    assert sample.store["incremental_summaries"] == [
        "line after session 1",
        "line after session 2",
        "line after session 3",
    ]
    score = _score(sample)
    # reference_facts=events: the 3 annotated events are the facts, none in the summary
    assert score.metadata is not None and len(score.metadata["reference_facts"]) == 3
    assert score.value["fact_recall"] == 0.0 and score.value["fact_precision"] == 0.0


def test_real_cli_reports_rouge_and_counts_unscored(inspect_cli: Any, tmp_path: Path) -> None:
    # mockllm as grader answers "Default output from mockllm/model": unreadable -> unscored
    res = inspect_cli(
        "eval",
        "locomo_event_summary",
        "--model",
        "mockllm/model",
        "--model-role",
        "grader=mockllm/model",
        "-T",
        "conversations=conv-30",
        "-T",
        "reference_facts=events",
        "--log-dir",
        "logs",
        "--display",
        "none",
    )
    assert res.returncode == 0, res.stderr[-3000:]
    [path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success" and log.eval.task == "locomo_event_summary"
    metrics = figures(log)
    assert metrics[("unscored", "count")] == 2.0
    assert metrics[("rouge1", "mean")] > 0.0
    # every sample unscored: the fact figures are undefined, left out (no row, never 0 or NaN)
    assert not [key for key in metrics if key[0] in ("fact_precision", "fact_recall", "fact_f1")]
    assert not [key for key, value in metrics.items() if math.isnan(value)]
    assert log.results is not None
    [result] = log.results.scores
    assert result.name == "event_summary_scorer" and result.scored_samples == 2
    assert list(result.metrics) == ["rouge1", "rouge2", "rougeL", "unscored"]


# ----------------------------------------------------------------------------------------------
# The real SmolLM2


@pytest.mark.slow
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_real_smollm2_incremental_summary(
    smollm2_dir: Path, data_dir: Path, tmp_path: Path
) -> None:
    # two sessions: the fewest that carry a summary forward; a step's summary need only be real
    # text (its length is not checked), and each generated token costs as much as ~30 read
    [log] = inspect_eval(
        locomo_event_summary(conversations="conv-26", sessions=2, incremental=True, max_tokens=16),
        model=get_model("hf/local", model_path=str(smollm2_dir), device="cpu", do_sample=False),
        model_roles={"grader": scripted_grader()},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success" and log.samples is not None
    [sample] = log.samples  # Caroline; Melanie has no event in sessions 1-2
    steps = sample.store["incremental_summaries"]
    assert len(steps) == 2 and all(s.strip() for s in steps)
    assert sample.output.completion == steps[-1]
    value = _score(sample).value
    assert value["unscored"] == 0
    for key in ("rouge1", "rouge2", "rougeL", "fact_precision", "fact_recall", "fact_f1"):
        assert 0.0 <= value[key] <= 1.0
    metrics = figures(log)
    assert ("fact_f1", "mean") in metrics and ("rougeL", "mean") in metrics
