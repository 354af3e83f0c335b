"""lm-eval functions of the locomo_plus tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_plus import samples
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE
from memevals.core.memory_options import MemoryOptions
from memevals.lm_eval_tasks import common
from memevals.lm_eval_tasks.locomo.utils import LOCOMO_OPTIONS, locomo_metrics, shared_options

__all__ = ["LOCOMO_PLUS_OPTIONS", "locomo_plus_docs", "locomo_plus_results"]

LOCOMO_PLUS_OPTIONS: dict[str, Any] = {
    **LOCOMO_OPTIONS,
    "disclose_task": False,
    "gap_fix": False,
    "sample_order": "file",
}


def locomo_plus_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo-Plus documents of one category: a LoCoMo question category or `cognitive`; with
    `--metadata '{"memory": "<name>"}'` each document's context comes from that memory system
    (`common.with_memory`), as in the Inspect task."""
    task = f"locomo_plus[{categories}]"
    opts = common.checked_options(
        task, metadata, [*LOCOMO_PLUS_OPTIONS, *MemoryOptions.names()], LOCOMO_PLUS_OPTIONS
    )
    options = samples.LocomoPlusOptions(
        categories=categories,
        disclose_task=common.as_bool(task, "disclose_task", opts["disclose_task"]),
        gap_fix=common.as_bool(task, "gap_fix", opts["gap_fix"]),
        sample_order=str(opts["sample_order"]),
        **shared_options(task, opts),
    )
    built = common.checked(task, lambda: samples.build(options))
    return common.to_docs(common.with_memory(task, built.items, built.subject), task)


def locomo_plus_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """LoCoMo questions: the LoCoMo metrics. Cognitive samples have no reference reply, so
    natively they get only the prompt size and, when the mode retrieves, `cue_recall` (the share
    of cue turns retrieved); `python -m memevals.tools.judge` scores the replies."""
    md = common.doc_item(doc).metadata
    reply = common.only_reply(results)
    if md.get("category") == COGNITIVE:
        out: dict[str, Any] = {"prompt_tokens": common.prompt_tokens_of(doc, md)}
        if md.get("cue_recall") is not None:
            out["cue_recall"] = float(md["cue_recall"])
        return out
    return locomo_metrics(doc, md, reply)
