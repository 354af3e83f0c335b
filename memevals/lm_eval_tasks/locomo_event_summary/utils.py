"""lm-eval functions of the locomo_event_summary task: documents and per-reply scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
from memevals.benchmarks.locomo_event_summary.scoring import rouge_scores
from memevals.lm_eval_tasks import option_checks
from memevals.lm_eval_tasks.clustered_stderr import with_clusters
from memevals.lm_eval_tasks.documents import doc_item, only_reply, prompt_tokens_of, to_docs
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
    options = option_checks.metadata_options(
        EventSummaryOptions, task, metadata, ignored=not_taken(EventSummaryOptions, INSPECT_ONLY)
    )
    if options.incremental:
        raise option_checks.OptionError(
            f"{task}: incremental summarisation needs one model call per session, which an "
            "lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/locomo_event_summary -T incremental=true)"
        )
    return to_docs(option_checks.checked(task, lambda: build(options)).items, task)


def event_summary_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """ROUGE-1/2/L against the reference events (as the Inspect task reports them), each with
    its conversation-clustered standard error (`rouge1_stderr_clustered`, ...), and the prompt
    size; the FactScore precision/recall/F1 need the grader (`python -m memevals.tools.judge`)."""
    md = doc_item(doc).metadata
    rouge = dict(rouge_scores(only_reply(results), str(doc["target"])))
    out: dict[str, Any] = with_clusters(rouge, md, rouge)
    out["prompt_tokens"] = prompt_tokens_of(doc, md)
    return out
