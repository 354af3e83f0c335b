"""memevals-estimate on the event summary (issue 40) counts what a real run sends: the FactScore
grader calls, and under incremental=true one call per session with its own prompt.

Each figure of the real `memevals-estimate` console script is compared with a real Inspect run
of the same samples on mockllm, counting the model calls in its log and their input with the
project's token counter (the estimate's accounting), not mockllm's own usage figures.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from event_summary_grader import fact_reply
from in_process import run
from inspect_ai import eval as inspect_eval
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, ModelOutput, get_model

from memevals.core.tokens import get_token_counter
from memevals.inspect_tasks.locomo_event_summary import locomo_event_summary
from memevals.results.cost import MESSAGE_OVERHEAD, REQUEST_OVERHEAD

_PLACEHOLDER = "(no events yet)"


def _estimate(data_dir: Path, *options: str) -> str:
    script = str(Path(sys.executable).parent / "memevals-estimate")
    args = ["locomo_event_summary", "--limit", "2", "--per-sample", *options]
    done = run([script, *args, "-T", f"data_dir={data_dir}"])
    assert done.returncode == 0, done.stderr
    return done.stdout


def _rows(out: str) -> dict[str, int]:
    """The --per-sample table: id -> input tokens."""
    return {m[1]: int(m[2]) for m in re.finditer(r"^\| (\S[^|]*?) \| (\d+) \|", out, re.M)}


def _grader_total(out: str) -> int:
    m = re.search(r"^grader calls \(event_summary_scorer\): (\d+) = ", out, re.M)
    assert m is not None, out
    return int(m[1])


def _calls(log: EvalLog) -> dict[str, tuple[list[ModelEvent], list[ModelEvent]]]:
    """Per sample: (the summary calls, the grader calls), from the log's model events (read
    back with the prompts in place of their attachment references)."""
    assert log.status == "success"
    log = read_eval_log(log.location, resolve_attachments=True)
    assert log.samples is not None
    out = {}
    for s in log.samples:
        events = [e for e in s.events if isinstance(e, ModelEvent)]
        summary = [e for e in events if e.input[0].role == "system"]
        out[str(s.id)] = (summary, [e for e in events if e not in summary])
    return out


def _tokens(messages: Sequence[tuple[str, str]]) -> int:
    count = get_token_counter()
    return REQUEST_OVERHEAD + sum(MESSAGE_OVERHEAD + count(text) for _, text in messages)


@pytest.mark.parametrize(("reference_facts", "grader_calls"), [("decompose", 12), ("events", 8)])
def test_whole_conversation_estimate_matches_a_run_with_readable_grader(
    data_dir: Path, tmp_path: Path, reference_facts: str, grader_calls: int
) -> None:
    """The model under test writes the reference itself (the estimate assumes a summary as long
    as the reference) and the grader answers every fact prompt readably, one fact per line:
    the grader calls then match the estimate exactly, as do the input tokens."""
    task = locomo_event_summary(data_dir=str(data_dir), reference_facts=reference_facts)
    targets = {str((s.metadata or {})["speaker"]): s.target for s in list(task.dataset)[:2]}

    def writer(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        [speaker] = [p for p in targets if f"in {p}'s life" in messages[-1].text]
        return ModelOutput.from_content("mockllm/model", str(targets[speaker]))

    def grader(messages: list[ChatMessage], *_: Any) -> ModelOutput:
        return ModelOutput.from_content("mockllm/model", fact_reply(messages[0].text))

    [log] = inspect_eval(
        task,
        model=get_model("mockllm/model", custom_outputs=writer),
        model_roles={"grader": get_model("mockllm/model", custom_outputs=grader)},
        limit=2,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    calls = _calls(log)
    out = _estimate(data_dir, "-T", f"reference_facts={reference_facts}")
    rows = _rows(out)
    assert set(rows) == set(calls)
    for sid, (summary, graded) in calls.items():
        [one] = summary
        assert rows[sid] == _tokens([(m.role, m.text) for m in one.input])
        # every reply was readable: no retries, so the count is the procedure's own
        assert all(json.loads(e.output.completion) for e in graded)
    real = sum(len(graded) for _, graded in calls.values())
    assert real == _grader_total(out) == grader_calls, out


def test_incremental_estimate_counts_one_call_per_session(data_dir: Path, tmp_path: Path) -> None:
    """incremental=true: the estimate lists each session's call; a real mockllm run makes the
    same calls, whose prompts differ from the counted ones only in the carried summary (the
    estimate counts the first call's placeholder there, and bounds the difference)."""
    [log] = inspect_eval(
        locomo_event_summary(data_dir=str(data_dir), incremental=True),
        model="mockllm/model",
        limit=2,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    calls = _calls(log)
    out = _estimate(data_dir, "-T", "incremental=true")
    rows = _rows(out)
    made = sum(len(summary) for summary, _ in calls.values())
    assert made == len(rows) == 38
    assert f"samples: 2 ({made} model calls; the token figures below are per call)" in out
    assert f"note: {made} model calls for 2 samples: incremental=true makes one call per " in out
    real_total = 0
    for sid, (summary, graded) in calls.items():
        for k, event in enumerate(summary, 1):
            sent: list[tuple[str, str]] = [(m.role, m.text) for m in event.input]
            real_total += _tokens(sent)
            if k > 1:  # the carried summary is the previous reply: put back the placeholder
                previous = summary[k - 2].output.completion
                assert previous in sent[1][1]
                sent[1] = ("user", sent[1][1].replace(previous, _PLACEHOLDER, 1))
            assert rows[f"{sid} call {k}"] == _tokens(sent)
        # mockllm's replies are unreadable verdicts: asked once more, then unscored
        assert len(graded) == 2
    estimated = sum(rows.values())
    assert f"input tokens: {estimated:,} total; per call mean" in out
    bound = re.search(r"at most ([\d,]+) tokens more", out)
    assert bound is not None and 0 < real_total - estimated <= int(bound[1].replace(",", ""))
    assert "output tokens: 2,048 per call (max_tokens of the task, an upper bound) = 77,824" in out
