"""LoCoMo event summarisation's record: what the shared layers read about it
(memevals.core.benchmark).

Its tasks and samples write `benchmark: "locomo"` (with `task: "event_summary"`) into their
metadata, as locomo_dialogue's do (`Benchmark.name` says how a log finds its record).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memevals.benchmarks.locomo.data import LOCOMO_FILE, load_conversations
from memevals.benchmarks.locomo_event_summary.prompts import incremental_steps
from memevals.benchmarks.locomo_event_summary.samples import DEFAULT_MAX_TOKENS, EventSummaryOptions
from memevals.benchmarks.locomo_event_summary.scoring import Grading, grader_calls
from memevals.core.benchmark import (
    JudgeSpec,
    LmEvalMetric,
    LmEvalSpec,
    LmEvalTask,
    ScoreSpec,
    declare,
    means_then_clustered,
)


def _fact_calls(metadata: Mapping[str, Any]) -> int:
    """FactScore's grader calls for one sample (its metadata, with the task's `-T` options the
    estimate adds): the summary assumed as many lines as the reference, since its real length
    is known only after the answer."""
    defaults = EventSummaryOptions()
    grading = Grading(
        str(metadata.get("reference_facts", defaults.reference_facts)),
        int(metadata.get("lines_per_call", defaults.lines_per_call)),
        int(metadata.get("facts_per_call", defaults.facts_per_call)),
    )
    events = metadata["reference_events"]
    reference = "\n".join(f"{e['date']}: {str(e['text']).strip()}" for e in events)
    lines = len([line for line in reference.splitlines() if line.strip()])
    return grader_calls(reference, len(events), lines, grading)


#: How _fact_calls counts, and what it cannot know (the estimate prints it).
_FACT_CALLS_NOTE = (
    "FactScore with readable replies and one fact per line, the summary as long as the "
    "reference (its length is known only after the answer); an unreadable reply is asked once "
    "more, and a second one ends the sample's checks (unscored)"
)


def model_calls(
    metadata: Sequence[Mapping[str, Any]], options: Mapping[str, Any]
) -> list[list[tuple[str, str]]] | None:
    """The (system, user) prompts of each sample's model calls, for the cost estimate, when a
    sample makes several: under incremental=true one per session shown, each after the first
    counted with the first's "no events yet" where the run carries the summary so far (known
    only after the call before).

    Args:
        metadata: the samples' metadata, in order.
        options: the task's `-T` options.

    Returns:
        Per sample its calls' prompts; None when each sample makes one call (its input).
    """
    if not options.get("incremental"):
        return None
    chats = load_conversations(options.get("data_dir"), options.get("conversations"))
    steps_of = incremental_steps({c.sample_id: c for c in chats})
    return [[step(None) for step in steps_of(md)] for md in metadata]


#: What model_calls counts and what it cannot know (the estimate prints it, with the bound).
MODEL_CALLS_NOTE = (
    "incremental=true makes one call per session; each call after a sample's first also "
    "carries the summary so far, counted here as the first call's '(no events yet)'"
)

#: The thin lm-eval module (named, not imported: the framework layer sits above the records).
_LM_EVAL_MODULE = "memevals.lm_eval_tasks.locomo_event_summary.utils"

RECORD = declare(
    __file__,
    name="locomo_event_summary",
    cluster="conversation",
    legacy_cluster_key="conversation_id",
    # the whole conversation at once, or session by session with incremental=true
    context_defaults={"context": "full"},
    label_options={"incremental": False, "sessions": None, "reference_facts": "decompose"},
    scores=(ScoreSpec("event_summary_scorer", "answer", "summary"),),
    # FactScore checks facts one by one with the grader: no criterion, but these inputs
    judge=JudgeSpec(
        inputs=("speaker", "reference_events"), calls=_fact_calls, calls_note=_FACT_CALLS_NOTE
    ),
    data=(LOCOMO_FILE,),
    model_calls=model_calls,
    model_calls_note=MODEL_CALLS_NOTE,
    inspect_module="memevals.inspect_tasks.locomo_event_summary",
    lm_eval=LmEvalSpec(
        tasks=(LmEvalTask("locomo_event_summary"),),
        custom_dataset=f"{_LM_EVAL_MODULE}.event_summary_docs",
        process_results=f"{_LM_EVAL_MODULE}.event_summary_results",
        metric_list=(
            *means_then_clustered("rouge1", "rouge2", "rougeL", score="event_summary_scorer"),
            LmEvalMetric("prompt_tokens", higher_is_better=False),
        ),
        max_gen_toks=DEFAULT_MAX_TOKENS,
        comment="LoCoMo event summarisation (whole conversation at once): one document per "
        "conversation and\nspeaker. Native: ROUGE-1/2/L; FactScore precision/recall/F1 come from "
        "`python -m memevals.tools.judge`.",
    ),
    scoring_module="memevals.benchmarks.locomo_event_summary.scoring",
    scorers=("fact_score", "factscore"),
)
