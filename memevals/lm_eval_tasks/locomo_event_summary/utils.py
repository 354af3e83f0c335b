"""lm-eval functions of the locomo_event_summary task: documents and per-reply scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
from memevals.benchmarks.locomo_event_summary.scoring import rouge_scores
from memevals.lm_eval_tasks import common
from memevals.lm_eval_tasks.inspect_only import GENERATION, GRADER, not_taken

__all__ = ["INSPECT_ONLY", "event_summary_docs", "event_summary_results"]

#: Options of the Inspect task only (the uncertainty figures' are declared so in core.options).
INSPECT_ONLY = {
    "max_tokens": GENERATION,
    "reference_facts": GRADER,
    "lines_per_call": GRADER,
    "facts_per_call": GRADER,
    "grader_max_tokens": GRADER,
}


def event_summary_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo event summarisation: one document per conversation and speaker."""
    task = "locomo_event_summary"
    options = common.metadata_options(
        EventSummaryOptions, task, metadata, ignored=not_taken(EventSummaryOptions, INSPECT_ONLY)
    )
    if options.incremental:
        raise common.OptionError(
            f"{task}: incremental summarisation needs one model call per session, which an "
            "lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/locomo_event_summary -T incremental=true)"
        )
    return common.to_docs(common.checked(task, lambda: build(options)).items, task)


def event_summary_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """ROUGE-1/2/L against the reference events (as the Inspect task reports them), each with
    its conversation-clustered standard error (`rouge1_stderr_clustered`, ...), and the prompt
    size; the FactScore precision/recall/F1 need the grader (`python -m memevals.tools.judge`)."""
    md = common.doc_item(doc).metadata
    rouge = dict(rouge_scores(common.only_reply(results), str(doc["target"])))
    out: dict[str, Any] = common.with_clusters(rouge, md, rouge)
    out["prompt_tokens"] = common.prompt_tokens_of(doc, md)
    return out
