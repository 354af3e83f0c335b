"""Run labels: what a run's context, memory system and settings are called in tables."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from memevals.core.agent_memory import AgentOptions
from memevals.core.benchmark import Benchmark
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import AGENT_CONTEXT, OPTIONS
from memevals.results.reading.model import Run
from memevals.results.reading.records import PROTOCOL_OPTION, plain

#: Keys of the memory settings a task logs that are outcomes, not settings.
_MEMORY_OUTCOME = re.compile(r".*_total$|^prompt_tokens")
#: Context settings a task logs besides the options that decide what the model saw.
_USED_EXTRA = ("retrieval_unit", "embedding_model", "memory_version")


def system_label(settings: Mapping[str, Any]) -> str:
    """`<name> <version>` of a memory system under test, with its arguments when it got any.

    Args:
        settings: the memory settings (`memory`, `memory_version`, `memory_args`).

    Returns:
        The label ("" without a memory system).
    """
    label = " ".join(str(settings[k]) for k in ("memory", "memory_version") if settings.get(k))
    args = settings.get("memory_args")
    if isinstance(args, Mapping) and args:
        label += " (" + ", ".join(f"{k}={v}" for k, v in sorted(args.items())) + ")"
    elif args:
        label += f" ({args})"
    return label


def memory_settings(run: Run) -> dict[str, Any]:
    """A run's memory system under test and its settings (empty without one): `memory`,
    `memory_version`, `memory_args` and `top_k` (the record's default when not logged).

    Args:
        run: the run.

    Returns:
        The settings.
    """
    memory = run.setting("memory")
    if not memory:
        return {}
    defaults = run.record.context_defaults if run.record else {}
    return {
        "memory": memory,
        "memory_version": run.setting("memory_version"),
        "memory_args": run.used.get("memory_args", run.options.get("memory_args")),
        "top_k": run.setting("top_k", defaults.get("top_k")),
    }


def context_label(run: Run) -> str:
    """The context a run's model saw, with the options that change what it saw.

    The mode with its settings as the task logged them, else as given, else the record's
    defaults (`rag(dialog, k=5, bm25)`, `truncated(4000)`, `memory(bm25, k=5)`), then each of
    the record's `label_options` set to another value than its default (`+gap-fix`,
    `+variant=oracle`).

    Args:
        run: the run.

    Returns:
        The label.
    """
    defaults = run.record.context_defaults if run.record else {}

    def setting(name: str) -> Any:
        return run.setting(name, defaults.get(name))

    def mode(name: str, *parts: Any) -> str:
        shown = [str(p) for p in parts if p is not None and not str(p).endswith("=None")]
        return f"{name}({', '.join(shown)})" if shown else name

    context = str(setting("context") or "full")
    if setting("memory"):
        context = mode("memory", setting("memory"), f"k={setting('top_k')}")
    elif context == "rag":
        context = mode(
            "rag", setting("retrieval_unit"), f"k={setting('top_k')}", setting("retriever")
        )
    elif context == "truncated":
        context = mode("truncated", setting("max_context_tokens"))
    elif context == AGENT_CONTEXT:
        context = f"{AGENT_CONTEXT}({agent_mode(agent_settings(run))})"
    extras: list[str] = []
    for name, default in _label_options(run.record).items():
        value = plain(run.option(name, default))
        if value == plain(default):
            continue
        dashed = name.replace("_", "-")
        if isinstance(value, bool):
            extras.append(dashed if value else f"no-{dashed}")
        else:
            extras.append(f"{name}={value}")
    return context + "".join(f" +{e}" for e in extras)


def agent_settings(run: Run) -> dict[str, Any]:
    """The `agent_*` settings of a `context=agent` run: as its task logged them (its `agent`
    metadata, defaults filled in), else as given (an option not given: its default).

    Args:
        run: the run.

    Returns:
        Setting name -> value; empty for a run of another context mode.
    """
    if run.setting("context") != AGENT_CONTEXT:
        return {}
    logged = run.task_metadata.get("agent")
    source = logged if isinstance(logged, Mapping) else run.options
    out = {
        k: plain(v) for k, v in sorted(source.items()) if k.startswith("agent_") and v is not None
    }
    out.setdefault("agent_memory", AgentOptions().memory)
    return out


def agent_mode(settings: Mapping[str, Any]) -> str:
    """An agent run's mode as tables name it: `files`, `mcp`, `compaction, summary,
    window=16000`, `files+compaction, auto, window=8000`.

    Args:
        settings: its `agent_settings`.

    Returns:
        The name ("" without settings).
    """
    if not settings:
        return ""
    parts = [str(settings["agent_memory"])]
    if settings.get("agent_compaction") is not None:
        parts.append(str(settings["agent_compaction"]))
    if settings.get("agent_window") is not None:
        parts.append(f"window={settings['agent_window']}")
    return ", ".join(parts)


def _label_options(record: Benchmark | None) -> Mapping[str, Any]:
    """The record's label options but the protocol (a column and a factor of its own)."""
    options = record.label_options if record else {}
    return {k: v for k, v in options.items() if k != PROTOCOL_OPTION}


def option_default(record: Benchmark | None, name: str) -> Any:
    """What an option not given (or given as None) stands for: the record's context default
    (`top_k` 5), else its label option's, else the shared option's (memevals.core.options),
    else the memory options' field default.

    Args:
        record: the run's record, or None.
        name: the option name.

    Returns:
        The default (None where none is declared).
    """
    if record is not None:
        for declared in (record.context_defaults, record.label_options):
            if name in declared:
                return declared[name]
    if name in OPTIONS:
        return OPTIONS[name].default
    return getattr(MemoryOptions(), name, None)


def effective(record: Benchmark | None, name: str, value: Any) -> Any:
    """An option's value made comparable: as given (`plain`), its default when not given or
    None, so that `top_k=5` and no `top_k` are one setting where 5 is the default.

    Args:
        record: the run's record, or None.
        name: the option name.
        value: the value given (None: not given).

    Returns:
        The value.
    """
    given = plain(value)
    return plain(option_default(record, name)) if given is None else given


def effective_options(run: Run) -> dict[str, Any]:
    """A run's options (Inspect task arguments, lm-eval metadata), each as `effective` makes
    it.

    Args:
        run: the run.

    Returns:
        Option name -> value.
    """
    return {name: effective(run.record, name, value) for name, value in run.options.items()}


def with_settings(run: Run) -> Run:
    """The run with its compared option groups: the context options as given (a missing or
    None one is its default: `option_default`) and the record's `label_options` as the run
    used them; an agent run's `agent_settings` among its context settings (given and used),
    its mode in its label (`<model> + agent files (<file>)`)."""
    context = {
        name: effective(run.record, name, run.options.get(name)) for name in MemoryOptions.names()
    }
    labelled = _label_options(run.record)
    task = {k: plain(run.option(k, d)) for k, d in labelled.items()}
    settings = {"context settings": context, "task options": task}
    agent = agent_settings(run)
    if not agent:
        return replace(run, settings=settings)
    # an agent run's own settings are context settings (two agent modes differ in context),
    # and its label names the mode as a memory system's names the system
    context.update(agent)
    used = {**(run.used_context or {}), **agent} if run.used_context is not None else None
    label = f"{run.model} + {AGENT_CONTEXT} {agent_mode(agent)} ({Path(run.path).name})"
    return replace(run, settings=settings, used_context=used, label=label)


def used_context(used: Mapping[str, Any]) -> dict[str, Any] | None:
    """The context settings a task logged it used, outcomes left out."""
    names = set(MemoryOptions.names()) | set(_USED_EXTRA)
    kept = {k: v for k, v in used.items() if k in names and not _MEMORY_OUTCOME.match(k)}
    return kept or None


def subject_of(settings: Mapping[str, Any]) -> str:
    """` + memory <system> [version]` for a run whose context a memory system gave, else ""."""
    if not settings.get("memory"):
        return ""
    version = settings.get("memory_version")
    return f" + memory {settings['memory']}" + (f" {version}" if version else "")
