"""The one module that uses Inspect internals (names under `inspect_ai._...`).

Inspect does not promise these names across releases, so each use imports them inside a
guard: if a release moves one, only the feature built on it stops (with an
`InspectInternalsError` saying which name is missing), and the rest of memevals keeps working.
tests/package/test_layering.py checks that no other module imports `inspect_ai._...` and that every
such import here is guarded.
"""

from __future__ import annotations

import functools
import inspect
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "InspectInternalsError",
    "InspectInternalsWarning",
    "appended_suffix",
    "as_prerequisite_error",
    "inspect_results",
    "is_own_metric",
    "own_metric",
    "own_results",
    "parse_cli_args",
    "register_task",
    "short_metric_names",
    "task_registered",
]


class InspectInternalsError(RuntimeError):
    """An Inspect internal that memevals relies on is missing from this Inspect version."""


class InspectInternalsWarning(UserWarning):
    """A refinement memevals makes to its own results is off: this Inspect version changed the
    internal it builds on (Inspect's own behaviour is kept)."""


def _missing(name: str, exc: ImportError) -> InspectInternalsError:
    return InspectInternalsError(f"this Inspect version has no {name} ({exc})")


_WARNED: set[str] = set()


def _warn_once(feature: str, why: object) -> None:
    """Say once per process that `feature` is off (an Inspect change), never raise."""
    if feature in _WARNED:
        return
    _WARNED.add(feature)
    warnings.warn(
        f"memevals: {feature} is off with this Inspect version ({why}); Inspect's own "
        "behaviour is kept",
        InspectInternalsWarning,
        stacklevel=3,
    )


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


_OWN_MARK = "_memevals_metric"
_ADJUSTED_MARK = "_memevals_adjusts_own_results"


def own_metric(metric: Any) -> Any:
    """Mark `metric` (an instance a memevals scorer declares, such as Inspect's own `mean()`)
    as memevals', so `own_results` treats its figures as memevals' own.

    Args:
        metric: the metric instance.

    Returns:
        The same instance.
    """
    setattr(metric, _OWN_MARK, True)
    return metric


def is_own_metric(metric: Any) -> bool:
    """Whether `metric` is memevals': registered by memevals (`memevals/...`) or marked by
    `own_metric`. Any other metric's figures `own_results` leaves exactly as Inspect gives them.

    Args:
        metric: a metric instance.

    Returns:
        True for memevals' metrics.
    """
    if getattr(metric, _OWN_MARK, False):
        return True
    from inspect_ai.util import registry_info

    try:
        name = str(registry_info(metric).name)
    except Exception:  # not a registry object: not memevals'
        return False
    return name.startswith("memevals/")


def own_results() -> None:
    """Leave out memevals' undefined figures and name its dict-valued scores' rows as its plain
    scores' rows, touching no other metric.

    Inspect's public API cannot do either for a dict-valued score (a judge's `judge`,
    `unscored`, `unclear`): over no scored sample Inspect logs NaN for each of its metrics, and
    names their rows `memevals/stderr`, `grouped_temporal`. This wraps the two Inspect
    functions that compute them (`inspect_ai._eval.task.results`'s `empty_metric_value` and
    `scorers_from_metric_dict`); each wrapper first calls Inspect's own, and changes its
    result only where the metric is memevals' (`is_own_metric`): NaN over no scored sample
    becomes no row, a row gets a plain score's name (`short_metric_names`) and a renamed
    scorer's results its suffix (`appended_suffix`). Any other metric (a task that is not
    memevals', even in the same run) gets Inspect's value and name unchanged;
    tests/inspect_tasks/test_good_guest.py checks it. Called when memevals' metrics are made
    (a memevals task or scorer module is loaded); idempotent; undone by `inspect_results`.
    Without those internals a warning says which refinement is off and Inspect's behaviour
    stays.
    """
    try:
        from inspect_ai._eval.task import results
    except ImportError as exc:
        _warn_once("leaving out memevals' undefined figures", exc)
        return
    empty = getattr(results, "empty_metric_value", None)
    dict_scores = getattr(results, "scorers_from_metric_dict", None)
    if empty is None or dict_scores is None:
        _warn_once(
            "leaving out memevals' undefined figures and short names for its dict scores",
            "no empty_metric_value or scorers_from_metric_dict in inspect_ai._eval.task.results",
        )
        return
    if not getattr(empty, _ADJUSTED_MARK, False):
        results.empty_metric_value = _empty_value(empty)
    if not getattr(dict_scores, _ADJUSTED_MARK, False):
        results.scorers_from_metric_dict = _dict_scores(dict_scores)


def inspect_results() -> None:
    """Undo `own_results`: Inspect's own two functions back in place (where no one replaced
    them since)."""
    try:
        from inspect_ai._eval.task import results
    except ImportError:
        return
    for name in ("empty_metric_value", "scorers_from_metric_dict"):
        current = getattr(results, name, None)
        original = getattr(current, "__wrapped__", None)
        if getattr(current, _ADJUSTED_MARK, False) and original is not None:
            setattr(results, name, original)


def _empty_value(original: Callable[[Any], Any]) -> Any:
    @functools.wraps(original)
    def empty_metric_value(metric: Any) -> Any:
        value = original(metric)
        if not is_own_metric(metric):
            return value
        if isinstance(value, float) and math.isnan(value):
            return {}
        if isinstance(value, Mapping):
            return {
                k: v for k, v in value.items() if not (isinstance(v, float) and math.isnan(v))
            }
        return value

    setattr(empty_metric_value, _ADJUSTED_MARK, True)
    return empty_metric_value


def _dict_scores(original: Callable[..., Any]) -> Any:
    try:
        signature: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        signature = None

    @functools.wraps(original)
    def scorers_from_metric_dict(*args: Any, **kwargs: Any) -> Any:
        scores = original(*args, **kwargs)
        try:
            bound = signature.bind(*args, **kwargs).arguments if signature else {}
            metrics = bound["metrics"]
            own = any(is_own_metric(m) for ms in metrics.values() for m in ms)
            suffix = appended_suffix(str(bound["scorer_name"]), str(bound["scorer_info"].name))
        except (KeyError, TypeError, AttributeError) as exc:
            _warn_once("short names for memevals' dict scores", f"scorers_from_metric_dict: {exc}")
            return scores
        if not own:
            return scores
        for score in scores:
            score.metrics = short_metric_names(score.metrics)
            if suffix:
                score.name = f"{score.name}{suffix}"
        return scores

    setattr(scorers_from_metric_dict, _ADJUSTED_MARK, True)
    return scorers_from_metric_dict


def appended_suffix(scorer_name: str, registered: str) -> str:
    """The suffix Inspect gave a scorer's name to keep it unique (`llm_judge1` for a second
    `llm_judge`, as `inspect score --action append` names a re-judge), or "".

    A plain score is named by its scorer, so its results carry that suffix already; a
    dict-valued score's results are named by its keys (`judge`, `unscored`), which would repeat
    the first scorer's. memevals gives those keys the scorer's suffix (`judge1`, `unscored1`),
    so every name within a run's results is unique and says which scorer it came from.

    Args:
        scorer_name: the scorer's name in this run (Inspect's unique name).
        registered: the scorer's registered name without package (`llm_judge`).

    Returns:
        The suffix (digits), or "" when the scorer kept its own name.
    """
    suffix = scorer_name[len(registered) :] if scorer_name.startswith(registered) else ""
    return suffix if suffix.isdigit() else ""


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
