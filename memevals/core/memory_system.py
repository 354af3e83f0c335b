"""The memory-system protocol: what a memory system is given, what it returns, how it is found.

A memory system is a *subject* under test (docs/memory_systems.md): it ingests one history at
a time (a LoCoMo conversation, a LoCoMo-Plus stitched history, a LongMemEval haystack) and
later retrieves, for a question, a ranked list of items. The benchmark then renders those items
as the context the model reads and scores the ids they cite with its official retrieval metrics,
so every system is judged by the same judge, category map, `k` and metrics.

- `ingest(history, store, model)` writes whatever the system needs into `store`, a fresh empty
  folder the harness keeps in its disk cache (memevals.core.memory_harness): one ingestion per
  (system, version, arguments, data, history), reused across reruns, models and tasks.
  `model` is a plain text-completion function for systems that need an LLM (the Inspect model
  role `memory`); it is None where no model is available.
- `open(store)` returns an index over a finished store; `index.retrieve(query)` returns at most
  `query.k` items, best first (the harness cuts longer lists to `k` and counts the cut).
- An index may also `answer(query)` by itself (systems with their own reader).

Everything here is framework-free. Systems register by name in the entry-point group
`memevals.memory_systems` (memevals registers its own there too); the entry point is a callable
taking the system's keyword arguments (`-T memory_args=...`) and returning the system.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import yaml

ENTRY_POINT_GROUP = "memevals.memory_systems"

__all__ = [
    "ENTRY_POINT_GROUP",
    "AnsweringIndex",
    "History",
    "IngestReport",
    "MemoryIndex",
    "MemoryItem",
    "MemoryQuery",
    "MemorySystem",
    "MemorySystemError",
    "ModelReply",
    "Session",
    "TextModel",
    "Turn",
    "available_memory_systems",
    "load_memory_system",
    "parse_memory_args",
]


class MemorySystemError(RuntimeError):
    """A memory system could not be found, built, fed or queried.

    Raised for one sample, it makes that sample an error (never an empty context scored as a
    wrong answer)."""


# --------------------------------------------------------------------------------------------
# What a system is given


@dataclass(frozen=True)
class Turn:
    """One turn of a session.

    `speaker` is the speaker's name (LoCoMo) or the role (LongMemEval: user / assistant).
    `search_text` is what the benchmark's official retrieval indexes for this turn (LoCoMo: the
    rendered line with the image caption; LongMemEval: user turns only, None for assistant
    turns); the built-in `bm25` / `embedding` systems index it, others may ignore it.
    """

    turn_id: str
    speaker: str
    text: str
    image_caption: str | None = None
    search_text: str | None = None


@dataclass(frozen=True)
class Session:
    """One session, in the order it took place, with its date as the data gives it."""

    session_id: str
    date: str
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class History:
    """Everything one system ingests at once: sessions in chronological order.

    `history_id` names it (conversation or haystack id); two histories with one id but other
    content (a LoCoMo-Plus stitched history) get different cache keys, since the key includes
    `digest()`. `default_unit` is the unit the benchmark's own context=rag uses by default
    (`turn` or `session`), which the built-in unit retrievers follow unless told otherwise.
    """

    history_id: str
    sessions: tuple[Session, ...]
    speakers: tuple[str, ...] = ()
    default_unit: str = "turn"

    def digest(self) -> str:
        """sha256 of the content (ids, dates, turns), independent of Python's hashing."""
        return self._digest

    @functools.cached_property
    def _digest(self) -> str:
        # computed once per history object: the harness keys every retrieval on it
        body = json.dumps(dataclasses.asdict(self), ensure_ascii=False, sort_keys=True)
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    @functools.cached_property
    def source_ids(self) -> frozenset[str]:
        """Every id an item may cite: the turn ids and the session ids."""
        return frozenset(
            [t.turn_id for s in self.sessions for t in s.turns]
            + [s.session_id for s in self.sessions]
        )


@dataclass(frozen=True)
class MemoryQuery:
    """A question to retrieve for: its text, the date it is asked (None when the benchmark
    has none) and the number of items wanted."""

    text: str
    k: int
    date: str | None = None
    history_id: str = ""


# --------------------------------------------------------------------------------------------
# What a system returns


@dataclass(frozen=True)
class MemoryItem:
    """One retrieved item: its text, the turn or session ids it came from, its score.

    `verbatim` says the item *is* those source turns or sessions (a raw-history retriever such as
    `bm25`): the benchmark then shows them as its own history renders them. Otherwise the item's
    own text (a fact, a summary) is shown, dated `date` or by its first source.
    """

    text: str
    source_ids: tuple[str, ...] = ()
    score: float | None = None
    date: str | None = None
    verbatim: bool = False


@dataclass(frozen=True)
class ModelReply:
    """A memory model's reply: its text and the tokens it cost (None when not reported)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


#: A memory system's LLM: (system prompt, user prompt) -> reply. In Inspect it is the model
#: role `memory`; the harness counts its calls and tokens per history. It may carry a
#: `model_name` attribute, which the cache key of a system with `uses_model = True` includes.
TextModel = Callable[[str, str], ModelReply]


@dataclass(frozen=True)
class IngestReport:
    """What a system may report of one ingestion besides what the harness measures (time,
    calls and tokens of the `model` it was given): e.g. calls to its own LLM endpoint, items
    stored."""

    llm_calls: int | None = None
    items_stored: int | None = None
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


@runtime_checkable
class MemoryIndex(Protocol):
    """A finished store, opened for retrieval."""

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        """At most `query.k` items, best first."""
        ...


@runtime_checkable
class AnsweringIndex(MemoryIndex, Protocol):
    """An index that can also answer a question by itself."""

    def answer(self, query: MemoryQuery) -> str: ...


@runtime_checkable
class MemorySystem(Protocol):
    """A memory system: built with its arguments, it ingests histories and opens stores.

    `name` and `version` enter the cache key with the arguments (`args`), so a new version of a
    system never reads an older one's stores. A system that calls the memory model sets the
    optional class attribute `uses_model = True`: its key then includes the model's name.
    """

    name: str
    version: str

    @property
    def args(self) -> Mapping[str, Any]:
        """The arguments that decide what is stored (JSON-serialisable)."""
        ...

    def ingest(
        self, history: History, store: Path, model: TextModel | None
    ) -> IngestReport | None: ...

    def open(self, store: Path, history: History) -> MemoryIndex: ...


# --------------------------------------------------------------------------------------------
# Finding systems


def _entry_points() -> dict[str, metadata.EntryPoint]:
    found: dict[str, metadata.EntryPoint] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return found


def available_memory_systems() -> list[str]:
    """The names registered in the `memevals.memory_systems` entry-point group, sorted."""
    return sorted(_entry_points())


def _check_arg_names(name: str, factory: Any, args: Mapping[str, Any]) -> None:
    """A memory_args key the factory does not take, named with the closest one and the list.
    A factory that passes **kwargs on to the class it returns is read through that class; one
    whose signature cannot be read checks its own."""
    try:
        signature = inspect.signature(factory, eval_str=True)
        made = signature.return_annotation
        params = signature.parameters.values()
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params) and isinstance(made, type):
            params = inspect.signature(made).parameters.values()
    except (TypeError, ValueError, NameError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    names = [p.name for p in params if p.kind is not inspect.Parameter.POSITIONAL_ONLY]
    for key in args:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(
                f"memory={name!r}: memory_args {key!r} is not an argument of {name}{hint}; "
                f"arguments: {', '.join(names) or 'none'}"
            )


def load_memory_system(name: str, args: Mapping[str, Any] | None = None) -> MemorySystem:
    """The system registered as `name`, built with `args` (ValueError naming the closest name,
    or the argument the system refused)."""
    eps = _entry_points()
    if name not in eps:
        close = difflib.get_close_matches(name, list(eps), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"memory={name!r} is not a registered memory system{hint}; installed: "
            f"{', '.join(sorted(eps)) or 'none'} (entry-point group {ENTRY_POINT_GROUP!r})"
        )
    factory = eps[name].load()
    _check_arg_names(name, factory, args or {})
    try:
        system = factory(**dict(args or {}))
    except TypeError as exc:
        raise ValueError(f"memory={name!r}: bad memory_args {dict(args or {})!r}: {exc}") from exc
    if not isinstance(system, MemorySystem):
        raise ValueError(
            f"memory={name!r}: entry point {eps[name].value!r} did not return a memory system "
            "(needs name, version, args, ingest and open)"
        )
    return system


def parse_memory_args(value: object) -> dict[str, Any]:
    """`-T memory_args=...` read as Inspect reads `-M`: a mapping (YAML `-T` values arrive as
    one), a path to a .json / .yaml file, or `key=value` pairs separated by commas whose values
    are parsed as YAML (`top=3,unit=session`; the Inspect CLI hands these over as a list,
    split at the commas). None or "" is no arguments."""
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items()}
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        # the Inspect CLI splits `-T memory_args=a=1,b=2` at the comma into a list
        return parse_memory_args(",".join(value))
    if not isinstance(value, str):
        raise ValueError(f"memory_args must be a mapping or key=value pairs, not {value!r}")
    text = value.strip()
    path = Path(text).expanduser()
    if text.endswith((".json", ".yaml", ".yml")):
        if not path.is_file():
            raise ValueError(f"memory_args file {text!r} does not exist")
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        if not isinstance(loaded, Mapping):
            raise ValueError(f"memory_args file {text!r} does not hold a mapping")
        return {str(k): v for k, v in loaded.items()}
    if text.startswith("{"):
        loaded = yaml.safe_load(text)
        if not isinstance(loaded, Mapping):
            raise ValueError(f"memory_args {text!r} is not a mapping")
        return {str(k): v for k, v in loaded.items()}
    out: dict[str, Any] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        if "=" not in part:
            raise ValueError(f"memory_args: {part.strip()!r} is not key=value")
        key, raw = part.split("=", 1)
        try:
            out[key.strip()] = yaml.safe_load(raw.strip()) if raw.strip() else ""
        except yaml.YAMLError as exc:
            raise ValueError(
                f"memory_args: the value of {key.strip()!r} ({raw.strip()!r}) is not YAML; for "
                "lists or commas inside values give a mapping, e.g. '{\"ids\": [1, 2]}'"
            ) from exc
    return out
