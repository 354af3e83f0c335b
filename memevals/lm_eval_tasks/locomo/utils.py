"""lm-eval functions of the locomo tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.memory import LocomoMemory, locomo_context
from memevals.benchmarks.locomo.prompts import build_items as build_locomo_items
from memevals.benchmarks.locomo.prompts import prediction_for_scoring as locomo_prediction
from memevals.core.prompt_item import PromptItem
from memevals.core.retrieval_metrics import locomo_recall_for_mean, turn_precision_recall
from memevals.lm_eval_tasks.common import (
    checked,
    checked_options,
    doc_item,
    keyword_names,
    only_reply,
    prompt_tokens_of,
    to_docs,
)
from memevals.scorers import abstained, locomo_f1

#: LoCoMo options besides the memory options of `locomo_context` (context, max_context_tokens,
#: retrieval_unit, top_k, retriever, embedding_model, token_counter). `choice_seed` is the
#: Inspect task's `seed`: lm-eval merges model arguments into the metadata, and vLLM's own
#: `seed` model argument must not reorder the options.
LOCOMO_OPTIONS: dict[str, Any] = {
    "adversarial": "choice",
    "choice_seed": 0,
    "data_dir": None,
}


def memory_option_names() -> list[str]:
    """The keyword options `locomo_context` accepts (so new memory options need no glue)."""
    return keyword_names(locomo_context)


def locomo_memory_of(task: str, opts: Mapping[str, Any]) -> LocomoMemory:
    names = memory_option_names()
    return checked(task, lambda: locomo_context(**{k: opts[k] for k in names if k in opts}))


def with_memory_fields(items: Iterable[PromptItem], memory: LocomoMemory) -> list[PromptItem]:
    """What process_results needs to know about the strategy, per document."""
    extra = {"turn_level": memory.turn_level, "token_counter": memory.token_counter.name}
    return [replace(i, metadata={**i.metadata, **extra}) for i in items]


def locomo_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo QA documents of `categories` (from the YAML), options from `--metadata`."""
    task = f"locomo[{categories}]"
    opts = checked_options(
        task, metadata, [*LOCOMO_OPTIONS, *memory_option_names()], LOCOMO_OPTIONS
    )
    memory = locomo_memory_of(task, opts)
    items = checked(
        task,
        lambda: build_locomo_items(
            load_locomo(opts["data_dir"]),
            categories=categories,
            context=memory,
            context_mode=memory.context,
            adversarial=opts["adversarial"],
            seed=int(opts["choice_seed"]),
        ),
    )
    return to_docs(with_memory_fields(items, memory), task)


def locomo_metrics(doc: Mapping[str, Any], md: Mapping[str, Any], reply: str) -> dict[str, float]:
    prediction = locomo_prediction(reply, dict(md))
    out = {
        "f1": locomo_f1(prediction, md["answer"], int(md["category_id"])),
        "abstention": 1.0 if abstained(prediction) else 0.0,
        "prompt_tokens": prompt_tokens_of(doc, md),
    }
    retrieved = md.get("retrieved_ids")
    if retrieved is not None:
        retrieved_ids = [str(i) for i in retrieved]
        evidence = [str(e) for e in md["evidence"]]
        out["evidence_recall"] = locomo_recall_for_mean(retrieved_ids, evidence)
        pr = turn_precision_recall(retrieved_ids, evidence) if md.get("turn_level") else None
        if pr is not None:
            out["turn_precision"], out["turn_recall"] = pr
            out["selected_k"] = float(len(set(retrieved_ids)))
    return out


def locomo_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """Official LoCoMo F1 of one reply, whether it declines, its prompt size, and retrieval
    metrics when the context mode retrieves.

    `abstention` applies the official category-5 phrase rule to every reply: on the
    adversarial task it equals F1, elsewhere it is the rate of wrongful refusals.
    `evidence_recall` is the value the official LoCoMo recall averages (so its plain mean is
    the official figure); `turn_precision` / `turn_recall` / `selected_k` are HiGMem's set
    metrics over dia ids, absent for questions without evidence (HiGMem skips them) and for
    session summaries.
    """
    md = doc_item(doc).metadata
    return locomo_metrics(doc, md, only_reply(results))
