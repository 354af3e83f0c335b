"""One reader of runs for `memevals-compare` and `memevals-diff`.

A run is one Inspect log (`.eval` / `.json`), or what one `lm_eval --log_samples` call wrote for
one benchmark: its `samples_<task>_<date>.jsonl` files (one per subtask, the same date) with the
`results_<date>.json` beside them. A folder stands for every run under it: its Inspect logs
(oldest first), then its lm-eval runs (by folder and date).

Every sample is read by one set of rules, whichever framework wrote it and whichever tool asks:

* **Scores** come from the benchmark's record (`memevals.benchmarks.records()`): a scorer the
  record declares is named by its label (a dict-valued scorer by its keys) and has the declared
  kind; an lm-eval metric is matched to the declared label of that name. A value the record does
  not declare is kept with kind None (a diagnostic). A run whose benchmark has no record keeps
  every numeric value, named as logged. A key of a scorer's value that flags a sample (that its
  score is unscored, that the judge's reply was unclear) is counted, never a score: a key the
  task aggregates only by a count, or one of FLAGS. NaN is an unscored value.
* **Category**: the sample metadata under the record's `category_key` ("-" when absent).
* **Cluster**: `metadata["cluster"]`; for logs written before that key, the record's
  `legacy_cluster_key`; else the sample itself (a sample sharing nothing is its own cluster).
* **Groups** beyond the category: the record's `subgroups`.
* **Epochs** of one sample are averaged per score (an errored epoch is left out); the sample is
  errored only when every epoch is.
* **Protocol**: the run's `protocol` option (task argument, task metadata, lm-eval
  `--metadata`), else the one its samples record; a run that records none predates the option,
  when every run used memevals' own prompts: `memevals.core.protocol.BEFORE_OPTION`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from inspect_ai.log import EvalLog, EvalSample, list_eval_logs, read_eval_log

from memevals.benchmarks import record_for_task, records
from memevals.core.benchmark import Benchmark, ScoreSpec
from memevals.core.memory_options import MemoryOptions
from memevals.core.protocol import BEFORE_OPTION
from memevals.core.statistics import CLUSTER_KEY
from memevals.core.validation import json_lines

__all__ = [
    "FLAGS",
    "MEMORY_KINDS",
    "NO_CATEGORY",
    "PROTOCOL_OPTION",
    "SCORE_KINDS_COMPARED",
    "Run",
    "RunError",
    "RunSample",
    "cluster_of",
    "context_label",
    "is_compared",
    "load_runs",
    "memory_settings",
    "plain",
    "read_inspect_log",
    "read_inspect_run",
    "read_lm_eval_run",
    "read_lm_eval_runs",
    "record_of",
    "score_order",
    "system_label",
]

#: The option that selects a benchmark's prompts and judge (issue 23).
PROTOCOL_OPTION = "protocol"
#: A score's category when its sample has none.
NO_CATEGORY = "-"
#: Flags the memevals judges log beside their verdict: a score left unscored (an unreadable
#: verdict), a reply that is no clear verdict. Counted per score, never scores themselves.
FLAGS = frozenset({"unscored", "unclear"})
#: Score kinds that are scores of the answers (compared and tabulated as scores).
SCORE_KINDS_COMPARED = frozenset({"answer", "judge", "retrieval"})
#: Score kinds that are measurements, never scores: the memory system's latency value, the
#: prompt size.
MEMORY_KINDS = frozenset({"memory"})
#: lm-eval option names that are another name of an Inspect task parameter.
LM_EVAL_ALIASES: Mapping[str, str] = MappingProxyType({"choice_seed": "seed"})
#: Keys of lm-eval task configs that are lm-eval's own, not task options.
_LM_EVAL_KEYS = frozenset({"version", "config_source", "_metadata"})
#: Keys of the memory settings a task logs that are outcomes, not settings.
_MEMORY_OUTCOME = re.compile(r".*_total$|^prompt_tokens")
#: Context settings a task logs besides the options that decide what the model saw.
_USED_EXTRA = ("retrieval_unit", "embedding_model", "memory_version")
_SAMPLES_FILE = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.\-]+)\.jsonl$")


class RunError(ValueError):
    """A run that cannot be read (the message names the file, record and field)."""


def _frozen(mapping: Mapping[str, Any] | None = None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class RunSample:
    """One sample of one run, epochs averaged: its scores (NaN = unscored), reply and gold."""

    id: str
    category: str
    cluster: str
    scores: Mapping[str, float]
    reply: str
    gold: str
    errored: bool = False
    criterion: str | None = None
    #: the groups it belongs to beside its category (the record's `subgroups`)
    groups: tuple[str, ...] = ()
    #: score name -> flag -> epochs in which its scorer raised that flag (0: it logs the flag)
    flags: Mapping[str, Mapping[str, int]] = field(default_factory=_frozen)


@dataclass(frozen=True)
class Run:
    """One run of one benchmark: what was asked, how, by whom, and the per-sample scores."""

    #: who answered and from which file: `<model>[ + memory <system>] (<file>)`
    label: str
    path: str
    framework: str  # "inspect" or "lm-eval"
    benchmark: str
    samples: Mapping[str, RunSample]
    #: compared option groups: "context settings" and "task options" (name -> value)
    settings: Mapping[str, Mapping[str, Any]]
    #: the context settings the task logged it used (Inspect), compared instead of the options
    used_context: Mapping[str, Any] | None = None
    data_checksums: Any = None  # None: not recorded (lm-eval)
    #: score name -> the judge models behind it
    judges: Mapping[str, tuple[str, ...]] = field(default_factory=_frozen)
    model: str = ""
    protocol: str = BEFORE_OPTION.name
    #: the task (Inspect task, lm-eval subtask, or the benchmark for several lm-eval subtasks)
    task: str = ""
    record: Benchmark | None = None
    #: score name -> its declared kind (None: not declared)
    kinds: Mapping[str, str | None] = field(default_factory=_frozen)
    #: the options given (Inspect task arguments; lm-eval `--metadata` and dataset kwargs)
    options: Mapping[str, Any] = field(default_factory=_frozen)
    #: the settings the task logged it used (the memory settings, else the task metadata)
    used: Mapping[str, Any] = field(default_factory=_frozen)
    #: Inspect's Task(metadata=); empty for lm-eval
    task_metadata: Mapping[str, Any] = field(default_factory=_frozen)
    #: every sample's metadata, each epoch once (a document two subtasks logged once)
    epoch_metadata: tuple[Mapping[str, Any], ...] = ()
    #: "<score>@<reducer>" -> sample id -> value, for epochs reduced other than by the mean
    reduced: Mapping[str, Mapping[str, float]] = field(default_factory=_frozen)
    #: score name -> (category, the N labels) of every sample-epoch judged N > 1 times
    repeated: Mapping[str, tuple[tuple[str, tuple[str | None, ...]], ...]] = field(
        default_factory=_frozen
    )
    status: str = "success"
    has_results: bool = True
    #: samples completed, as Inspect counted them (None: every sample read)
    completed: int | None = None
    #: the judge models of the run's grader role, as Inspect recorded them (None: no role)
    grader_role: str | None = None
    usage: Mapping[str, int] = field(default_factory=_frozen)

    @property
    def score_names(self) -> list[str]:
        """The compared scores of its samples, in the record's order."""
        names = {n for s in self.samples.values() for n in s.scores}
        kept = [n for n in names if is_compared(self.kinds.get(n), self.record)]
        return score_order(self.record, kept, self.kinds)

    def setting(self, name: str, default: Any = None) -> Any:
        """A context setting: as the task logged it used, else as given, else the default.

        Args:
            name: the setting's option name.
            default: its value when nothing records it.

        Returns:
            The value.
        """
        return _first(name, default, self.used, self.options)

    def option(self, name: str, default: Any = None) -> Any:
        """A task option: as given, else as the task logged it, else as its task fixes it,
        else the default.

        Args:
            name: the option name.
            default: its value when nothing records it.

        Returns:
            The value.
        """
        fixed = _task_fixed(self.record, self.task)
        return _first(name, default, self.options, self.used, fixed)


def _first(name: str, default: Any, *sources: Mapping[str, Any]) -> Any:
    """The first value of `name` in `sources` that is set (a record of several settings, as
    a task logs its memory settings under `memory`, is not a value)."""
    for source in sources:
        value = source.get(name)
        if value is not None and value != "" and not isinstance(value, Mapping | list):
            return value
    return default


# ---------------------------------------------------------------------------------------------
# The rules


def record_of(benchmark: str, task: str = "") -> Benchmark | None:
    """The record of a run: the one declaring its task, else the one of its benchmark name.

    Args:
        benchmark: the `benchmark` the run's metadata names.
        task: the run's task name (Inspect task or lm-eval subtask), if known.

    Returns:
        The record, or None when no record declares either.
    """
    found = record_for_task(task) if task else None
    return found or records().get(benchmark)


def _task_fixed(record: Benchmark | None, task: str) -> Mapping[str, Any]:
    if record is None or not task:
        return {}
    spec = next((t for t in record.tasks if task in (t.name, t.lm_eval)), None)
    return spec.fixed if spec is not None else {}


def is_compared(kind: str | None, record: Benchmark | None) -> bool:
    """Whether a score of this kind is a score of the answers (what the tools compare).

    Args:
        kind: the declared kind, None when undeclared.
        record: the run's record (None: every value counts, nothing says otherwise).

    Returns:
        True for answer, judge and retrieval scores, and for anything of a run without record.
    """
    return kind in SCORE_KINDS_COMPARED or (kind is None and record is None)


def score_order(
    record: Benchmark | None, names: Iterable[str], kinds: Mapping[str, str | None]
) -> list[str]:
    """Score names in the record's declared order (a dict-valued score's keys by name), then
    undeclared ones by name.

    Args:
        record: the record, or None.
        names: the score names.
        kinds: name -> declared kind.

    Returns:
        The names, ordered.
    """
    specs = list(record.scores) if record is not None else []

    def rank(name: str) -> tuple[int, str]:
        base = name.split("@", 1)[0]
        for i, spec in enumerate(specs):
            if base == spec.label:
                return (i, name)
        kind = kinds.get(base)
        for i, spec in enumerate(specs):
            if kind is not None and spec.kind == kind:
                return (i, name)
        return (len(specs), name)

    return sorted(set(names), key=rank)


def category_of(metadata: Mapping[str, Any], record: Benchmark | None, fallback: Any = None) -> str:
    """A sample's category: the metadata under the record's category key.

    Args:
        metadata: the sample metadata.
        record: its record, or None (key "category").
        fallback: the value when the metadata has none.

    Returns:
        The category, or NO_CATEGORY.
    """
    value = metadata.get(record.category_key if record else "category", fallback)
    return str(value) if value is not None and value != "" else NO_CATEGORY


def cluster_of(metadata: Mapping[str, Any], sample_id: object, record: Benchmark | None) -> str:
    """A sample's cluster: `metadata["cluster"]`, else the record's legacy cluster key (logs
    written before `cluster` existed), else the sample itself.

    Args:
        metadata: the sample metadata.
        sample_id: the sample's id.
        record: its record, or None.

    Returns:
        The cluster id.
    """
    keys = [CLUSTER_KEY]
    if record is not None and record.legacy_cluster_key:
        keys.append(record.legacy_cluster_key)
    for key in keys:
        value = metadata.get(key)
        if value is not None and value != "":
            return str(value)
    return str(sample_id)


def groups_of(metadata: Mapping[str, Any], record: Benchmark | None) -> tuple[str, ...]:
    """The groups a sample belongs to beside its category (the record's `subgroups`)."""
    out: list[str] = []
    for key, name in (record.subgroups if record else {}).items():
        value = metadata.get(key)
        if value is True:
            out.append(name)
        elif isinstance(value, str) and value:
            out.append(f"{name}_{value}")
    return tuple(out)


def plain(value: Any) -> Any:
    """An option value as lm-eval's --metadata may spell it ("true", "5") made comparable.

    Args:
        value: the value.

    Returns:
        True/False/int/None for their spellings, else the value.
    """
    if isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "false"):
            return low == "true"
        if re.fullmatch(r"-?\d+", low):
            return int(low)
        if value.strip() == "None" or low in ("null", ""):
            return None
    return value


def _as_float(value: Any) -> float | None:
    """A numeric score value (bool included); None for text and other values."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


def _spec(record: Benchmark | None, scorer: str) -> ScoreSpec | None:
    return record.score(scorer) if record is not None else None


def _appended(record: Benchmark | None, scorer: str) -> tuple[ScoreSpec | None, str]:
    """(the declared score, the suffix) of a scorer Inspect renamed to keep it unique: a second
    `llm_judge` (`inspect score --action append`) is logged as `llm_judge1`, and its results
    as `judge1`. (None, "") for any other name."""
    bare = scorer.rsplit("/", 1)[-1]
    base = bare.rstrip("0123456789")
    if base == bare or _spec(record, bare) is not None:
        return None, ""
    spec = _spec(record, base)
    return (spec, bare[len(base) :]) if spec is not None else (None, "")


def _spec_by_label(record: Benchmark | None, label: str) -> ScoreSpec | None:
    if record is None:
        return None
    return next((s for s in record.scores if s.label == label), None)


def protocol_of(
    options: Mapping[str, Any],
    task_metadata: Mapping[str, Any],
    sample_metadata: Iterable[Mapping[str, Any]],
) -> str:
    """A run's protocol (see the module doc).

    Args:
        options: the options given.
        task_metadata: the task metadata.
        sample_metadata: the samples' metadata.

    Returns:
        The protocol name.
    """
    for source in (options, task_metadata):
        value = source.get(PROTOCOL_OPTION)
        if value is not None and value != "":
            return str(value)
    found = sorted({str(md[PROTOCOL_OPTION]) for md in sample_metadata if md.get(PROTOCOL_OPTION)})
    # a run that records none predates the option: memevals' own prompts and judge
    return ", ".join(found) if found else BEFORE_OPTION.name


def system_label(settings: Mapping[str, Any]) -> str:
    """`<name> <version>` of a memory system under test, with its arguments when it got any.

    Args:
        settings: the memory settings (`memory`, `memory_version`, `memory_args`).

    Returns:
        The label ("" without a memory system).
    """
    label = " ".join(str(settings[k]) for k in ("memory", "memory_version") if settings.get(k))
    args = settings.get("memory_args")
    if isinstance(args, Mapping) and args:
        label += " (" + ", ".join(f"{k}={v}" for k, v in sorted(args.items())) + ")"
    elif args:
        label += f" ({args})"
    return label


def memory_settings(run: Run) -> dict[str, Any]:
    """A run's memory system under test and its settings (empty without one): `memory`,
    `memory_version`, `memory_args` and `top_k` (the record's default when not logged).

    Args:
        run: the run.

    Returns:
        The settings.
    """
    memory = run.setting("memory")
    if not memory:
        return {}
    defaults = run.record.context_defaults if run.record else {}
    return {
        "memory": memory,
        "memory_version": run.setting("memory_version"),
        "memory_args": run.used.get("memory_args", run.options.get("memory_args")),
        "top_k": run.setting("top_k", defaults.get("top_k")),
    }


def context_label(run: Run) -> str:
    """The context a run's model saw, with the options that change what it saw.

    The mode with its settings as the task logged them, else as given, else the record's
    defaults (`rag(dialog, k=5, bm25)`, `truncated(4000)`, `memory(bm25, k=5)`), then each of
    the record's `label_options` set to another value than its default (`+gap-fix`,
    `+variant=oracle`).

    Args:
        run: the run.

    Returns:
        The label.
    """
    defaults = run.record.context_defaults if run.record else {}

    def setting(name: str) -> Any:
        return run.setting(name, defaults.get(name))

    def mode(name: str, *parts: Any) -> str:
        shown = [str(p) for p in parts if p is not None and not str(p).endswith("=None")]
        return f"{name}({', '.join(shown)})" if shown else name

    context = str(setting("context") or "full")
    if setting("memory"):
        context = mode("memory", setting("memory"), f"k={setting('top_k')}")
    elif context == "rag":
        context = mode(
            "rag", setting("retrieval_unit"), f"k={setting('top_k')}", setting("retriever")
        )
    elif context == "truncated":
        context = mode("truncated", setting("max_context_tokens"))
    extras: list[str] = []
    for name, default in _label_options(run.record).items():
        value = plain(run.option(name, default))
        if value == plain(default):
            continue
        dashed = name.replace("_", "-")
        if isinstance(value, bool):
            extras.append(dashed if value else f"no-{dashed}")
        else:
            extras.append(f"{name}={value}")
    return context + "".join(f" +{e}" for e in extras)


def _label_options(record: Benchmark | None) -> Mapping[str, Any]:
    """The record's label options but the protocol (a column and a factor of its own)."""
    options = record.label_options if record else {}
    return {k: v for k, v in options.items() if k != PROTOCOL_OPTION}


def _with_settings(run: Run) -> Run:
    """The run with its compared option groups: the context options as given (a missing one
    is its default) and the record's `label_options` as the run used them."""
    memory = MemoryOptions()
    context = {
        name: plain(run.options.get(name, getattr(memory, name))) for name in MemoryOptions.names()
    }
    labelled = _label_options(run.record)
    task = {k: plain(run.option(k, d)) for k, d in labelled.items()}
    return replace(run, settings={"context settings": context, "task options": task})


def _used_context(used: Mapping[str, Any]) -> dict[str, Any] | None:
    """The context settings a task logged it used, outcomes left out."""
    names = set(MemoryOptions.names()) | set(_USED_EXTRA)
    kept = {k: v for k, v in used.items() if k in names and not _MEMORY_OUTCOME.match(k)}
    return kept or None


def _subject(settings: Mapping[str, Any]) -> str:
    """` + memory <system> [version]` for a run whose context a memory system gave, else ""."""
    if not settings.get("memory"):
        return ""
    version = settings.get("memory_version")
    return f" + memory {settings['memory']}" + (f" {version}" if version else "")


# ---------------------------------------------------------------------------------------------
# Samples


@dataclass
class _Epochs:
    """The epochs of one sample as they are read."""

    sid: str
    category: str
    cluster: str
    groups: tuple[str, ...]
    gold: str
    criterion: str | None
    replies: list[str] = field(default_factory=list)
    scores: list[dict[str, float]] = field(default_factory=list)
    errored: list[bool] = field(default_factory=list)
    flags: dict[str, dict[str, int]] = field(default_factory=dict)

    def combined(self) -> RunSample:
        """Each score averaged over the epochs that have a finite value of it (NaN if none
        has); errored epochs left out; errored only if every epoch errored."""
        kept = [i for i, e in enumerate(self.errored) if not e]
        scores: dict[str, float] = {}
        for name in {n for i in kept for n in self.scores[i]}:
            values = [self.scores[i][name] for i in kept if name in self.scores[i]]
            finite = [v for v in values if math.isfinite(v)]
            scores[name] = math.fsum(finite) / len(finite) if finite else math.nan
        return RunSample(
            id=self.sid,
            category=self.category,
            cluster=self.cluster,
            scores=scores,
            reply=self.replies[kept[0]] if kept else (self.replies[0] if self.replies else ""),
            gold=self.gold,
            errored=not kept,
            criterion=self.criterion,
            groups=self.groups,
            flags={k: dict(v) for k, v in self.flags.items()},
        )


def _criterion(metadata: Mapping[str, Any]) -> str | None:
    judge = metadata.get("judge")
    if isinstance(judge, Mapping) and judge.get("criterion") is not None:
        return str(judge["criterion"])
    return None


def _gold(target: Any) -> str:
    if isinstance(target, list):
        return " | ".join(str(t) for t in target)
    return str(target)


@dataclass
class _ScoreReader:
    """Names and kinds the values of one run's scores by the record (the module doc's rule)."""

    record: Benchmark | None
    #: the keys of a scorer's value that are flags (FLAGS and those the log counts only)
    flag_keys: frozenset[str] = FLAGS
    kinds: dict[str, str | None] = field(default_factory=dict)
    judges: dict[str, set[str]] = field(default_factory=dict)
    repeated: dict[str, list[tuple[str, tuple[str | None, ...]]]] = field(default_factory=dict)

    def named(self, scorer: str, value: Any) -> tuple[dict[str, float], dict[str, int]]:
        """(name -> number, flag -> 0/1) of one scorer's value."""
        bare = scorer.rsplit("/", 1)[-1]
        spec, suffix = _appended(self.record, bare)  # a re-judge appended to the log
        spec = spec or _spec(self.record, bare)
        kind = spec.kind if spec else None
        label = spec.label if spec else bare
        # an appended score is named as Inspect's results name it: a plain one by its scorer
        # (`locomo_f1_scorer1`), a dict-valued one's keys with the scorer's suffix (`judge1`)
        if not isinstance(value, Mapping):
            items, suffix = [(bare if suffix else label, value)], ""
        else:
            items = list(value.items())
        out: dict[str, float] = {}
        flags: dict[str, int] = {}
        for key, raw in items:
            number = _as_float(raw)
            if number is None:
                continue
            if key in self.flag_keys:
                flags[str(key)] = int(number) if math.isfinite(number) else 0
                continue
            out[f"{key}{suffix}"] = number
            self.kinds.setdefault(f"{key}{suffix}", kind)
        return out, flags

    def inspect_scores(
        self, sample: EvalSample, category: str
    ) -> tuple[dict[str, float], dict[str, dict[str, int]]]:
        """The numeric scores of one Inspect sample-epoch and each one's flags."""
        values: dict[str, float] = {}
        flags: dict[str, dict[str, int]] = {}
        recorded: dict[str, Any] = {}
        for scorer, score in (sample.scores or {}).items():
            named, raised = self.named(scorer, score.value)
            md = score.metadata or {}
            recorded.update({k: v for k, v in md.items() if k not in recorded})
            for name, number in named.items():
                key = name if name not in values else f"{scorer.rsplit('/', 1)[-1]}.{name}"
                self.kinds.setdefault(key, self.kinds.get(name))
                values[key] = number
                if raised:
                    flags[key] = raised
                if md.get("grader") is not None:
                    fallback = " (the model under test)" if md.get("grader_fallback") else ""
                    self.judges.setdefault(key, set()).add(f"{md['grader']}{fallback}")
                labels = md.get("judge_labels")
                if isinstance(labels, list) and len(labels) > 1:
                    self.repeated.setdefault(key, []).append((category, tuple(labels)))
        # a declared prompt-size score the task did not log as a score of its own is the size
        # its answer scorer recorded (as the task's own prompt-size metrics read it)
        for spec in self.record.scores if self.record else ():
            if spec.kind == "tokens" and spec.label not in values:
                size = _as_float(recorded.get(spec.label))
                if size is not None:
                    values[spec.label] = size
                    self.kinds.setdefault(spec.label, spec.kind)
        return values, flags

    def lm_eval_scores(self, record: Mapping[str, Any], where: str) -> dict[str, float]:
        """The numeric per-document metrics of one lm-eval samples record."""
        metrics = record.get("metrics")
        if not isinstance(metrics, list):
            raise RunError(f"{where}: field 'metrics' (the list of metric names) is missing")
        out: dict[str, float] = {}
        for name in metrics:
            number = _as_float(record.get(name))
            if number is None:  # not a per-document number (no value, or an aggregation's pair)
                continue
            spec = _spec_by_label(self.record, str(name))
            if self.record is not None and spec is None:
                continue  # not declared: an lm-eval diagnostic of this task
            self.kinds.setdefault(str(name), spec.kind if spec else None)
            out[str(name)] = number
        return out


# ---------------------------------------------------------------------------------------------
# Inspect


def read_inspect_run(path: str) -> Run:
    """One Inspect log file as a run.

    Args:
        path: the log file.

    Returns:
        The run.
    """
    try:
        # One pass over the whole log: measured faster than streaming the samples or asking
        # for fields to be left out (both parse sample by sample), even with their events.
        log = read_eval_log(path)
    except Exception as exc:
        raise RunError(f"{path}: not a readable Inspect log ({exc})") from exc
    return read_inspect_log(log, path)


def read_inspect_log(log: EvalLog, path: str) -> Run:
    """An Inspect log already read, as a run.

    Args:
        log: the log.
        path: where it came from (shown in tables).

    Returns:
        The run.
    """
    metadata = dict(log.eval.metadata or {})
    options = dict(log.eval.task_args or {})
    task = log.eval.task.rsplit("/", 1)[-1]
    record = record_of(str(metadata.get("benchmark") or task), task)
    benchmark = record.name if record else str(metadata.get("benchmark") or task)
    memory = metadata.get("memory")
    used = dict(memory) if isinstance(memory, Mapping) else metadata
    reader = _ScoreReader(record, FLAGS | _counted_only(log))
    by_id: dict[str, _Epochs] = {}
    for sample in sorted(log.samples or [], key=lambda s: (str(s.id), s.epoch)):
        sid = str(sample.id)
        md = sample.metadata or {}
        epochs = by_id.get(sid)
        if epochs is None:
            epochs = by_id[sid] = _Epochs(
                sid,
                category_of(md, record),
                cluster_of(md, sid, record),
                groups_of(md, record),
                _gold(sample.target),
                _criterion(md),
            )
        values, flags = reader.inspect_scores(sample, epochs.category)
        epochs.scores.append(
            {k: v for k, v in values.items() if reader.kinds.get(k) not in MEMORY_KINDS}
        )
        epochs.replies.append(sample.output.completion if sample.output else "")
        epochs.errored.append(sample.error is not None)
        for name, raised in flags.items():
            counts = epochs.flags.setdefault(name, {})
            for flag, n in raised.items():
                counts[flag] = counts.get(flag, 0) + n
    epoch_md = tuple(s.metadata or {} for s in log.samples or [])
    run = Run(
        label=f"{log.eval.model}{_subject(used)} ({Path(path).name})",
        path=path,
        framework="inspect",
        benchmark=benchmark,
        samples={sid: e.combined() for sid, e in by_id.items()},
        settings={},
        used_context=_used_context(used),
        data_checksums=metadata.get("data_sha256"),
        judges={k: tuple(sorted(v)) for k, v in reader.judges.items()},
        model=log.eval.model,
        protocol=protocol_of(options, metadata, epoch_md),
        task=task,
        record=record,
        kinds=dict(reader.kinds),
        options=options,
        used=used,
        task_metadata=metadata,
        epoch_metadata=epoch_md,
        reduced=_reductions(log, reader),
        repeated={k: tuple(v) for k, v in reader.repeated.items()},
        status=str(log.status),
        has_results=bool(log.results is not None and log.results.scores),
        completed=log.results.completed_samples if log.results is not None else None,
        grader_role=_grader_role(log),
        usage=_usage(log),
    )
    return _with_settings(run)


def _counted_only(log: EvalLog) -> frozenset[str]:
    """The scores a log aggregates by nothing but a count: flags, not scores."""
    out = set()
    for score in log.results.scores if log.results is not None else []:
        names = {name.rsplit("/", 1)[-1] for name in score.metrics}
        if names == {"count"}:
            out.add(score.name)
    return frozenset(out)


def _reductions(log: EvalLog, reader: _ScoreReader) -> dict[str, dict[str, float]]:
    """Per-sample values of epochs reduced other than by the mean (Inspect's own reduction)."""
    out: dict[str, dict[str, float]] = {}
    for reduction in log.reductions or []:
        if reduction.reducer in (None, "mean"):
            continue
        for sample in reduction.samples:
            named, _ = reader.named(reduction.scorer, sample.value)
            for name, number in named.items():
                if math.isfinite(number) and is_compared(reader.kinds.get(name), reader.record):
                    reduced = out.setdefault(f"{name}@{reduction.reducer}", {})
                    reduced[str(sample.sample_id)] = number
    return out


def _grader_role(log: EvalLog) -> str | None:
    roles = log.eval.model_roles or {}
    grader = roles.get("grader")
    if isinstance(grader, list):  # several graders bound to the role
        return ", ".join(g.model for g in grader)
    return grader.model if grader is not None else None


def _usage(log: EvalLog) -> dict[str, int]:
    usage: dict[str, int] = {}
    if log.stats and log.stats.model_usage:
        mu = log.stats.model_usage.get(log.eval.model)
        if mu is not None:
            usage = {"input_tokens": mu.input_tokens, "output_tokens": mu.output_tokens}
            if mu.input_tokens_cache_read is not None:
                usage["cache_read_tokens"] = mu.input_tokens_cache_read
    return usage


# ---------------------------------------------------------------------------------------------
# lm-eval


def _lm_eval_doc(
    record: Mapping[str, Any], where: str
) -> tuple[str, dict[str, Any], Mapping[str, Any]]:
    """(sample id, document metadata, document) of one samples record."""
    doc = record.get("doc")
    if not isinstance(doc, dict) or "id" not in doc:
        raise RunError(
            f"{where}: field 'doc.id' is missing; is this a memevals task's samples file?"
        )
    raw = doc.get("metadata", {})
    try:
        md = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        raise RunError(f"{where}: field 'doc.metadata' is not JSON ({exc})") from exc
    if not isinstance(md, dict):
        raise RunError(f"{where}: field 'doc.metadata' is not a JSON object")
    return str(doc["id"]), md, doc


def _lm_eval_reply(record: Mapping[str, Any]) -> str:
    filtered = record.get("filtered_resps")
    while isinstance(filtered, list) and len(filtered) == 1:
        filtered = filtered[0]
    return filtered if isinstance(filtered, str) else json.dumps(filtered)


def _model_args(config: Mapping[str, Any]) -> dict[str, Any]:
    args = config.get("model_args") or {}
    if isinstance(args, str):
        args = dict(kv.split("=", 1) for kv in args.split(",") if "=" in kv)
    return dict(args) if isinstance(args, Mapping) else {}


def _lm_eval_config(results: Path | None) -> tuple[str, dict[str, Any]]:
    """(model, options) from an lm-eval results file: the model as `<model>[/<pretrained>]`
    with its other arguments; ("lm-eval", {}) when the file is absent."""
    if results is None or not results.is_file():
        return "lm-eval", {}
    try:
        data = json.loads(results.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RunError(f"{results}: not a readable lm-eval results file ({exc})") from exc
    config = data.get("config") or {}
    args = _model_args(config)
    model = str(config.get("model") or "lm-eval")
    if args.get("pretrained"):
        model = f"{model}/{args['pretrained']}"
    model = " ".join([model, *(f"{k}={v}" for k, v in args.items() if k != "pretrained")])
    options: dict[str, Any] = {}
    for task_config in (data.get("configs") or {}).values():
        kwargs = task_config.get("dataset_kwargs") or {}
        given = {**kwargs, **(task_config.get("metadata") or {})}
        for key, value in given.items():
            if key in _LM_EVAL_KEYS or key in args or key == "categories":
                continue
            options[LM_EVAL_ALIASES.get(key, key)] = value
    return model, options


def _date_of(path: Path) -> str:
    m = _SAMPLES_FILE.match(path.name)
    return m.group("date") if m else path.name


def _task_of(path: Path) -> str:
    m = _SAMPLES_FILE.match(path.name)
    return m.group("task") if m else path.stem.removeprefix("samples_")


def read_lm_eval_runs(files: Sequence[Path]) -> list[Run]:
    """The samples files of one lm-eval call (one date) as runs, one per benchmark.

    A document that two subtasks logged (a group's overlapping subtasks) counts once.

    Args:
        files: the samples files.

    Returns:
        The runs, by benchmark.
    """
    parts: dict[tuple[str, str], list[_Doc]] = {}
    for path in files:
        task = _task_of(path)
        for where, _, record in json_lines(path, RunError):
            sid, md, doc = _lm_eval_doc(record, where)
            found = record_of(str(md.get("benchmark") or ""), task)
            # without a record, tasks that share a benchmark name tell themselves apart by
            # their own `task` metadata
            bench = str(md.get("benchmark") or task)
            key = (found.name, "") if found else (bench, str(md.get("task") or ""))
            parts.setdefault(key, []).append(_Doc(path, sid, record, md, doc))
    return [_lm_eval_run(files, entries) for _, entries in sorted(parts.items())]


def read_lm_eval_run(files: Sequence[Path]) -> Run:
    """The samples files of one lm-eval call as one run (the first benchmark, if several).

    Args:
        files: the samples files.

    Returns:
        The run.
    """
    return read_lm_eval_runs(files)[0]


@dataclass(frozen=True)
class _Doc:
    """One line of an lm-eval samples file."""

    path: Path
    sid: str
    record: Mapping[str, Any]
    metadata: Mapping[str, Any]
    doc: Mapping[str, Any]


def _lm_eval_run(files: Sequence[Path], entries: list[_Doc]) -> Run:
    first = entries[0]
    first_md = first.metadata
    tasks = sorted({_task_of(e.path) for e in entries})
    record = record_of(str(first_md.get("benchmark") or ""), tasks[0])
    benchmark = record.name if record else str(first_md.get("benchmark") or tasks[0])
    reader = _ScoreReader(record)
    samples: dict[str, RunSample] = {}
    metadata: dict[str, Mapping[str, Any]] = {}
    for e in entries:
        if e.sid in samples:
            continue  # the same document logged by another subtask of this call
        scores = reader.lm_eval_scores(e.record, f"{e.path} (doc {e.sid})")
        samples[e.sid] = RunSample(
            id=e.sid,
            category=category_of(e.metadata, record, e.doc.get("category")),
            cluster=cluster_of(e.metadata, e.sid, record),
            scores={k: v for k, v in scores.items() if reader.kinds.get(k) not in MEMORY_KINDS},
            reply=_lm_eval_reply(e.record),
            gold=_gold(e.record.get("target", e.doc.get("target", ""))),
            criterion=_criterion(e.metadata),
            groups=groups_of(e.metadata, record),
        )
        metadata[e.sid] = e.metadata
    results = None
    if _SAMPLES_FILE.match(first.path.name):
        results = first.path.with_name(f"results_{_date_of(first.path)}.json")
    model, options = _lm_eval_config(results)
    where = str(files[0].parent if len(files) > 1 else files[0])
    run = Run(
        label=f"{model}{_subject(options)} ({files[0].parent.name})",
        path=where,
        framework="lm-eval",
        benchmark=benchmark,
        samples=samples,
        settings={},
        model=model,
        protocol=protocol_of(options, {}, metadata.values()),
        task=tasks[0] if len(tasks) == 1 else benchmark,
        record=record,
        kinds=dict(reader.kinds),
        options=options,
        used=dict(first_md),
        epoch_metadata=tuple(metadata.values()),
    )
    return _with_settings(run)


# ---------------------------------------------------------------------------------------------
# Discovery


def _lm_eval_groups(folder: Path) -> list[list[Path]]:
    groups: dict[tuple[Path, str], list[Path]] = {}
    for path in sorted(folder.rglob("samples_*.jsonl")):
        if path.is_file():
            groups.setdefault((path.parent, _date_of(path)), []).append(path)
    return [groups[k] for k in sorted(groups)]


def _sources(paths: Iterable[str]) -> Iterator[str | list[Path]]:
    """Each run source under `paths`, in order: an Inspect log path or one lm-eval call's files."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            logs = [info.name for info in list_eval_logs(str(path), descending=False)]
            groups = _lm_eval_groups(path)
            if not logs and not groups:
                raise RunError(
                    f"{raw}: no Inspect logs (.eval or .json) and no lm-eval samples_*.jsonl "
                    "files in this folder"
                )
            yield from (log.removeprefix("file://") for log in logs)
            yield from groups
        elif path.is_file():
            yield [path] if path.suffix == ".jsonl" else str(path)
        else:
            raise RunError(f"{raw}: no such log file or folder")


def load_runs(paths: Iterable[str]) -> list[Run]:
    """The runs under `paths` (files or folders), in order (a folder's logs oldest first).

    Args:
        paths: Inspect logs, lm-eval samples files, or folders of either.

    Returns:
        The runs.
    """
    runs: list[Run] = []
    for source in _sources(paths):
        if isinstance(source, str):
            runs.append(read_inspect_run(source))
        else:
            runs += read_lm_eval_runs(source)
    return runs
