"""Reading what a run produced: per-sample scores, metrics and inputs, for exact comparisons."""

from __future__ import annotations

import json
from typing import Any

from inspect_ai.log import EvalLog


def scores_by_id(log: EvalLog) -> dict[str, dict[str, Any]]:
    """sample id -> {scorer: value}; fails on a duplicated sample."""
    out: dict[str, dict[str, Any]] = {}
    for sample in log.samples or []:
        key = str(sample.id)
        assert key not in out, f"sample {key} appears twice in {log.location}"
        out[key] = {name: _plain(score.value) for name, score in (sample.scores or {}).items()}
    return out


def metrics(log: EvalLog) -> dict[str, Any]:
    """'scorer/metric' -> value for every metric of the run."""
    assert log.results is not None, f"{log.location} has no results"
    return {
        f"{s.name}/{name}": _plain(m.value)
        for s in log.results.scores
        for name, m in s.metrics.items()
    }


def inputs_by_id(log: EvalLog) -> dict[str, str]:
    """sample id -> the exact messages the model was given (role and text; message ids, which
    are random per run, left out)."""
    out: dict[str, str] = {}
    for sample in log.samples or []:
        messages = sample.input if isinstance(sample.input, list) else None
        shown = (
            [(m.role, m.text) for m in messages]
            if messages is not None
            else [("user", sample.input)]
        )
        out[str(sample.id)] = json.dumps(shown, ensure_ascii=False)
    return out


def _plain(value: Any) -> Any:
    """NaN-safe comparable form (NaN != NaN would make identical runs look different)."""
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
