"""Nothing leaves the machine: a socket guard that refuses every address but loopback.

In-process, `refusing_network()` guards a block; a memory-system test module imports the
autouse fixtures `loopback_only` (every test of the module guarded, and nothing refused) and
`one_torch_thread`. Around a real CLI, run this file before the CLI's own script:

    python tests/support/loopback_guard.py tests/support/scripted_memory.py eval ...

which installs the guard, writes every refused address to `refused.txt` in the working folder
(one line each, so a test can read what tried the network), and runs the script as `__main__`,
with the script's folder first on the path as `python <script>` would put it.
"""

from __future__ import annotations

import os
import runpy
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


@contextmanager
def single_torch_thread() -> Iterator[None]:
    """The embedder on one torch thread: on a shared 2-core machine torch's default of one per
    core makes every small encoding wait for a busy core (docs/performance.md)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(scope="module", autouse=True)
def loopback_only() -> Iterator[list[Any]]:
    """Refuse (and record) every connection to an address that is not 127.0.0.1."""
    with refusing_network() as refused:
        yield refused
    assert refused == [], f"something tried the network: {refused}"


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """The embedder on one torch thread (a shared 2-core machine, docs/performance.md)."""
    with single_torch_thread():
        yield


def _write_down(address: Any) -> None:
    with open(os.path.abspath("refused.txt"), "a", encoding="utf-8") as fh:
        fh.write(repr(address) + "\n")


if __name__ == "__main__":
    with refusing_network(_write_down):
        sys.argv = sys.argv[1:]
        sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
        runpy.run_path(sys.argv[0], run_name="__main__")
