"""Inspect entry point: imports every task module, then registers bare-name aliases.

Inspect names an installed package's tasks `memevals/<task>`. So that `inspect eval locomo`
works too, each task is also registered under its bare name, unless that name is taken.
That uses Inspect's private `task_register` (through memevals.inspect_tasks.inspect_internals,
which guards it), so if Inspect changes it the namespaced names still work and a warning says
why the bare ones do not.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

from inspect_ai.util import registry_info

from memevals.inspect_tasks import judge as _judge  # noqa: F401  (registers llm_judge)
from memevals.inspect_tasks import judge_check as _judge_check
from memevals.inspect_tasks import locomo as _locomo
from memevals.inspect_tasks import locomo_dialogue as _dialogue
from memevals.inspect_tasks import locomo_event_summary as _event_summary
from memevals.inspect_tasks import locomo_plus as _locomo_plus
from memevals.inspect_tasks import longmemeval as _longmemeval
from memevals.inspect_tasks.inspect_internals import (
    InspectInternalsError,
    register_task,
    task_registered,
)

logger = logging.getLogger(__name__)

TASK_MODULES = [_locomo, _locomo_plus, _longmemeval, _event_summary, _dialogue, _judge_check]


def _alias_of(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A distinct callable with fn's signature; the task it builds keeps fn's namespaced name."""

    @functools.wraps(fn)
    def alias(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return alias


def _register_bare_aliases() -> None:
    """Register a bare-name alias for each task whose bare name is free."""
    for mod in TASK_MODULES:
        for name in mod.__all_tasks__:
            fn: Callable[..., Any] = getattr(mod, name)
            try:
                info = registry_info(fn)
                if "/" not in info.name or task_registered(name):
                    continue  # imported from a checkout: already bare, or the name is taken

                attribs = info.metadata.get("attribs", {})
                params = info.metadata.get("params", [])
                # `wraps` copied the registry tag; register_task gives the alias its own
                register_task(_alias_of(fn), name, attribs, params)
            except InspectInternalsError as exc:  # pragma: no cover - depends on Inspect
                logger.warning(
                    "memevals: bare task names unavailable (%s); use memevals/<task>", exc
                )
                return
            except Exception as exc:  # pragma: no cover - depends on Inspect internals
                logger.warning(
                    "memevals: could not alias %s (%s); use memevals/%s", name, exc, name
                )


_register_bare_aliases()
