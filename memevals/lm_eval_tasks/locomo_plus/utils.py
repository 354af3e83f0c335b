"""lm-eval functions of the locomo_plus tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo_plus.data import load_locomo_plus, stitch_all
from memevals.benchmarks.locomo_plus.memory import annotate_cognitive_items, cognitive_context
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE, build_plus_items, order_samples
from memevals.lm_eval_tasks.common import (
    as_bool,
    checked,
    checked_options,
    doc_item,
    only_reply,
    prompt_tokens_of,
    to_docs,
)
from memevals.lm_eval_tasks.locomo.utils import (
    LOCOMO_OPTIONS,
    locomo_memory_of,
    locomo_metrics,
    memory_option_names,
    with_memory_fields,
)

LOCOMO_PLUS_OPTIONS: dict[str, Any] = {
    **LOCOMO_OPTIONS,
    "disclose_task": False,
    "gap_fix": False,
    "sample_order": "file",
}


def locomo_plus_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo-Plus documents of one category: a LoCoMo question category or `cognitive`."""
    task = f"locomo_plus[{categories}]"
    opts = checked_options(
        task, metadata, [*LOCOMO_PLUS_OPTIONS, *memory_option_names()], LOCOMO_PLUS_OPTIONS
    )
    disclose = as_bool(task, "disclose_task", opts["disclose_task"])
    gap_fix = as_bool(task, "gap_fix", opts["gap_fix"])
    sample_order = str(opts["sample_order"])
    checked(task, lambda: order_samples([], sample_order))
    memory = locomo_memory_of(task, opts)
    conversations = load_locomo(opts["data_dir"])
    cognitive = categories == COGNITIVE
    cognitive_fn = checked(task, lambda: cognitive_context(memory)) if cognitive else None
    stitched = (
        stitch_all(load_locomo_plus(opts["data_dir"]), conversations, gap_fix=gap_fix)
        if cognitive
        else []
    )
    items = checked(
        task,
        lambda: build_plus_items(
            conversations,
            stitched,
            categories=categories,
            context=memory,
            **({"cognitive": cognitive_fn} if cognitive_fn is not None else {}),
            context_mode=memory.context,
            disclose_task=disclose,
            adversarial=opts["adversarial"],
            seed=int(opts["choice_seed"]),
            gap_fix=gap_fix,
        ),
    )
    if cognitive:
        # prompt size and, when the mode retrieves, whether the cue was found (cue_recall)
        items, _ = annotate_cognitive_items(items, stitched, memory)
    items = order_samples(items, sample_order)
    return to_docs(with_memory_fields(items, memory), task)


def locomo_plus_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """LoCoMo questions: the LoCoMo metrics. Cognitive samples have no reference reply, so
    natively they get only the prompt size and, when the mode retrieves, `cue_recall` (the share
    of cue turns retrieved); `python -m memevals.tools.judge` scores the replies."""
    md = doc_item(doc).metadata
    reply = only_reply(results)
    if md.get("category") == COGNITIVE:
        out = {"prompt_tokens": prompt_tokens_of(doc, md)}
        if md.get("cue_recall") is not None:
            out["cue_recall"] = float(md["cue_recall"])
        return out
    return locomo_metrics(doc, md, reply)
