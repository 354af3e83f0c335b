"""Nothing leaves the machine: a socket guard that refuses every address but loopback.

In-process, `refusing_network()` guards a block; a memory-system test module imports the
autouse fixture `loopback_only` (every test of the module guarded, and nothing refused); torch's
one thread per worker is tests/conftest.py's. Around a real CLI, run this file before the CLI's
own script:

    python tests/support/loopback_guard.py tests/support/scripted_memory.py eval ...

(`run_guarded` does that in the pytest worker: tests/support/in_process.py), which installs the
guard for the run only, writes every refused address to `refused.txt` in the working folder
(one line each, so a test can read what tried the network), and runs the script as `__main__`,
with the script's folder first on the path as `python <script>` would put it.
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

LOOPBACK = ("127.0.0.1", "::1")


@contextmanager
def refusing_network(
    on_refused: Callable[[Any], None] | None = None,
) -> Iterator[list[Any]]:
    """Refuse (and record) every connection to an address that is not loopback.

    Args:
        on_refused: also called with each refused address.

    Yields:
        The refused addresses, as they come.
    """
    refused: list[Any] = []
    original = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            refused.append(address)
            if on_refused is not None:
                on_refused(address)
            raise OSError(f"test: no network ({address!r})")
        return original(self, address)

    setattr(socket.socket, "connect", guarded)  # noqa: B010 (a method replaced: no typed way)
    try:
        yield refused
    finally:
        setattr(socket.socket, "connect", original)  # noqa: B010


def needs(**extras: str) -> pytest.MarkDecorator:
    """A module's skip unless each package (name=extra) is installed, found without importing
    it: importing mem0, graphiti-core, langmem or sentence-transformers (torch) at collection
    would cost every pytest-xdist worker seconds, whether or not it runs the module's tests.

    Args:
        **extras: the packages, each with the extra that installs it.

    Returns:
        The skip mark (for the module's `pytestmark`).
    """
    missing = sorted({e for p, e in extras.items() if importlib.util.find_spec(p) is None})
    return pytest.mark.skipif(
        bool(missing), reason=f"needs the {', '.join(f'[{e}]' for e in missing)} extra"
    )


@pytest.fixture(scope="module", autouse=True)
def loopback_only() -> Iterator[list[Any]]:
    """Refuse (and record) every connection to an address that is not 127.0.0.1."""
    with refusing_network() as refused:
        yield refused
    assert refused == [], f"something tried the network: {refused}"


def run_guarded(
    script: str,
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """Run `python <this file> <script> <args>` as a new process would, in this one.

    The guard is installed for the run only (and removed after, by this file's `__main__`
    block), torch keeps the worker's one thread (tests/conftest.py's OMP_NUM_THREADS=1), and the
    endpoint checks passed earlier in this process are forgotten (each run is its own process
    in real use, and checks its endpoint once).

    Args:
        script: the entry script the guard runs (inspect_offline.py, scripted_memory.py, ...).
        args: its command-line arguments.
        cwd: the working folder (`refused.txt` is written there).
        env: variables set for the run, over os.environ.
        timeout: seconds before the run is stopped.

    Returns:
        The finished run, stdout and stderr captured.
    """
    import in_process

    from memevals.memory_systems.endpoint import forget_probes

    full = {**os.environ, **(env or {})}
    forget_probes()
    return in_process.run(
        [sys.executable, os.path.abspath(__file__), script, *args],
        cwd=cwd, env=full, timeout=timeout,
    )


def _write_down(address: Any) -> None:
    with open(os.path.abspath("refused.txt"), "a", encoding="utf-8") as fh:
        fh.write(repr(address) + "\n")


if __name__ == "__main__":
    with refusing_network(_write_down):
        sys.argv = sys.argv[1:]
        sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
        runpy.run_path(sys.argv[0], run_name="__main__")
