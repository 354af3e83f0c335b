"""The Inspect entry point finds every benchmark's thin module through the records: no module
lists them, every record's tasks are registered under their bare and namespaced names, and no
thin module is left out of a record.

In a fresh interpreter (as every `inspect` command loads it) the entry point imports no
benchmark, numpy, scipy, torch or memory system, yet registers every task (both names), scorer,
metric and solver as the real modules do; creating one by name loads its module only.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from inspect_ai._util.registry import registry_find, registry_lookup
from inspect_ai.log import read_eval_log
from inspect_ai.util import registry_create
from registry_dump import TYPES, describe

from memevals.benchmarks import records
from memevals.inspect_tasks import manifest, registry
from memevals.inspect_tasks.registry_manifest import ENTRIES

INSPECT_TASKS = Path(registry.__file__).resolve().parent
SUPPORT = Path(__file__).resolve().parents[1] / "support"


def test_the_registry_lists_no_module_by_hand() -> None:
    tree = ast.parse((INSPECT_TASKS / "registry.py").read_text(encoding="utf-8"))
    imported = {
        f"{node.module}.{alias.name}" if node.module else alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    thin = {r.inspect_module for r in records().values() if r.inspect_module}
    assert not imported & thin  # found through the records, not imported by name


def test_every_record_task_is_registered_by_its_thin_module() -> None:
    modules = {m.__name__: m for m in registry.TASK_MODULES}
    for record in records().values():
        assert record.inspect_module in modules, record.name
        module = modules[record.inspect_module]
        assert {t.name for t in record.tasks} <= set(module.__all_tasks__), record.name
        for task in record.tasks:
            # namespaced when loaded as the installed entry point, bare from a checkout
            found = registry_lookup("task", f"memevals/{task.name}") or registry_lookup(
                "task", task.name
            )
            assert found is not None, task.name


def test_every_thin_module_belongs_to_a_record() -> None:
    """A module defining `__all_tasks__` that no record names would never be registered."""
    named = {r.inspect_module for r in records().values()}
    for path in sorted(INSPECT_TASKS.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defines = any(
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all_tasks__" for t in node.targets)
            for node in tree.body
        )
        if defines:
            assert f"memevals.inspect_tasks.{path.stem}" in named, path.name


# --- the entry point in a fresh interpreter (as every `inspect` command loads it) ------------

#: Run in a fresh interpreter outside the checkout (installed names): what importing the entry
#: point loads and registers, then what creating a scorer and a task by name loads.
_FRESH = """
import inspect, json, sys
import inspect_ai
before = set(sys.modules)
import memevals.inspect_tasks.registry
loaded = sorted(set(sys.modules) - before)
from inspect_ai._util.registry import registry_find
from inspect_ai.util import registry_create
sys.path.insert(0, sys.argv[1])
from registry_dump import describe, TYPES
objects = registry_find(lambda info: info.type in TYPES)
dump = describe(objects)
judge = registry_create("scorer", "memevals/llm_judge", judge_runs=2)
after_scorer = sorted(m for m in sys.modules if m.startswith("memevals.inspect_tasks."))
try:
    registry_create("task", "memevals/locomo_temporal", no_such_option=1)
    error = None
except Exception as exc:
    error = str(exc)
after_task = sorted(m for m in sys.modules if m.startswith("memevals.inspect_tasks."))
print(json.dumps({
    "loaded": loaded, "dump": dump, "judge": describe([judge], instances=True),
    "after_scorer": after_scorer, "after_task": after_task, "error": error,
}))
"""

HEAVY = ("numpy", "scipy", "torch", "memevals.benchmarks", "memevals.memory_systems")
THIN = {r.inspect_module for r in records().values() if r.inspect_module}


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cwd = tmp_path_factory.mktemp("fresh")
    done = subprocess.run(
        [sys.executable, "-c", _FRESH, str(SUPPORT)],
        cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_the_entry_point_loads_no_benchmark_and_no_numeric_library(fresh: dict[str, Any]) -> None:
    loaded = set(fresh["loaded"])
    assert not [m for m in loaded if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]
    assert {m for m in loaded if m.startswith("memevals")} == {
        "memevals",
        "memevals.inspect_tasks",
        "memevals.inspect_tasks.inspect_internals",
        "memevals.inspect_tasks.registry",
        "memevals.inspect_tasks.registry_manifest",
    }


def test_every_record_task_is_registered_under_both_names_before_any_is_loaded(
    fresh: dict[str, Any],
) -> None:
    for record in records().values():
        for task in record.tasks:
            assert f"task:memevals/{task.name}" in fresh["dump"], task.name
            assert f"task:{task.name}" in fresh["dump"], task.name


def test_the_stand_ins_are_registered_as_the_real_objects(fresh: dict[str, Any]) -> None:
    """Same names, types, registry metadata, signatures and return types as the objects the
    real modules register (here, in this process); a bare task name as its namespaced task."""
    manifest.import_all()
    real = describe(registry_find(lambda info: info.type in TYPES))
    memevals = {k: v for k, v in fresh["dump"].items() if "memevals/" in k}
    assert len(memevals) == len(ENTRIES)
    for key, value in memevals.items():
        assert value == real[key], key
    for record in records().values():
        for task in record.tasks:
            assert fresh["dump"][f"task:{task.name}"] == real[f"task:memevals/{task.name}"]


def test_creating_an_object_loads_its_module_only(fresh: dict[str, Any]) -> None:
    # the judge scorer: its module, no benchmark's task module; tagged as the real one is
    assert "memevals.inspect_tasks.judge_scorer" in fresh["after_scorer"]
    assert not THIN & set(fresh["after_scorer"])
    real_judge = registry_create("scorer", "memevals/llm_judge", judge_runs=2)
    assert fresh["judge"] == describe([real_judge], instances=True)
    assert fresh["judge"]["scorer:memevals/llm_judge"]["metadata"]["metrics"]  # its metrics
    # a task: its own thin module only, which checks the options as it always did
    assert THIN & set(fresh["after_task"]) == {"memevals.inspect_tasks.locomo"}
    assert fresh["error"].startswith("locomo_temporal: no option 'no_such_option'")


def test_a_fresh_inspect_runs_a_bare_name_and_rescores_with_a_memevals_scorer(
    inspect_cli: Any, tmp_path: Path
) -> None:
    """The real CLI in its own process (the entry point's stand-ins, nothing imported before):
    `inspect eval locomo_single_hop` builds the real task, and `inspect score --scorer
    memevals/llm_judge` creates the real judge with its metrics."""
    logs = tmp_path / "logs"
    ran = inspect_cli(
        "eval", "locomo_single_hop", "--model", "mockllm/model", "--limit", "2",
        "-T", "context=none", "-T", "protocol=memevals", "--log-dir", str(logs),
        "--display", "none", process=True,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    (path,) = logs.glob("*.eval")
    log = read_eval_log(str(path))
    assert log.status == "success"
    # the bare name is what was run (eval-retry finds it again), as before the stand-ins
    assert (log.eval.task, log.eval.task_registry_name) == ("locomo_single_hop",) * 2
    assert log.eval.task_args["context"] == "none"
    assert {s.metadata["category"] for s in log.samples or []} == {"single_hop"}
    assert log.eval.task_version == records()["locomo"].version
    rescored = tmp_path / "rescored.eval"
    scored = inspect_cli(
        "score", str(path), "--scorer", "memevals/llm_judge", "--action", "append",
        "--output-file", str(rescored), "--display", "none", process=True,
    )  # fmt: skip
    assert scored.returncode == 0, scored.stderr[-3000:]
    after = read_eval_log(str(rescored))
    assert after.results is not None
    [judged] = [s for s in after.results.scores if s.scorer == "llm_judge"]
    # mockllm's replies are no verdicts: both samples unscored, counted by the real judge's
    # own metric (a stand-in has none), and no figure is left for the judge
    assert {k: m.value for k, m in judged.metrics.items()} == {"unscored": 2}
