"""Record interpretation: a run's declared scores and their order, and each sample's
category, cluster, groups and protocol."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from memevals.benchmarks import record_for_task, records
from memevals.core.benchmark import Benchmark, ScoreSpec
from memevals.core.protocol import BEFORE_OPTION
from memevals.core.statistics import CLUSTER_KEY

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


def task_fixed(record: Benchmark | None, task: str) -> Mapping[str, Any]:
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


def as_float(value: Any) -> float | None:
    """A numeric score value (bool included); None for text and other values."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    return None


def declared_spec(record: Benchmark | None, scorer: str) -> ScoreSpec | None:
    return record.score(scorer) if record is not None else None


def appended_spec(record: Benchmark | None, scorer: str) -> tuple[ScoreSpec | None, str]:
    """(the declared score, the suffix) of a scorer Inspect renamed to keep it unique: a second
    `llm_judge` (`inspect score --action append`) is logged as `llm_judge1`, and its results
    as `judge1`. (None, "") for any other name."""
    bare = scorer.rsplit("/", 1)[-1]
    base = bare.rstrip("0123456789")
    if base == bare or declared_spec(record, bare) is not None:
        return None, ""
    spec = declared_spec(record, base)
    return (spec, bare[len(base) :]) if spec is not None else (None, "")


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
