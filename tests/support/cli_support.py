"""Helpers for tests that run the real CLIs (imported by name: keep this module name unique)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import in_process

TESTS = Path(__file__).resolve().parents[1]
#: the shared helpers (scripted providers, loopback servers, CLI runners), importable by name
SUPPORT = TESTS / "support"


def run_inspect_cli(
    args: list[str],
    cwd: Path,
    env: dict[str, str] | None = None,
    timeout: float = 900,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run the real `inspect` CLI from `cwd` (a temp dir: installed-package names).

    mockllm's tiktoken download is replaced by tests/support/inspect_offline.py; nothing else
    changes. The entry point runs in this process (tests/support/in_process.py) unless
    `process`: a test of what only a process shows (an excepthook, a kill) asks for one.
    """
    cmd = [sys.executable, str(TESTS / "support" / "inspect_offline.py"), *args]
    return run_python(cmd, cwd=cwd, env=env, timeout=timeout, process=process)


def run_python(
    cmd: Sequence[str],
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = 900,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """Run a Python command line (a script, `-m module` or a console script of this
    interpreter) with `env` over this process's environment, in this process unless `process`.

    Args:
        cmd: the command line.
        cwd: its working directory.
        env: variables set for it, over os.environ.
        timeout: seconds before it is stopped.
        process: run it in a subprocess (for what only a process shows).

    Returns:
        The finished command, stdout and stderr captured as text.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    if process:
        return subprocess.run(
            list(cmd), cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
        )
    return in_process.run(cmd, cwd=cwd, env=full_env, timeout=timeout)
