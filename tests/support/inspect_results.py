"""Reading an Inspect log's scores the way the dialogue tests compare them across frameworks
(imported by name)."""

from __future__ import annotations

from typing import Any

from inspect_ai.log import EvalLog

__all__ = ["merged_scores", "metric_values"]


def merged_scores(sample: Any) -> dict[str, Any]:
    """Score values of all scorers merged (names with or without the `memevals/` prefix)."""
    out: dict[str, Any] = {}
    for score in sample.scores.values():
        out |= score.value
    return out


def metric_values(log: EvalLog) -> dict[tuple[str, str], float]:
    assert log.results is not None
    return {
        (s.name, name.split("/")[-1]): float(m.value)
        for s in log.results.scores
        for name, m in s.metrics.items()
    }
