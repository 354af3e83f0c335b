"""Shared lm-eval glue: option checks, PromptItem <-> document, the prompt text.

lm-eval calls `custom_dataset(**metadata, **dataset_kwargs)`, where `metadata` is the task
YAML's `metadata` merged with `--model_args` and `--metadata` (in that order). So the loaders
accept every key, use the ones they know, ignore the rest (model arguments, `version`, ...),
and reject a key that looks like a misspelt option rather than silently running the default.
Each benchmark folder's `utils.py` builds its documents from the benchmark's own samples and
scores with the benchmark's own rules; nothing here knows a benchmark.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import json
import logging
import math
import typing
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from datasets import Dataset, DatasetDict

from memevals.core import statistics
from memevals.core.memory_harness import (
    INGEST_KEY,
    LATENCY_KEY,
    MemorySubject,
    empty_retrievals,
    ingest_totals,
    latency_percentiles,
)
from memevals.core.memory_options import MemoryOptions
from memevals.core.memory_system import MemorySystemError
from memevals.core.options import OPTIONS, OptionValueError, options_from
from memevals.core.prompt_item import PromptItem
from memevals.core.tokens import get_token_counter

__all__ = [
    "CLUSTERED",
    "LM_EVAL_KEYS",
    "USER_ERRORS",
    "OptionError",
    "RecentBuilds",
    "as_bool",
    "as_int",
    "checked",
    "checked_options",
    "clustered_stderr_of_pairs",
    "doc_item",
    "doc_to_text",
    "keyword_names",
    "metadata_keys",
    "metadata_options",
    "only_reply",
    "prompt_tokens_of",
    "shared_defaults",
    "to_docs",
    "with_clusters",
    "with_memory",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: Keys lm-eval itself puts into the metadata it passes to `custom_dataset`.
LM_EVAL_KEYS = frozenset({"version", "config_source", "_metadata"})


class OptionError(ValueError):
    """A `--metadata` option is misspelt or has a bad value."""


#: The errors of a user's options, data or memory endpoint that stop lm-eval while it builds a
#: task's documents (as Inspect's tasks refuse them before any sample): each message is one line
#: naming the option and its fix, so it is the last line of lm-eval's traceback. memevals
#: installs no `sys.excepthook`: lm-eval and every other task keep Python's own.
USER_ERRORS: tuple[type[Exception], ...] = (OptionError, MemorySystemError)


def shared_defaults(*names: str) -> dict[str, Any]:
    """The `--metadata` keys of shared options (memevals.core.options) with their declared
    defaults, for a task's option table (e.g. `**shared_defaults("protocol")`).

    Args:
        *names: shared option names; each must be an lm-eval option.

    Returns:
        lm-eval key -> default.
    """
    out: dict[str, Any] = {}
    for name in names:
        option = OPTIONS[name]
        if option.lm_eval is None:
            raise ValueError(f"{name} is not an lm-eval option: {option.lm_eval_note}")
        out[option.lm_eval] = option.default
    return out


def checked_options(
    task: str, given: Mapping[str, Any], known: Iterable[str], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The known options with defaults filled in; unknown keys are ignored unless they look
    like a typo of a known one (they may be model arguments, which lm-eval merges in)."""
    known = set(known)
    for key in given:
        if key in known or key in LM_EVAL_KEYS:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
        if close:
            raise OptionError(
                f"{task}: --metadata key {key!r} is not an option; did you mean {close[0]!r}? "
                f"Options: {', '.join(sorted(known))}"
            )
        logger.debug("%s: ignoring metadata key %r (not a memevals option)", task, key)
    out = dict(defaults)
    out.update({k: v for k, v in given.items() if k in known})
    return out


OptionsT = TypeVar("OptionsT")


def metadata_keys(
    cls: type[Any], *, ignored: Iterable[str] = (), aliases: Mapping[str, str] | None = None
) -> set[str]:
    """The `--metadata` keys `metadata_options` takes for `cls`: its fields (a MemoryOptions
    field as the memory knobs' names), an aliased field under its alias, less `ignored`.

    Args:
        cls: the benchmark's options dataclass.
        ignored: its fields that are no lm-eval option.
        aliases: lm-eval key -> field name.

    Returns:
        The keys.
    """
    hints = typing.get_type_hints(cls)
    keys: set[str] = set()
    for f in dataclasses.fields(cls):
        keys |= set(MemoryOptions.names()) if hints.get(f.name) is MemoryOptions else {f.name}
    renamed = set((aliases or {}).values())
    return (keys - renamed | set(aliases or {})) - set(ignored)


def metadata_options(
    cls: type[OptionsT],
    task: str,
    metadata: Mapping[str, Any],
    *,
    ignored: Iterable[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> OptionsT:
    """A benchmark's options (its one options class, `core.options.options_from`) from lm-eval's
    `--metadata`, which also holds the model's arguments: a key that is no option is ignored
    unless it looks like a misspelt one. `ignored` fields (Inspect-only ones) are dropped, so
    a model argument of that name cannot reach the options; an aliased field given under its
    own name (e.g. a model's `seed`) is dropped with a warning naming the alias.

    Args:
        cls: the options dataclass.
        task: the task's name, first in every message.
        metadata: what lm-eval passed.
        ignored: fields that are no lm-eval option.
        aliases: lm-eval key -> field name.

    Returns:
        The options; a bad one raises OptionError.
    """
    # a misspelt key is named as every lm-eval task names it, before the options are read
    checked_options(task, metadata, metadata_keys(cls, ignored=ignored, aliases=aliases), {})
    dropped = set(ignored) | set((aliases or {}).values())
    for key, name in (aliases or {}).items():
        if name in metadata and key not in metadata:
            logger.warning(
                "%s: %r (a model argument?) is not this task's option; use --metadata "
                "'{\"%s\": ...}'",
                task,
                name,
                key,
            )
    try:
        return options_from(
            cls, metadata, where=task, strict=False, aliases=aliases, ignored=dropped
        )
    except OptionValueError as exc:
        raise OptionError(str(exc)) from exc
    except ValueError as exc:
        raise OptionError(f"{task}: {exc}") from exc


def keyword_names(fn: Callable[..., Any]) -> list[str]:
    """Option names a core builder accepts (so its new options need no glue here)."""
    return [
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def as_bool(task: str, name: str, value: Any) -> bool:
    """JSON gives booleans; `--model_args`-style strings give "true"/"false"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise OptionError(f"{task}: option {name!r} must be true or false, got {value!r}")


def checked(task: str, build: Callable[[], T]) -> T:
    """Run `build`, prefixing a ValueError from the shared core with the task name."""
    try:
        return build()
    except OptionError:
        raise
    except ValueError as exc:
        raise OptionError(f"{task}: {exc}") from exc


def with_memory(
    task: str, items: Sequence[PromptItem], subject: MemorySubject | None
) -> list[PromptItem]:
    """The items with their memory system's contexts (retrieval happens here, when the
    documents are built; there is no memory model in lm-eval, so a system that needs one
    fails, saying so). A failure names the task and the sample and stops the run: a failure is
    never scored as an empty context. A system that returns no items has answered: the
    document gets the benchmark's no-context rendering and is scored, its metadata saying
    `memory_returned` 0 and `memory_items` 0 (the log line counts them)."""
    if subject is None:
        return list(items)
    if subject.answers:
        raise OptionError(
            f"{task}: memory_answers: lm-eval generates the answers itself; run the system's "
            "own answers through Inspect"
        )
    out = []
    for item in items:
        try:
            out.append(subject.fill(item, None))
        except MemorySystemError as exc:
            raise MemorySystemError(f"{task}: sample {item.id}: {exc}") from exc
    totals = ingest_totals([i.metadata[INGEST_KEY] for i in out])
    latency = latency_percentiles([float(i.metadata[LATENCY_KEY]) for i in out])
    logger.info(
        "%s: memory %s over %d histories (%d ingested now, %d from the cache); %d of %d "
        "retrievals returned no item; retrieval latency p50 %.4f s, p95 %.4f s, p99 %.4f s",
        task,
        subject.run.system.name,
        totals["histories"],
        totals["ingestions"],
        totals["cache_hits"],
        empty_retrievals([i.metadata for i in out]),
        len(out),
        latency["latency_p50_s"],
        latency["latency_p95_s"],
        latency["latency_p99_s"],
    )
    return out


class RecentBuilds(Generic[OptionsT, T]):
    """A benchmark's builds of this process, newest last (two at most), keyed by the options'
    repr (`memory_args` may be a mapping): every subtask of a run (one per category) shares one
    build, so the data are read once and a memory system ingests each conversation once."""

    def __init__(self, build: Callable[[OptionsT], T]) -> None:
        """Remember the benchmark's `build` (options -> build).

        Args:
            build: the benchmark's build function.
        """
        self._build = build
        self._built: OrderedDict[str, T] = OrderedDict()

    def __call__(self, options: OptionsT) -> T:
        """The build of `options`, made on first use.

        Args:
            options: the benchmark's options.

        Returns:
            The build, the same object for equal options while it is among the newest two.
        """
        key = repr(options)
        if key not in self._built:
            self._built[key] = self._build(options)
            while len(self._built) > 2:
                self._built.popitem(last=False)
        return self._built[key]

    def clear(self) -> None:
        """Forget every build (a test's subject would keep another test's cache folder)."""
        self._built.clear()


def to_docs(items: Sequence[PromptItem], task: str, *, messages: bool = False) -> DatasetDict:
    """PromptItems as a one-split ("test") dataset of flat string fields. The metadata travels
    as JSON, because Arrow needs one type per column (LoCoMo answers are str or int).

    Args:
        items: the documents' items.
        task: the task's name, for the message when there are none.
        messages: also write each item's replayed chat (`messages`, JSON; BEAM's task class
            sends it).

    Returns:
        The dataset.
    """
    if not items:
        raise OptionError(f"{task}: no documents (check the category and data options)")
    rows = []
    for item in items:
        row = {
            "id": item.id,
            "system": item.system,
            "user": item.user,
            "target": item.target,
            "category": str(item.metadata.get("category", "")),
            "metadata": json.dumps(item.metadata, ensure_ascii=False),
        }
        if messages:
            row["messages"] = json.dumps([list(m) for m in item.messages], ensure_ascii=False)
        rows.append(row)
    return DatasetDict({"test": Dataset.from_list(rows)})


def doc_item(doc: Mapping[str, Any]) -> PromptItem:
    """The PromptItem a document was made from (metadata decoded)."""
    try:
        metadata = json.loads(doc["metadata"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"document {doc.get('id')!r}: field 'metadata' is not the JSON memevals wrote ({exc})"
        ) from exc
    return PromptItem(
        id=str(doc["id"]),
        system=str(doc["system"]),
        user=str(doc["user"]),
        target=str(doc["target"]),
        metadata=metadata,
    )


def doc_to_text(doc: Mapping[str, Any]) -> str:
    """The exact text the Inspect tasks send (system and user joined), as one prompt.

    Context and question stay in one user turn under `--apply_chat_template`: lm-eval's HF
    model drops the system message when a chat template rejects it, which would silently
    remove the whole conversation.
    """
    return PromptItem(
        id=str(doc["id"]), system=str(doc["system"]), user=str(doc["user"]), target=""
    ).as_text()


def only_reply(results: Sequence[Any]) -> str:
    if len(results) != 1:
        raise ValueError(f"expected one generation per document, got {len(results)}")
    return str(results[0])


def prompt_tokens_of(doc: Mapping[str, Any], md: Mapping[str, Any]) -> float:
    """Prompt size by the same offline counter the Inspect tasks log (memevals.core.tokens);
    the count a builder already stored in the metadata is reused."""
    if md.get("prompt_tokens") is not None:
        return float(md["prompt_tokens"])
    counter = get_token_counter(str(md.get("token_counter") or "auto"))
    return float(counter(doc_to_text(doc)))


def as_int(task: str, name: str, value: Any) -> int:
    """JSON gives integers; `--model_args`-style strings give digits."""
    if not isinstance(value, bool):
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    raise OptionError(f"{task}: option {name!r} must be an integer, got {value!r}")


#: Suffix of the per-document entries whose aggregation is the clustered standard error.
CLUSTERED = "_stderr_clustered"


def with_clusters(
    scores: Mapping[str, Any], md: Mapping[str, Any], names: Iterable[str]
) -> dict[str, Any]:
    """`scores` plus, for each of `names` present, `<name>_stderr_clustered`: (value, cluster).

    lm-eval aggregates each metric over its per-document values only, and a clustered standard
    error needs each value's cluster (`metadata["cluster"]`, the conversation), so the pair
    travels as the value of a metric of its own, aggregated by `clustered_stderr_of_pairs`.
    """
    cluster = md.get(statistics.CLUSTER_KEY)
    if cluster is None:
        raise ValueError(f"document metadata has no {statistics.CLUSTER_KEY!r}")
    return dict(scores) | {
        f"{name}{CLUSTERED}": (float(scores[name]), str(cluster))
        for name in names
        if name in scores
    }


#: What an lm-eval aggregation gives for a figure the values leave undefined: lm-eval's own word
#: for a missing standard error, printed as it prints its own (never NaN).
UNDEFINED = "N/A"


def clustered_stderr_of_pairs(items: Sequence[Sequence[Any]]) -> float | str:
    """lm-eval aggregation of `(value, cluster)` pairs: the cluster-robust standard error of the
    mean of the values (memevals.core.statistics; the Inspect tasks' `stderr_clustered`).
    `N/A` (UNDEFINED) with fewer than two clusters, as under `--limit`: left out, as the Inspect
    tasks leave it out, rather than NaN. Not one of lm-eval's bootstrappable aggregations, so
    lm-eval reports no `_stderr` of it (`N/A`) whatever `--bootstrap_iters` says."""
    values = [float(value) for value, _ in items]
    clusters = [str(cluster) for _, cluster in items]
    se = statistics.clustered_stderr(values, clusters)
    return UNDEFINED if math.isnan(se) else se
