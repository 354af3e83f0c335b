"""Expensive runs made once per pytest run and shared by every test (and xdist worker) that reads
them (imported by name: keep this module name unique).

A run is named by a key (the command, its arguments, its environment, or any JSON-able value).
The first test that asks for a key produces the run in a folder of its own, under a file lock;
every later request, from this worker or another, waits for the lock and gets the same folder.
Runs are kept for the pytest run only: the shared root is the run's base temp folder (its parent
under xdist, which every worker of the run shares).

Usage (the `shared_runs` fixture of tests/conftest.py is a `SharedRuns`):

    run = shared_runs.inspect(["eval", "memevals/locomo", "--model", "mockllm/model", ...])
    assert run.returncode == 0, run.stderr[-3000:]
    [log] = run.logs()
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import in_process
from filelock import FileLock

SUPPORT = Path(__file__).resolve().parent
#: in a run's environment, replaced by the run's folder (a memory cache of its own, for example)
RUN_DIR = "{run}"
_DONE = ".shared-run-done"


def shared_root(basetemp: Path, under_xdist: bool) -> Path:
    """The folder every test of this pytest run shares: the base temp folder, or its parent
    (`pytest-N`, above each worker's `popen-gwK`) under xdist.

    Args:
        basetemp: `tmp_path_factory.getbasetemp()`.
        under_xdist: whether this process is an xdist worker.

    Returns:
        The `shared-runs` folder (created).
    """
    root = (basetemp.parent if under_xdist else basetemp) / "shared-runs"
    root.mkdir(parents=True, exist_ok=True)
    return root


def _digest(key: Any) -> str:
    text = json.dumps(key, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


@dataclass(frozen=True)
class CliRun:
    """A finished command: its folder (its working directory), exit status and output."""

    folder: Path
    returncode: int
    stdout: str
    stderr: str

    def logs(self, pattern: str = "**/*.eval") -> list[Path]:
        """The files under the run's folder matching `pattern` (Inspect logs by default)."""
        return sorted(self.folder.glob(pattern))


class SharedRuns:
    """Runs shared across the tests and workers of one pytest run, one per key."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, key: Any, produce: Callable[[Path], None]) -> Path:
        """The folder of the run named by `key`, produced once by `produce(folder)`.

        A run that raises is not kept: the next test asking for it tries again (and gets the
        same failure, in its own report).

        Args:
            key: any JSON-able value naming the run (equal keys share one run).
            produce: writes the run into the (empty) folder it is given.

        Returns:
            The run's folder.
        """
        name = _digest(key)
        folder = self.root / name
        with FileLock(str(self.root / f"{name}.lock")):
            if (folder / _DONE).is_file():
                return folder
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            (folder / "key.json").write_text(
                json.dumps(key, sort_keys=True, default=str, indent=1), encoding="utf-8"
            )
            try:
                produce(folder)
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
            (folder / _DONE).touch()
        return folder

    def command(
        self,
        cmd: Sequence[str],
        env: Mapping[str, str] | None = None,
        timeout: float = 1500,
        key: Any = None,
        process: bool = False,
    ) -> CliRun:
        """Run `cmd` once (from its own folder, with `env` over os.environ; "{run}" in a value
        is that folder) and share its exit status and output.

        Args:
            cmd: the command line.
            env: variables set for it.
            timeout: seconds before it is stopped.
            key: extra key material (a scripted provider's version, say); the command and `env`
                are always part of the key.
            process: run it in a subprocess; otherwise a Python entry point runs in this
                process (tests/support/in_process.py).

        Returns:
            The finished run (a failing exit status is returned, not raised).
        """
        extra = dict(env or {})

        def produce(folder: Path) -> None:
            full = dict(os.environ)
            full.update({k: v.replace(RUN_DIR, str(folder)) for k, v in extra.items()})
            if process:
                proc = subprocess.run(
                    list(cmd), cwd=folder, env=full, capture_output=True, text=True,
                    timeout=timeout,
                )
            else:
                proc = in_process.run(cmd, cwd=folder, env=full, timeout=timeout)
            (folder / "stdout.txt").write_text(proc.stdout, encoding="utf-8")
            (folder / "stderr.txt").write_text(proc.stderr, encoding="utf-8")
            (folder / "returncode.txt").write_text(str(proc.returncode), encoding="utf-8")

        folder = self.folder({"cmd": list(cmd), "env": extra, "key": key}, produce)
        return CliRun(
            folder=folder,
            returncode=int((folder / "returncode.txt").read_text(encoding="utf-8")),
            stdout=(folder / "stdout.txt").read_text(encoding="utf-8"),
            stderr=(folder / "stderr.txt").read_text(encoding="utf-8"),
        )

    def inspect(
        self,
        args: Sequence[str],
        env: Mapping[str, str] | None = None,
        timeout: float = 1500,
        script: Path | None = None,
    ) -> CliRun:
        """The real `inspect` CLI (through tests/support/inspect_offline.py, or `script`, one
        that registers a scripted provider first), run once per arguments and environment.

        Args:
            args: the CLI arguments after `inspect` (relative paths are under the run's folder).
            env: variables set for it ("{run}" is the run's folder).
            timeout: seconds before it is stopped.
            script: the entry script, by default inspect_offline.py.

        Returns:
            The finished run.
        """
        entry = script or SUPPORT / "inspect_offline.py"
        return self.command([sys.executable, str(entry), *args], env=env, timeout=timeout)
