"""Runs of `-T context=agent` through the real `inspect eval` CLI with the scripted tool-calling
model (tests/support/scripted_agent.py), and what the agent tests read from their logs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cli_support import SUPPORT, run_python
from inspect_ai.event import ModelEvent
from inspect_ai.log import EvalLog, EvalSample, read_eval_log

CONV = "conv-26"
#: Two questions of conv-26: one write pass, two answers.
TWO = f"{CONV}-q0,{CONV}-q1"


def agent_eval(
    tmp_path: Path,
    *args: str,
    task: str = "memevals/locomo",
    log_dir: str = "logs",
    env: dict[str, str] | None = None,
) -> Any:
    """`inspect eval TASK -T context=agent ARGS` with the scripted model registered, its cache
    and log under `tmp_path` (the finished process)."""
    cmd = [sys.executable, str(SUPPORT / "scripted_agent.py"), "eval", task, "--display", "none"]
    cmd += ["--log-dir", str(tmp_path / log_dir), "-T", "context=agent", *args]
    env = {"MEMEVALS_CACHE_DIR": str(tmp_path / "cache"), **(env or {})}
    return run_python(cmd, cwd=tmp_path, env=env)


def agent_log(tmp_path: Path, *args: str, **kw: Any) -> EvalLog:
    """`agent_eval`'s log, which must be a success with samples (attachments resolved)."""
    done = agent_eval(tmp_path, *args, **kw)
    assert done.returncode == 0, done.stderr[-3000:]
    (path,) = (tmp_path / kw.get("log_dir", "logs")).glob("*.eval")
    # long texts (the sessions) are logged as attachments: read them back in place
    log = read_eval_log(str(path), resolve_attachments=True)
    assert log.status == "success", log.error
    assert log.samples
    return log


def agent_record(sample: EvalSample) -> dict[str, Any]:
    """The agent mode's per-sample metadata (settings, write record, answer tool calls)."""
    md: dict[str, Any] = sample.metadata["agent_memory"]
    return md


def model_events(sample: EvalSample) -> list[ModelEvent]:
    """Every model call the sample logged, in order."""
    return [e for e in sample.events if isinstance(e, ModelEvent)]
