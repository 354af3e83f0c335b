"""LoCoMo event summarisation's record: what the shared layers read about it
(memevals.core.benchmark).

Its tasks and samples write `benchmark: "locomo"` (with `task: "event_summary"`) into their
metadata, as locomo_dialogue's do (`Benchmark.name` says how a log finds its record).
"""

from __future__ import annotations

from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo_event_summary.samples import DEFAULT_MAX_TOKENS
from memevals.core.benchmark import (
    JudgeSpec,
    LmEvalMetric,
    LmEvalSpec,
    LmEvalTask,
    ScoreSpec,
    declare,
    means_then_clustered,
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
    judge=JudgeSpec(inputs=("speaker", "reference_events")),
    data=(LOCOMO_FILE,),
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
