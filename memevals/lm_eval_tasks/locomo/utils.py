"""lm-eval functions of the locomo tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo import samples
from memevals.benchmarks.locomo.prompts import prediction_for_scoring as locomo_prediction
from memevals.benchmarks.locomo.scoring import abstained, locomo_f1, locomo_recall_for_mean
from memevals.core.options import lm_eval_aliases
from memevals.core.retrieval_metrics import turn_precision_recall
from memevals.lm_eval_tasks import option_checks, sample_notes
from memevals.lm_eval_tasks.clustered_stderr import with_clusters
from memevals.lm_eval_tasks.documents import doc_item, only_reply, prompt_tokens_of, to_docs
from memevals.lm_eval_tasks.inspect_only import GENERATION, YAML_TASK, not_taken
from memevals.lm_eval_tasks.memory_contexts import with_memory

__all__ = [
    "ALIASES",
    "CLUSTERED_METRICS",
    "INSPECT_ONLY",
    "locomo_docs",
    "locomo_metrics",
    "locomo_options",
    "locomo_results",
]

#: `--metadata` key -> LocomoOptions field. `choice_seed` is the two-option seed: lm-eval
#: merges model arguments into the metadata, and vLLM's own `seed` must not reorder options.
ALIASES = lm_eval_aliases("choice_seed")
#: LocomoOptions fields of the Inspect task only (the judge's and the uncertainty figures' are
#: declared so in core.options).
INSPECT_ONLY = {"categories": YAML_TASK, "max_tokens": GENERATION}
_INSPECT_ONLY = not_taken(samples.LocomoOptions, INSPECT_ONLY)


def locomo_options(
    task: str, categories: str, metadata: Mapping[str, Any]
) -> samples.LocomoOptions:
    """The LoCoMo options of one lm-eval task from its `--metadata`, with LocomoOptions' one set
    of defaults (a misspelt key or a bad value is an OptionError naming it).

    Args:
        task: the task's name, for messages.
        categories: the task's category (from its YAML).
        metadata: lm-eval's metadata (the YAML's, the model arguments and `--metadata`).

    Returns:
        The options.
    """
    given = option_checks.metadata_options(
        samples.LocomoOptions, task, metadata, ignored=_INSPECT_ONLY, aliases=ALIASES
    )
    return dataclasses.replace(given, categories=categories)


def locomo_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo QA documents of `categories` (from the YAML), options from `--metadata`."""
    task = f"locomo[{categories}]"
    options = locomo_options(task, categories, metadata)
    built = option_checks.checked(task, lambda: samples.build(options))
    sample_notes.keep(built.notes)
    return to_docs(with_memory(task, built.items, built.subject), task)


#: Metrics that get a clustered standard error beside them (`<name>_stderr_clustered`).
CLUSTERED_METRICS = ("f1", "evidence_recall")


def locomo_metrics(doc: Mapping[str, Any], md: Mapping[str, Any], reply: str) -> dict[str, Any]:
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
    return with_clusters(out, md, CLUSTERED_METRICS)


def locomo_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """Official LoCoMo F1 of one reply, whether it declines, its prompt size, and retrieval
    metrics when the context mode retrieves.

    `abstention` applies the official category-5 phrase rule to every reply: on the
    adversarial task it equals F1, elsewhere it is the rate of wrongful refusals.
    `evidence_recall` is the value the official LoCoMo recall averages (so its plain mean is
    the official figure); `turn_precision` / `turn_recall` / `selected_k` are HiGMem's set
    metrics over dia ids, absent for questions without evidence (HiGMem skips them) and for
    session summaries. `f1_stderr_clustered` and `evidence_recall_stderr_clustered` carry
    (value, conversation id), aggregated into the conversation-clustered standard error.
    """
    sample_notes.say(str(doc["id"]))
    md = doc_item(doc).metadata
    return locomo_metrics(doc, md, only_reply(results))
