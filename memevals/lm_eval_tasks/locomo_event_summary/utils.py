"""lm-eval functions of the locomo_event_summary task: documents and per-reply scores."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_event_summary.samples import EventSummaryOptions, build
from memevals.benchmarks.locomo_event_summary.scoring import rouge_scores
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import shared_options
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

#: Context and memory-system options of the QA tasks, refused here (lm-eval would otherwise
#: ignore them, and the task would run on the whole conversation while the user asked for
#: less): the summary reads the whole conversation at once. The prompt-size counter is not one.
_CONTEXT_OPTIONS = tuple(
    o.name
    for o in shared_options(MemoryOptions.names())
    if o.group in ("context", "memory") and o.name != "token_counter"
)


def _refused(task: str, metadata: Mapping[str, Any]) -> None:
    """A context or memory-system option other than the whole conversation."""
    given = [k for k in _CONTEXT_OPTIONS if k in metadata]
    if given and not (given == ["context"] and metadata["context"] == "full"):
        shown = ", ".join(f"{k}={metadata[k]!r}" for k in given)
        raise option_checks.OptionError(
            f"{task}: {shown}: the event summary reads the whole conversation at once, so it "
            "takes no context or memory-system option; run it without them (an lm_eval call "
            "of its own when other tasks need them)"
        )


def event_summary_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo event summarisation: one document per conversation and speaker."""
    task = "locomo_event_summary"
    _refused(task, metadata)
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
