"""`langmem`: LangChain's LangMem (langmem 0.0.30) as a memory system, offline.

LangMem keeps a collection of memories in a LangGraph store and maintains it with an LLM
that calls tools: for each batch of messages its memory store manager
(`create_memory_store_manager`) searches the store for related memories, then the LLM inserts
new memories and patches existing ones by tool calls (trustcall). Here:

- one history is ingested once, one manager call per session (or per `turns_per_call`
  consecutive turns of a session), sessions in date order, each turn a message
  `[<session date>] <speaker>: <text>` (the manager takes no date, so the date is in the
  messages), the turn id as the message id;
- each memory cites the turns of the calls that inserted or patched it: LangMem's output
  names the memories each call wrote, not the messages a memory came from, so a memory
  cites every turn its call was shown (a session, by default) and, once patched, the turns
  of each call that patched it;
- the store is LangGraph's `InMemoryStore` indexed by the local MiniLM embedder; its items
  and vectors are saved to `langmem-store.json` in the store folder after ingestion and
  loaded back by `open`, so a rerun asks the LLM nothing and embeds only the questions;
- retrieval is the store's own `search(namespace, query=..., limit=k)`, cosine over the
  embedded memories, best first;
- the LLM is any OpenAI-compatible chat-completions endpoint that makes tool calls
  (`llm_base_url`, through langchain-openai); the harness's `memory` model is not used.

LangSmith tracing is forced off (the environment variables and LangSmith's tracing context),
so nothing leaves the machine but the calls to `llm_base_url`. A history for which the
manager stored no memory at all is an ingestion failure.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import threading
import types
from collections.abc import Iterator, Mapping, Sequence
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
from memevals.memory_systems.endpoint import PROBE_NAME, check_once, one_line
from memevals.memory_systems.third_party import (
    DEFAULT_EMBEDDING_MODEL,
    DEFAULT_LLM_MODEL,
    ThirdPartySystem,
    check_int,
    package_version,
    read_store_meta,
)

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_LLM_MODEL",
    "INSTALL_HINT",
    "NAMESPACE",
    "STORE_FILE",
    "LangMemIndex",
    "LangMemSystem",
    "call_chunks",
    "langmem_system",
    "turn_content",
]

#: Bumped when what memevals writes into a store changes (message text, store file).
VERSION_SUFFIX = "1"
INSTALL_HINT = "pip install 'memevals[langmem]'"
STORE_FILE = "langmem-store.json"
#: The layout of STORE_FILE; a store of another layout is refused, never half-read.
STORE_FORMAT = 1
#: One store holds one history, so one fixed namespace (LangGraph forbids dots in labels).
NAMESPACE: tuple[str, ...] = ("memevals", "memories")
#: What LangSmith reads to decide on tracing: forced off (its env lookups are cached, so the
#: tracing context is switched off around every call as well).
_TRACING_ENV = ("LANGSMITH_TRACING", "LANGSMITH_TRACING_V2", "LANGCHAIN_TRACING_V2")

_import_lock = threading.Lock()


def _tracing_off() -> None:
    for name in _TRACING_ENV:
        os.environ[name] = "false"


@functools.lru_cache(maxsize=1)
def _api() -> types.SimpleNamespace:
    """langmem, LangGraph's store, langchain-openai and LangSmith's tracing switch, imported
    with tracing off (ValueError naming the extra when one is absent)."""
    with _import_lock:
        _tracing_off()
        try:
            langmem: Any = importlib.import_module("langmem")
            memory: Any = importlib.import_module("langgraph.store.memory")
            base: Any = importlib.import_module("langgraph.store.base")
            openai: Any = importlib.import_module("langchain_openai")
            callbacks: Any = importlib.import_module("langchain_core.callbacks")
            messages: Any = importlib.import_module("langchain_core.messages")
            run_helpers: Any = importlib.import_module("langsmith.run_helpers")
        except ImportError as exc:
            raise ValueError(
                f"memory=langmem needs langmem and langchain-openai: {INSTALL_HINT}"
            ) from exc
        return types.SimpleNamespace(
            langmem=langmem,
            InMemoryStore=memory.InMemoryStore,
            Item=base.Item,
            ChatOpenAI=openai.ChatOpenAI,
            BaseCallbackHandler=callbacks.BaseCallbackHandler,
            HumanMessage=messages.HumanMessage,
            AIMessage=messages.AIMessage,
            tracing_context=run_helpers.tracing_context,
        )


@contextlib.contextmanager
def _untraced() -> Iterator[None]:
    """LangSmith's tracing off for the calls inside, whatever the environment said when
    LangSmith first read it."""
    with _api().tracing_context(enabled=False):
        yield


# --------------------------------------------------------------------------------------------
# Messages


def turn_content(session: Session, turn: Turn) -> str:
    """One turn as the manager reads it: the manager takes no date, so the session date and the
    speaker are written into the text (an image's caption in brackets)."""
    text = " ".join(turn.text.split())
    if turn.image_caption:
        text += f" [shared an image: {' '.join(turn.image_caption.split())}]"
    return f"[{session.date}] {turn.speaker}: {text}"


def call_chunks(
    history: History, turns_per_call: int | None
) -> list[tuple[Session, tuple[Turn, ...]]]:
    """The turns of each manager call: a whole session (`turns_per_call` None) or
    `turns_per_call` consecutive turns of one session, never across sessions."""
    chunks: list[tuple[Session, tuple[Turn, ...]]] = []
    for session in history.sessions:
        size = turns_per_call or max(1, len(session.turns))
        for start in range(0, len(session.turns), size):
            chunks.append((session, session.turns[start : start + size]))
    return chunks


#: The session of the preflight's manager call: two turns worth a memory. Its text carries
#: PROBE_NAME, so a server (or a test's) can tell the check from a history's calls.
PREFLIGHT_SESSION = Session(
    session_id=PROBE_NAME,
    date="1 January 2024",
    turns=(
        Turn(f"{PROBE_NAME}:1", "Alex", f"{PROBE_NAME}: I adopted a beagle named Biscuit today."),
        Turn(f"{PROBE_NAME}:2", "Sam", "Congratulations! Biscuit is a lovely name for a dog."),
    ),
)


# --------------------------------------------------------------------------------------------
# The LLM's calls, counted


def _counter_class() -> Any:
    handler: Any = _api().BaseCallbackHandler

    class Counter(handler):  # type: ignore[misc]
        """Counts the chat completions the manager received and their tokens."""

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.input_tokens = 0
            self.output_tokens = 0
            self.errors = 0
            self.last_error: BaseException | None = None
            self.last_text = ""  # the last reply's text (a reply without tool calls shows it)
            self.lock = threading.Lock()

        def on_llm_error(self, error: BaseException, **kwargs: Any) -> None:
            with self.lock:
                self.errors += 1
                self.last_error = error

        def on_llm_end(self, response: Any, **kwargs: Any) -> None:
            inputs = outputs = 0
            for generations in response.generations:
                for generation in generations:
                    self.last_text = str(getattr(generation, "text", "") or "")
                    usage = getattr(getattr(generation, "message", None), "usage_metadata", None)
                    if usage:
                        inputs += int(usage.get("input_tokens") or 0)
                        outputs += int(usage.get("output_tokens") or 0)
            with self.lock:
                self.calls += 1
                self.input_tokens += inputs
                self.output_tokens += outputs

    return Counter


# --------------------------------------------------------------------------------------------
# The store, saved and loaded


def _iso(value: Any) -> str:
    return value.isoformat() if isinstance(value, datetime) else str(value)


def _memory_text(value: Mapping[str, Any]) -> str:
    """A stored memory's text: the `content` of LangMem's default `Memory` schema, else the
    stored content as JSON."""
    content = value.get("content")
    if isinstance(content, Mapping) and isinstance(content.get("content"), str):
        return str(content["content"])
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


class LangMemIndex:
    """Retrieval over one loaded store: the store's own embedding search."""

    def __init__(self, store: Any, citations: Mapping[str, Mapping[str, Any]]) -> None:
        self._store: Any = store
        self._citations = citations
        # InMemoryStore's search reads dicts its puts would change; nothing writes here, but
        # one search at a time keeps the embedder's batches small on a shared machine
        self._lock = threading.Lock()

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        store = self._store
        if store is None:
            raise MemorySystemError("langmem: this index was closed")
        if query.k <= 0:
            return []
        with self._lock, _untraced():
            found = store.search(NAMESPACE, query=query.text, limit=query.k)
        items: list[MemoryItem] = []
        for row in found[: query.k]:
            cited = self._citations.get(str(row.key))
            if cited is None:
                raise MemorySystemError(
                    f"langmem: memory {row.key!r} has no citation record; the store was not "
                    "written by memevals"
                )
            items.append(
                MemoryItem(
                    text=_memory_text(row.value),
                    source_ids=tuple(cited["turn_ids"]),
                    score=float(row.score) if row.score is not None else None,
                    date=str(cited["date"]) or None,
                    verbatim=False,
                )
            )
        return items

    def close(self) -> None:
        """Let go of the loaded store."""
        self._store = None


# --------------------------------------------------------------------------------------------
# The system


def _manager_call(api: Any, manager: Any, counter: Any, session: Any, turns: Any) -> Any:
    """One manager call on a chunk of `session`'s turns: the memories it put.

    A call that failed because the endpoint failed becomes a MemorySystemError naming the
    endpoint's last error; any other failure propagates as it is.
    """
    messages = [
        (api.AIMessage if t.speaker.lower() == "assistant" else api.HumanMessage)(
            content=turn_content(session, t), id=t.turn_id
        )
        for t in turns
    ]
    failed_before = counter.errors
    try:
        with _untraced():
            return manager.invoke({"messages": messages})
    except Exception as exc:
        if counter.errors == failed_before or counter.last_error is None:
            raise
        # trustcall answers a failed call by asking again ("fix the validation
        # error") until LangGraph's recursion limit: name the endpoint's error, not
        # the limit
        last = counter.last_error
        raise MemorySystemError(
            f"langmem: session {session.session_id!r}: {counter.errors - failed_before} "
            f"LLM call(s) failed, the last with {type(last).__name__}: {last} "
            f"({type(exc).__name__} after trustcall's retries)"
        ) from exc


def _stored_items(
    rows: Mapping[str, Any], vectors: Mapping[str, Any], citations: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The store file's items: each memory's value, times, vectors and the turns it cites."""
    items = []
    for key, item in rows.items():
        if key not in citations:  # pragma: no cover - every put is the manager's output
            raise MemorySystemError(f"langmem: memory {key!r} came from no manager call")
        items.append(
            {
                "key": key,
                "value": item.value,
                "created_at": _iso(item.created_at),
                "updated_at": _iso(item.updated_at),
                "vectors": {path: list(v) for path, v in vectors.get(key, {}).items()},
                **citations[key],
            }
        )
    return items


class LangMemSystem(ThirdPartySystem):
    """LangMem's memory store manager over an in-process LangGraph store, a local embedder
    and an OpenAI-compatible tool-calling LLM."""

    name = "langmem"
    needs = ("tool_calls",)
    endpoint_kind = " that makes tool calls"

    def __init__(
        self,
        *,
        llm_base_url: str | None = None,
        llm_model: str = DEFAULT_LLM_MODEL,
        llm_api_key: str | None = None,
        embedding_model: str = DEFAULT_EMBEDDING_MODEL,
        turns_per_call: int | None = None,
        query_limit: int = 5,
        temperature: float = 0.0,
        llm_timeout_s: float = 120.0,
        llm_max_retries: int = 2,
        llm_max_tokens: int | None = None,
        llm_preflight: bool = True,
    ) -> None:
        _api()
        _tracing_off()
        langmem, langgraph = package_version("langmem"), package_version("langgraph")
        self.version = f"langmem-{langmem}-langgraph-{langgraph}-{VERSION_SUFFIX}"
        self._set_endpoint(locals())
        self.turns_per_call = (
            None
            if turns_per_call is None
            else check_int(self.name, "turns_per_call", turns_per_call, 1)
        )
        self.query_limit = check_int(self.name, "query_limit", query_limit, 1)

    def stored_args(self) -> dict[str, Any]:
        # what each manager call sees
        return {"turns_per_call": self.turns_per_call, "query_limit": self.query_limit}

    def preflight(self) -> None:
        """Check, once per process, that `llm_base_url` answers a tool-calling request and that
        one memory-manager call on a two-turn test session stores a memory, as ingestion needs
        (MemorySystemError in one line otherwise); `llm_preflight=false` skips both (a rerun
        that reads only stored memories needs no endpoint)."""
        super().preflight()
        if self.llm_preflight:
            limit = "" if self.llm_max_tokens is None else str(self.llm_max_tokens)
            key = (self.llm_base_url, self.llm_model, f"langmem-manager-{limit}")
            check_once(key, self._manager_check)

    def _manager_check(self) -> None:
        """One manager call on PREFLIGHT_SESSION into a store of its own: it must store a
        memory, or ingestion would store none."""
        api = _api()
        counter = _counter_class()()
        memory = self._store()
        manager = api.langmem.create_memory_store_manager(
            self._chat(counter), namespace=NAMESPACE, store=memory, query_limit=self.query_limit
        )
        where = f"the LLM endpoint {self.llm_base_url} (model {self.llm_model!r})"
        try:
            _manager_call(api, manager, counter, PREFLIGHT_SESSION, PREFLIGHT_SESSION.turns)
        except Exception as exc:
            raise MemorySystemError(
                f"langmem: {where} failed the memory manager's call on a two-turn test session: "
                f"{one_line(f'{type(exc).__name__}: {exc}', 300)}"
            ) from None
        if not memory._data.get(NAMESPACE):
            said = (
                f"answered {one_line(counter.last_text, 120)!r}"
                if counter.last_text
                else ("made no tool call")
            )
            raise MemorySystemError(
                f"langmem: {where} stored no memory from the memory manager's call on a "
                f"two-turn test session (it {said}): langmem needs a model that answers the "
                "manager with tool calls; choose another with "
                '-T memory_args="llm_base_url=http://HOST:PORT/v1,llm_model=NAME" '
                "(docs/memory_systems.md)"
            )

    # -- building LangMem ------------------------------------------------------------------

    def _store(self) -> Any:
        """An empty InMemoryStore indexed by the process-wide local embedder."""
        from memevals.core.retrievers import load_embedding_model

        model = load_embedding_model(self.embedding_model)
        measure = getattr(model, "get_embedding_dimension", None) or (
            model.get_sentence_embedding_dimension
        )

        def embed(texts: list[str]) -> list[list[float]]:
            vectors = model.encode(
                list(texts),
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )
            return [[float(x) for x in v] for v in vectors]

        return _api().InMemoryStore(index={"dims": int(measure()), "embed": embed})

    def _chat(self, counter: Any) -> Any:
        """langchain-openai's chat model on our endpoint: bounded timeout and retries, the
        chat-completions API (tool calls), every call counted."""
        from pydantic import SecretStr

        limit = {} if self.llm_max_tokens is None else {"max_tokens": self.llm_max_tokens}
        return _api().ChatOpenAI(
            **limit,
            model=self.llm_model,
            base_url=self.llm_base_url,
            api_key=SecretStr(self._api_key),
            temperature=self.temperature,
            timeout=self.llm_timeout_s,
            max_retries=self.llm_max_retries,
            use_responses_api=False,
            callbacks=[counter],
        )

    # -- the protocol ----------------------------------------------------------------------

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        """One manager call per chunk of turns, in history order; `model` is unused (LangMem
        has its own)."""
        chunks = call_chunks(history, self.turns_per_call)
        if not chunks:
            raise MemorySystemError(f"langmem: history {history.history_id!r} has no turns")
        # one line before anything is ingested when the endpoint is missing or makes no tool
        # calls (the manager's first call would fail deep inside trustcall otherwise); the
        # task checked it already (once per process), a MemoryRun of its own has not
        self.preflight()
        api = _api()
        _tracing_off()
        counter = _counter_class()()
        memory = self._store()
        manager = api.langmem.create_memory_store_manager(
            self._chat(counter),
            namespace=NAMESPACE,
            store=memory,
            query_limit=self.query_limit,
        )
        citations: dict[str, dict[str, Any]] = {}
        calls_without_memory = 0
        for session, turns in chunks:
            puts = _manager_call(api, manager, counter, session, turns)
            calls_without_memory += not puts
            for put in puts:
                cited = citations.setdefault(
                    str(put["key"]),
                    {"turn_ids": [], "session_id": session.session_id, "date": session.date},
                )
                cited["turn_ids"] = list(
                    dict.fromkeys([*cited["turn_ids"], *(t.turn_id for t in turns)])
                )
        rows = dict(memory._data.get(NAMESPACE, {}))
        if not rows:
            raise MemorySystemError(
                f"langmem stored no memory for history {history.history_id!r} after "
                f"{len(chunks)} manager calls ({counter.calls} LLM replies): check the model "
                f"at {self.llm_base_url} (model {self.llm_model!r}; it must answer with tool "
                "calls)"
            )
        items = _stored_items(rows, memory._vectors.get(NAMESPACE, {}), citations)
        meta = {"format": STORE_FORMAT, "namespace": list(NAMESPACE), "items": items}
        (store / STORE_FILE).write_text(json.dumps(meta), encoding="utf-8")
        return IngestReport(
            llm_calls=counter.calls,
            items_stored=len(items),
            extra={
                "manager_calls": len(chunks),
                "calls_without_memory": calls_without_memory,
                # failed calls trustcall asked again (llm_calls counts the replies)
                "llm_errors": counter.errors,
                "llm_input_tokens": counter.input_tokens,
                "llm_output_tokens": counter.output_tokens,
            },
        )

    def open(self, store: Path, history: History) -> LangMemIndex:
        path = store / STORE_FILE
        meta = read_store_meta(self.name, path, STORE_FORMAT)
        api = _api()
        memory = self._store()
        citations: dict[str, dict[str, Any]] = {}
        try:
            for row in meta["items"]:
                key = str(row["key"])
                memory._data[NAMESPACE][key] = api.Item(
                    value=row["value"],
                    key=key,
                    namespace=NAMESPACE,
                    created_at=row["created_at"],
                    updated_at=row["updated_at"],
                )
                for field, vector in row["vectors"].items():
                    memory._vectors[NAMESPACE][key][field] = [float(x) for x in vector]
                citations[key] = {
                    "turn_ids": [str(t) for t in row["turn_ids"]],
                    "date": str(row["date"]),
                }
        except (KeyError, TypeError, ValueError) as exc:
            raise MemorySystemError(f"langmem: {path} has a malformed memory ({exc})") from exc
        return LangMemIndex(memory, citations)


def langmem_system(**args: Any) -> LangMemSystem:
    """`-T memory=langmem`: LangMem's memory store manager with an OpenAI-compatible
    tool-calling LLM endpoint, a local embedder and an in-process LangGraph store.

    Args:
        **args: the `memory_args` (llm_base_url, llm_model, llm_api_key, embedding_model,
            turns_per_call, query_limit, temperature, llm_timeout_s, llm_max_retries,
            llm_max_tokens, llm_preflight).

    Returns:
        The system.
    """
    return LangMemSystem(**args)
