"""The agent mode's figures of a run (`-T context=agent`, docs/agent_memory.md): its mode, what
its write passes cost, what they kept, and the answer passes' tool calls, from its samples.

Every sample of a history logs the same write-pass record (`memevals.core.agent_memory.
WriteRecord`, under the sample metadata's `AGENT_KEY`), each epoch again, so the records are
counted once per write pass (by its cache key). A record read from the disk cache (`cached`)
holds the counts of the run that wrote it: its calls, tokens and seconds were not spent by this
run and are left out of the cost, as the task's own `agent_write` metrics leave them out; what
the passes kept (compactions, files, bytes, message tokens) counts every history.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from memevals.core.agent_memory import AGENT_KEY
from memevals.results.runs import Run, agent_mode, agent_settings

__all__ = ["AGENT_COLUMNS", "agent_figures", "logged_files", "write_records"]

#: The agent figures (`agent_figures` keys) with their Markdown titles, in table order.
AGENT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("mode", "agent memory"),
    ("histories", "agent histories"),
    ("write_passes", "write passes"),
    ("write_cached", "write passes cached"),
    ("write_seconds", "write s"),
    ("write_model_calls", "write model calls"),
    ("write_input_tokens", "write input tokens"),
    ("write_output_tokens", "write output tokens"),
    ("write_tool_calls", "write tool calls"),
    ("steps_exhausted", "write steps exhausted"),
    ("compactions", "compactions"),
    ("memory_files", "memory files"),
    ("memory_bytes", "memory bytes"),
    ("message_tokens", "memory message tokens"),
    ("answer_tool_calls", "answer tool calls"),
)


def write_records(sample_metadata: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The distinct write-pass records of a run's samples, one per cache key, first seen first.

    Args:
        sample_metadata: every sample's metadata (each epoch).

    Returns:
        The records.
    """
    by_key: dict[str, Mapping[str, Any]] = {}
    for md in sample_metadata:
        agent = md.get(AGENT_KEY)
        write = agent.get("write") if isinstance(agent, Mapping) else None
        if isinstance(write, Mapping) and "key" in write:
            by_key.setdefault(str(write["key"]), write)
    return list(by_key.values())


def _answer_calls(sample_metadata: Iterable[Mapping[str, Any]]) -> int:
    total = 0
    for md in sample_metadata:
        agent = md.get(AGENT_KEY)
        calls = agent.get("answer_tool_calls") if isinstance(agent, Mapping) else None
        if isinstance(calls, Mapping):
            total += sum(int(n) for n in calls.values())
    return total


def agent_figures(run: Run) -> dict[str, float | int | str]:
    """The agent columns of one run (see the module doc for what is counted once).

    Args:
        run: the run.

    Returns:
        The figures (AGENT_COLUMNS keys); empty for a run of another context mode.
    """
    settings = agent_settings(run)
    if not settings:
        return {}
    records = write_records(run.epoch_metadata)
    fresh = [r for r in records if not r.get("cached")]

    def total(field: str, rows: list[Mapping[str, Any]]) -> int:
        return sum(int(r.get(field) or 0) for r in rows)

    return {
        "mode": agent_mode(settings),
        "histories": len(records),
        "write_passes": len(fresh),
        "write_cached": len(records) - len(fresh),
        "write_seconds": round(sum(float(r.get("seconds") or 0.0) for r in fresh), 3),
        "write_model_calls": total("model_calls", fresh),
        "write_input_tokens": total("input_tokens", fresh),
        "write_output_tokens": total("output_tokens", fresh),
        "write_tool_calls": sum(sum((r.get("tool_calls") or {}).values()) for r in fresh),
        "steps_exhausted": total("steps_exhausted", fresh),
        "compactions": total("compactions", records),
        "memory_files": total("memory_files", records),
        "memory_bytes": total("memory_bytes", records),
        "message_tokens": total("message_tokens", records),
        "answer_tool_calls": _answer_calls(run.epoch_metadata),
    }


def logged_files(sample_metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The stored memory one agent-mode sample logs, as far as it is well formed: each file's
    path, its text (cut by the task) and its whole length.

    Args:
        sample_metadata: the sample's metadata.

    Returns:
        The files, in the logged order (empty for a sample of another context mode).
    """
    agent = sample_metadata.get(AGENT_KEY)
    files = agent.get("memory") if isinstance(agent, Mapping) else None
    out: list[dict[str, Any]] = []
    for entry in files if isinstance(files, list) else []:
        if isinstance(entry, Mapping) and isinstance(entry.get("text"), str):
            chars = entry.get("chars")
            out.append(
                {
                    "path": str(entry.get("path", "")),
                    "text": entry["text"],
                    "chars": chars if isinstance(chars, int) else len(entry["text"]),
                }
            )
    return out
