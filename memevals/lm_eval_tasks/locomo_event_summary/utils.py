"""lm-eval functions of the locomo_event_summary task: documents and per-reply scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
from memevals.benchmarks.locomo_event_summary.scoring import rouge_scores
from memevals.lm_eval_tasks import common

__all__ = ["event_summary_docs", "event_summary_results"]

#: Options of the Inspect task only: the summary's length is the YAML's max_gen_toks, and the
#: grader runs after lm-eval (`python -m memevals.tools.judge`).
INSPECT_ONLY = (
    "max_tokens",
    "reference_facts",
    "lines_per_call",
    "facts_per_call",
    "grader_max_tokens",
    "uncertainty",
)


def event_summary_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo event summarisation: one document per conversation and speaker."""
    task = "locomo_event_summary"
    options = common.metadata_options(EventSummaryOptions, task, metadata, ignored=INSPECT_ONLY)
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
