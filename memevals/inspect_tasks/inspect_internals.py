"""The one module that uses Inspect internals (names under `inspect_ai._...`).

Inspect does not promise these names across releases, so each use imports them inside a
guard: if a release moves one, only the feature built on it stops (with an
`InspectInternalsError` saying which name is missing), and the rest of memevals keeps working.
tests/package/test_layering.py checks that no other module imports `inspect_ai._...` and that every
such import here is guarded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = [
    "InspectInternalsError",
    "as_prerequisite_error",
    "parse_cli_args",
    "register_task",
    "task_registered",
]


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


_PREREQUISITE_CLASSES: dict[type[Exception], type[Exception]] = {}


def _prerequisite_class(base: type[Exception], prerequisite: type[Exception]) -> type[Exception]:
    # the same name, so anything that prints the class (a traceback, a log) still says ValueError
    if base not in _PREREQUISITE_CLASSES:
        _PREREQUISITE_CLASSES[base] = type(
            base.__name__, (base, prerequisite), {"__module__": base.__module__}
        )
    return _PREREQUISITE_CLASSES[base]


def as_prerequisite_error(exc: Exception, message: str) -> Exception:
    """`exc` as Inspect's PrerequisiteError, which `inspect eval` prints as `message` alone (a
    user's mistake reads as one message, not a traceback).

    The result is still an instance of `exc`'s class, with the same arguments, so callers that
    catch a ValueError (tests, the tools) see no difference. Without that Inspect internal the
    error is returned unchanged (Inspect then prints its traceback, as it always did).

    Args:
        exc: the error (a bad option, missing data, an unknown memory system).
        message: what the terminal shows (rich markup; escape user text).

    Returns:
        The error to raise (`raise as_prerequisite_error(exc, msg) from exc`).
    """
    try:
        from inspect_ai._util.error import PrerequisiteError
    except ImportError:
        return exc
    if isinstance(exc, PrerequisiteError):
        return exc
    cls = _prerequisite_class(type(exc), PrerequisiteError)
    made = cls.__new__(cls, *exc.args)
    made.args = exc.args
    made.__dict__.update(vars(exc))
    setattr(made, "message", message)  # noqa: B010  (PrerequisiteError's own attribute)
    return made
