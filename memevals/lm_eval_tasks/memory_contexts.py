"""A memory system's contexts put into lm-eval's documents while they are built (lm-eval has no
memory model and no tool loop, so retrieval happens before the first document is scored)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence

from memevals.core.memory_harness import (
    INGEST_KEY,
    LATENCY_KEY,
    MemorySubject,
    empty_retrievals,
    ingest_totals,
    latency_percentiles,
)
from memevals.core.memory_system import MemorySystemError
from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks.option_checks import OptionError

__all__ = ["SYSTEM_KEYS", "with_memory"]

#: What each document records of the system, as the Inspect task's metadata records it: lm-eval
#: keeps no task metadata of ours, and without the version and arguments a reader could not
#: tell this run's system from an Inspect run's of the same name (memevals-diff refused to
#: pair them as two systems).
SYSTEM_KEYS = ("memory", "memory_version", "memory_args")

logger = logging.getLogger(__name__)


def with_memory(
    task: str, items: Sequence[PromptItem], subject: MemorySubject | None
) -> list[PromptItem]:
    """The items with their memory system's contexts (retrieval happens here, when the
    documents are built; there is no memory model in lm-eval, so a system that needs one
    fails, saying so). A failure names the task and the sample and stops the run: a failure is
    never scored as an empty context. A system that returns no items has answered: the
    document gets the benchmark's no-context rendering and is scored, its metadata saying
    `memory_returned` 0 and `memory_items` 0 (the log line counts them). Each document also
    records the system's name, version and arguments (`SYSTEM_KEYS`)."""
    if subject is None:
        return list(items)
    if subject.answers:
        raise OptionError(
            f"{task}: memory_answers: lm-eval generates the answers itself; run the system's "
            "own answers through Inspect"
        )
    settings = subject.run.settings()
    system = {k: settings[k] for k in SYSTEM_KEYS}
    out = []
    for item in items:
        try:
            filled = subject.fill(item, None)
        except MemorySystemError as exc:
            raise MemorySystemError(f"{task}: sample {item.id}: {exc}") from exc
        out.append(dataclasses.replace(filled, metadata={**filled.metadata, **system}))
    totals = ingest_totals([i.metadata[INGEST_KEY] for i in out])
    latency = latency_percentiles([float(i.metadata[LATENCY_KEY]) for i in out])
    logger.info(
        "%s: memory %s over %d histories (%d ingested now, %d from the cache); %d of %d "
        "retrievals returned no item; retrieval latency p50 %.4f s, p95 %.4f s, p99 %.4f s",
        task,
        subject.run.system.name,
        totals["histories"],
        totals["ingestions"],
        totals["cache_hits"],
        empty_retrievals([i.metadata for i in out]),
        len(out),
        latency["latency_p50_s"],
        latency["latency_p95_s"],
        latency["latency_p99_s"],
    )
    return out
