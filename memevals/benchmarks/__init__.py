"""The benchmarks, one folder each; `records()` finds their declared records.

A folder `memevals/benchmarks/<b>/` with a `record.py` defining `RECORD` is a benchmark; so is a
`Benchmark` another package registers in the `memevals.benchmarks` entry-point group. Nothing
lists them by hand.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import pkgutil
from importlib.metadata import entry_points

from memevals.core.benchmark import Benchmark
from memevals.core.criteria_judge import CriterionSpec

__all__ = [
    "ENTRY_POINT_GROUP",
    "judge_criteria",
    "load_upstream_judges",
    "record_for_task",
    "records",
]

#: The entry-point group through which another package adds a benchmark record.
ENTRY_POINT_GROUP = "memevals.benchmarks"


@functools.cache
def records() -> dict[str, Benchmark]:
    """Every benchmark's record, by name: the folders here, then the registered ones.

    Returns:
        Benchmark name -> record, folders in name order.
    """
    found: dict[str, Benchmark] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        module_name = f"{__name__}.{info.name}.record"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # a folder without a record is not a benchmark (yet)
            raise
        _add(found, module.RECORD, module_name)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        _add(found, ep.load(), f"entry point {ep.name} = {ep.value}")
    return found


@functools.cache
def load_upstream_judges() -> None:
    """Import every benchmark folder's `official_judge` module, which registers its upstream
    label rule in memevals.core.upstream_judge.LABEL_RULES: a process that re-judges a log
    (`inspect score --scorer memevals/official_judge`) built no task that would have."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        name = f"{__name__}.{info.name}.official_judge"
        if info.ispkg and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)


def _add(found: dict[str, Benchmark], record: object, source: str) -> None:
    if not isinstance(record, Benchmark):
        raise TypeError(f"{source}: RECORD is a {type(record).__name__}, not a Benchmark")
    if record.name in found:
        raise ValueError(f"{source}: a benchmark named {record.name!r} is already declared")
    found[record.name] = record


def record_for_task(task: str) -> Benchmark | None:
    """The record declaring an Inspect task or lm-eval task/group name.

    Args:
        task: a task name, with or without a `memevals/` prefix.

    Returns:
        Its record, or None when no record declares it.
    """
    return next((r for r in records().values() if r.declares(task)), None)


def judge_criteria() -> dict[str, CriterionSpec]:
    """Every judge criterion the benchmarks declare, by name, in record order.

    Returns:
        Criterion name -> spec (a criterion two records share is listed once).
    """
    found: dict[str, CriterionSpec] = {}
    for record in records().values():
        for spec in record.judge.criteria if record.judge else ():
            if found.setdefault(spec.name, spec) != spec:
                raise ValueError(
                    f"benchmark {record.name!r} declares judge criterion {spec.name!r} "
                    "differently from another benchmark"
                )
    return found
