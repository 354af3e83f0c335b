"""The one module that uses Inspect internals (names under `inspect_ai._...`).

Inspect does not promise these names across releases, so each use imports them inside a
guard: if a release moves one, only the feature built on it stops (with an
`InspectInternalsError` saying which name is missing), and the rest of memevals keeps working.
tests/package/test_layering.py checks that no other module imports `inspect_ai._...` and that every
such import here is guarded.
"""

from __future__ import annotations

import inspect
import math
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "InspectInternalsError",
    "InspectInternalsWarning",
    "appended_suffix",
    "as_prerequisite_error",
    "counts_as_integers",
    "integral_counts_on_screen",
    "leave_out_empty_metrics",
    "parse_cli_args",
    "register_task",
    "short_metric_names",
    "task_registered",
]


class InspectInternalsError(RuntimeError):
    """An Inspect internal that memevals relies on is missing from this Inspect version."""


class InspectInternalsWarning(UserWarning):
    """A display or naming refinement memevals makes to Inspect is off: this Inspect version
    changed the internal it builds on (Inspect's own behaviour is kept)."""


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


_LEFT_OUT_MARK = "_memevals_leaves_out_undefined"


def leave_out_empty_metrics() -> None:
    """Make a metric over no scored samples give no row instead of NaN.

    When every sample of a score is unscored (a grader that never gives a readable verdict),
    Inspect calls each metric on no scores and, for anything but a non-empty mapping, logs and
    shows NaN. memevals leaves an undefined figure out (as its uncertainty metrics do when
    fewer than two clusters are present); the score's `unscored_samples` and memevals' `count`
    of unscored samples still say what happened. The NaN a metric returns on no scores becomes
    no row and NaN entries of a mapping are dropped; every other value is Inspect's.

    The same patch names a dict-valued score's rows as a plain score's (`short_metric_names`)
    and gives the results of a renamed scorer its suffix (`appended_suffix`: `judge1` for a
    re-judge appended as `llm_judge1`). Idempotent; without those Inspect internals a warning
    says which refinement is off and Inspect's behaviour stays (NaN rows, Inspect's names).
    """
    try:
        from inspect_ai._eval.task import results
    except ImportError as exc:
        _warn_once("leaving out the figures of a score with no scored sample", exc)
        return
    original = getattr(results, "empty_metric_value", None)
    if original is None:
        _warn_once(
            "leaving out the figures of a score with no scored sample",
            "no inspect_ai._eval.task.results.empty_metric_value",
        )
        return
    if getattr(original, _LEFT_OUT_MARK, False):
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
    _rename_dict_scores(results)


def _rename_dict_scores(results: Any) -> None:
    """Patch Inspect's `scorers_from_metric_dict` (module `results`) to name rows as memevals does.

    A dict-valued score's rows get a plain score's names (`short_metric_names`) and a renamed
    scorer's results get its suffix (`appended_suffix`); without that internal a warning says
    so and Inspect's names stay.
    """
    dict_scores = getattr(results, "scorers_from_metric_dict", None)
    if dict_scores is None:
        _warn_once(
            "short metric names and unique appended score names",
            "no inspect_ai._eval.task.results.scorers_from_metric_dict",
        )
        return
    try:
        signature = inspect.signature(dict_scores)
    except (TypeError, ValueError):
        signature = None

    def scorers_from_metric_dict(*args: Any, **kwargs: Any) -> Any:
        scores = dict_scores(*args, **kwargs)
        for score in scores:
            score.metrics = short_metric_names(score.metrics)
        try:
            bound = signature.bind(*args, **kwargs).arguments if signature else {}
            suffix = appended_suffix(
                str(bound["scorer_name"]), str(bound["scorer_info"].name)
            )
        except (KeyError, TypeError, AttributeError) as exc:
            _warn_once("unique names for appended scores", f"scorers_from_metric_dict: {exc}")
            return scores
        if suffix:
            for score in scores:
                score.name = f"{score.name}{suffix}"
        return scores

    results.scorers_from_metric_dict = scorers_from_metric_dict


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


#: The memevals metrics that sum 0/1 flags or counts (`common.count`, `common.total`).
COUNT_METRICS = frozenset({"count", "total"})
_INTEGRAL_MARK = "_memevals_prints_counts_as_integers"


class _Integral(float):
    """A count's value that formats as an integer (`4`, with `,` grouping when asked for),
    whatever number format the display applies, and equals the float it holds."""

    def __format__(self, spec: str) -> str:
        return format(int(self), "," if "," in spec else "")


def _is_count(metric: Any) -> bool:
    value = metric.value
    return (
        getattr(metric, "group", None) is None
        and str(metric.name).rsplit("/", 1)[-1] in COUNT_METRICS
        and isinstance(value, int | float)
        and math.isfinite(value)
        and float(value).is_integer()
    )


def counts_as_integers(scores: Sequence[Any]) -> list[Any]:
    """Copies of Inspect's `EvalScore`s whose integral count metrics print as integers.

    A count (a `count` or `total` metric with an integral value) formats as `4` wherever a
    display applies a float format such as `.3f`; every other value, and the logged results,
    are unchanged.

    Args:
        scores: the scores as logged (`EvalResults.scores`).

    Returns:
        The scores to draw.
    """
    out = []
    for score in scores:
        metrics = {
            key: (
                m.model_copy(update={"value": _Integral(m.value)}) if _is_count(m) else m
            )
            for key, m in score.metrics.items()
        }
        out.append(score.model_copy(update={"metrics": metrics}))
    return out


def integral_counts_on_screen() -> None:
    """Make Inspect's score summary print a count as `4`, not `4.000`.

    Inspect's closing summary (`inspect eval`) and `inspect score`'s summary format every metric
    value with `.3f`; memevals' counts (unscored samples, images sent, tokens) are integers.
    The summary is drawn from copies whose counts format as integers; every other figure keeps
    Inspect's format and the log is untouched. Idempotent; if this Inspect version moved the
    summary's renderer, a warning says so and Inspect's format stays.
    """
    try:
        from inspect_ai._display.core import results as display
    except ImportError as exc:
        _warn_once("integral counts on the run screen", exc)
        return
    original = getattr(display, "task_scores", None)
    if original is None:
        _warn_once("integral counts on the run screen", "no task_scores in its display")
        return
    if getattr(original, _INTEGRAL_MARK, False):
        return

    def task_scores(scores: list[Any], *args: Any, **kwargs: Any) -> Any:
        try:
            drawn = counts_as_integers(scores)
        except Exception as exc:  # an EvalScore/EvalMetric of another shape: Inspect's format
            _warn_once("integral counts on the run screen", f"{type(exc).__name__}: {exc}")
            drawn = scores
        return original(drawn, *args, **kwargs)

    setattr(task_scores, _INTEGRAL_MARK, True)
    display.task_scores = task_scores
    # `inspect score` imported the renderer by name before memevals was loaded
    cli = sys.modules.get("inspect_ai._cli.score")
    if cli is not None and getattr(cli, "task_scores", None) is original:
        setattr(cli, "task_scores", task_scores)  # noqa: B010  (a module's global)


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


# Installed when this module is first imported, which every memevals task, scorer and tool does
# before Inspect draws a summary (`inspect eval`, `inspect score`).
integral_counts_on_screen()
