"""Inspect glue shared by all benchmarks: PromptItem -> Sample, checked `-T` options,
per-category task factories, the summing metrics and the clustered-uncertainty metrics."""

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
from typing import Any, TypeVar, cast, overload

import rich
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
)
from inspect_ai.scorer import (
    Metric,
    MetricProtocol,
    SampleScore,
    Scorer,
    Value,
    ci,
    ci_wilson,
    grouped,
    mean,
    metric,
    stderr,
)
from inspect_ai.util import registry_info
from rich.markup import escape

from memevals.benchmarks import record_for_task
from memevals.core.build import Build
from memevals.core.memory_system import MemorySystemError
from memevals.core.options import Option, checked_value, render_help, shared_options
from memevals.core.prompt_item import PromptItem
from memevals.core.statistics import CLUSTER_KEY
from memevals.inspect_tasks.inspect_internals import as_prerequisite_error, leave_out_empty_metrics

__all__ = [
    "SCORE_RANGE",
    "UNCERTAINTY_KEY",
    "USER_ERRORS",
    "OptionDocs",
    "TaskOptionError",
    "category_uncertainty",
    "check_task_options",
    "ci_clustered",
    "ci_lower",
    "ci_upper",
    "count",
    "declared_tasks",
    "fixed_param_task",
    "full_uncertainty",
    "mark_uncertainty",
    "memevals_task",
    "option_docs",
    "stderr_clustered",
    "stderr_naive",
    "task_from_build",
    "task_options",
    "to_dataset",
    "to_sample",
    "total",
    "uncertainty_metrics",
    "uncertainty_note",
    "user_error",
    "with_option_docs",
    "with_record_version",
]

TaskFn = TypeVar("TaskFn", bound=Callable[..., Task])

# A score whose samples are all unscored logs no NaN figures (memevals leaves undefined
# figures out); installed once, when any memevals task or scorer is loaded.
leave_out_empty_metrics()

logger = logging.getLogger(__name__)


def to_sample(item: PromptItem) -> Sample:
    """The context goes into a system message (identical across a conversation's questions, so
    provider prefix caches hit), then any chat the item replays (`PromptItem.messages`), then
    the question as the user message."""
    messages: list[ChatMessage] = []
    if item.system:
        messages.append(ChatMessageSystem(content=item.system))
    for role, content in item.messages:
        if role == "assistant":
            messages.append(ChatMessageAssistant(content=content))
        else:
            messages.append(ChatMessageUser(content=content))
    messages.append(ChatMessageUser(content=item.user))
    return Sample(id=item.id, input=messages, target=item.target, metadata=dict(item.metadata))


def to_dataset(items: Iterable[PromptItem], name: str) -> MemoryDataset:
    samples = [to_sample(i) for i in items]
    ids = [s.id for s in samples]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ValueError(f"{name}: duplicate sample id {dup!r}")
    return MemoryDataset(samples, name=name, shuffled=False)


def task_from_build(build: Build, scorers: Sequence[Scorer], *, name: str) -> Task:
    """The Inspect task of one benchmark build: its items as the dataset, the memory system's
    solvers when a run names one, the scorers, the reader's generation settings and the run's
    log metadata, all from the build (its version is the record's, set at registration).

    Args:
        build: what the benchmark's `samples.build(options)` returned.
        scorers: the task's scorers, its headline first.
        name: the dataset's name when the build names none (the benchmark's).

    Returns:
        The Task.
    """
    from memevals.inspect_tasks.memory_system import solver_chain

    generation = build.generation
    return Task(
        dataset=to_dataset(build.items, build.dataset or name),
        solver=solver_chain(build.subject),
        scorer=list(scorers),
        config=GenerateConfig(max_tokens=generation.max_tokens, temperature=generation.temperature),
        metadata=dict(build.metadata),
    )


def uncertainty_note(level: str) -> dict[str, str]:
    """What the log says about the run's uncertainty figures (Task(metadata=)["uncertainty"]):
    which are shown, how they are computed, and why one can be missing.

    Args:
        level: the `-T uncertainty=` value.

    Returns:
        The note.
    """
    shown = "stderr, ci_lower, ci_upper and the per-category means"
    if level == "full":
        shown += (
            ", stderr_naive and per category <category>_stderr, <category>_ci_lower, "
            "<category>_ci_upper"
        )
    return {
        "level": level,
        "shown": shown,
        "method": "clustered on each sample's metadata 'cluster': Inspect's stderr(cluster=) "
        "and ci(cluster=) clipped to [0, 1], or ci_wilson(cluster=) for a judge's accuracy",
        "left_out": "a figure the scores leave undefined (fewer than two clusters, as under "
        "--limit, or samples without a cluster) is left out rather than shown as NaN",
    }


def mark_uncertainty(built: Task, level: str) -> None:
    """Mark each sample's metadata with the run's `uncertainty` level, which the uncertainty
    metrics read (Inspect hands a metric the samples' metadata, not the task's options). Only a
    run that asks for the full figures is marked: a default run's samples are unchanged.

    Args:
        built: the task.
        level: the `-T uncertainty=` value.
    """
    for sample in built.dataset:
        sample.metadata = {**(sample.metadata or {}), UNCERTAINTY_KEY: level}


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
    _TASK_FUNCTIONS[task_name] = fn
    if docs is not None:
        _OPTION_DOCS[task_name] = docs

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
                {**_record_defaults(task_name), **dict(option_defaults or {})}
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
    unchecked = _TASK_FUNCTIONS.get(base_name, base)

    def run(**kwargs: Any) -> Task:
        return unchecked(**fixed, **kwargs)

    run.__name__ = name
    run.__qualname__ = name
    run.__doc__ = doc
    run.__module__ = base.__module__
    setattr(run, "__signature__", sig.replace(parameters=params))  # noqa: B010
    run.__annotations__ = {p.name: p.annotation for p in params} | {"return": Task}
    return _checked_task(run, name, fixed, _OPTION_DOCS.get(base_name))


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
_OPTION_DOCS: dict[str, OptionDocs] = {}
#: Registered task name -> the task function as written (before the option check).
_TASK_FUNCTIONS: dict[str, Callable[..., Task]] = {}


def _record_defaults(task_name: str) -> Mapping[str, Any]:
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
    docs = _OPTION_DOCS.get(registry_info(fn).name.rsplit("/", 1)[-1], OptionDocs({}, {}))
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


def with_option_docs(
    task_name: str, doc: str, options: Mapping[str, Any], docs: OptionDocs
) -> str:
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


def _sum_of_values() -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        return float(sum(s.score.as_float() for s in scores))

    return compute


# One sum, under the two names the logs already use.
#: Sum of the values: with a 0/1 key such as "unscored", the number of samples that have it.
count = metric(name="count")(_sum_of_values)
#: Sum of the values: e.g. all prompt tokens of a run.
total = metric(name="total")(_sum_of_values)


# ---------------------------------------------------------------------------------------------
# Uncertainty (every benchmark README's "Standard errors" section says why).
#
# The numbers are Inspect's own `stderr(cluster=)`, `ci(cluster=)`, `ci_wilson(cluster=)` and
# `stderr()` over `metadata["cluster"]`. What these wrappers add is what the terminal shows:
#
# - a default run shows, per score, the mean, `stderr` (the clustered standard error: *the*
#   standard error of these benchmarks) and its 95 % interval `ci_lower` / `ci_upper`, then the
#   per-category means; with `-T uncertainty=full` also the naive `stderr_naive` and each
#   category's clustered `<category>_stderr`, `<category>_ci_lower`, `<category>_ci_upper`
#   (the task marks its samples' metadata `uncertainty: full`, which the metrics read);
# - a figure that is undefined (fewer than two clusters, as with `--limit 10`, or samples without
#   cluster ids) is left out, not shown as NaN: a metric then returns an empty mapping, which
#   Inspect turns into no row, and the log's messages (level info) say why;
# - an interval never leaves the score's range: the t interval (mean ± t·se) is clipped to
#   [0, 1], the range of every score that gets one (F1, recall, ROUGE, BLEU, BERTScore F1);
#   a proportion (a judge's accuracy) gets the clustered Wilson interval, within [0, 1] by
#   construction.
#
# A one-number figure is a metric of that name returning its value or {} (so a scorer with a
# metrics dict, which prefixes a mapping's keys with the metric's name, shows the same name).

#: Sample-metadata key marking a run whose metrics include the full uncertainty figures.
UNCERTAINTY_KEY = "uncertainty"
#: The interval's bounds: the range of every score memevals gives an interval.
SCORE_RANGE = (0.0, 1.0)


def _cluster_count(scores: list[SampleScore]) -> int:
    """Distinct `metadata["cluster"]` values; 0 when a sample has none (a log written before
    the key existed, re-scored with `inspect score`): its clustered figures are left out."""
    ids: set[object] = set()
    for s in scores:
        cid = (s.sample_metadata or {}).get(CLUSTER_KEY)
        if cid is None:
            return 0
        ids.add(cid)
    return len(ids)


def full_uncertainty(scores: list[SampleScore]) -> bool:
    """Whether the run asked for the full uncertainty figures (`-T uncertainty=full`).

    Args:
        scores: the scores a metric is given.

    Returns:
        True when the samples are marked `uncertainty: full`.
    """
    return any((s.sample_metadata or {}).get(UNCERTAINTY_KEY) == "full" for s in scores)


_full = full_uncertainty


def _undefined(scores: list[SampleScore], figure: str) -> bool:
    """Whether a clustered figure is undefined on these scores; if so the log says why."""
    clusters = _cluster_count(scores)
    if clusters >= 2:
        return False
    why = (
        "some samples have no metadata 'cluster'"
        if clusters == 0 and scores
        else f"the {len(scores)} scores come from {clusters} cluster(s), and a clustered "
        "standard error needs at least two"
    )
    logger.info("%s left out: %s", figure, why)
    return True


def _bounds(value: object, bounds: tuple[float, float] | None) -> tuple[float, float]:
    assert isinstance(value, Mapping)
    lower, upper = float(value["lower"]), float(value["upper"])
    if bounds is not None:
        lower, upper = max(lower, bounds[0]), min(upper, bounds[1])
    return lower, upper


def _interval(
    scores: list[SampleScore], wilson: bool, bounds: tuple[float, float] | None
) -> tuple[float, float] | None:
    """The clustered 95 % interval of the mean, or None when undefined."""
    if _undefined(scores, "the clustered 95 % interval"):
        return None
    inner = ci_wilson(cluster=CLUSTER_KEY) if wilson else ci(cluster=CLUSTER_KEY)
    return _bounds(cast(MetricProtocol, inner)(scores), bounds)


@metric(name="stderr")
def stderr_clustered() -> Metric:
    """The standard error of the mean, clustered (Inspect's `stderr(cluster="cluster")`): the
    one these benchmarks report as `stderr`. Left out when undefined (fewer than two
    clusters)."""
    inner = cast(MetricProtocol, stderr(cluster=CLUSTER_KEY))

    def compute(scores: list[SampleScore]) -> Value:
        if _undefined(scores, "the clustered stderr"):
            return {}
        return inner(scores)

    return compute


def _interval_bound(which: str) -> Callable[..., Metric]:
    def make(wilson: bool = False, bounds: tuple[float, float] | None = SCORE_RANGE) -> Metric:
        def compute(scores: list[SampleScore]) -> Value:
            interval = _interval(scores, wilson, bounds)
            if interval is None:
                return {}
            return interval[0] if which == "lower" else interval[1]

        return compute

    make.__doc__ = (
        f"The {which} bound of the clustered 95 % interval of the mean: Inspect's "
        "`ci(cluster=)` (mean ± t·se) clipped to `bounds` or, with `wilson` (a proportion), "
        "`ci_wilson(cluster=)`. Left out when undefined."
    )
    return make


ci_lower = metric(name="ci_lower")(_interval_bound("lower"))
ci_upper = metric(name="ci_upper")(_interval_bound("upper"))


@metric(name="stderr_naive")
def stderr_naive() -> Metric:
    """The naive standard error (Inspect's `stderr()`, samples independent), with
    `-T uncertainty=full` only: it understates the error of these benchmarks, whose
    questions share a history."""
    inner = cast(MetricProtocol, stderr())

    def compute(scores: list[SampleScore]) -> Value:
        return inner(scores) if _full(scores) else {}

    return compute


@metric(name="ci_clustered")
def ci_clustered(wilson: bool = False, bounds: tuple[float, float] | None = SCORE_RANGE) -> Metric:
    """The clustered 95 % interval as one mapping, `ci_lower` / `ci_upper` (for a metric that
    builds on it; a score's own interval is `ci_lower()` and `ci_upper()`); {} when
    undefined."""

    def compute(scores: list[SampleScore]) -> Value:
        interval = _interval(scores, wilson, bounds)
        return {} if interval is None else {"ci_lower": interval[0], "ci_upper": interval[1]}

    return compute


@metric(name="by_category")
def category_uncertainty(
    wilson: bool = False,
    group_key: str = "category",
    bounds: tuple[float, float] | None = SCORE_RANGE,
) -> Metric:
    """With `-T uncertainty=full`, per category: `<category>_stderr` (clustered) and its 95 %
    interval `<category>_ci_lower` / `_ci_upper` (Wilson with `wilson`); a category whose
    figures are undefined is left out. The per-category means are
    `grouped(mean(), "category")`, under the bare category names, in every run."""

    def compute(scores: list[SampleScore]) -> Value:
        if not _full(scores):
            return {}
        groups: dict[str, list[SampleScore]] = {}
        for s in scores:
            groups.setdefault(str((s.sample_metadata or {}).get(group_key)), []).append(s)
        out: dict[str, float] = {}
        for name, chosen in groups.items():
            interval = _interval(chosen, wilson, bounds)
            if interval is None:
                continue
            se = cast(MetricProtocol, stderr(cluster=CLUSTER_KEY))(chosen)
            out |= {
                f"{name}_stderr": float(cast(float, se)),
                f"{name}_ci_lower": interval[0],
                f"{name}_ci_upper": interval[1],
            }
        return out

    return compute


def uncertainty_metrics(*, wilson: bool = False, by_category: bool = True) -> list[Metric]:
    """The metrics every answer score reports: the mean, the clustered `stderr` and its 95 %
    interval (`ci_lower`, `ci_upper`: Wilson for a proportion such as a judge's accuracy) and,
    with `by_category`, the per-category means; with `-T uncertainty=full` also the naive
    `stderr_naive` and the per-category clustered errors and intervals (benchmarks' README
    "Standard errors" says why the clustered figures are the ones to read).
    """
    out: list[Metric] = [
        mean(),
        stderr_clustered(),
        ci_lower(wilson=wilson),
        ci_upper(wilson=wilson),
        stderr_naive(),
    ]
    if by_category:
        out += [grouped(mean(), "category", all=False), category_uncertainty(wilson=wilson)]
    return out
