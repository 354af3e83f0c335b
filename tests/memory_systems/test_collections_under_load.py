"""Garbage collections during concurrent calls of mem0 and graphiti never deadlock (issue 28,
point 3), and their LLM's token limit and timeout are memory args (point 7).

An index that is never closed is closed by the garbage collector, which may run on any thread
at any allocation, including one made while that thread holds the lock the closing takes (the
open-stores lock, or a thread pool's lock in `submit`). The old finalizers closed the store
right there and deadlocked; now they only queue it, and the next call closes it. The test
forces a collection inside every section that holds the open-stores lock, first with an index
waiting to be collected and no other thread collecting (a deterministic deadlock for the old
pattern), then while both systems' opens, retrievals and closes run from several threads and
another thread collects in a loop; it fails — hang detected — unless each part ends within a
bound. Afterwards every store is given back exactly: none is left open.

Both systems run against loopback LLM servers (tests/support/loopback_openai.py); nothing else is
reached.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from histories import history
from loopback_graphiti import graphiti_facts
from loopback_guard import needs
from loopback_openai import LoopbackOpenAI, mem0_facts

from memevals.core.memory_harness import MemoryRun
from memevals.core.memory_system import MemoryQuery
from memevals.memory_systems import graphiti as graphiti_module
from memevals.memory_systems import mem0 as mem0_module

pytestmark = [
    pytest.mark.server,
    needs(graphiti_core="graphiti", mem0="mem0", sentence_transformers="embeddings"),
]

MAX_TOKENS = 321
#: Seconds the whole concurrent workload may take on a busy 2-core machine; a deadlock never
#: ends, so any bound well above the normal time detects it.
BOUND_S = 240.0
THREADS = 2
ROUNDS = 2

HISTORY = history(
    """
session_1 | 1:56 pm on 8 May, 2023
  D1:1 | Caroline | I went to a transgender support group yesterday.
  D1:2 | Melanie | My daughter started violin lessons on Tuesday.
session_2 | 1:14 pm on 25 May, 2023
  D2:1 | Caroline | My grandmother gave me a necklace from Sweden.
  D2:2 | Melanie | I bought new running shoes for the marathon.
""",
    "gc-load",
)
#: A question per system and the turn its top item must cite.
ASKED = {
    "mem0": ("necklace from Sweden grandmother", ("D2:1",)),
    "graphiti": ("violin lessons daughter", ("D1:2",)),
}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Both systems (llm_max_tokens set), one store each, and their servers' requests."""
    root = tmp_path_factory.mktemp("collections")
    with LoopbackOpenAI(mem0_facts) as m_llm, LoopbackOpenAI(graphiti_facts) as g_llm:
        common = {"llm_model": "loopback", "llm_max_retries": 0, "llm_max_tokens": MAX_TOKENS}
        systems: dict[str, Any] = {
            "mem0": mem0_module.mem0_system(llm_base_url=m_llm.url, **common),
            "graphiti": graphiti_module.graphiti_system(llm_base_url=g_llm.url, **common),
        }
        stores = {}
        for name, system in systems.items():
            store = root / name
            store.mkdir()
            system.ingest(HISTORY, store, None)
            stores[name] = store
        yield {
            "systems": systems,
            "stores": stores,
            "requests": {"mem0": list(m_llm.requests), "graphiti": list(g_llm.requests)},
        }


def test_the_token_limit_caps_every_call_and_keys_the_store(built: dict[str, Any]) -> None:
    for name, requests in built["requests"].items():
        # mem0 asks its own 2,000 and graphiti 16,384 per call without the limit
        assert requests and {r["max_tokens"] for r in requests} == {MAX_TOKENS}, name
        system = built["systems"][name]
        assert system.args["llm_max_tokens"] == MAX_TOKENS
        assert dict(system.runtime_args) == {
            "llm_timeout_s": 120.0,
            "llm_max_retries": 0,
            "llm_preflight": True,
        }
    make: dict[str, Callable[..., Any]] = {
        "mem0": mem0_module.mem0_system,
        "graphiti": graphiti_module.graphiti_system,
    }
    for name, factory in make.items():
        url = "http://127.0.0.1:9/v1"
        base = MemoryRun(factory(llm_base_url=url), data_sha256="t").key(HISTORY)
        slower = factory(llm_base_url=url, llm_timeout_s=600, llm_max_retries=5)
        capped = factory(llm_base_url=url, llm_max_tokens=512)
        # the timeout and retries change no memory: same store; the limit cuts replies: another
        assert MemoryRun(slower, data_sha256="t").key(HISTORY) == base, name
        assert MemoryRun(capped, data_sha256="t").key(HISTORY) != base, name
        assert "llm_max_tokens" not in factory(llm_base_url=url).args  # earlier stores stay
        settings = MemoryRun(slower, data_sha256="t").settings()
        assert settings["memory_runtime_args"]["llm_timeout_s"] == 600.0, name
        assert "llm_timeout_s" not in settings["memory_args"], name
        with pytest.raises(ValueError, match=r"llm_max_tokens must be an integer >= 1, not 0"):
            factory(llm_base_url=url, llm_max_tokens=0)


class CollectingDict(dict[str, Any]):
    """The open-stores dict, collecting garbage whenever it is read: its reads happen while
    the open-stores lock is held, where a finalizer that closes a store would deadlock."""

    def get(self, key: str, default: Any = None) -> Any:
        gc.collect()
        return super().get(key, default)


def _worker(system: Any, store: Path, query: str, cited: tuple[str, ...]) -> None:
    for n in range(ROUNDS):
        index = system.open(store, HISTORY)
        index.itself = index  # a reference cycle: only a collection can take it
        ask = MemoryQuery(query, k=1)
        if n % 2:
            got = index.retrieve(ask)
            index.close()
        else:
            # asked from inside async code (graphiti hands its loop's work to a helper thread)
            async def inside(index: Any = index, ask: MemoryQuery = ask) -> Any:
                return index.retrieve(ask)

            got = asyncio.run(inside())
        assert [item.source_ids for item in got] == [cited]
        del index


def _bounded(targets: dict[str, Callable[[], None]], bound_s: float) -> None:
    """Run each target on its own daemon thread (a deadlocked one must not keep the test
    process alive); fail naming the ones still running after `bound_s`, or what one raised."""
    failures: list[BaseException] = []

    def guarded(fn: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # reported by the test, not lost in a thread
                failures.append(exc)

        return run

    threads = [
        threading.Thread(target=guarded(fn), name=name, daemon=True) for name, fn in targets.items()
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(0.0, bound_s - (time.monotonic() - started)))
    hung = [t.name for t in threads if t.is_alive()]
    assert not hung, f"hang detected: {hung} still running after {bound_s:.0f} s"
    assert not failures, failures


@pytest.fixture
def frozen_heap() -> Iterator[None]:
    """What the worker holds before the test (torch, Inspect, both systems: millions of objects)
    out of the collector's sight (gc.freeze) for the test: each of its many forced collections
    then examines what the test made since, among them every index it drops in a cycle, instead
    of the whole heap again. Collections still run, and free those indexes, where they did."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def test_collections_during_concurrent_calls_of_both_systems(
    built: dict[str, Any], monkeypatch: pytest.MonkeyPatch, frozen_heap: None
) -> None:
    modules = {"mem0": mem0_module, "graphiti": graphiti_module}
    for module in modules.values():
        monkeypatch.setattr(module._pool, "stores", CollectingDict(module._pool.stores))

    def dropped_then_opened() -> None:
        """For each system in turn: an index dropped in a cycle, then an open, whose read of
        the open stores collects it while this thread holds the open-stores lock (the old
        finalizers took that lock again right there). No other thread collects meanwhile: a
        collection already running elsewhere makes gc.collect() return at once."""
        for name, module in modules.items():
            system, store = built["systems"][name], built["stores"][name]
            index = system.open(store, HISTORY)
            index.itself = index
            del index
            again = system.open(store, HISTORY)
            query, cited = ASKED[name]
            assert [i.source_ids for i in again.retrieve(MemoryQuery(query, k=1))] == [cited]
            again.close()
            assert str(store.resolve()) not in module._pool.stores, name

    _bounded({"dropped-then-opened": dropped_then_opened}, BOUND_S / 2)

    stop = threading.Event()

    def collector() -> None:
        while not stop.is_set():
            gc.collect()
            time.sleep(0.2)

    workers: dict[str, Callable[[], None]] = {
        f"{name}-{n}": functools.partial(
            _worker, built["systems"][name], built["stores"][name], *ASKED[name]
        )
        for n in range(THREADS)
        for name in modules
    }
    collecting = threading.Thread(target=collector, daemon=True)
    collecting.start()
    try:
        _bounded(workers, BOUND_S)
    finally:
        stop.set()
        collecting.join(timeout=30)
    # every index is garbage now: collected, queued, given back at the next call; then none
    # of the stores is open (a miscounted user would keep one open)
    gc.collect()
    for name, module in modules.items():
        system, store = built["systems"][name], built["stores"][name]
        index = system.open(store, HISTORY)
        assert not module._pool.released, name
        assert module._pool.stores[str(store.resolve())].users == 1, name
        query, cited = ASKED[name]
        assert [i.source_ids for i in index.retrieve(MemoryQuery(query, k=1))] == [cited]
        index.close()
        assert str(store.resolve()) not in module._pool.stores, name
