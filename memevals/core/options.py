"""The task options several benchmarks share, each declared once with its help text.

A knob such as `context`, `top_k`, `memory` or `judge_runs` means the same thing in every task
that takes it, so its name, type, default, help and allowed values live here and nowhere else:
the Inspect tasks' docstring entries and the parameter tables of the benchmark READMEs are
rendered from these declarations (memevals.inspect_tasks.tasks, memevals.inspect_tasks.
option_docs), and tests/inspect_tasks/test_option_drift.py checks every task signature and
every lm-eval `--metadata` key against them. What differs between benchmarks is filled in from
the benchmark (its defaults, e.g. `top_k` 5, and its values, e.g. its context modes): help texts
name those with `{default}` and `{values}`.

Options one benchmark alone has (`gold`, `variant`, ...) are documented in that benchmark's
task and README. This module names no benchmark and imports no framework.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from memevals.core import protocol as _protocol
from memevals.core.memory_options import MemoryOptions
from memevals.core.retrievers import DEFAULT_EMBEDDING_MODEL, RETRIEVERS
from memevals.core.tokens import TOKEN_COUNTERS

__all__ = [
    "AGENT_COMPACTIONS",
    "AGENT_CONTEXT",
    "AGENT_DEFAULTS",
    "AGENT_MEMORY_MODES",
    "AGENT_OPTIONS",
    "DEFAULT_PROTOCOL",
    "GROUPS",
    "LM_EVAL_ALIASES",
    "OPTIONS",
    "PROTOCOLS",
    "UNCERTAINTY_LEVELS",
    "Option",
    "OptionValueError",
    "checked_protocol",
    "checked_value",
    "declared",
    "format_default",
    "lm_eval_aliases",
    "options_from",
    "protocol_fix",
    "render_help",
    "shared_options",
]

#: What a shared option is about: how the history is given, a memory system under test, the
#: LLM judge, which protocol (the benchmark's official one or memevals' own) the task follows,
#: or what the run reports.
GROUPS = ("context", "memory", "judge", "protocol", "report")

#: `protocol=official`: the benchmark's published prompts and settings, read from the pinned
#: upstream files; `protocol=memevals`: memevals' own prompts and settings.
PROTOCOLS: tuple[str, ...] = _protocol.NAMES
DEFAULT_PROTOCOL = _protocol.DEFAULT.name

#: lm-eval `--metadata` key -> the option it sets, where lm-eval names an option otherwise:
#: lm-eval merges the model's arguments (vLLM's `seed`) into the metadata, so a seed of the
#: documents needs a name of its own (the two-option order's, the held-out turns' draw). The
#: lm-eval tasks take theirs (`lm_eval_aliases`); the run reader maps any back.
LM_EVAL_ALIASES: Mapping[str, str] = MappingProxyType({"choice_seed": "seed", "turn_seed": "seed"})


def lm_eval_aliases(*keys: str) -> dict[str, str]:
    """The aliases an lm-eval task takes, from LM_EVAL_ALIASES.

    Args:
        *keys: its lm-eval keys that name another option.

    Returns:
        lm-eval key -> option name.
    """
    return {key: LM_EVAL_ALIASES[key] for key in keys}


#: `uncertainty=default`: per score the mean, the clustered standard error and its 95 %
#: interval, and the per-category means; `full` adds the naive standard error and every
#: category's clustered error and interval.
UNCERTAINTY_LEVELS: tuple[str, ...] = ("default", "full")

#: `context=agent`: the model under test reads the history session by session and keeps its own
#: memory (docs/agent_memory.md); its knobs are the `agent_*` options below.
AGENT_CONTEXT = "agent"
#: What the model keeps its memory in: Inspect's memory tool (`/memories` files), its context
#: compacted by an Inspect strategy, both, or the tools of an MCP memory server.
AGENT_MEMORY_MODES: tuple[str, ...] = ("files", "compaction", "files+compaction", "mcp")
#: Inspect's compaction strategies, by the name `agent_compaction` takes.
AGENT_COMPACTIONS: tuple[str, ...] = ("auto", "summary", "trim", "edit", "native")
#: The agent knobs' defaults where none is given.
AGENT_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "agent_memory": "files",
        "agent_steps": 8,
        "agent_compaction": "auto",
        "agent_window": 16000,
        "agent_write_tokens": 2048,
    }
)
_AGENT_LM_EVAL = "lm-eval has no tool loop, so it has no context=agent (docs/lm-eval.md)"

_JUDGE_LM_EVAL = (
    "not an lm-eval option: lm-eval runs are judged afterwards (python -m memevals.tools.judge)"
)


@dataclass(frozen=True)
class Option:
    """One shared task option: what a `-T name=value` (Inspect) or `--metadata` key (lm-eval)
    means wherever it is taken."""

    #: the option's name, the same in both frameworks unless `lm_eval` says otherwise
    name: str
    #: its annotation as task signatures spell it (e.g. "int | None")
    type: str
    #: its default in every task signature (None where the benchmark's default applies), or
    #: the usual one where `per_benchmark` lets each task's signature name its own
    default: Any
    #: the help text; `{default}` is the benchmark's default, `{values}` its allowed values
    help: str
    #: one of GROUPS
    group: str
    #: the allowed values where they are the same for every benchmark (else the benchmark's)
    values: tuple[str, ...] = ()
    #: the lm-eval `--metadata` key ("" = `name`); None when lm-eval does not take it
    #: (`lm_eval_note` says why)
    lm_eval: str | None = ""
    lm_eval_note: str = ""
    #: what the docs show as the default when neither the signature nor the benchmark names
    #: one (the value a None default stands for, e.g. the embedding model loaded)
    doc_default: Any = None
    #: each benchmark's signature sets its own default (e.g. a judge's token limit)
    per_benchmark: bool = False

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"option {self.name!r}: group {self.group!r} is not one of {GROUPS}")
        if self.lm_eval == "":
            object.__setattr__(self, "lm_eval", self.name)
        if self.lm_eval is None and not self.lm_eval_note:
            raise ValueError(f"option {self.name!r}: say why lm-eval does not take it")


def _options(*options: Option) -> Mapping[str, Option]:
    return MappingProxyType({o.name: o for o in options})


#: Every shared option, by name, in the order task signatures and README tables list them.
OPTIONS: Mapping[str, Option] = _options(
    Option(
        "context",
        "str",
        "full",
        "how the history is given to the model: {values} (default {default}; the README's "
        "context modes say what each shows).",
        "context",
    ),
    Option(
        "max_context_tokens",
        "int | None",
        None,
        "context=truncated only: the token budget of the history (default {default}).",
        "context",
    ),
    Option(
        "retrieval_unit",
        "str | None",
        None,
        "context=rag only: the unit retrieved, {values} (default {default}).",
        "context",
    ),
    Option(
        "top_k",
        "int | None",
        None,
        "context=rag: units retrieved per sample; with memory, the items the system gives "
        "(default {default}).",
        "context",
    ),
    Option(
        "retriever",
        "str | None",
        None,
        "context=rag only: {values} (default {default}).",
        "context",
        values=RETRIEVERS,
    ),
    Option(
        "embedding_model",
        "str | None",
        None,
        "retriever=embedding only: a local sentence-transformers folder or a Hugging Face id "
        "(default {default}).",
        "context",
        doc_default=DEFAULT_EMBEDDING_MODEL,
    ),
    Option(
        "token_counter",
        "str",
        "auto",
        "counter of token budgets and prompt sizes: {values} (default {default}: cl100k_base "
        "when the tokens extra is installed, else approx).",
        "context",
        values=TOKEN_COUNTERS,
    ),
    Option(
        "memory",
        "str | None",
        None,
        "a memory system under test (bm25, embedding, observations, summaries, mem0 or any "
        "registered in the memevals.memory_systems entry-point group): it gives the context "
        "instead of `context`, top_k items per sample (docs/memory_systems.md).",
        "memory",
    ),
    Option(
        "memory_args",
        "str | dict[str, Any] | None",
        None,
        "with memory: the system's arguments, read as Inspect reads -M: key=value pairs, a "
        "mapping or a .yaml/.json file.",
        "memory",
    ),
    Option(
        "memory_cache",
        "bool | None",
        None,
        "with memory: keep each history's ingestion in the disk cache (default {default}).",
        "memory",
        doc_default=True,
    ),
    Option(
        "memory_answers",
        "bool | None",
        None,
        "with memory: the system answers by itself (its answer()) instead of the model reading "
        "its context (Inspect only: lm-eval generates every answer itself).",
        "memory",
        doc_default=False,
    ),
    Option(
        "agent_memory",
        "str | None",
        None,
        "context=agent only: where the model keeps its memory, {values} (default {default}; "
        "docs/agent_memory.md).",
        "memory",
        values=AGENT_MEMORY_MODES,
        lm_eval=None,
        lm_eval_note=_AGENT_LM_EVAL,
        doc_default=AGENT_DEFAULTS["agent_memory"],
    ),
    Option(
        "agent_steps",
        "int | None",
        None,
        "context=agent only: the model's tool-calling rounds per session and per answer "
        "(default {default}).",
        "memory",
        lm_eval=None,
        lm_eval_note=_AGENT_LM_EVAL,
        doc_default=AGENT_DEFAULTS["agent_steps"],
    ),
    Option(
        "agent_compaction",
        "str | None",
        None,
        "agent_memory=compaction or files+compaction: Inspect's strategy, {values} (default "
        "{default}).",
        "memory",
        values=AGENT_COMPACTIONS,
        lm_eval=None,
        lm_eval_note=_AGENT_LM_EVAL,
        doc_default=AGENT_DEFAULTS["agent_compaction"],
    ),
    Option(
        "agent_window",
        "int | None",
        None,
        "agent_memory=compaction or files+compaction: the context size in tokens that "
        "triggers compaction (default {default}).",
        "memory",
        lm_eval=None,
        lm_eval_note=_AGENT_LM_EVAL,
        doc_default=AGENT_DEFAULTS["agent_window"],
    ),
    Option(
        "agent_write_tokens",
        "int | None",
        None,
        "context=agent only: the most tokens of each write-pass reply and of each compaction "
        "summary (default {default}; a benchmark's answer limit would cut every note short).",
        "memory",
        lm_eval=None,
        lm_eval_note=_AGENT_LM_EVAL,
        doc_default=AGENT_DEFAULTS["agent_write_tokens"],
    ),
    Option(
        "agent_mcp",
        "str | None",
        None,
        "agent_memory=mcp only: the memory server, a command line (stdio) or an http(s):// "
        "URL (docs/agent_memory.md).",
        "memory",
        lm_eval=None,
        lm_eval_note=_AGENT_LM_EVAL,
    ),
    Option(
        "judge",
        "bool",
        False,
        "also score with the LLM judge (model role grader; falls back to the model under test).",
        "judge",
        lm_eval=None,
        lm_eval_note=_JUDGE_LM_EVAL,
    ),
    Option(
        "judge_runs",
        "int",
        1,
        "judge each sample this many times (distinct seeds) and report the mean score and the "
        "judges' agreement (docs/judges.md#repeated-judging).",
        "judge",
        lm_eval=None,
        lm_eval_note=_JUDGE_LM_EVAL,
    ),
    Option(
        "judge_max_tokens",
        "int",
        256,
        "the judge's token limit per verdict (default {default}).",
        "judge",
        lm_eval=None,
        lm_eval_note=_JUDGE_LM_EVAL,
        per_benchmark=True,
    ),
    Option(
        "protocol",
        "str",
        DEFAULT_PROTOCOL,
        "official (the benchmark's published prompts and settings, read from the pinned "
        "upstream files) or memevals (memevals' own prompts and settings); default "
        "{default}.",
        "protocol",
        values=PROTOCOLS,
    ),
    Option(
        "uncertainty",
        "str",
        "default",
        "the figures reported per score: default (the mean, the clustered standard error and "
        "its 95 % interval, the per-category means) or full (also the naive standard error and "
        "each category's clustered error and interval).",
        "report",
        values=UNCERTAINTY_LEVELS,
        lm_eval=None,
        lm_eval_note="lm-eval reports its own aggregates (with <metric>_stderr_clustered)",
    ),
)


#: The agent knobs, in the order task signatures list them.
AGENT_OPTIONS: tuple[str, ...] = (
    "agent_memory", "agent_steps", "agent_compaction", "agent_window", "agent_write_tokens",
    "agent_mcp",
)  # fmt: skip


class OptionValueError(ValueError):
    """A shared option was given a value it does not take."""


def declared(name: str) -> Option | None:
    """The declaration of a shared option.

    Args:
        name: an option name.

    Returns:
        Its Option, or None when `name` is not a shared option.
    """
    return OPTIONS.get(name)


def shared_options(names: Iterable[str]) -> list[Option]:
    """The shared options among `names`, in the order given.

    Args:
        names: option names (a task's parameters, an lm-eval task's keys).

    Returns:
        Their declarations, skipping the names that are not shared options.
    """
    return [OPTIONS[n] for n in names if n in OPTIONS]


def format_default(value: Any) -> str:
    """A default as the docs write it: true/false, a number, a name, or – for none.

    Args:
        value: the default value.

    Returns:
        Its text.
    """
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _or_list(values: Sequence[str]) -> str:
    if len(values) < 2:
        return "".join(values)
    return f"{', '.join(values[:-1])} or {values[-1]}"


def render_help(option: Option, default: Any = None, values: Sequence[str] | None = None) -> str:
    """An option's help text with a benchmark's default and allowed values filled in.

    Args:
        option: the declaration.
        default: the benchmark's default (None: the declared default).
        values: the benchmark's allowed values (None: the declared ones).

    Returns:
        The help text.
    """
    shown = default
    for fallback in (option.default, option.doc_default):
        shown = fallback if shown is None else shown
    allowed = option.values if values is None else tuple(values)
    if "{values}" in option.help and not allowed:
        raise ValueError(f"option {option.name!r}: its help needs the benchmark's values")
    return option.help.format(default=format_default(shown), values=_or_list(allowed))


def checked_value(name: str, value: object, allowed: Sequence[str] | None = None) -> str:
    """`value` if it is one of the option's allowed values, else an OptionValueError naming
    the option, the allowed values and the closest one.

    Args:
        name: a shared option with declared values (or any name, given `allowed`).
        value: the value given.
        allowed: the allowed values (default: the declared ones).

    Returns:
        The value, as a str.
    """
    choices = tuple(allowed) if allowed is not None else OPTIONS[name].values
    if isinstance(value, str) and value in choices:
        return value
    close = difflib.get_close_matches(str(value), choices, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise OptionValueError(
        f"{name}={value!r} is not supported{hint}; allowed values: {', '.join(choices)}"
    )


def checked_protocol(value: object) -> str:
    """The `protocol` value, checked (official or memevals) by memevals.core.protocol.resolve.

    Args:
        value: the value given (a name or a Protocol).

    Returns:
        Its name.
    """
    try:
        return _protocol.resolve(value).name
    except _protocol.ProtocolError as exc:
        raise OptionValueError(str(exc)) from exc


def protocol_fix(protocol: object, *, lm_eval: bool = True) -> str:
    """How a user asks for `protocol` (memevals.core.protocol.Protocol.fix).

    Args:
        protocol: the protocol the option needs (a Protocol or its name).
        lm_eval: also name lm-eval's spelling (false for a message only Inspect shows).

    Returns:
        E.g. `add -T protocol=memevals (lm-eval: --metadata '{"protocol": "memevals"}')`.
    """
    return _protocol.resolve(protocol).fix(lm_eval=lm_eval)


# ---------------------------------------------------------------------------------------------
# One options path: a benchmark's options class from Inspect's -T mapping or lm-eval's
# --metadata alike

OptionsT = TypeVar("OptionsT")

#: Keys lm-eval itself puts into the metadata it passes to a task's dataset function.
LM_EVAL_OWN_KEYS = frozenset({"version", "config_source", "_metadata"})


def _coerce(where: str, name: str, hint: Any, value: Any) -> Any:
    """`value` as the field's type wants it: a Protocol resolved from its name, a bool or an
    int from lm-eval's string spelling; anything else as given."""
    if value is None:
        return None
    args = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    if _protocol.Protocol in args:
        try:
            return _protocol.resolve(value)
        except _protocol.ProtocolError as exc:
            raise OptionValueError(f"{where}: {exc}") from exc
    if bool in args and isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1", "yes", "false", "0", "no"):
            return low in ("true", "1", "yes")
        raise OptionValueError(f"{where}: option {name!r} must be true or false, got {value!r}")
    if int in args and bool not in args and isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise OptionValueError(
                f"{where}: option {name!r} must be a whole number, got {value!r}"
            ) from None
    return value


def _refuse_agent(where: str, values: Mapping[str, Any]) -> None:
    """The Inspect tasks take `context=agent` out before their options are read
    (memevals.core.agent_memory.host_values): what reaches here is lm-eval's `--metadata`."""
    if values.get("context") == AGENT_CONTEXT:
        raise OptionValueError(
            f"{where}: context={AGENT_CONTEXT} needs a tool loop, which lm-eval does not have; "
            "run it with Inspect (docs/lm-eval.md#no-agent-mode)"
        )
    given = [k for k in AGENT_OPTIONS if values.get(k) is not None]
    if given:  # an agent option alone would be dropped unseen: lm-eval has no agent mode
        raise OptionValueError(
            f"{where}: {given[0]} is an option of context={AGENT_CONTEXT}, which needs a tool "
            "loop that lm-eval does not have; run it with Inspect (docs/lm-eval.md#no-agent-mode)"
        )


def options_from(
    cls: type[OptionsT],
    values: Mapping[str, Any],
    *,
    where: str,
    strict: bool = True,
    aliases: Mapping[str, str] | None = None,
    ignored: Iterable[str] = (),
) -> OptionsT:
    """A benchmark's options (a dataclass) from a mapping of option values: Inspect's `-T`
    arguments (a task's `locals()`) or lm-eval's `--metadata`, with the class's one set of
    defaults for what is not given.

    A field typed `MemoryOptions` is built from the same mapping (the memory knobs carry their
    own names); a field typed `Protocol` is resolved from its name. A key that is no field is an
    error naming the closest one; with `strict=False` (lm-eval, which merges the model's
    arguments into the metadata) only a key that looks like a misspelt field is.

    Args:
        cls: the options dataclass.
        values: option name -> value.
        where: what the values configure, for messages (e.g. the task's name).
        strict: refuse every unknown key (Inspect) or only near-misses (lm-eval).
        aliases: given key -> field name (e.g. lm-eval's `choice_seed` for `seed`).
        ignored: fields that are no option here (an Inspect-only one under lm-eval): a value
            given for one is dropped, and they are not offered as options in messages.

    Returns:
        The options.
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls!r} is not an options dataclass")
    _refuse_agent(where, values)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    memory_field = next((n for n in names if hints.get(n) is MemoryOptions), None)
    known = set(names) | set(aliases or {})
    if memory_field is not None:
        known = (known - {memory_field}) | set(MemoryOptions.names())
    known -= set(ignored)
    values = {k: v for k, v in values.items() if k not in set(ignored)}
    given = {(aliases or {}).get(k, k): v for k, v in values.items()}
    # a message names an option as it was given (lm-eval's `turn_seed`, not the field `seed`)
    spelled = {(aliases or {}).get(k, k): k for k in values}
    for key in values:
        if key in known or key in LM_EVAL_OWN_KEYS:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.6 if strict else 0.8)
        if strict or close:
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise OptionValueError(
                f"{where}: {key!r} is not an option{hint}; options: {', '.join(sorted(known))}"
            )
    kwargs: dict[str, Any] = {}
    for name in names:
        if name == memory_field:
            kwargs[name] = MemoryOptions.from_mapping(given)
        elif name in given:
            kwargs[name] = _coerce(where, spelled[name], hints.get(name), given[name])
    return cls(**kwargs)
