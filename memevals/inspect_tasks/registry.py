"""Inspect entry point: imports every task module, then registers bare-name aliases.

Inspect names an installed package's tasks `memevals/<task>`. So that `inspect eval locomo`
works too, each task is also registered under its bare name, unless that name is taken.
That uses Inspect's private `task_register`; it is guarded, so if Inspect changes it the
namespaced names still work and a warning says why the bare ones do not.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from memevals.inspect_tasks import judge as _judge  # noqa: F401  (registers llm_judge)
from memevals.inspect_tasks import locomo as _locomo
from memevals.inspect_tasks import locomo_dialogue as _dialogue
from memevals.inspect_tasks import locomo_event_summary as _event_summary
from memevals.inspect_tasks import locomo_plus as _locomo_plus
from memevals.inspect_tasks import longmemeval as _longmemeval

logger = logging.getLogger(__name__)

TASK_MODULES = [_locomo, _locomo_plus, _longmemeval, _event_summary, _dialogue]

#: The tasks memevals provides (bare names).
TASK_NAMES: list[str] = [name for mod in TASK_MODULES for name in mod.__all_tasks__]


def _alias_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A distinct callable with fn's signature; the task it builds keeps fn's namespaced name."""

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return alias


def _register_bare_aliases() -> list[str]:
    """Register bare-name aliases; returns the aliases added."""
    try:
        from inspect_ai._eval.registry import task_register
        from inspect_ai._util.registry import registry_has, registry_info
    except ImportError as exc:  # pragma: no cover - depends on Inspect internals
        logger.warning("memevals: bare task names unavailable (%s); use memevals/<task>", exc)
        return []
    added: list[str] = []
    for mod in TASK_MODULES:
        for name in mod.__all_tasks__:
            fn: Callable[..., Any] = getattr(mod, name)
            try:
                info = registry_info(fn)
                if "/" not in info.name or registry_has("task", name):
                    continue  # imported from a checkout: already bare, or the name is taken

                attribs = info.metadata.get("attribs", {})
                params = info.metadata.get("params", [])
                # `wraps` copied the registry tag; task_register gives the alias its own
                task_register(_alias_of(fn), name, attribs, params)
                added.append(name)
            except Exception as exc:  # pragma: no cover - depends on Inspect internals
                logger.warning(
                    "memevals: could not alias %s (%s); use memevals/%s", name, exc, name
                )
    return added


BARE_ALIASES = _register_bare_aliases()
