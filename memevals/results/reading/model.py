"""The run model: a run (one Inspect log or one lm-eval call) and its samples."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from memevals.core.benchmark import Benchmark
from memevals.core.protocol import BEFORE_OPTION
from memevals.results.reading.records import is_compared, score_order, task_fixed


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
        fixed = task_fixed(self.record, self.task)
        return _first(name, default, self.options, self.used, fixed)


def _first(name: str, default: Any, *sources: Mapping[str, Any]) -> Any:
    """The first value of `name` in `sources` that is set (a record of several settings, as
    a task logs its memory settings under `memory`, is not a value)."""
    for source in sources:
        value = source.get(name)
        if value is not None and value != "" and not isinstance(value, Mapping | list):
            return value
    return default
