"""Inspect entry point: imports every benchmark's thin task module, then registers bare-name
aliases.

The thin modules are found through the benchmark records (`memevals.benchmarks.records()`,
each record's `inspect_module`), so a new benchmark's module is registered without an edit
here. Inspect names an installed package's tasks `memevals/<task>`. So that `inspect eval
locomo` works too, each task is also registered under its bare name, unless that name is
taken. That uses Inspect's private `task_register` (through
memevals.inspect_tasks.inspect_internals, which guards it), so if Inspect changes it the
namespaced names still work and a warning says why the bare ones do not.
"""

from __future__ import annotations

import functools
import importlib
import logging
from collections.abc import Callable
from types import ModuleType
from typing import Any

from inspect_ai.util import registry_info

from memevals.benchmarks import records
from memevals.inspect_tasks import judge_scorer as _judge  # noqa: F401  (registers llm_judge)
from memevals.inspect_tasks.inspect_internals import (
    InspectInternalsError,
    register_task,
    task_registered,
)

__all__ = ["TASK_MODULES", "task_modules"]

logger = logging.getLogger(__name__)


def task_modules() -> list[ModuleType]:
    """Every benchmark's thin Inspect module, imported (which registers its tasks).

    Returns:
        The modules, in record order; each lists its task functions in `__all_tasks__`.
    """
    modules: list[ModuleType] = []
    for record in records().values():
        if record.inspect_module is None:
            continue
        module = importlib.import_module(record.inspect_module)
        if not isinstance(getattr(module, "__all_tasks__", None), list | tuple):
            raise TypeError(
                f"benchmark {record.name}: its Inspect module {record.inspect_module} has no "
                "__all_tasks__ (the list of its task functions' names)"
            )
        if module not in modules:
            modules.append(module)
    return modules


def _alias_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A distinct callable with fn's signature; the task it builds keeps fn's namespaced name."""

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return alias


def _register_bare_aliases(modules: list[ModuleType]) -> None:
    """Register a bare-name alias for each task whose bare name is free."""
    for mod in modules:
        for name in mod.__all_tasks__:
            fn: Callable[..., Any] = getattr(mod, name)
            try:
                info = registry_info(fn)
                if "/" not in info.name or task_registered(name):
                    continue  # imported from a checkout: already bare, or the name is taken

                attribs = info.metadata.get("attribs", {})
                params = info.metadata.get("params", [])
                # `wraps` copied the registry tag; register_task gives the alias its own
                register_task(_alias_of(fn), name, attribs, params)
            except InspectInternalsError as exc:  # pragma: no cover - depends on Inspect
                logger.warning(
                    "memevals: bare task names unavailable (%s); use memevals/<task>", exc
                )
                return
            except Exception as exc:  # pragma: no cover - depends on Inspect internals
                logger.warning(
                    "memevals: could not alias %s (%s); use memevals/%s", name, exc, name
                )


#: The thin task modules found when Inspect loaded this entry point.
TASK_MODULES = task_modules()
_register_bare_aliases(TASK_MODULES)
