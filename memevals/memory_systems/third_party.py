"""What the real third-party memory systems (mem0, graphiti, langmem) share.

- `ThirdPartySystem`: the endpoint settings every one of them takes (`llm_base_url`,
  `llm_model`, `llm_api_key`, `embedding_model`, `temperature`, `llm_timeout_s`,
  `llm_max_retries`, `llm_max_tokens`, `llm_preflight`), checked in one place with one-line
  errors; the `args` that key a store (the endpoint, the model and the embedder decide what is
  stored, a token limit cuts replies, so it is keyed only when given); the preflight of the
  endpoint for what the system sends it.
- `package_version`: an installed package's version, for the `version` that keys stores.
- `read_store_meta`: the JSON file a store keeps beside the system's own database, refused
  whole when unreadable or of another layout.
- `StorePool`: the stores a process holds open, shared by the indexes over one store (embedded
  qdrant and Kuzu lock their files, so a store opened twice in one process must share one
  client), counted by their users and closed by the last; an index the garbage collector takes
  only queues its store, which the next call into the system gives back.
- `PooledIndex`: the index side of that counting.
"""

from __future__ import annotations

import collections
import json
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from memevals.core.memory_system import MemorySystemError
from memevals.memory_systems.endpoint import EndpointClient
from memevals.memory_systems.guards import close_at_exit

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_LLM_MODEL",
    "DUMMY_API_KEY",
    "ENDPOINT_ARGS",
    "PooledIndex",
    "PooledStore",
    "StorePool",
    "ThirdPartySystem",
    "check_int",
    "package_version",
    "read_store_meta",
]

DEFAULT_LLM_MODEL = "gpt-4o-mini"
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
#: Sent to local servers that want no key (the openai client refuses an empty one).
DUMMY_API_KEY = "memevals-no-key"
#: The endpoint settings every third-party system takes, by their argument names.
ENDPOINT_ARGS: tuple[str, ...] = (
    "llm_base_url",
    "llm_model",
    "llm_api_key",
    "embedding_model",
    "temperature",
    "llm_timeout_s",
    "llm_max_retries",
    "llm_max_tokens",
    "llm_preflight",
)


def check_int(system: str, name: str, value: Any, minimum: int) -> int:
    """`value` when it is an integer of at least `minimum` (ValueError naming it otherwise).

    Args:
        system: the memory system's name, which starts the message.
        name: the argument's name.
        value: its value.
        minimum: the least value allowed.

    Returns:
        The value.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"memory={system}: {name} must be an integer >= {minimum}, not {value!r}")
    return value


def package_version(package: str) -> str:
    """The installed version of a distribution ("unknown" when its metadata is missing).

    Args:
        package: the distribution's name, e.g. "graphiti-core".

    Returns:
        Its version string.
    """
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:  # pragma: no cover - the system imported it
        return "unknown"


def read_store_meta(system: str, path: Path, store_format: int) -> dict[str, Any]:
    """The store's JSON file, checked to be of `store_format` (MemorySystemError otherwise).

    A store of another layout is refused, never half-read.

    Args:
        system: the memory system's name, which starts the message.
        path: the file.
        store_format: the layout this version writes (the file's `format`).

    Returns:
        The file's mapping.
    """
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise MemorySystemError(f"{system}: {path} is unreadable ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("format") != store_format:
        raise MemorySystemError(f"{system}: {path} is not a store of format {store_format}")
    return meta


def _check_number(system: str, name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"memory={system}: {name} must be a number, not {value!r}")
    return float(value)


class ThirdPartySystem(EndpointClient):
    """The base of a memory system with its own OpenAI-compatible LLM and a local embedder.

    A subclass sets `name`, `needs` (what it sends its endpoint, from endpoint.NEEDS),
    optionally `endpoint_kind` (what its endpoint must do, for the missing-URL message) and
    `hints`, calls `_set_endpoint(locals())` in its constructor and lists what else keys its
    stores in `stored_args`.
    """

    needs: tuple[str, ...] = ("json_object",)
    endpoint_kind = ""
    hints: Mapping[str, str] | None = None
    embedding_model: str
    temperature: float
    llm_max_tokens: int | None

    def _set_endpoint(self, given: Mapping[str, Any]) -> None:
        """Check and set the endpoint settings (ValueError in one line naming the argument).

        Args:
            given: the constructor's arguments (its `locals()`), the settings read by their
                names (ENDPOINT_ARGS).
        """
        (
            llm_base_url,
            llm_model,
            llm_api_key,
            embedding_model,
            temperature,
            llm_timeout_s,
            llm_max_retries,
            llm_max_tokens,
            llm_preflight,
        ) = (given[name] for name in ENDPOINT_ARGS)
        name = self.name
        base_url = llm_base_url or os.environ.get("OPENAI_BASE_URL")
        if not base_url:
            raise ValueError(
                f"memory={name} needs llm_base_url (an OpenAI-compatible endpoint"
                f"{self.endpoint_kind}, e.g. http://127.0.0.1:8000/v1) or the environment "
                "variable OPENAI_BASE_URL"
            )
        if not isinstance(llm_model, str) or not llm_model:
            raise ValueError(f"memory={name}: llm_model must be a model name, not {llm_model!r}")
        if not isinstance(embedding_model, str) or not embedding_model:
            raise ValueError(
                f"memory={name}: embedding_model must be a model name or folder, not "
                f"{embedding_model!r}"
            )
        self.temperature = _check_number(name, "temperature", temperature)
        timeout = _check_number(name, "llm_timeout_s", llm_timeout_s)
        if timeout <= 0:
            raise ValueError(f"memory={name}: llm_timeout_s must be > 0, not {llm_timeout_s!r}")
        self.llm_timeout_s = timeout
        self.llm_max_retries = check_int(name, "llm_max_retries", llm_max_retries, 0)
        self.llm_max_tokens = (
            None if llm_max_tokens is None else check_int(name, "llm_max_tokens", llm_max_tokens, 1)
        )
        if not isinstance(llm_preflight, bool):
            raise ValueError(
                f"memory={name}: llm_preflight must be true or false, not {llm_preflight!r}"
            )
        self.llm_preflight = llm_preflight
        self.llm_base_url = base_url.rstrip("/")
        self.llm_model = llm_model
        # never part of args, the cache key or any log
        self._api_key = llm_api_key or os.environ.get("OPENAI_API_KEY") or DUMMY_API_KEY
        self.embedding_model = embedding_model

    def stored_args(self) -> dict[str, Any]:
        """The system's own arguments that decide what it stores or retrieves (keyed)."""
        return {}

    @property
    def args(self) -> Mapping[str, Any]:
        """What keys a store: the endpoint and model decide what is extracted, the embedder and
        `stored_args` what is stored and found; the key, timeout and retries decide nothing
        (`runtime_args` logs them). A token limit cuts replies, so it is keyed, and only when
        given: without it the system's own limits apply, as in the stores of earlier runs."""
        out: dict[str, Any] = {
            "llm_base_url": self.llm_base_url,
            "llm_model": self.llm_model,
            "embedding_model": self.embedding_model,
            "temperature": self.temperature,
            **self.stored_args(),
        }
        if self.llm_max_tokens is not None:
            out["llm_max_tokens"] = self.llm_max_tokens
        return out

    def preflight(self) -> None:
        """Check, once per process, that `llm_base_url` answers the requests the system sends
        (`needs`; MemorySystemError in one line otherwise); `llm_preflight=false` skips it (a
        rerun that reads only stored memories needs no endpoint)."""
        self.check_endpoint(self.needs, hints=self.hints)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.args)!r})"


class PooledStore(Protocol):
    """An opened store as the pool holds it."""

    key: str
    users: int

    def close(self) -> None: ...


S = TypeVar("S", bound=PooledStore)


class StorePool(Generic[S]):
    """The stores of one system open in this process, by resolved path, counted by users."""

    def __init__(self, system: str) -> None:
        self.system = system
        self.stores: dict[str, S] = {}
        self.lock = threading.Lock()
        #: Stores of indexes the garbage collector took, closed at the next call (`drain`).
        self.released: collections.deque[S] = collections.deque()
        close_at_exit(system, self.stores, self.lock, self.drain)

    def take(self, key: str, make: Callable[[], S]) -> S:
        """The open store of `key` (made by `make` when none is), with one more user."""
        self.drain()
        with self.lock:
            shared = self.stores.get(key)
            if shared is None:
                shared = make()
                self.stores[key] = shared
            shared.users += 1
        return shared

    def dropped(self, store: S) -> None:
        """An index the garbage collector took: its store is closed at the next call into the
        system, never here (a collection may run anywhere: inside `take` holding the lock, or
        inside a thread pool's submit holding the pool's lock, which closing would take)."""
        self.released.append(store)

    def drain(self) -> None:
        """Give back the stores of the indexes the garbage collector took."""
        while True:
            try:
                store = self.released.popleft()
            except IndexError:
                return
            self.release(store)

    def release(self, store: S) -> None:
        """One user fewer; the last closes the store."""
        # closed under the lock: a store opened again meanwhile would find its files locked
        with self.lock:
            store.users -= 1
            if store.users > 0:
                return
            if self.stores.get(store.key) is store:
                del self.stores[store.key]
            store.close()


class PooledIndex(Generic[S]):
    """An index over a pooled store: gives it back at `close`, or when collected."""

    def __init__(self, pool: StorePool[S], store: S) -> None:
        self._pool = pool
        self._store: S | None = store
        self._finalizer = weakref.finalize(self, pool.dropped, store)
        # at exit the process lets go of its stores anyway
        self._finalizer.atexit = False

    def held(self) -> S:
        """The store (MemorySystemError once the index is closed)."""
        if self._store is None:
            raise MemorySystemError(f"{self._pool.system}: this index was closed")
        return self._store

    def close(self) -> None:
        """Give the store back (the last index of a store closes it)."""
        store, self._store = self._store, None
        if store is not None and self._finalizer.detach() is not None:
            self._pool.release(store)
        self._pool.drain()
