"""eval.yaml is load-bearing (issue 22, point 5): every benchmark's eval.yaml against the code.

Its tasks are the tasks its thin Inspect module registers and its lm-eval names are generated
tasks or groups; its sample counts are the sizes of the datasets the tasks build from the
pinned data; its pinned files are the files the code pins (path, URL, sha256, size); its
`version` is every task's Task(version=) and heads the Changelog of the benchmark's README.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from inspect_ai import Task

from memevals.benchmarks import records
from memevals.core.benchmark import Benchmark, read_eval_yaml
from memevals.inspect_tasks.tasks import task_options, with_record_version
from memevals.lm_eval_tasks import include_path

RECORDS = records()
NAMES = sorted(RECORDS)


def _module(record: Benchmark) -> ModuleType:
    assert record.inspect_module is not None, record.name
    return importlib.import_module(record.inspect_module)


def _task(record: Benchmark, name: str) -> Callable[..., Task]:
    fn: Callable[..., Task] = getattr(_module(record), name)
    return fn


def _lm_eval_names() -> set[str]:
    names: set[str] = set()
    for path in Path(include_path()).rglob("*.yaml"):
        loaded = yaml.safe_load(re.sub(r"!function \S+", "fn", path.read_text(encoding="utf-8")))
        if isinstance(loaded, dict):
            names.update(str(loaded[k]) for k in ("task", "group") if k in loaded)
    return names


@pytest.mark.parametrize("name", NAMES)
def test_tasks_are_the_registered_ones(name: str) -> None:
    record = RECORDS[name]
    meta = read_eval_yaml(record.folder)
    declared = [t["name"] for t in meta["tasks"]]
    assert declared == [t.name for t in record.tasks]
    assert sorted(declared) == sorted(_module(record).__all_tasks__)
    generated = _lm_eval_names()
    # `<variant>` in a name stands for each variant the record's tasks fix
    variants = {str(t.fixed["variant"]) for t in record.tasks if "variant" in t.fixed}
    for spec in record.tasks:
        if spec.lm_eval is None:
            continue
        expanded = {spec.lm_eval.replace("<variant>", v) for v in variants or {""}}
        assert expanded <= generated, (spec.name, sorted(expanded - generated))


@pytest.mark.parametrize("name", NAMES)
def test_every_task_is_versioned_from_eval_yaml(name: str) -> None:
    record = RECORDS[name]
    assert record.version == str(read_eval_yaml(record.folder)["version"])
    for spec in record.tasks:
        assert with_record_version(spec.name, Task()).version == record.version
    # the built tasks too: test_sample_counts_are_the_built_datasets


def _build(record: Benchmark, name: str) -> Task | None:
    """The task with its defaults, but no context (the cheapest build) and no BERTScore model;
    None when its data file is not present."""
    fn = _task(record, name)
    options: dict[str, Any] = {}
    if "bertscore" in task_options(fn):
        options["bertscore"] = False
    from memevals.core.files import DataError

    try:
        if "context" in task_options(fn):
            try:
                return fn(**options, context="none")
            except DataError:
                raise
            except ValueError:
                pass  # no context=none here (or not under the default protocol)
        return fn(**options)
    except DataError as exc:
        if "not found under the data dir" in str(exc):
            return None
        raise


def _count_cases() -> Iterator[Any]:
    for name in NAMES:
        for spec in RECORDS[name].tasks:
            yield pytest.param(name, spec.name, spec.samples, id=spec.name)


@pytest.mark.parametrize(("name", "task", "samples"), list(_count_cases()))
def test_sample_counts_are_the_built_datasets(
    name: str, task: str, samples: int | None, data_dir: Path
) -> None:
    meta = read_eval_yaml(RECORDS[name].folder)
    assert isinstance(samples, int) and samples > 0
    built = _build(RECORDS[name], task)
    if built is None:
        # only a benchmark whose eval.yaml says its counts are unverified may lack its data
        assert meta.get("metadata", {}).get("counts_verified") is False, name
        pytest.skip(f"{name}: counts_verified is false and the data is not under {data_dir}")
    assert len(built.dataset) == samples
    assert built.version == RECORDS[name].version


def _beam_pins() -> list[Any]:
    from memevals.benchmarks.beam.data import beam_files

    return list(beam_files().values())


#: Pins a benchmark's code builds at run time rather than at module level: BEAM reads its git
#: blob ids from eval.yaml itself (so they agree by construction; its record's data, checked
#: like every other, holds the files with a known sha256).
RUN_TIME_PINS: dict[str, Callable[[], list[Any]]] = {"beam": _beam_pins}


def _pins(record: Benchmark) -> dict[str, Any]:
    """Every pinned file the benchmark's code declares, by path: its record's data and any
    module-level pin (an object with relpath and sha256) of its package."""
    found: dict[str, Any] = {p.relpath: p for p in record.data}
    for pin in RUN_TIME_PINS.get(record.name, list)():
        found.setdefault(str(pin.relpath), pin)
    package = importlib.import_module(f"memevals.benchmarks.{record.folder.name}")
    for info in sorted(Path(package.__path__[0]).glob("*.py")):
        module = importlib.import_module(f"{package.__name__}.{info.stem}")
        for value in vars(module).values():
            values = value.values() if isinstance(value, dict) else [value]
            for v in values:
                if hasattr(v, "relpath") and hasattr(v, "sha256"):
                    found.setdefault(str(v.relpath), v)
    return found


@pytest.mark.parametrize("name", NAMES)
def test_pinned_files_are_the_code_s(name: str) -> None:
    record = RECORDS[name]
    meta = read_eval_yaml(record.folder)
    pins = _pins(record)
    entries = meta.get("data") or []
    assert entries, f"{name}: eval.yaml lists no data file"
    for entry in entries:
        pin = pins.get(entry["file"])
        assert pin is not None, f"{name}: eval.yaml pins {entry['file']}, the code does not"
        if entry.get("sha256") is not None:
            assert pin.sha256 == entry["sha256"], entry["file"]
        if entry.get("size_bytes") is not None and getattr(pin, "size", None) is not None:
            assert pin.size == entry["size_bytes"], entry["file"]
        url = getattr(pin, "url", None)
        if entry.get("url") is not None:
            assert (url() if callable(url) else url) == entry["url"], entry["file"]
    listed = {e["file"] for e in entries}
    assert {p.relpath for p in record.data} <= listed, f"{name}: a pinned file is not in eval.yaml"


@pytest.mark.parametrize("name", NAMES)
def test_readme_changelog_is_keyed_on_the_version(name: str) -> None:
    record = RECORDS[name]
    readme = (record.folder / "README.md").read_text(encoding="utf-8")
    match = re.search(r"^## Changelog\n(.*?)(?=^## |\Z)", readme, re.MULTILINE | re.DOTALL)
    assert match is not None, f"{name}: README.md has no '## Changelog' section"
    versions = re.findall(r"^### (\S+)", match.group(1), re.MULTILINE)
    assert versions and versions[0] == record.version, (name, versions, record.version)
    assert len(set(versions)) == len(versions)
