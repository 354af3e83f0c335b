"""Inspect entry point: registers every memevals task, scorer, metric and solver by name, and
imports none of them.

Inspect loads every installed package's `inspect_ai` entry point when an `inspect` command
starts, whatever its task, so this module stays light: no benchmark, no numpy, scipy or torch.
It reads the registry manifest (memevals.inspect_tasks.registry_manifest, written from the real
modules by `python -m memevals.inspect_tasks.manifest`, which a test keeps in step) and
registers a light stand-in for each object, under the object's name, with its signature and
registry metadata. A stand-in imports the real object when Inspect creates it: a task's thin
module when the task is created, the task modules when a scorer, metric or solver is created by
name (`inspect score --scorer memevals/llm_judge`, the metrics of a log being rescored). The
real object then takes the stand-in's place in the registry, under the same name.

Inspect names an installed package's objects `memevals/<name>`. So that `inspect eval locomo`
works too, each task is also registered under its bare name, unless that name is taken; the
bare name uses Inspect's private `task_register` (through
memevals.inspect_tasks.inspect_internals, which guards it), so if Inspect changes it the
namespaced names still work and a warning says why the bare ones do not.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import pkgutil
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from inspect_ai import Task
from inspect_ai.scorer import Metric, Scorer, metric, scorer
from inspect_ai.solver import Solver, solver
from inspect_ai.util import registry_create, registry_info

from memevals.inspect_tasks.inspect_internals import (
    InspectInternalsError,
    register_task,
    task_registered,
)
from memevals.inspect_tasks.registry_manifest import ENTRIES, SCANNED

# `TASK_MODULES` (the thin modules, imported when first read) is served by __getattr__
__all__ = ["register_all", "register_new_modules", "stand_in_signature", "task_modules"]

logger = logging.getLogger(__name__)

_RETURNS: dict[str, Any] = {"task": Task, "scorer": Scorer, "metric": Metric, "solver": Solver}
_KINDS = {
    kind.name: kind
    for kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
        inspect.Parameter.KEYWORD_ONLY,
        inspect.Parameter.VAR_KEYWORD,
    )
}
#: Modules of the package that register nothing with Inspect.
_REGISTER_NOTHING = frozenset(
    f"memevals.inspect_tasks.{m}"
    for m in ("registry", "registry_manifest", "manifest", "inspect_internals")
)
_STALE = "the registry manifest is out of date: run `python -m memevals.inspect_tasks.manifest`"


def task_modules() -> list[ModuleType]:
    """Every benchmark's thin Inspect module, imported (which registers its real tasks).

    Returns:
        The modules, in record order; each lists its task functions in `__all_tasks__`.
    """
    from memevals.inspect_tasks.manifest import task_modules as imported

    return imported()


def __getattr__(name: str) -> list[ModuleType]:
    # `TASK_MODULES` imports the thin modules when it is first read, not with the entry point
    if name == "TASK_MODULES":
        modules = task_modules()
        globals()["TASK_MODULES"] = modules
        return modules
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def stand_in_signature(params: Sequence[Sequence[Any]]) -> inspect.Signature:
    """A signature from the manifest's parameter rows (name, kind, annotation[, default]).

    Args:
        params: the rows.

    Returns:
        The signature (string annotations, as the real modules' postponed annotations read).
    """
    empty = inspect.Parameter.empty
    return inspect.Signature(
        [
            inspect.Parameter(
                row[0],
                _KINDS[row[1]],
                annotation=empty if row[2] is None else row[2],
                default=row[3] if len(row) > 3 else empty,
            )
            for row in params
        ]
    )


_resolving = threading.local()


def _import_everything() -> None:
    from memevals.inspect_tasks.manifest import import_all

    import_all()


class _StandInLeft(LookupError):
    """The import meant to register the real object left its stand-in in the registry."""


def _create_real(kind: str, full_name: str, module: str | None, kwargs: dict[str, Any]) -> Any:
    """Create the real registered object: import the module that registers it (else every
    task module), whose real object replaces the stand-in under its name, then create it
    through Inspect's registry."""
    busy: set[str] = getattr(_resolving, "names", set())
    _resolving.names = busy
    key = f"{kind}:{full_name}"
    if key in busy:  # registry_create came back to this stand-in
        raise _StandInLeft(f"memevals: no {kind} {full_name!r} in memevals; {_STALE}")
    imports: list[Callable[[], object]] = [_import_everything]
    if module is not None:
        imports.insert(0, lambda: importlib.import_module(module))
    for number, load in enumerate(imports, start=1):
        load()
        busy.add(key)
        try:
            return registry_create(kind, full_name, **kwargs)  # type: ignore[call-overload]
        except _StandInLeft:
            if number == len(imports):
                raise
        finally:
            busy.discard(key)
    raise AssertionError("unreachable")  # pragma: no cover


def _keywords(
    sig: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Positional arguments given by name (Inspect's registry creates objects by keyword)."""
    bound = sig.bind(*args, **kwargs).arguments
    out: dict[str, Any] = {}
    for name, value in bound.items():
        if sig.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif sig.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError(f"{name}: positional arguments cannot be passed by name")
        else:
            out[name] = value
    return out


def _dressed(fn: Callable[..., Any], entry: Mapping[str, Any], sig: inspect.Signature) -> None:
    """Give a stand-in the real object's name, signature and return type."""
    fn.__name__ = fn.__qualname__ = str(entry.get("attr", entry["name"]))
    fn.__doc__ = (
        f"memevals {entry['type']} `{entry['name']}` (a stand-in that loads the real one, "
        f"{entry.get('module', 'from the task modules')}, when it is created)."
    )
    setattr(fn, "__signature__", sig)  # noqa: B010
    fn.__annotations__ = {"return": _RETURNS[entry["type"]]}


def _register_other(entry: Mapping[str, Any], sig: inspect.Signature) -> str:
    """Register the stand-in of a scorer, metric or solver through Inspect's own decorator.

    Returns:
        The name it is registered under (`memevals/<name>` for an installed memevals).
    """
    kind, name = str(entry["type"]), str(entry["name"])
    # the scorer decorator tags each scorer it returns with these metrics: filled with the real
    # scorer's own before the tag is made
    metrics: list[Any] | dict[str, Any] = {} if entry.get("metrics") == "dict" else []

    def create(*args: Any, **kwargs: Any) -> Any:
        passed = _keywords(sig, args, kwargs) if args else kwargs
        made = _create_real(kind, full_name, entry.get("module"), passed)
        if kind == "scorer":
            real = registry_info(made).metadata["metrics"]
            if isinstance(metrics, dict):
                metrics.clear()
                metrics.update(real)
            else:
                metrics[:] = real
        return made

    _dressed(create, entry, sig)
    metadata = dict(entry.get("metadata", {}))
    registered: Any
    if kind == "scorer":
        registered = scorer(metrics=metrics, name=name, **metadata)(create)
    elif kind == "metric":
        registered = metric(name, scores=metadata.get("scores", "auto"))(create)
    else:
        registered = solver(name)(create)
    full_name = registry_info(registered).name
    return full_name


def _task_stand_in(entry: Mapping[str, Any], sig: inspect.Signature) -> Callable[..., Task]:
    """A task function that imports the task's thin module and builds the real task."""

    def create(*args: Any, **kwargs: Any) -> Task:
        module = importlib.import_module(entry["module"])
        real = getattr(module, entry["attr"], None)
        if real is None:
            raise LookupError(
                f"memevals: {entry['module']} has no task {entry['attr']!r}; {_STALE}"
            )
        built: Task = real(*args, **kwargs)
        return built

    _dressed(create, entry, sig)
    return create


def _task_signatures(entries: Sequence[Mapping[str, Any]]) -> dict[str, tuple[Any, ...]]:
    """Each task's parameter rows (a task fixing some of its main task's options: the main
    task's rows without those)."""
    rows: dict[str, tuple[Any, ...]] = {}
    for entry in entries:
        if entry["type"] != "task":
            continue
        if "like" in entry:
            left_out = set(entry["without"])
            rows[entry["name"]] = tuple(r for r in rows[entry["like"]] if r[0] not in left_out)
        else:
            rows[entry["name"]] = tuple(entry["signature"])
    return rows


def _real_task(entry: Mapping[str, Any]) -> Any:
    """The real task function if its module is imported already, else None."""
    module = sys.modules.get(str(entry["module"]))
    real = getattr(module, str(entry["attr"]), None)
    try:
        return real if registry_info(real).type == "task" else None
    except ValueError:
        return None


def _register_task(
    entry: Mapping[str, Any], rows: tuple[Any, ...], prefix: str, real: Any
) -> None:
    """Register the task's stand-in (unless the real task is registered) and its bare name."""
    name = entry["name"]
    sig = stand_in_signature(rows)
    attribs = dict(entry.get("attribs", {}))
    params = list(entry.get("params", [r[0] for r in rows if r[1] != "VAR_KEYWORD"]))
    if real is None:
        register_task(_task_stand_in(entry, sig), f"{prefix}{name}", attribs, params)
    if prefix and not task_registered(name):
        # the bare name: a distinct function (the registry tags the object it holds)
        register_task(_task_stand_in(entry, sig), name, attribs, list(params))


def _prefix(full_name: str, name: str) -> str:
    """The package prefix Inspect gave `name` (`memevals/`, or "" from a checkout)."""
    return full_name[: len(full_name) - len(name)]


def register_all(entries: Sequence[Mapping[str, Any]] = ENTRIES) -> None:
    """Register a stand-in for every manifest entry whose real object is not registered yet.

    In a process that imported a memevals task or scorer module before Inspect loaded this
    entry point, a stand-in would replace a real object that no later import registers again:
    there the rest of the modules are imported too and only the bare task names are added.

    Args:
        entries: the manifest entries (default: memevals' own).
    """
    imported = any(
        name.startswith("memevals.inspect_tasks.") and name not in _REGISTER_NOTHING
        for name in list(sys.modules)
    )
    if imported:
        _import_everything()
    prefix = ""
    for entry in entries:
        if entry["type"] != "task" and not imported:
            full_name = _register_other(entry, stand_in_signature(entry["signature"]))
            prefix = _prefix(full_name, entry["name"])
    rows = _task_signatures(entries)
    for entry in entries:
        if entry["type"] != "task":
            continue
        real = _real_task(entry)
        if real is not None:
            prefix = _prefix(registry_info(real).name, entry["name"])
        try:
            _register_task(entry, rows[entry["name"]], prefix, real)
        except InspectInternalsError as exc:  # pragma: no cover - depends on Inspect
            logger.warning("memevals: tasks not registered (%s); use memevals/<task>", exc)
            return


def _new_modules() -> list[str]:
    """The package's modules that the manifest was not made from (a benchmark's thin module
    added since: one folder and one module, no shared edit), found on disk without importing."""
    package = sys.modules[__package__ or "memevals.inspect_tasks"]
    known = set(SCANNED) | {m.rsplit(".", 1)[-1] for m in _REGISTER_NOTHING}
    return sorted(i.name for i in pkgutil.iter_modules(package.__path__) if i.name not in known)


def _alias_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A distinct callable with fn's signature; the task it builds keeps fn's namespaced name."""

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return alias


def register_new_modules() -> list[ModuleType]:
    """Import the modules the manifest does not know (their real objects register themselves)
    and give their tasks bare names; each costs its imports, as the entry point once did.

    Returns:
        The modules imported.
    """
    modules = [importlib.import_module(f"{__package__}.{name}") for name in _new_modules()]
    for module in modules:
        for name in getattr(module, "__all_tasks__", ()):
            fn: Callable[..., Any] = getattr(module, name)
            info = registry_info(fn)
            if "/" not in info.name or task_registered(name):
                continue  # imported from a checkout: already bare, or the name is taken
            attribs = info.metadata.get("attribs", {})
            params = info.metadata.get("params", [])
            # `wraps` copied the registry tag; register_task gives the alias its own
            register_task(_alias_of(fn), name, attribs, params)
    return modules


register_all()
register_new_modules()
