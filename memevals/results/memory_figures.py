"""The memory system's figures of a run (latency, items, ingestion), from its samples."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from memevals.core.memory_harness import (
    CONTEXT_TOKENS_KEY,
    CUT_KEY,
    INGEST_KEY,
    ITEMS_KEY,
    LATENCY_KEY,
    ingest_totals,
    latency_percentiles,
)
from memevals.results.runs import system_label


def memory_figures(
    settings: Mapping[str, Any], sample_metadata: Iterable[Mapping[str, Any]]
) -> dict[str, float | int | str]:
    """The memory columns of one run.

    The system and k come from its settings, the rest from the samples' memory records. Every
    retrieval counts (each epoch's), `empty_retrievals` those that gave the model no item; the
    ingestion totals count each history once (`ingest_totals`). A figure with nothing to
    compute it from is NaN (shown as undefined).

    Args:
        settings: the run's memory settings (`memory`, `memory_version`, `memory_args`,
            `top_k`).
        sample_metadata: every sample's metadata.

    Returns:
        The figures; empty for a run without a memory system.
    """
    records = [md for md in sample_metadata if LATENCY_KEY in md]
    if not records and not settings.get("memory"):
        return {}
    out: dict[str, float | int | str] = {"system": system_label(settings)}
    if settings.get("top_k") is not None:
        out["k"] = int(settings["top_k"])
    out |= latency_percentiles([float(md[LATENCY_KEY]) for md in records])

    def mean(key: str) -> float:
        values = [float(md[key]) for md in records if key in md]
        return sum(values) / len(values) if values else math.nan

    out["mean_items"] = mean(ITEMS_KEY)
    # a retrieval that returned nothing is the system's answer (it found nothing), counted so
    # that a low score can be told apart from a system that gives the model no context
    out["empty_retrievals"] = sum(
        1 for md in records if ITEMS_KEY in md and int(md[ITEMS_KEY]) == 0
    )
    out["items_cut"] = sum(int(md.get(CUT_KEY, 0)) for md in records)
    out["mean_context_tokens"] = mean(CONTEXT_TOKENS_KEY)
    out |= ingest_totals([md[INGEST_KEY] for md in records if INGEST_KEY in md])
    return out
