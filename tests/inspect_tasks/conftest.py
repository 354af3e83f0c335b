"""Fixtures of the Inspect task tests: the real local SmolLM2 without Inspect's idle waits."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: how long the hf batch thread gathers requests that arrive together (Inspect's: 2 s)
GATHER_S = 0.25
#: how often a caller looks for its finished generation (Inspect's: every 1 s)
POLL_S = 0.02


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_dir: Path) -> Iterator[Path]:
    """The SmolLM2 folder (tests/conftest.py's), with Inspect's `hf` provider made prompt.

    The provider runs generations in a thread of its own, in batches: the thread starts a batch
    only once no request has come for 2 s, and each caller polls for its result once a second.
    A test's generations come in rounds (the answers, then the judge calls, then the judge's
    retries), so each round idled about 3 s with the CPU unused. The requests of a round arrive
    together, so a short gathering window still batches them; the generations are greedy and
    what the tests check does not depend on how requests are grouped. Every test that runs the
    real model asks for this folder, so the provider (torch, transformers) is only imported
    where it is used.
    """
    import anyio
    from inspect_ai.model._providers import hf

    if not (hasattr(hf, "_drain_batches") and hasattr(hf, "anyio")):
        # another Inspect's provider: nothing of these waits to shorten (only slower)
        yield smollm2_dir
        return
    drain = hf._drain_batches

    def gather_briefly(queue: Any, timeout: float) -> Any:
        return drain(queue, timeout=min(timeout, GATHER_S))

    async def poll_often(delay: float, *args: Any, **kwargs: Any) -> None:
        await anyio.sleep(min(delay, POLL_S), *args, **kwargs)

    # hf.py uses anyio only for the caller's poll; the rest of anyio stays as it is
    prompt_anyio = types.ModuleType("anyio")
    prompt_anyio.__dict__.update(vars(anyio))
    prompt_anyio.sleep = poll_often  # type: ignore[attr-defined]
    with pytest.MonkeyPatch.context() as patch:
        # the batch thread looks `_drain_batches` up at each round, so this reaches a thread
        # already started by an earlier test
        patch.setattr(hf, "_drain_batches", gather_briefly)
        patch.setattr(hf, "anyio", prompt_anyio)
        yield smollm2_dir
