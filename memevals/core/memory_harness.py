"""Running a memory system fairly: ingest each history once, retrieve with one `k`, measure.

`MemoryRun` wraps one system with its arguments:

- **Ingest once.** One ingestion per key = sha256 of (system name, version, arguments, data
  sha256, history id, history content digest). Finished stores live in the disk cache
  (`<MEMEVALS_CACHE_DIR>/memory/<system>/<key>/`, written to a temporary folder and renamed
  when complete, so an interrupted ingestion is never read), and are reused across reruns,
  models and tasks. `cache=False` ingests into a folder of this run only. Threads asking for
  the same history wait for the one ingestion; its failure is their failure.
- **Measured.** Per history: build seconds, calls and tokens of the memory model, what the
  system reports (its own LLM calls, items stored), cache hit or not. Per question: latency,
  items returned, items cut to `depth`.
- **Honest.** A system that raises, returns something that is not a list of `MemoryItem`, or
  cites an id that is not in the history raises `MemorySystemError` for that question.
- **Empty is an answer.** A system that returns no items found nothing: the question is
  scored with the benchmark's no-context rendering, and its metadata says so
  (`memory_returned` and `memory_items` 0; `empty_retrievals` counts them), never an error
  and never dropped.

`MemorySubject` binds a run to the benchmark's questions and its renderer: `fill(item)` gives
the item its context and retrieval record. The Inspect solver and the lm-eval document builder
both call it, so a context exists once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from memevals.core.files import cache_dir
from memevals.core.memory_system import (
    History,
    IngestReport,
    MemoryIndex,
    MemoryItem,
    MemoryQuery,
    MemorySystem,
    MemorySystemError,
    ModelReply,
    TextModel,
)
from memevals.core.prompt_item import PromptItem
from memevals.core.tokens import TokenCounter

logger = logging.getLogger(__name__)

#: Written last into a finished store: the ingestion record (its presence marks completion).
RECORD_FILE = "memevals-ingest.json"
#: Per-sample metadata keys the harness writes (the frameworks' metrics read them).
LATENCY_KEY = "memory_latency_s"
ITEMS_KEY = "memory_items"  # items the model is shown
RETURNED_KEY = "memory_returned"  # items the system returned (before the cut)
CUT_KEY = "memory_cut"
INGEST_KEY = "memory_ingest"
CONTEXT_TOKENS_KEY = "memory_context_tokens"
#: The retrieved items with their text, for reading a sample (memevals-report's question view):
#: the first RESULTS_LOGGED, each {"text", "ids", "score"}, the text cut to RESULT_CHARS
#: characters ("chars" then gives its whole length). Bounded so a log stays small.
RESULTS_KEY = "memory_results"
RESULTS_LOGGED = 10
RESULT_CHARS = 500
#: The longest cause a failed ingestion's one line quotes (the traceback is in the log).
CAUSE_CHARS = 600
#: The percentiles of retrieval latency every report gives.
LATENCY_PERCENTILES: tuple[int, ...] = (50, 95, 99)

__all__ = [
    "CONTEXT_TOKENS_KEY",
    "CUT_KEY",
    "INGEST_KEY",
    "ITEMS_KEY",
    "LATENCY_KEY",
    "LATENCY_PERCENTILES",
    "RESULTS_KEY",
    "RESULTS_LOGGED",
    "RESULT_CHARS",
    "RETURNED_KEY",
    "IngestRecord",
    "MemoryRun",
    "MemorySubject",
    "Rendered",
    "Renderer",
    "Retrieval",
    "empty_retrievals",
    "ingest_totals",
    "latency_percentiles",
    "logged_results",
]


@dataclass(frozen=True)
class IngestRecord:
    """One history's ingestion, as logged once per history (`cached`: read from the disk
    cache, so `seconds` and the counts are those of the run that built it)."""

    history_id: str
    key: str
    cached: bool
    seconds: float
    model_calls: int
    input_tokens: int
    output_tokens: int
    llm_calls: int | None = None
    items_stored: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    #: opening the store in this process (loading vectors, building an index), which every
    #: run pays, cached or not
    open_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "extra": dict(self.extra)}


@dataclass(frozen=True)
class Retrieval:
    """One question's retrieval: the items kept (at most `depth`), what was cut, how long."""

    items: tuple[MemoryItem, ...]
    returned: int
    cut: int
    latency_s: float
    ingest: IngestRecord


def logged_results(items: Sequence[MemoryItem]) -> list[dict[str, Any]]:
    """The retrieved items as a sample logs them (`RESULTS_KEY`): the first `RESULTS_LOGGED`,
    each its text (cut to `RESULT_CHARS` characters, `chars` then giving the whole length),
    the ids it cites and its score.

    Args:
        items: the retrieval's items, best first.

    Returns:
        One dict per logged item.
    """
    out: list[dict[str, Any]] = []
    for item in items[:RESULTS_LOGGED]:
        entry: dict[str, Any] = {
            "text": item.text[:RESULT_CHARS],
            "ids": list(item.source_ids),
            # a system may score with numpy floats, which JSON cannot write
            "score": None if item.score is None else float(item.score),
        }
        if len(item.text) > RESULT_CHARS:
            entry["chars"] = len(item.text)
        out.append(entry)
    return out


def latency_percentiles(latencies: Sequence[float]) -> dict[str, float]:
    """`{"latency_p50_s": ..., "latency_p95_s": ..., "latency_p99_s": ...}` (numpy's linear
    interpolation); empty input gives NaN."""
    values = np.asarray(list(latencies), dtype=float)
    return {
        f"latency_p{p}_s": float(np.percentile(values, p)) if values.size else float("nan")
        for p in LATENCY_PERCENTILES
    }


def empty_retrievals(records: Sequence[Mapping[str, Any]]) -> int:
    """How many of these per-sample metadata records (samples with a memory system) had a
    retrieval that returned no item (`memory_returned` 0).

    Args:
        records: per-sample metadata as the harness wrote it (records without the key, e.g.
            samples that errored before retrieval, are not counted).

    Returns:
        The number of empty retrievals.
    """
    return sum(1 for r in records if RETURNED_KEY in r and int(r[RETURNED_KEY]) == 0)


def ingest_totals(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over distinct histories (records are deduplicated by key): how many were built
    now, how many came from the cache, the build time, calls and tokens of those built, and the
    time to open every store (paid by each run)."""
    by_key = {str(r["key"]): r for r in records}
    built = [r for r in by_key.values() if not r["cached"]]
    return {
        "histories": len(by_key),
        "ingestions": len(built),
        "cache_hits": len(by_key) - len(built),
        "build_seconds": round(sum(float(r["seconds"]) for r in built), 3),
        "build_model_calls": sum(int(r["model_calls"]) for r in built),
        "build_input_tokens": sum(int(r["input_tokens"]) for r in built),
        "build_output_tokens": sum(int(r["output_tokens"]) for r in built),
        "build_llm_calls": sum(int(r["llm_calls"] or 0) for r in built),
        "open_seconds": round(sum(float(r.get("open_seconds", 0.0)) for r in by_key.values()), 3),
    }


class _CountingModel:
    """Wraps the memory model to count its calls and tokens for one ingestion."""

    def __init__(self, model: TextModel) -> None:
        self._model = model
        self.model_name = getattr(model, "model_name", None)
        self.calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self._lock = threading.Lock()

    def __call__(self, system: str, user: str) -> ModelReply:
        reply = self._model(system, user)
        with self._lock:
            self.calls += 1
            self.input_tokens += reply.input_tokens or 0
            self.output_tokens += reply.output_tokens or 0
        return reply


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError) as exc:  # pragma: no cover - default=str catches most
        raise ValueError(f"memory_args {value!r} cannot go into the cache key: {exc}") from exc


class MemoryRun:
    """One memory system with its arguments, over the histories of one data file."""

    def __init__(
        self,
        system: MemorySystem,
        *,
        data_sha256: str,
        cache: bool = True,
        cache_root: Path | None = None,
        history_data_sha256: Mapping[str, str] | None = None,
    ) -> None:
        self.system = system
        self.data_sha256 = data_sha256
        #: histories built from more than the one data file (LoCoMo-Plus stitched histories
        #: come from LoCoMo and LoCoMo-Plus): their data sha256 by history id
        self.history_data_sha256 = dict(history_data_sha256 or {})
        self.cache = cache
        if cache:
            self.root = (cache_root or cache_dir() / "memory") / _safe(system.name)
        else:
            self.root = Path(tempfile.mkdtemp(prefix="memevals-memory-"))
            weakref.finalize(self, shutil.rmtree, str(self.root), True)
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self._indexes: dict[str, tuple[MemoryIndex, IngestRecord]] = {}
        self._failures: dict[str, tuple[float, MemorySystemError]] = {}
        self.ingestions = 0  # built by this run
        self.cache_hits = 0

    # -- keys ------------------------------------------------------------------------------

    @property
    def uses_model(self) -> bool:
        """True when the system asks the memory model (the Inspect role `memory`)."""
        return bool(getattr(self.system, "uses_model", False))

    def settings(self) -> dict[str, Any]:
        """What the log records of the system: name, version, arguments, cache, and the
        system's optional `runtime_args` (how it calls its LLM: timeouts, retries), which are
        logged but never keyed."""
        out: dict[str, Any] = {
            "memory": self.system.name,
            "memory_version": self.system.version,
            "memory_args": dict(self.system.args),
            "memory_cache": self.cache,
        }
        runtime = getattr(self.system, "runtime_args", None)
        if runtime:
            out["memory_runtime_args"] = dict(runtime)
        return out

    def key(self, history: History, model: TextModel | None = None) -> str:
        """The cache key of `history`'s store. A system that uses the memory model (its
        `uses_model` is true) also keys on the model's name, so notes written by one model
        are never read as another's."""
        model_name = getattr(model, "model_name", None) if self.uses_model else None
        body = _canonical(
            {
                "system": self.system.name,
                "version": self.system.version,
                "args": dict(self.system.args),
                "data_sha256": self.history_data_sha256.get(history.history_id, self.data_sha256),
                "history_id": history.history_id,
                "history_digest": history.digest(),
                **({"memory_model": model_name} if self.uses_model else {}),
            }
        )
        return hashlib.sha256(body.encode("utf-8")).hexdigest()[:32]

    # -- ingestion -------------------------------------------------------------------------

    def index(
        self, history: History, model: TextModel | None = None
    ) -> tuple[MemoryIndex, IngestRecord]:
        """The opened index of `history`, ingesting it first unless a store exists."""
        key = self.key(history, model)
        hit = self._indexes.get(key)
        if hit is not None:
            return hit
        asked = time.monotonic()
        with self._lock:
            key_lock = self._key_locks.setdefault(key, threading.Lock())
        with key_lock:
            hit = self._indexes.get(key)
            if hit is not None:
                return hit
            failed = self._failures.get(key)
            if failed is not None and failed[0] >= asked:
                raise failed[1]  # the ingestion this caller waited for failed
            try:
                record = self._stored_record(history, key)
                if record is None:
                    record = self._ingest(history, key, model)
                start = time.perf_counter()
                opened = self._open(history, key)
                record = dataclasses.replace(
                    record, open_seconds=round(time.perf_counter() - start, 4)
                )
            except MemorySystemError as exc:
                self._failures[key] = (time.monotonic(), exc)
                raise
            self._indexes[key] = (opened, record)
            return opened, record

    def _store(self, key: str) -> Path:
        return self.root / key

    def _stored_record(self, history: History, key: str) -> IngestRecord | None:
        path = self._store(key) / RECORD_FILE
        if not path.is_file():
            return None
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            record = IngestRecord(**{**raw, "cached": True, "open_seconds": 0.0})
        except (OSError, ValueError, TypeError) as exc:
            raise MemorySystemError(
                f"{self.system.name}: the cached store {path.parent} of {history.history_id} "
                f"is unreadable ({exc}); delete it or run with memory_cache=false"
            ) from exc
        with self._lock:
            self.cache_hits += 1
        return record

    def _ingest(self, history: History, key: str, model: TextModel | None) -> IngestRecord:
        final = self._store(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = final.parent / f".{key}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        tmp.mkdir()
        counting = _CountingModel(model) if model is not None else None
        report, seconds = self._timed_ingest(history, tmp, counting)
        record = IngestRecord(
            history_id=history.history_id,
            key=key,
            cached=False,
            seconds=round(seconds, 4),
            model_calls=counting.calls if counting else 0,
            input_tokens=counting.input_tokens if counting else 0,
            output_tokens=counting.output_tokens if counting else 0,
            llm_calls=report.llm_calls,
            items_stored=report.items_stored,
            extra=dict(report.extra),
        )
        (tmp / RECORD_FILE).write_text(json.dumps(record.as_dict(), indent=1), encoding="utf-8")
        self._move_into_place(history, tmp, final)
        with self._lock:
            self.ingestions += 1
        logger.info(
            "memory %s: ingested %s in %.2f s (%d model calls)",
            self.system.name,
            history.history_id,
            seconds,
            record.model_calls,
        )
        return record

    def _timed_ingest(
        self, history: History, tmp: Path, counting: _CountingModel | None
    ) -> tuple[IngestReport, float]:
        """Run the system's ingest into `tmp`: its report (None counts as empty) and seconds.

        Any failure removes `tmp` and becomes one MemorySystemError naming the history, so a
        half-built store is never left behind for the cache to pick up.
        """
        start = time.perf_counter()
        try:
            report = self.system.ingest(history, tmp, counting)
        except Exception as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise self._failed(history, counting, exc) from exc
        seconds = time.perf_counter() - start
        if report is not None and not isinstance(report, IngestReport):
            shutil.rmtree(tmp, ignore_errors=True)
            raise MemorySystemError(
                f"{self.system.name}: ingest() returned {type(report).__name__}, not an "
                "IngestReport or None"
            )
        return report or IngestReport(), seconds

    def _failed(
        self, history: History, counting: _CountingModel | None, exc: Exception
    ) -> MemorySystemError:
        """The one-line error of a failed ingestion, naming the system, the history, the
        endpoint or model it called and the cause; logged once (the warning on the screen, the
        traceback in the log only)."""
        name = self.system.name
        cause = str(exc) if isinstance(exc, MemorySystemError) else f"{type(exc).__name__}: {exc}"
        cause = " ".join(cause.split())
        if len(cause) > CAUSE_CHARS:
            cause = cause[: CAUSE_CHARS - 3] + "..."
        url = getattr(self.system, "llm_base_url", None)
        if url and str(url) in cause:
            via = ""  # the cause names it already
        elif url:
            via = f" (endpoint {url}, model {getattr(self.system, 'llm_model', '?')!r})"
        elif counting is not None:
            via = f" (memory model {counting.model_name or '?'})"
        else:
            via = ""
        failure = MemorySystemError(
            f"{name}: ingestion of {history.history_id} failed: {cause}{via}"
        )
        logger.warning("memory %s", failure)
        logger.info("memory %s: the traceback of the failed ingestion", name, exc_info=exc)
        return failure

    def _move_into_place(self, history: History, tmp: Path, final: Path) -> None:
        """Rename the finished store `tmp` to `final` (a concurrent winner's store is kept)."""
        try:
            os.rename(tmp, final)
        except OSError:
            # another process finished the same key first: its store is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
            if not (final / RECORD_FILE).is_file():
                raise MemorySystemError(
                    f"{self.system.name}: could not move the store of {history.history_id} "
                    f"into {final}"
                ) from None

    def _open(self, history: History, key: str) -> MemoryIndex:
        try:
            opened = self.system.open(self._store(key), history)
        except Exception as exc:
            raise MemorySystemError(
                f"{self.system.name}: opening the store of {history.history_id} failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        if not callable(getattr(opened, "retrieve", None)):
            raise MemorySystemError(f"{self.system.name}: open() returned no retrieve()")
        return opened

    # -- retrieval -------------------------------------------------------------------------

    def retrieve(
        self,
        history: History,
        query: MemoryQuery,
        model: TextModel | None = None,
    ) -> Retrieval:
        """The items for `query` (at most `query.k`), checked, timed and cut."""
        index, record = self.index(history, model)
        start = time.perf_counter()
        try:
            raw = index.retrieve(query)
            items = tuple(raw)
        except Exception as exc:
            raise MemorySystemError(
                f"{self.system.name}: retrieval for {query.text!r} in {history.history_id} "
                f"failed: {type(exc).__name__}: {exc}"
            ) from exc
        latency = time.perf_counter() - start
        known = history.source_ids
        for n, item in enumerate(items):
            if not isinstance(item, MemoryItem):
                raise MemorySystemError(
                    f"{self.system.name}: retrieval for {query.text!r} returned "
                    f"{type(item).__name__} at position {n}, not a MemoryItem"
                )
            unknown = [i for i in item.source_ids if i not in known]
            if unknown:
                raise MemorySystemError(
                    f"{self.system.name}: item {n} retrieved for {query.text!r} cites "
                    f"{', '.join(map(repr, unknown))}, which is no turn or session of "
                    f"{history.history_id}"
                )
        kept = items[: query.k]
        return Retrieval(kept, len(items), len(items) - len(kept), latency, record)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name) or "system"


# --------------------------------------------------------------------------------------------
# Binding a run to a benchmark's questions


@dataclass(frozen=True)
class Rendered:
    """What a benchmark makes of one retrieval: the context text and its metadata fields."""

    system: str
    metadata: Mapping[str, Any]
    #: items the context shows, when fewer than those retrieved (LongMemEval retrieves to a
    #: metric depth and shows top_k); None = all retrieved items are shown
    shown: int | None = None
    #: the whole user message, when the benchmark puts context and question in one message
    #: (`system` is then only counted as the context, never sent); None = `system` is sent as
    #: the system text and the sample's user text stays
    user: str | None = None


#: (item, its history, the retrieval) -> the context and its fields; each benchmark has one.
Renderer = Callable[[PromptItem, History, Retrieval], Rendered]


@dataclass(frozen=True)
class MemorySubject:
    """A memory run bound to the questions of one task: which history and query each sample
    id asks, how the benchmark renders the result, and the counter of its prompt sizes."""

    run: MemoryRun
    histories: Mapping[str, History]  # history id -> history
    queries: Mapping[str, MemoryQuery]  # sample id -> query (history_id names its history)
    render: Renderer
    counter: TokenCounter
    k: int
    answers: bool = False  # the system answers by itself (`answer()`), not the model

    def settings(self) -> dict[str, Any]:
        depth = max((q.k for q in self.queries.values()), default=self.k)
        return {
            **self.run.settings(),
            "top_k": self.k,
            "retrieval_depth": depth,
            "memory_answers": self.answers,
        }

    def asked(self, item: PromptItem) -> tuple[MemoryQuery, History]:
        """The query `item` asks and the history it asks it of."""
        query = self.queries.get(item.id)
        if query is None:
            raise MemorySystemError(f"no memory query was built for sample {item.id!r}")
        return query, self.histories[query.history_id]

    def answer(self, item: PromptItem, model: TextModel | None = None) -> str:
        """The system's own answer to `item`'s question (its index's `answer()`);
        MemorySystemError when it has none or fails."""
        query, history = self.asked(item)
        name = self.run.system.name
        index, _ = self.run.index(history, model)
        answer = getattr(index, "answer", None)
        if not callable(answer):
            raise MemorySystemError(
                f"{name} does not answer by itself (its index has no answer()); drop "
                "memory_answers to let the model read its context"
            )
        try:
            text = answer(query)
        except Exception as exc:
            raise MemorySystemError(
                f"{name}: answering {query.text!r} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(text, str):
            raise MemorySystemError(f"{name}: answer() returned {type(text).__name__}, not str")
        return text

    def fill(self, item: PromptItem, model: TextModel | None = None) -> PromptItem:
        """`item` with its context (system text, or the whole user message when the renderer
        gives one) and the retrieval fields in its metadata; MemorySystemError when the system
        fails for it. A retrieval of no items is filled too: the renderer gives the benchmark's
        no-context layout, and `memory_items` / `memory_returned` are 0."""
        query, history = self.asked(item)
        retrieval = self.run.retrieve(history, query, model)
        rendered = self.render(item, history, retrieval)
        context_tokens = self.counter(rendered.system)
        if rendered.user is None:
            system, user = rendered.system, item.user
            prompt_tokens = context_tokens + self.counter(item.user)
        else:
            system, user = "", rendered.user
            prompt_tokens = self.counter(user)
        metadata = {
            **item.metadata,
            **rendered.metadata,
            LATENCY_KEY: round(retrieval.latency_s, 6),
            ITEMS_KEY: len(retrieval.items) if rendered.shown is None else rendered.shown,
            RETURNED_KEY: retrieval.returned,
            CUT_KEY: retrieval.cut,
            INGEST_KEY: retrieval.ingest.as_dict(),
            CONTEXT_TOKENS_KEY: context_tokens,
            RESULTS_KEY: logged_results(retrieval.items),
            "prompt_tokens": prompt_tokens,
        }
        return dataclasses.replace(item, system=system, user=user, metadata=metadata)
