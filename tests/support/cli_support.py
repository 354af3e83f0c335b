"""Helpers for tests that run the real CLIs (imported by name: keep this module name unique)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
#: the shared helpers (scripted providers, loopback servers, CLI runners), importable by name
SUPPORT = TESTS / "support"


def run_inspect_cli(
    args: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """Run the real `inspect` CLI in a subprocess from `cwd` (a temp dir: installed-package names).

    mockllm's tiktoken download is replaced by tests/support/inspect_offline.py; nothing else
    changes.
    """
    full_env = dict(os.environ)
    full_env.update(env or {})
    cmd = [sys.executable, str(TESTS / "support" / "inspect_offline.py"), *args]
    return subprocess.run(
        cmd, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout
    )
