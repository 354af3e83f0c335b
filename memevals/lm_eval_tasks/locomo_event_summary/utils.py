"""lm-eval functions of the locomo_event_summary task: documents and per-reply scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
from memevals.benchmarks.locomo_event_summary.scoring import rouge_scores
from memevals.lm_eval_tasks import common

__all__ = ["EVENT_SUMMARY_OPTIONS", "event_summary_docs", "event_summary_results"]

#: The `--metadata` options and their defaults (those of `EventSummaryOptions`).
EVENT_SUMMARY_OPTIONS: dict[str, Any] = {
    "sessions": None,
    "conversations": None,
    "data_dir": None,
    "incremental": False,
}


def event_summary_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo event summarisation: one document per conversation and speaker."""
    task = "locomo_event_summary"
    opts = common.checked_options(task, metadata, EVENT_SUMMARY_OPTIONS, EVENT_SUMMARY_OPTIONS)
    if common.as_bool(task, "incremental", opts["incremental"]):
        raise common.OptionError(
            f"{task}: incremental summarisation needs one model call per session, which an "
            "lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/locomo_event_summary -T incremental=true)"
        )
    sessions = (
        None if opts["sessions"] is None else common.as_int(task, "sessions", opts["sessions"])
    )
    items, _ = common.checked(
        task,
        lambda: build(
            EventSummaryOptions(
                conversations=opts["conversations"], sessions=sessions, data_dir=opts["data_dir"]
            )
        ),
    )
    return common.to_docs(items, task)


def event_summary_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """ROUGE-1/2/L against the reference events (as the Inspect task reports them), each with
    its conversation-clustered standard error (`rouge1_stderr_clustered`, ...), and the prompt
    size; the FactScore precision/recall/F1 need the grader (`python -m memevals.tools.judge`)."""
    md = common.doc_item(doc).metadata
    rouge = dict(rouge_scores(common.only_reply(results), str(doc["target"])))
    out: dict[str, Any] = common.with_clusters(rouge, md, rouge)
    out["prompt_tokens"] = common.prompt_tokens_of(doc, md)
    return out
