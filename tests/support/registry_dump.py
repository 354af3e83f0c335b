"""What Inspect's registry holds for memevals, in a comparable form (tests of the entry point:
the stand-ins it registers against the real objects; imported by name, in a fresh interpreter
too)."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

from inspect_ai.util import registry_info

TYPES = ("task", "scorer", "metric", "solver")


def _metric_names(metrics: Any) -> Any:
    if isinstance(metrics, dict):
        return {key: _metric_names(value) for key, value in metrics.items()}
    if isinstance(metrics, list | tuple):
        return [_metric_names(m) for m in metrics]
    return registry_info(metrics).name


def describe(objects: Iterable[object], instances: bool = False) -> dict[str, Any]:
    """`type:name` -> the registry metadata (a scorer's metrics by name), and for a registered
    factory its signature and return type, for an instance its creation arguments.

    Args:
        objects: registered factories, or (with `instances`) objects they made.
        instances: describe made objects rather than factories.

    Returns:
        The descriptions, JSON-ready.
    """
    out: dict[str, Any] = {}
    for obj in objects:
        info = registry_info(obj)
        metadata = {
            key: (_metric_names(value) if key == "metrics" and instances else
                  type(value).__name__ if key == "metrics" else repr(value))
            for key, value in info.metadata.items()
        }  # fmt: skip
        entry: dict[str, Any] = {"metadata": metadata}
        if instances:
            entry["params"] = repr(getattr(obj, "__registry_params__", None))
        else:
            entry["signature"] = [
                [p.name, p.kind.name, p.annotation if isinstance(p.annotation, str) else None,
                 repr(p.default)]
                for p in inspect.signature(obj).parameters.values()  # type: ignore[arg-type]
            ]  # fmt: skip
            returns = inspect.get_annotations(obj, eval_str=True).get("return")  # type: ignore[arg-type]
            entry["returns"] = str(returns)
        out[f"{info.type}:{info.name}"] = entry
    return out
