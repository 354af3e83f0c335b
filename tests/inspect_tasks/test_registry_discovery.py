"""The Inspect entry point finds every benchmark's thin module through the records: no module
lists them, every record's tasks are registered under their bare and namespaced names, and no
thin module is left out of a record."""

from __future__ import annotations

import ast
from pathlib import Path

from inspect_ai._util.registry import registry_lookup

from memevals.benchmarks import records
from memevals.inspect_tasks import registry

INSPECT_TASKS = Path(registry.__file__).resolve().parent


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
