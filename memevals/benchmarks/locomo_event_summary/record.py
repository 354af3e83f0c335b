"""LoCoMo event summarisation's record: what the shared layers read about it
(memevals.core.benchmark).

Its tasks and samples write `benchmark: "locomo"` (with `task: "event_summary"`) into their
metadata, as they did before records existed; a log is matched to this record by its task name
(`memevals.benchmarks.record_for_task("locomo_event_summary")`), never by that field.
"""

from __future__ import annotations

from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.core.benchmark import JudgeSpec, LmEvalSpec, LmEvalTask, ScoreSpec, declare

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
        base="_locomo_event_summary_base.yaml", tasks=(LmEvalTask("locomo_event_summary"),)
    ),
    scoring_module="memevals.benchmarks.locomo_event_summary.scoring",
    scorers=("fact_score", "factscore"),
)
