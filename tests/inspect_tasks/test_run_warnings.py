"""What a run says once, through the real `inspect eval` (issue 40): a context budget that keeps
no conversation (an error under protocol=memevals; under official, sent as upstream sends it,
with one warning), LoCoMo's unmatched evidence only when such a question runs, and a prompt
longer than a local model's window."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import EvalLog, read_eval_log

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.official import load_texts, start_sentence


def _said(res: Any, phrase: str) -> int:
    """How often the run's output says `phrase` (Inspect's console wraps a long line: compared
    with whitespace collapsed)."""
    return " ".join((res.stdout + res.stderr).split()).count(phrase)


def _logged(log: EvalLog, phrase: str) -> list[str]:
    """The samples whose transcript holds a logged message with `phrase`."""
    assert log.samples is not None
    return [
        str(s.id)
        for s in log.samples
        for e in s.events
        if e.event == "logger" and phrase in e.message.message
    ]


def _one_log(folder: Path) -> EvalLog:
    [path] = folder.glob("*.eval")
    return read_eval_log(str(path))


def test_a_budget_that_keeps_no_turn(inspect_cli: Any, tmp_path: Path, data_dir: Path) -> None:
    """protocol=official: upstream's walk keeps the last session's header and no turn, and
    upstream sends that prompt: so does memevals, saying so once for the run. protocol=memevals
    refuses the budget."""
    args = ["-T", "context=truncated", "-T", "max_context_tokens=10", "--display", "plain"]
    official = inspect_cli(
        "eval", "memevals/locomo", "--model", "mockllm/model", *args, "--limit", "2",
        "--log-dir", "official",
    )  # fmt: skip
    assert official.returncode == 0, official.stderr[-3000:]
    warning = "holds no conversation turn for 1986 of 1986 questions (conv-26, conv-30,"
    assert _said(official, warning) == 1
    assert _said(official, "Use a larger max_context_tokens (protocol=memevals refuses") == 1
    log = _one_log(tmp_path / "official")
    assert log.samples is not None and len(log.samples) == 2
    conv = load_locomo(data_dir)[0]
    empty = f"DATE: {conv.sessions[-1].date_time}\nCONVERSATION:\n\n\n"
    for sample in log.samples:
        assert not isinstance(sample.input, str)
        [message] = sample.input
        text = message.text
        # the start sentence, the last session's header and no turn; then the question
        assert text.startswith(start_sentence(conv, load_texts(data_dir)) + empty + "\n\n")
        assert not any(t.text in text for t in conv.turns[-5:])
    ours = inspect_cli(
        "eval", "memevals/locomo", "--model", "mockllm/model", *args, "-T", "protocol=memevals",
        "--log-dir", "ours",
    )  # fmt: skip
    assert ours.returncode != 0
    assert _said(ours, "max_context_tokens=10 is smaller than one turn") == 1
    assert not list((tmp_path / "ours").glob("*.eval"))


def test_unmatched_evidence_is_said_only_when_such_a_question_runs(
    inspect_cli: Any, tmp_path: Path
) -> None:
    phrase = "match no dialog turn"  # the old build-time warning said it too
    first = inspect_cli(
        "eval", "memevals/locomo", "--model", "mockllm/model", "-T", "context=oracle",
        "--limit", "3", "--display", "plain", "--log-dir", "first",
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-3000:]
    assert _said(first, phrase) == 0
    assert _logged(_one_log(tmp_path / "first"), phrase) == []
    # two of the four such questions (and one without): said once, from the first that runs
    picked = inspect_cli(
        "eval", "memevals/locomo", "--model", "mockllm/model", "-T", "context=oracle",
        "--sample-id", "conv-26-q1,conv-42-q58,conv-43-q18", "--max-samples", "1",
        "--display", "plain", "--log-dir", "picked",
    )  # fmt: skip
    assert picked.returncode == 0, picked.stderr[-3000:]
    assert _said(picked, "'unmatched_evidence' lists its own") == 1
    logged = _logged(_one_log(tmp_path / "picked"), phrase)
    assert len(logged) == 1 and logged[0] in {"conv-42-q58", "conv-43-q18"}


@pytest.mark.slow
def test_a_prompt_longer_than_the_local_models_window(
    smollm2_dir: Path, inspect_cli: Any, tmp_path: Path
) -> None:
    """The real SmolLM2 with its config's window made 32 tokens (the weights unchanged): every
    LoCoMo question alone is longer, and the run says so once, naming the window."""
    small = tmp_path / "smollm2-32"
    small.mkdir()
    for f in smollm2_dir.iterdir():
        if f.name != "config.json":
            (small / f.name).symlink_to(f)
    config = json.loads((smollm2_dir / "config.json").read_text())
    (small / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 32}))
    res = inspect_cli(
        "eval", "memevals/locomo", "--model", "hf/local", "-M", f"model_path={small}",
        "-M", "device=cpu", "-M", "do_sample=false", "-T", "context=none", "-T", "max_tokens=1",
        "--limit", "2", "--display", "plain", "--log-dir", "real",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert _said(res, "more than the model's window of 32 (max_position_embeddings)") == 1
    log = _one_log(tmp_path / "real")
    assert len(_logged(log, "more than the model's window of 32")) == 1
    shutil.rmtree(small)
