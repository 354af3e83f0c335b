"""Task registration: `@memevals_task` (a task whose `-T` options are checked, its docstring
given the shared options' entries rendered from memevals.core.options), per-category tasks
made from the record, and the one-line user error of a task that cannot be built."""

from __future__ import annotations

import difflib
import functools
import inspect
import logging
import re
import sys
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar, overload

import rich
from inspect_ai import Task, task
from inspect_ai.util import registry_info
from rich.markup import escape

from memevals.benchmarks import record_for_task
from memevals.core.memory_system import MemorySystemError
from memevals.core.options import Option, checked_value, render_help, shared_options
from memevals.inspect_tasks.inspect_internals import as_prerequisite_error
from memevals.inspect_tasks.metrics import UNCERTAINTY_KEY, mark_uncertainty, uncertainty_note

__all__ = [
    "USER_ERRORS",
    "OptionDocs",
    "TaskOptionError",
    "check_task_options",
    "declared_tasks",
    "fixed_param_task",
    "memevals_task",
    "option_docs",
    "task_options",
    "user_error",
    "with_option_docs",
    "with_record_version",
]

TaskFn = TypeVar("TaskFn", bound=Callable[..., Task])

logger = logging.getLogger(__name__)


def with_record_version(task_name: str, built: Task) -> Task:
    """`built` with its benchmark's version (eval.yaml `version`, through its record) as
    Task(version=), so a log says which version of the benchmark's samples and rules it ran.

    Args:
        task_name: the registered task name.
        built: the task as its function built it.

    Returns:
        It, versioned (a task no record declares keeps the version it has).
    """
    record = record_for_task(task_name)
    if record is not None:
        built.version = record.version
    return built


#: What building a task raises for a user's mistake: a bad option value or combination, a
#: missing or corrupt data file (DataError, UpstreamError), an unknown or unbuildable memory
#: system. Anything else raised while building a task is a bug and keeps its traceback.
USER_ERRORS: tuple[type[Exception], ...] = (ValueError, MemorySystemError)


def user_error(task_name: str, exc: Exception) -> Exception:
    """`exc` made the error `inspect eval` shows as its message alone, no traceback (Inspect's
    prerequisite error; still an instance of `exc`'s class). The traceback stays in the log
    at debug level (`--log-level debug`).

    Args:
        task_name: the task being built (named first, unless the message already does).
        exc: a user error (USER_ERRORS).

    Returns:
        The error to raise from `exc`.
    """
    text = str(exc)
    if not text.startswith(f"{task_name}:"):
        text = f"{task_name}: {text}"
    logger.debug("%s: task not built", task_name, exc_info=exc)
    if rich.get_console().quiet:
        # --display none silences the console Inspect prints prerequisite errors on: the
        # message would be lost, so it goes to stderr here
        print(f"Error: {text}", file=sys.stderr)
    return as_prerequisite_error(exc, f"[bold]Error[/bold]: {escape(text)}")


class TaskOptionError(TypeError, ValueError):
    """A `-T` option the task does not have (raised before the task loads anything).

    A TypeError, as calling any function with an unknown keyword is; a ValueError too, so the
    tools report it as a bad command-line value.
    """


#: Arguments Inspect may pass to any task: `task_create` says it always passes `model`, which a
#: task need not take (this version does not pass it, but one that did must not be refused).
INSPECT_PASSED_ARGS = frozenset({"model"})

# The catch-all parameter the checked task functions show Inspect. Inspect's `task_create` hands
# a task every `-T` argument only when its signature has a `**` parameter; otherwise it drops
# the unknown ones with a warning and the run goes on with the defaults.
_CATCH_ALL = "unknown_options"

_OPTION_KINDS = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)


def task_options(fn: Callable[..., Any]) -> list[str]:
    """The `-T` option names of a task function, in signature order."""
    return [p.name for p in inspect.signature(fn).parameters.values() if p.kind in _OPTION_KINDS]


def check_task_options(
    task_name: str,
    given: Iterable[str],
    options: Iterable[str],
    fixed: Mapping[str, Any] | None = None,
) -> None:
    """Raise TaskOptionError for every given name that is not an option of the task, naming
    the closest option (a misspelling must not silently run the defaults)."""
    known = sorted(options)
    problems: list[str] = []
    for name in given:
        if name in known or name in INSPECT_PASSED_ARGS:
            continue
        if fixed and name in fixed:
            problems.append(f"option {name!r} is fixed to {fixed[name]!r} by this task")
            continue
        close = difflib.get_close_matches(name, known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(f"no option {name!r}{hint}")
    if problems:
        raise TaskOptionError(f"{task_name}: {'; '.join(problems)}. Options: {', '.join(known)}")


def _checked_task(
    fn: Callable[..., Task],
    name: str | None,
    fixed: Mapping[str, Any] | None = None,
    docs: OptionDocs | None = None,
) -> Callable[..., Task]:
    """`fn` registered as an Inspect task that rejects unknown `-T` options; with `docs`, its
    docstring gets the Args entries of the shared options it takes (memevals.core.options)."""
    task_name = name or fn.__name__
    sig = inspect.signature(fn)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        raise TypeError(f"{task_name}: a task with a ** parameter cannot have its options checked")
    options = task_options(fn)
    TASK_FUNCTIONS[task_name] = fn
    if docs is not None:
        OPTION_DOCS[task_name] = docs

    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Task:
        try:
            check_task_options(task_name, kwargs, options, fixed)
            passed = {k: v for k, v in kwargs.items() if k in options}
            level = checked_value(UNCERTAINTY_KEY, passed.get(UNCERTAINTY_KEY, "default"))
            built = fn(*args, **passed)
        except USER_ERRORS as exc:
            raise user_error(task_name, exc) from exc
        if level == "full":
            mark_uncertainty(built, level)
        if "uncertainty" in options:
            built.metadata = {**(built.metadata or {}), UNCERTAINTY_KEY: uncertainty_note(level)}
        return with_record_version(task_name, built)

    if docs is not None and fixed is None:
        defaults = {n: sig.parameters[n].default for n in options}
        checked.__doc__ = with_option_docs(task_name, fn.__doc__ or "", defaults, docs)
    catch_all = inspect.Parameter(_CATCH_ALL, inspect.Parameter.VAR_KEYWORD)
    shown = sig.replace(parameters=[*sig.parameters.values(), catch_all])
    setattr(checked, "__signature__", shown)  # noqa: B010
    registered: Callable[..., Task] = task(name=task_name)(checked)
    # Inspect lists a task's parameters from its signature, catch-all included; list only the
    # real options (the list is the one its task tags share, so edit it in place).
    params = registry_info(registered).metadata.get("params")
    if isinstance(params, list) and _CATCH_ALL in params:
        params.remove(_CATCH_ALL)
    return registered


@overload
def memevals_task(fn: TaskFn, /) -> TaskFn: ...


@overload
def memevals_task(
    *,
    name: str | None = None,
    option_defaults: Mapping[str, Any] | None = None,
    option_values: Mapping[str, Sequence[str]] | None = None,
) -> Callable[[TaskFn], TaskFn]: ...


def memevals_task(
    fn: Callable[..., Task] | None = None,
    /,
    *,
    name: str | None = None,
    option_defaults: Mapping[str, Any] | None = None,
    option_values: Mapping[str, Sequence[str]] | None = None,
) -> Any:
    """`@task` whose `-T` options are checked: an unknown option (a misspelling) is a
    TaskOptionError naming the closest real option, raised before the task builds anything.

    Use it in place of `@task` (`@memevals_task` or `@memevals_task(name=...)`); the typed
    keyword arguments stay the options users see. The shared options a task takes
    (memevals.core.options) are documented there, not in the task's docstring: their Args
    entries are rendered from the declarations, with the benchmark's defaults (its record's
    `context_defaults`, then `option_defaults`) and allowed values (`option_values`).

    Args:
        fn: the task function (when used without arguments).
        name: the task's registered name (default: the function's).
        option_defaults: the benchmark's defaults of shared options whose signature default is
            None ("the benchmark's default"), beside or instead of its record's.
        option_values: the benchmark's allowed values of shared options (its context modes,
            its retrieval units).

    Returns:
        The registered task, or a decorator making one.
    """

    def decorate(f: Callable[..., Task]) -> Callable[..., Task]:
        task_name = name or f.__name__
        docs = OptionDocs(
            defaults=MappingProxyType(
                {**record_defaults(task_name), **dict(option_defaults or {})}
            ),
            values=MappingProxyType({k: tuple(v) for k, v in (option_values or {}).items()}),
        )
        return _checked_task(f, name, docs=docs)

    if fn is not None:
        return decorate(fn)
    return decorate


def fixed_param_task(
    base: Callable[..., Task], name: str, fixed: dict[str, Any], doc: str
) -> Callable[..., Task]:
    """Register a task that is `base` with some parameters fixed (e.g. one category).

    The new task keeps every other typed `-T` parameter of `base`, so the per-category tasks
    stay in step with the main task without repeating its signature. Its options are checked
    as `memevals_task` checks them; a fixed one is rejected with a message saying so.
    """
    sig = inspect.signature(base)
    params = [p for p in sig.parameters.values() if p.name not in fixed and p.kind in _OPTION_KINDS]

    base_name = registry_info(base).name.rsplit("/", 1)[-1]
    # the unchecked function: this task checks the options and names the task in an error
    unchecked = TASK_FUNCTIONS.get(base_name, base)

    def run(**kwargs: Any) -> Task:
        return unchecked(**fixed, **kwargs)

    run.__name__ = name
    run.__qualname__ = name
    run.__doc__ = doc
    run.__module__ = base.__module__
    setattr(run, "__signature__", sig.replace(parameters=params))  # noqa: B010
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": Task}
    return _checked_task(run, name, fixed, OPTION_DOCS.get(base_name))


def _fixed_doc(title: str, base: str, fixed: Mapping[str, Any]) -> str:
    category = fixed.get("categories")
    if len(fixed) == 1 and isinstance(category, str) and "," not in category:
        what = f"{category.replace('_', ' ')} questions only"
    else:
        what = ", ".join(f"{k}={v}" for k, v in fixed.items())
    return f"{title}, {what}; every other option as `{base}` takes it."


def declared_tasks(main: Callable[..., Task]) -> list[str]:
    """Every Inspect task of `main`'s benchmark, as its record declares them: `main` itself and
    each task that fixes some of its options (one per category, a variant, ...), made from
    `main` by `fixed_param_task` and added to `main`'s module under its name. A thin module ends
    with `__all_tasks__ = declared_tasks(<its task>)`, so no per-category task is written by
    hand and eval.yaml stays the one place a task name is written.

    Args:
        main: the benchmark's registered task (its record's one task that fixes nothing).

    Returns:
        The task names, in the record's order (the module's `__all_tasks__`).
    """
    base = registry_info(main).name.rsplit("/", 1)[-1]
    record = record_for_task(base)
    if record is None:
        raise TypeError(f"task {base!r}: no benchmark record declares it")
    module = sys.modules[main.__module__]
    names: list[str] = []
    for spec in record.tasks:
        if spec.fixed and getattr(module, spec.name, None) is None:
            doc = _fixed_doc(record.title, base, spec.fixed)
            setattr(module, spec.name, fixed_param_task(main, spec.name, dict(spec.fixed), doc))
        elif not spec.fixed and spec.name != base:
            raise TypeError(
                f"benchmark {record.name}: task {spec.name!r} fixes no option, but its module's "
                f"main task is {base!r} (eval.yaml names one task without fixed options)"
            )
        names.append(spec.name)
    return names


# ---------------------------------------------------------------------------------------------
# Shared options' docs (memevals.core.options): docstring entries and README rows


@dataclass(frozen=True)
class OptionDocs:
    """A benchmark's defaults and allowed values of the shared options, for their help texts."""

    defaults: Mapping[str, Any]
    values: Mapping[str, tuple[str, ...]]

    def default(self, option: Option, signature_default: Any) -> Any:
        """The default a task shows for `option`: the benchmark's where the signature says
        None (the benchmark's default), else the signature's; the declaration's `doc_default`
        where neither names one."""
        if signature_default is not None:
            return signature_default
        return self.defaults.get(option.name, option.doc_default)

    def help(self, option: Option, signature_default: Any) -> str:
        """The option's help text for this benchmark."""
        return render_help(
            option, self.default(option, signature_default), self.values.get(option.name)
        )


#: Registered task name -> its OptionDocs (the per-category tasks share their base task's).
OPTION_DOCS: dict[str, OptionDocs] = {}
#: Registered task name -> the task function as written (before the option check).
TASK_FUNCTIONS: dict[str, Callable[..., Task]] = {}


def record_defaults(task_name: str) -> Mapping[str, Any]:
    record = record_for_task(task_name)
    return {} if record is None else record.context_defaults


def option_docs(fn: Callable[..., Any]) -> list[tuple[Option, Any, str]]:
    """The shared options a registered task takes, each with its default and help text as
    that task shows them (its docstring, its README's generated table).

    Args:
        fn: a task registered by memevals_task or fixed_param_task.

    Returns:
        (declaration, default, help) per shared option, in signature order.
    """
    docs = OPTION_DOCS.get(registry_info(fn).name.rsplit("/", 1)[-1], OptionDocs({}, {}))
    params = inspect.signature(fn).parameters
    out = []
    for option in shared_options(task_options(fn)):
        default = params[option.name].default
        out.append((option, docs.default(option, default), docs.help(option, default)))
    return out


_ARG_ENTRY = re.compile(r"^(\w+): ?(.*)$")
_DOC_WIDTH = 95


def _args_entries(lines: list[str]) -> dict[str, list[str]]:
    """`name: text` entries (continuation lines indented deeper) of a cleaned Args block."""
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        match = _ARG_ENTRY.match(line[4:]) if line.startswith("    ") else None
        if match and not line.startswith("     "):
            current = entries.setdefault(match.group(1), [])
            current.append(line)
        elif current is not None:
            current.append(line)
    return entries


def with_option_docs(task_name: str, doc: str, options: Mapping[str, Any], docs: OptionDocs) -> str:
    """`doc` with an Args entry for every shared option among `options`, rendered from its
    declaration, all entries in signature order. A docstring documenting a shared option itself
    is refused: its help is written once, in memevals.core.options.

    Args:
        task_name: the task (for the error).
        doc: the task function's docstring.
        options: its option names with their signature defaults, in signature order.
        docs: the benchmark's defaults and values.

    Returns:
        The docstring.
    """
    shared = {o.name: o for o in shared_options(options)}
    if not shared:
        return doc
    lines = inspect.cleandoc(doc).splitlines()
    try:
        start = lines.index("Args:")
    except ValueError:
        start = len(lines)
        lines += ["", "Args:"] if lines else ["Args:"]
    end = start + 1
    while end < len(lines) and (not lines[end].strip() or lines[end].startswith(" ")):
        end += 1
    own = _args_entries(lines[start + 1 : end])
    clash = sorted(set(own) & set(shared))
    if clash:
        raise TypeError(
            f"{task_name}: the docstring documents the shared option {clash[0]!r}; its help is "
            "declared once in memevals/core/options.py (remove the Args entry)"
        )
    entries: list[str] = []
    for name in [*options, *(n for n in own if n not in options)]:
        if name in own:
            entries += [line for line in own[name] if line.strip()]
        elif name in shared:
            text = docs.help(shared[name], options[name])
            entries += textwrap.wrap(
                f"{name}: {text}",
                width=_DOC_WIDTH,
                initial_indent="    ",
                subsequent_indent="        ",
                break_on_hyphens=False,
            )
    return "\n".join([*lines[: start + 1], *entries, *lines[end:]]) + "\n"
