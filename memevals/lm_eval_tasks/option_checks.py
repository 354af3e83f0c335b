"""lm-eval's `--metadata` read as a task's options: the known keys with their defaults, a
misspelt one refused with the closest option named.

lm-eval calls `custom_dataset(**metadata, **dataset_kwargs)`, where `metadata` is the task
YAML's `metadata` merged with `--model_args` and `--metadata` (in that order). So the loaders
accept every key, use the ones they know, ignore the rest (model arguments, `version`, ...),
and reject a key that looks like a misspelt option rather than silently running the default.
Nothing here knows a benchmark.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import logging
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from memevals.core.memory_options import MemoryOptions
from memevals.core.options import LM_EVAL_OWN_KEYS, OptionValueError, options_from

__all__ = [
    "OptionError",
    "as_bool",
    "checked",
    "checked_options",
    "keyword_names",
    "metadata_keys",
    "metadata_options",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")


class OptionError(ValueError):
    """A `--metadata` option is misspelt or has a bad value."""


def checked_options(
    task: str, given: Mapping[str, Any], known: Iterable[str], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The known options with defaults filled in; unknown keys are ignored unless they look
    like a typo of a known one (they may be model arguments, which lm-eval merges in)."""
    known = set(known)
    for key in given:
        if key in known or key in LM_EVAL_OWN_KEYS:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
        if close:
            raise OptionError(
                f"{task}: --metadata key {key!r} is not an option; did you mean {close[0]!r}? "
                f"Options: {', '.join(sorted(known))}"
            )
        logger.debug("%s: ignoring metadata key %r (not a memevals option)", task, key)
    out = dict(defaults)
    out.update({k: v for k, v in given.items() if k in known})
    return out


OptionsT = TypeVar("OptionsT")


def metadata_keys(
    cls: type[Any], *, ignored: Iterable[str] = (), aliases: Mapping[str, str] | None = None
) -> set[str]:
    """The `--metadata` keys `metadata_options` takes for `cls`: its fields (a MemoryOptions
    field as the memory knobs' names), an aliased field under its alias, less `ignored`.

    Args:
        cls: the benchmark's options dataclass.
        ignored: its fields that are no lm-eval option.
        aliases: lm-eval key -> field name.

    Returns:
        The keys.
    """
    hints = typing.get_type_hints(cls)
    keys: set[str] = set()
    for f in dataclasses.fields(cls):
        keys |= set(MemoryOptions.names()) if hints.get(f.name) is MemoryOptions else {f.name}
    renamed = set((aliases or {}).values())
    return (keys - renamed | set(aliases or {})) - set(ignored)


def metadata_options(
    cls: type[OptionsT],
    task: str,
    metadata: Mapping[str, Any],
    *,
    ignored: Mapping[str, str] | Iterable[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> OptionsT:
    """A benchmark's options (its one options class, `core.options.options_from`) from lm-eval's
    `--metadata`, which also holds the model's arguments: a key that is no option is ignored
    unless it looks like a misspelt one. `ignored` fields (Inspect-only ones) are dropped, so
    a model argument of that name cannot reach the options, with a one-line warning saying why
    where `ignored` says it (the user who meant the Inspect option learns it was not used); an
    aliased field given under its own name (e.g. a model's `seed`) is dropped with a warning
    naming the alias.

    Args:
        cls: the options dataclass.
        task: the task's name, first in every message.
        metadata: what lm-eval passed.
        ignored: fields that are no lm-eval option (a mapping: each with why).
        aliases: lm-eval key -> field name.

    Returns:
        The options; a bad one raises OptionError.
    """
    # a misspelt key is named as every lm-eval task names it, before the options are read
    checked_options(task, metadata, metadata_keys(cls, ignored=ignored, aliases=aliases), {})
    dropped = set(ignored) | set((aliases or {}).values())
    if isinstance(ignored, Mapping):
        for key in (k for k in ignored if k in metadata):
            logger.warning("%s: --metadata key %r is ignored: %s", task, key, ignored[key])
    for key, name in (aliases or {}).items():
        if name in metadata and key not in metadata:
            logger.warning(
                "%s: %r (a model argument?) is not this task's option; use --metadata "
                "'{\"%s\": ...}'",
                task,
                name,
                key,
            )
    try:
        return options_from(
            cls, metadata, where=task, strict=False, aliases=aliases, ignored=dropped
        )
    except OptionValueError as exc:
        raise OptionError(str(exc)) from exc
    except ValueError as exc:
        raise OptionError(f"{task}: {exc}") from exc


def keyword_names(fn: Callable[..., Any]) -> list[str]:
    """Option names a core builder accepts (so its new options need no glue here)."""
    return [
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def as_bool(task: str, name: str, value: Any) -> bool:
    """JSON gives booleans; `--model_args`-style strings give "true"/"false"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise OptionError(f"{task}: option {name!r} must be true or false, got {value!r}")


def checked(task: str, build: Callable[[], T]) -> T:
    """Run `build`, prefixing a ValueError from the shared core with the task name."""
    try:
        return build()
    except OptionError:
        raise
    except ValueError as exc:
        raise OptionError(f"{task}: {exc}") from exc
