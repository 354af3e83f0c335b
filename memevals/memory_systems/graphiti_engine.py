"""graphiti itself, as memevals runs it: its modules imported with telemetry off, the three
classes memevals gives it (a Kuzu driver of bounded size, the local embedder, the local
reranker), the indexed empty Kuzu database new stores start from, and running graphiti's
coroutines on a store's own event loop.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import functools
import importlib
import os
import shutil
import tempfile
import threading
import types
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "INSTALL_HINT",
    "KUZU_BUFFER_POOL",
    "KUZU_FILE",
    "KUZU_MAX_DB_SIZE",
    "KUZU_THREADS",
    "close_graph",
    "graphiti_api",
    "imported",
    "kuzu_template",
    "release_driver",
    "run_on",
]

KUZU_FILE = "graph.kuzu"
#: Kuzu's limits for one store (one history's graph is a few MB): its defaults reserve 8 TiB
#: of address space and a buffer pool of 80 % of the memory for every open database.
KUZU_MAX_DB_SIZE = 1 << 32
KUZU_BUFFER_POOL = 1 << 27
#: Kuzu's query threads per open store (its default is one per core, for every database: a
#: LongMemEval run holds hundreds of stores open)
KUZU_THREADS = 1
INSTALL_HINT = "pip install 'memevals[graphiti]'"

_import_lock = threading.Lock()
_template_lock = threading.Lock()


def graphiti_api() -> types.SimpleNamespace:
    """graphiti's modules and memevals' driver, embedder and reranker classes (ValueError
    naming the extra when graphiti-core or kuzu is absent), with its telemetry off."""
    # read by graphiti at every event: forced off at every use (not only at the first import),
    # even if the user's environment says on or something changed it since
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    return imported()


@functools.lru_cache(maxsize=1)
def imported() -> types.SimpleNamespace:
    with _import_lock:
        try:
            mods = {
                name: importlib.import_module(f"graphiti_core{path}")
                for name, path in {
                    "core": "",
                    "graphiti": ".graphiti",
                    "kuzu_driver": ".driver.kuzu_driver",
                    "driver": ".driver.driver",
                    "llm_config": ".llm_client.config",
                    "generic": ".llm_client.openai_generic_client",
                    "embedder": ".embedder.client",
                    "cross_encoder": ".cross_encoder.client",
                    "nodes": ".nodes",
                    "edges": ".edges",
                    "errors": ".errors",
                    "recipes": ".search.search_config_recipes",
                    "filters": ".search.search_filters",
                }.items()
            }
            kuzu: Any = importlib.import_module("kuzu")
        except ImportError as exc:
            raise ValueError(
                f"memory=graphiti needs graphiti-core and kuzu: {INSTALL_HINT}"
            ) from exc
        telemetry: Any = importlib.import_module("graphiti_core.telemetry.telemetry")
        if telemetry.is_telemetry_enabled():  # pragma: no cover - the variable is set above
            raise ValueError("memory=graphiti: graphiti's telemetry could not be switched off")
        return types.SimpleNamespace(
            **mods,
            kuzu=kuzu,
            Driver=_driver_class(mods["kuzu_driver"], kuzu),
            Embedder=_embedder_class(mods["embedder"]),
            Reranker=_reranker_class(mods["cross_encoder"]),
        )


def _driver_class(kd: Any, kuzu: Any) -> Any:
    class BoundedKuzuDriver(kd.KuzuDriver):  # type: ignore[misc]
        """graphiti's Kuzu driver over a database of bounded size, named by its one group.

        Built as graphiti's own `__init__` builds it, except for the database's limits (and the
        deprecation warning, said once in docs/memory_systems.md)."""

        def __init__(self, path: str, group_id: str) -> None:
            kd.GraphDriver.__init__(self)
            self.db = kuzu.Database(
                path,
                buffer_pool_size=KUZU_BUFFER_POOL,
                max_db_size=KUZU_MAX_DB_SIZE,
                max_num_threads=KUZU_THREADS,
            )
            self.setup_schema()
            # one query at a time, as graphiti's driver has it: Kuzu allows one writer
            self.client = kuzu.AsyncConnection(self.db, max_concurrent_queries=1)
            # Graphiti.add_episode compares the group with the driver's database name
            self._database = group_id
            self._entity_node_ops = kd.KuzuEntityNodeOperations()
            self._episode_node_ops = kd.KuzuEpisodeNodeOperations()
            self._community_node_ops = kd.KuzuCommunityNodeOperations()
            self._saga_node_ops = kd.KuzuSagaNodeOperations()
            self._entity_edge_ops = kd.KuzuEntityEdgeOperations()
            self._episodic_edge_ops = kd.KuzuEpisodicEdgeOperations()
            self._community_edge_ops = kd.KuzuCommunityEdgeOperations()
            self._has_episode_edge_ops = kd.KuzuHasEpisodeEdgeOperations()
            self._next_episode_edge_ops = kd.KuzuNextEpisodeEdgeOperations()
            self._search_ops = kd.KuzuSearchOperations()
            self._graph_ops = kd.KuzuGraphMaintenanceOperations()

        def release(self) -> None:
            """Close the connection and the database (graphiti's close() leaves both to the
            garbage collector, keeping Kuzu's file lock until then)."""
            try:
                self.client.close()
            finally:
                self.db.close()

    return BoundedKuzuDriver


def _embedder_class(mod: Any) -> Any:
    class LocalEmbedder(mod.EmbedderClient):  # type: ignore[misc]
        """graphiti's embedder: a sentence-transformers model in this process."""

        def __init__(self, model: Any) -> None:
            self.model = model

        def encode(self, texts: list[str]) -> list[list[float]]:
            vectors = self.model.encode(
                texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
            )
            return [[float(x) for x in v] for v in vectors]

        async def create(self, input_data: Any) -> list[float]:
            texts = [input_data] if isinstance(input_data, str) else list(input_data)
            if not texts or not all(isinstance(t, str) for t in texts):
                raise TypeError("the local embedder embeds text, not token ids")
            return self.encode(texts[:1])[0]

        async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
            return self.encode(list(input_data_list)) if input_data_list else []

    return LocalEmbedder


def _reranker_class(mod: Any) -> Any:
    class LocalReranker(mod.CrossEncoderClient):  # type: ignore[misc]
        """graphiti's cross-encoder slot, filled by the local embedder: passages ranked by the
        cosine of their embedding with the query's (no model call, no logprobs)."""

        def __init__(self, embedder: Any) -> None:
            self.embedder = embedder

        async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
            if not passages:
                return []
            vectors = np.asarray(self.embedder.encode([query, *passages]))
            scores = (vectors[1:] @ vectors[0]).tolist()
            return sorted(zip(passages, scores, strict=True), key=lambda x: x[1], reverse=True)

    return LocalReranker


def kuzu_template() -> Path:
    """The indexed empty Kuzu database new stores are copied from (`_built_template`)."""
    with _template_lock:
        return _built_template()


@functools.lru_cache(maxsize=1)
def _built_template() -> Path:
    """An empty graphiti database with its full-text indices, built once per process through
    the driver's graph operations and copied into every new store: Kuzu takes about a second
    to create the four indices on disk, which a LongMemEval run would pay per haystack."""
    folder = Path(tempfile.mkdtemp(prefix="memevals-graphiti-"))
    atexit.register(shutil.rmtree, str(folder), True)
    path = folder / KUZU_FILE
    driver = graphiti_api().Driver(str(path), "template")
    loop = asyncio.new_event_loop()
    try:
        run_on(loop, driver.graph_ops.build_indices_and_constraints(driver))
    finally:
        loop.close()
        driver.release()
    return path


def run_on(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    """`coro` run to completion on `loop`, from any thread: one already running a loop (a
    retrieval asked from inside async code) hands the work to a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return loop.run_until_complete(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as helper:
        return helper.submit(loop.run_until_complete, coro).result()


def close_graph(loop: asyncio.AbstractEventLoop, graphiti: Any, driver: Any) -> None:
    try:
        if graphiti is not None:
            run_on(loop, graphiti.close())
    finally:
        release_driver(driver)


def release_driver(driver: Any) -> None:
    """Free a Kuzu store's database (graphiti's close() leaves it to the garbage collector)."""
    release = getattr(driver, "release", None)
    if callable(release):
        release()
