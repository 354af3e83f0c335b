"""The one module that uses Inspect internals (names under `inspect_ai._...`).

Inspect does not promise these names across releases, so each use imports them inside a
guard: if a release moves one, only the feature built on it stops (with an
`InspectInternalsError` saying which name is missing), and the rest of memevals keeps working.
tests/test_layering.py checks that no other module imports `inspect_ai._...` and that every
such import here is guarded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "InspectInternalsError",
    "as_prerequisite_error",
    "leave_out_empty_metrics",
    "parse_cli_args",
    "register_task",
    "short_metric_names",
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


_LEFT_OUT_MARK = "_memevals_leaves_out_undefined"


def leave_out_empty_metrics() -> None:
    """Make a metric over no scored samples give no row instead of NaN.

    When every sample of a score is unscored (a grader that never gives a readable verdict),
    Inspect calls each metric on no scores and, for anything but a non-empty mapping, logs and
    shows NaN. memevals leaves an undefined figure out (as its uncertainty metrics do when
    fewer than two clusters are present); the score's `unscored_samples` and memevals' `count`
    of unscored samples still say what happened. The NaN a metric returns on no scores becomes
    no row and NaN entries of a mapping are dropped; every other value is Inspect's. Idempotent;
    without that Inspect internal nothing changes (the NaN rows come back).
    """
    try:
        from inspect_ai._eval.task import results
    except ImportError:
        return
    original = getattr(results, "empty_metric_value", None)
    if original is None or getattr(original, _LEFT_OUT_MARK, False):
        return

    def empty_metric_value(metric: Any) -> Any:
        value = original(metric)
        if isinstance(value, float) and math.isnan(value):
            return {}
        if isinstance(value, Mapping):
            return {
                k: v for k, v in value.items() if not (isinstance(v, float) and math.isnan(v))
            }
        return value

    setattr(empty_metric_value, _LEFT_OUT_MARK, True)
    results.empty_metric_value = empty_metric_value
    dict_scores = getattr(results, "scorers_from_metric_dict", None)
    if dict_scores is None:
        return

    def scorers_from_metric_dict(*args: Any, **kwargs: Any) -> Any:
        scores = dict_scores(*args, **kwargs)
        for score in scores:
            score.metrics = short_metric_names(score.metrics)
        return scores

    results.scorers_from_metric_dict = scorers_from_metric_dict


def short_metric_names(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """A dict-valued score's metric rows named as Inspect names a plain score's: a one-number
    metric by its name without package (`stderr`, not `memevals/stderr`), an entry of a
    metric's mapping by its key (`temporal`, not `grouped_temporal`), so a figure has one name
    under every score and the terminal's narrow columns show what differs. A name two rows
    would share keeps Inspect's long form.

    Args:
        metrics: the rows as Inspect keys them (`EvalScore.metrics`).

    Returns:
        The same rows (same order), re-keyed.
    """
    wanted = {
        key: (m.name if m.group else str(m.name).rsplit("/", 1)[-1])
        for key, m in metrics.items()
    }
    taken = list(wanted.values())
    return {
        (w if taken.count(w) == 1 else key): metrics[key] for key, w in wanted.items()
    }


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
