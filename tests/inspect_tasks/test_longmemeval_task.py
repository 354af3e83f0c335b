"""LongMemEval tasks end to end on the fixture: every variant, the category tasks, context modes,
chain-of-note, the official aggregates with a scripted grader, and one real-CLI run."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_python
from inspect_ai import Task, eval
from inspect_ai.log import EvalLog, read_eval_log
from inspect_ai.model import ChatMessage, ChatMessageSystem, GenerateConfig, ModelOutput, get_model
from inspect_ai.tool import ToolChoice, ToolInfo
from logged_figures import figures
from longmemeval_grader import EXPECTED, mock_grader

from memevals.inspect_tasks.longmemeval import (
    longmemeval,
    longmemeval_abstention,
    longmemeval_m,
    longmemeval_oracle,
    longmemeval_temporal_reasoning,
)

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
# these tests check our own prompts and judge (protocol=memevals; tests/benchmarks/longmemeval
# checks the official protocol)
FX = {"data_dir": str(FIXTURES), "verify_checksum": False, "protocol": "memevals"}


def run(
    task: Task, tmp_path: Path, answers: Any = None, unreadable: frozenset[str] = frozenset()
) -> EvalLog:
    model = get_model("mockllm/model", custom_outputs=answers) if answers else "mockllm/model"
    grader = get_model("mockllm/model", custom_outputs=mock_grader(unreadable))
    (log,) = eval(
        task,
        model=model,
        model_roles={"grader": grader},
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    return log


def metrics(log: EvalLog) -> dict[str, float]:
    """Every logged figure as `<score key>:<figure>` (`judge:mean`, `unscored:count`)."""
    return {f"{key}:{figure}": v for (key, figure), v in figures(log).items()}


#: The uncertainty metrics beside the official aggregates (asserted on their own below).
UNCERTAINTY = ("stderr", "ci_", "abstention_wilson_")
#: ... and the per-type ones (`<type>_stderr`, `<type>_ci_lower`, `<type>_ci_upper`).
TYPE_UNCERTAINTY = ("_stderr", "_ci_lower", "_ci_upper")


def judge_metrics(log: EvalLog) -> dict[str, float]:
    """The official aggregates of the judge (overall, task-averaged, abstention, per type)."""
    return {
        name: v
        for k, v in metrics(log).items()
        if k.startswith("judge:")
        and not (name := k.split(":", 1)[1]).startswith(UNCERTAINTY)
        and not name.endswith(TYPE_UNCERTAINTY)
    }


@pytest.mark.parametrize("variant", ["oracle", "s", "m"])
def test_every_variant_gives_the_hand_computed_aggregates(variant: str, tmp_path: Path) -> None:
    log = run(longmemeval(variant=variant, **FX), tmp_path)
    assert log.eval.metadata is not None
    assert log.eval.metadata["variant"] == variant
    assert log.eval.metadata["checksum_verified"] is False
    assert len(log.eval.metadata["data_sha256"]) == 64
    assert log.results is not None and log.results.total_samples == 16
    got = judge_metrics(log)
    assert got == pytest.approx(EXPECTED)
    assert metrics(log)["unscored:count"] == 0
    # the judge is one result named by its scorer, counting every sample
    [judge] = [s for s in log.results.scores if s.scorer == "longmemeval_judge"]
    assert judge.name == "longmemeval_judge" and judge.scored_samples == 16
    assert judge.metrics["overall_accuracy"].value == EXPECTED["overall_accuracy"]


def test_uncertainty_one_cluster_per_question_and_wilson_intervals(tmp_path: Path) -> None:
    """Every question is its own cluster: the clustered error is the naive one; the Wilson
    intervals of the overall, per-type and abstention accuracy are the core's."""
    from memevals.core import statistics

    log = run(longmemeval(variant="oracle", uncertainty="full", **FX), tmp_path)
    m = {k.split(":", 1)[1]: v for k, v in metrics(log).items() if k.startswith("judge:")}
    assert log.samples is not None
    rows = [(s.metadata, float(s.scores["longmemeval_judge"].value["judge"])) for s in log.samples]  # type: ignore[index, call-overload]
    assert [md["cluster"] for md, _ in rows] == [md["question_id"] for md, _ in rows]
    values = [v for _, v in rows]
    ids = [str(md["cluster"]) for md, _ in rows]
    assert m["stderr"] == pytest.approx(m["stderr_naive"], abs=1e-12)
    overall = statistics.wilson_interval(values, ids)
    assert (m["ci_lower"], m["ci_upper"]) == pytest.approx(
        (overall.lower, overall.upper), abs=1e-12
    )
    abstention = [(v, c) for (md, v), c in zip(rows, ids, strict=True) if md["abstention"]]
    wilson = statistics.wilson_interval([v for v, _ in abstention], [c for _, c in abstention])
    assert (m["abstention_wilson_lower"], m["abstention_wilson_upper"]) == pytest.approx(
        (wilson.lower, wilson.upper), abs=1e-12
    )
    kind = "multi_session"
    typed = [(v, c) for (md, v), c in zip(rows, ids, strict=True) if md["category"] == kind]
    wilson = statistics.wilson_interval([v for v, _ in typed], [c for _, c in typed])
    assert m[f"{kind}_ci_upper"] == pytest.approx(wilson.upper, abs=1e-12)
    assert 0.0 <= m[f"{kind}_ci_lower"] <= m[kind]


def test_unscored_verdicts_are_excluded_and_counted(tmp_path: Path) -> None:
    log = run(longmemeval(variant="oracle", **FX), tmp_path, unreadable=frozenset({"fx02c4d5"}))
    got = judge_metrics(log)
    # fx02 (a "no") drops out: single-session-user 2/2, overall 10/15,
    # task-averaged (6 + 3 + 3 + 4 + 2 + 6) / 36
    assert got["overall_accuracy"] == pytest.approx(10 / 15)
    assert got["single_session_user"] == pytest.approx(1.0)
    assert got["task_averaged_accuracy"] == pytest.approx(24 / 36)
    assert metrics(log)["unscored:count"] == 1
    assert log.samples is not None
    sample = next(s for s in log.samples if s.id == "fx02c4d5")
    assert sample.scores is not None
    assert set(sample.scores) == {"longmemeval_judge", "prompt_tokens"}
    score = sample.scores["longmemeval_judge"]
    assert isinstance(score.value, dict) and math.isnan(score.value["judge"])
    assert "UNSCORED" in (score.explanation or "")


def test_variant_tasks_fix_the_variant(tmp_path: Path) -> None:
    oracle = longmemeval_oracle(**FX)
    m = longmemeval_m(**FX)
    assert oracle.metadata is not None and m.metadata is not None
    assert (oracle.metadata["variant"], m.metadata["variant"]) == ("oracle", "m")
    with pytest.raises(TypeError):
        longmemeval_oracle(variant="s", **FX)


def test_abstention_task(tmp_path: Path) -> None:
    log = run(longmemeval_abstention(variant="oracle", **FX), tmp_path)
    assert log.samples is not None
    assert sorted(str(s.id) for s in log.samples) == [
        "fx03e6f7_abs",
        "fx10a1b2_abs",
        "fx13a7b8_abs",
        "fx16a3b4_abs",
    ]
    got = judge_metrics(log)
    assert got["overall_accuracy"] == pytest.approx(3 / 4)
    assert got["abstention_accuracy"] == pytest.approx(3 / 4)
    # one item per type: 1, 1, 0, 1
    assert got["task_averaged_accuracy"] == pytest.approx(3 / 4)
    assert got["temporal_reasoning"] == 0.0


def test_category_task_takes_variant(tmp_path: Path) -> None:
    log = run(longmemeval_temporal_reasoning(variant="m", **FX), tmp_path)
    assert log.samples is not None
    assert [str(s.id) for s in log.samples] == ["fx11c3d4", "fx12e5f6", "fx13a7b8_abs"]
    assert {s.metadata["variant"] for s in log.samples} == {"m"}
    got = judge_metrics(log)
    assert got["overall_accuracy"] == pytest.approx(1 / 3)
    assert got["abstention_accuracy"] == 0.0
    # the M haystack (2 evidence + 11 filler sessions) is in the prompt
    first = log.samples[0]
    assert first.metadata["n_sessions_shown"] == 13


def _context_text(log: EvalLog, sample_id: str) -> str | None:
    """The history part of the sample's one user message (our layout: the history, a blank
    line, then `Current Date: ...`); None when the message is the question alone."""
    assert log.samples is not None
    sample = next(s for s in log.samples if s.id == sample_id)
    assert not any(isinstance(m, ChatMessageSystem) for m in sample.messages)
    [user] = [m for m in sample.messages if m.role == "user"]
    if user.text.startswith("Current Date: "):
        return None
    history, blank, _ = user.text.rpartition("\n\nCurrent Date: ")
    assert blank, user.text[-200:]
    return history


def test_sample_input_shows_dates_hides_has_answer(tmp_path: Path) -> None:
    log = run(longmemeval(variant="s", categories="knowledge_update", **FX), tmp_path)
    text = _context_text(log, "fx14c9d0")
    assert text is not None
    assert "has_answer" not in text
    dates = [line for line in text.split("\n") if line.startswith("Session date: ")]
    assert len(dates) == 6 and dates == sorted(dates)
    assert text.index("Corvel Systems") < text.index("Brightline Analytics")
    assert log.samples is not None
    sample = next(s for s in log.samples if s.id == "fx14c9d0")
    question = sample.messages[0].text.split("\n\n")[-1]
    assert question.startswith("Current Date: 2024/06/30 (Sun) 13:20\n")


def test_context_none_and_oracle(tmp_path: Path) -> None:
    none = run(longmemeval(variant="s", context="none", categories="multi_session", **FX), tmp_path)
    assert _context_text(none, "fx08c7d8") is None
    oracle = run(
        longmemeval(variant="m", context="oracle", categories="multi_session", **FX), tmp_path
    )
    text = _context_text(oracle, "fx08c7d8")
    assert text is not None
    assert text.count("### Session") == 2
    assert "guitar" in text and "ukulele" in text and "photosynthesis" not in text


def test_chain_of_note(tmp_path: Path) -> None:
    """One note call per session; empty notes are dropped; the answer sees only the notes."""
    note_calls: list[str] = []
    answer_inputs: list[list[ChatMessage]] = []

    def answers(
        input: list[ChatMessage], tools: list[ToolInfo], tc: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        last = input[-1].text
        if "Write short notes" in last:
            note_calls.append(last)
            assert config.max_tokens == 123
            note = (
                "User plays guitar and is starting ukulele, on top of piano."
                if ("guitar" in last or "ukulele" in last)
                else "empty"
            )
            return ModelOutput.from_content("mockllm/model", note)
        answer_inputs.append(input)
        return ModelOutput.from_content("mockllm/model", "Three instruments.")

    task = longmemeval(
        variant="s",
        categories="multi_session",
        chain_of_note=True,
        note_max_tokens=123,
        history_format="text",
        **FX,
    )
    log = run(task, tmp_path, answers=answers)
    # S fixture: 3 multi-session questions with 6, 6 and 6 sessions
    assert len(note_calls) == 18
    assert all("has_answer" not in c for c in note_calls)
    assert len(answer_inputs) == 3
    text = _context_text(log, "fx08c7d8")
    assert text is not None
    assert "Notes:" in text and text.count("### Session") == 2
    assert "photosynthesis" not in text
    assert log.samples is not None
    sample = next(s for s in log.samples if s.id == "fx08c7d8")
    assert (sample.metadata["notes_kept"], sample.metadata["notes_total"]) == (2, 6)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"variant": "xl"}, "variant='xl' is not one of oracle, s, m"),
        ({"context": "everything"}, "context='everything' is not supported; allowed values"),
        ({"history_format": "yaml"}, "history_format='yaml' is not one of json, text"),
        ({"max_tokens": 0}, "max_tokens must be at least 1"),
        ({"categories": "single_hop"}, "unknown LongMemEval category 'single_hop'"),
    ],
)
def test_bad_parameters_fail_before_loading(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        longmemeval(**{**FX, **kwargs})


def test_s_fixture_without_checksum_opt_out_is_refused() -> None:
    from memevals.core.files import DataError

    with pytest.raises(DataError, match="sha256"):
        longmemeval(variant="s", data_dir=str(FIXTURES))


def test_real_cli_all_variants(tmp_path: Path) -> None:
    """The real `inspect eval` CLI (with the table grader registered), all three variants."""
    logs = tmp_path / "logs"
    cmd = [
        sys.executable,
        str(TESTS / "support" / "longmemeval_grader.py"),
        "eval",
        "memevals/longmemeval",
        "memevals/longmemeval_oracle",
        "memevals/longmemeval_m",
        "-T",
        f"data_dir={FIXTURES}",
        "-T",
        "verify_checksum=false",
        "-T",
        "protocol=memevals",
        "--model",
        "mockllm/model",
        "--model-role",
        "grader=lmetable/fixture",
        "--log-dir",
        str(logs),
        "--log-format",
        "json",
        "--display",
        "plain",
    ]
    proc = run_python(cmd, cwd=tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    variants = {}
    for path in sorted(logs.glob("*.json")):
        log = read_eval_log(str(path))
        assert log.status == "success"
        assert log.eval.metadata is not None
        variants[log.eval.metadata["variant"]] = log
        assert judge_metrics(log) == pytest.approx(EXPECTED)
        raw = json.loads(path.read_text())
        assert raw["eval"]["model_roles"]["grader"]["model"] == "lmetable/fixture"
    assert sorted(variants) == ["m", "oracle", "s"]


@pytest.mark.slow
# torch on one thread: on a busy 2-core machine (xdist's two workers) a second thread waits
# for a core the other holds (docs/performance.md)
def test_real_local_model_with_chain_of_note(smollm2_dir: Path, tmp_path: Path) -> None:
    """SmolLM2-135M takes notes on each session and answers; the table grader judges."""
    task = longmemeval(
        variant="oracle",
        categories="knowledge_update",
        context="oracle",
        chain_of_note=True,
        # the notes and the answer need only be real text (their length is not checked), and
        # each generated token costs as much as ~30 read
        max_tokens=8,
        note_max_tokens=8,
        **FX,
    )
    model = get_model("hf/local", model_path=str(smollm2_dir), device="cpu", do_sample=False)
    grader = get_model("mockllm/model", custom_outputs=mock_grader())
    (log,) = eval(
        task,
        model=model,
        model_roles={"grader": grader},
        limit=1,
        display="none",
        log_dir=str(tmp_path / "logs"),
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    (sample,) = log.samples
    assert sample.id == "fx14c9d0"
    assert sample.metadata["notes_total"] == 2
    assert sample.output.completion.strip()
    assert judge_metrics(log)["overall_accuracy"] == 1.0  # fx14 is a "yes" in the table
