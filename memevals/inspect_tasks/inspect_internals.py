"""The one module that uses Inspect internals (names under `inspect_ai._...`).

Inspect does not promise these names across releases, so each use imports them inside a
guard: if a release moves one, only the feature built on it stops (with an
`InspectInternalsError` saying which name is missing), and the rest of memevals keeps working.
tests/test_layering.py checks that no other module imports `inspect_ai._...` and that every
such import here is guarded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["InspectInternalsError", "parse_cli_args", "register_task", "task_registered"]


class InspectInternalsError(RuntimeError):
    """An Inspect internal that memevals relies on is missing from this Inspect version."""


def _missing(name: str, exc: ImportError) -> InspectInternalsError:
    return InspectInternalsError(f"this Inspect version has no {name} ({exc})")


def register_task(
    fn: Callable[..., Any], name: str, attribs: dict[str, Any], params: list[str]
) -> None:
    """Register `fn` as the task `name` (what `@task` does, without renaming the Task it
    builds: the bare-name aliases keep their namespaced name in logs)."""
    try:
        from inspect_ai._eval.registry import task_register
    except ImportError as exc:
        raise _missing("inspect_ai._eval.registry.task_register", exc) from exc
    task_register(fn, name, attribs, params)


def task_registered(name: str) -> bool:
    """Whether some package already registered a task under `name`."""
    try:
        from inspect_ai._util.registry import registry_has
    except ImportError as exc:
        raise _missing("inspect_ai._util.registry.registry_has", exc) from exc
    return registry_has("task", name)


def parse_cli_args(pairs: Sequence[str]) -> dict[str, Any]:
    """`-T name=value` pairs read exactly as `inspect eval` reads them (YAML values, a comma
    makes a list, `-` in a name becomes `_`)."""
    try:
        from inspect_ai._util.config import parse_cli_args as inspect_parse_cli_args
    except ImportError as exc:
        raise _missing("inspect_ai._util.config.parse_cli_args", exc) from exc
    return inspect_parse_cli_args(list(pairs))
