"""LoCoMo-Plus's record: what the shared layers read about it (memevals.core.benchmark)."""

from __future__ import annotations

from memevals.benchmarks.locomo.data import LOCOMO_FILE, PAPER_ORDER
from memevals.benchmarks.locomo.memory import DEFAULT_MAX_CONTEXT_TOKENS, RAG_DEFAULTS
from memevals.benchmarks.locomo.record import EVIDENCE_AXES, evidence_metrics
from memevals.benchmarks.locomo.scoring import LOCOMO_CRITERIA
from memevals.benchmarks.locomo_plus.data import LOCOMO_PLUS_FILE
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE
from memevals.benchmarks.locomo_plus.samples import DEFAULT_MAX_TOKENS, DEFAULT_TEMPERATURE
from memevals.benchmarks.locomo_plus.scoring import LOCOMO_PLUS_CRITERIA
from memevals.core.benchmark import (
    SHARED_SCORES,
    AnalysisAxis,
    LmEvalGroup,
    LmEvalMetric,
    LmEvalSpec,
    LmEvalTask,
    ScoreSpec,
    clustered,
    criterion_judge,
    declare,
)

#: Its lm-eval subtasks: LoCoMo's five categories, then the cognitive samples.
#: The thin lm-eval module (named, not imported: the framework layer sits above the records).
_LM_EVAL_MODULE = "memevals.lm_eval_tasks.locomo_plus.utils"
_RETRIEVES = "the context mode retrieves (rag, oracle, a memory system)"

_SUBTASKS = tuple(f"locomo_plus_{c}" for c in (*PAPER_ORDER, COGNITIVE))
#: What the lm-eval group reports (written into its generated YAML).
_GROUP_COMMENT = """\
LoCoMo-Plus: LoCoMo's five question categories plus the cognitive cue-trigger samples.
f1 / abstention / evidence_recall aggregate over the LoCoMo questions (the micro average, as
Inspect's locomo_plus reports F1); cognitive samples are scored by
`python -m memevals.tools.judge`."""

RECORD = declare(
    __file__,
    name="locomo_plus",
    fixed={"locomo_plus_cognitive": {"categories": COGNITIVE}},
    categories=(*PAPER_ORDER, COGNITIVE),
    cluster="conversation",
    # cognitive samples are clustered on the LoCoMo conversation that hosts their cue
    legacy_cluster_key="host",
    # LoCoMo's: the stitched histories are retrieved from as LoCoMo's
    context_defaults=RAG_DEFAULTS.context_defaults(max_context_tokens=DEFAULT_MAX_CONTEXT_TOKENS),
    label_options={
        "disclose_task": False,
        "gap_fix": False,
        "adversarial": "choice",
        "seed": 0,
        "gold": "original",
    },
    subgroups={"relation_type": "relation"},
    # the cue's time gap (cognitive samples: the days the official rule places the cue before
    # the trigger), and how far back the evidence lies: a LoCoMo question's from the end of its
    # conversation, as LoCoMo logs it, a cognitive sample's cue from its trigger
    analysis_axes=(
        AnalysisAxis("gap_days", "the cue's time gap (days)", (0, 7, 30, 60, 90, 180)),
        *EVIDENCE_AXES,
    ),
    scores=(
        # the judge is the headline (first on Inspect's screen, in compare, diff and the report)
        ScoreSpec("locomo_plus_judge", "judge", "judge"),
        ScoreSpec("locomo_plus_f1", "answer", "f1"),
        ScoreSpec("locomo_plus_evidence_recall", "retrieval", "evidence_recall"),
        ScoreSpec("cue_recall", "retrieval", "cue_recall"),
        *SHARED_SCORES,
    ),
    judge=criterion_judge(("judge", "category"), (*LOCOMO_CRITERIA, *LOCOMO_PLUS_CRITERIA)),
    data=(LOCOMO_FILE, LOCOMO_PLUS_FILE),
    lm_eval_group="locomo_plus",
    inspect_module="memevals.inspect_tasks.locomo_plus",
    lm_eval=LmEvalSpec(
        custom_dataset=f"{_LM_EVAL_MODULE}.locomo_plus_docs",
        process_results=f"{_LM_EVAL_MODULE}.locomo_plus_results",
        metric_list=(
            LmEvalMetric("prompt_tokens", higher_is_better=False),
            LmEvalMetric(
                "f1",
                comment="LoCoMo questions only: cognitive samples have no reference (score them "
                "with memevals.tools.judge).",
            ),
            clustered("f1"),
            LmEvalMetric("abstention", higher_is_better=False),
            *evidence_metrics(_RETRIEVES),
            LmEvalMetric(
                "cue_recall",
                comment=f"Cognitive samples, when {_RETRIEVES}: share of\nthe cue turns retrieved.",
            ),
        ),
        max_gen_toks=DEFAULT_MAX_TOKENS,
        temperature=DEFAULT_TEMPERATURE,
        generation_comment="The LoCoMo-Plus framework answers with temperature "
        f"{DEFAULT_TEMPERATURE} and up to {DEFAULT_MAX_TOKENS} tokens.",
        tasks=tuple(
            LmEvalTask(f"locomo_plus_{c}", {"categories": c}) for c in (*PAPER_ORDER, COGNITIVE)
        ),
        groups=(
            LmEvalGroup(
                "locomo_plus",
                _SUBTASKS,
                aggregate=("f1", "abstention", "prompt_tokens", "evidence_recall"),
                comment=_GROUP_COMMENT,
            ),
        ),
    ),
    scoring_module="memevals.benchmarks.locomo_plus.scoring",
    scorers=("criterion_for_locomo_plus",),
)
