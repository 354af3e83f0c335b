"""LongMemEval's record: what the shared layers read about it (memevals.core.benchmark)."""

from __future__ import annotations

from memevals.benchmarks.longmemeval.data import CATEGORIES, QUESTION_TYPES, VARIANTS
from memevals.benchmarks.longmemeval.memory import RAG_DEFAULTS
from memevals.benchmarks.longmemeval.official import ANSWER_TOKENS
from memevals.benchmarks.longmemeval.scoring import LONGMEMEVAL_CRITERIA
from memevals.core.benchmark import (
    SHARED_SCORES,
    AnalysisAxis,
    LmEvalGroup,
    LmEvalMetric,
    LmEvalSpec,
    LmEvalTask,
    ScoreSpec,
    criterion_judge,
    declare,
)


def _group_comment(variant: str) -> str:
    return (
        f"LongMemEval, variant {variant}: one subtask per question type (each with its _abs "
        "questions), so\nevery question runs once. "
        f"longmemeval_{variant}_abstention (the _abs questions of every type) is a\nseparate "
        "task, outside the group, because its questions are also in their type's subtask."
    )


#: The thin lm-eval module (named, not imported: the framework layer sits above the records).
_LM_EVAL_MODULE = "memevals.lm_eval_tasks.longmemeval.utils"

#: lm-eval: one group per variant holding the per-type subtasks (the abstention slice repeats
#: their _abs questions, so it is a task outside the group), one subtask per variant x category.
_LM_EVAL = LmEvalSpec(
    custom_dataset=f"{_LM_EVAL_MODULE}.longmemeval_docs",
    process_results=f"{_LM_EVAL_MODULE}.longmemeval_results",
    metric_list=(
        LmEvalMetric("prompt_tokens", higher_is_better=False),
        *(
            LmEvalMetric(
                f"{metric}@{k}",
                comment="context=rag only (official headline retrieval metrics; _abs questions "
                "are skipped)."
                if (metric, k) == ("recall_any", 5)
                else "",
                score="longmemeval_retrieval",
            )
            for k in (5, 10)
            for metric in ("recall_any", "recall_all", "ndcg_any")
        ),
        *(
            LmEvalMetric(
                f"turn_{metric}@{k}",
                comment="retrieval_unit=turn only." if (metric, k) == ("recall_all", 5) else "",
                score="longmemeval_retrieval",
            )
            for k in (5, 10, 50)
            for metric in ("recall_all", "ndcg_any")
        ),
    ),
    max_gen_toks=ANSWER_TOKENS,  # the reader's default answer length (official.answer_tokens)
    generation_comment=f"The paper's reader: greedy, up to {ANSWER_TOKENS} tokens.",
    comment="LongMemEval is judged: run lm_eval with --log_samples, then "
    "`python -m memevals.tools.judge`.",
    tasks=tuple(
        LmEvalTask(f"longmemeval_{v}_{c}", {"variant": v, "categories": c})
        for v in VARIANTS
        for c in CATEGORIES
    ),
    groups=tuple(
        LmEvalGroup(
            f"longmemeval_{v}",
            tuple(f"longmemeval_{v}_{c}" for c in QUESTION_TYPES.values()),
            aggregate=("prompt_tokens",),
            comment=_group_comment(v),
        )
        for v in VARIANTS
    ),
)

RECORD = declare(
    __file__,
    name="longmemeval",
    fixed={
        **{f"longmemeval_{v}": {"variant": v} for v in VARIANTS},
        **{f"longmemeval_{c}": {"categories": c} for c in CATEGORIES},
    },
    categories=CATEGORIES,
    # every question has its own haystack: the question is the cluster
    cluster="question",
    legacy_cluster_key="question_id",
    context_defaults=RAG_DEFAULTS.context_defaults(),
    label_options={
        "variant": "s",
        "history_format": "json",
        "chain_of_note": False,
        "step_by_step": False,
    },
    # the `_abs` questions, scored within their type, are also reported together
    subgroups={"abstention": "abstention"},
    # the paper's task-averaged accuracy
    macro_average="task_avg",
    # how far back the answer lies (haystack sessions after the last answer session, the
    # question coming after the whole haystack), how long the whole history is (oracle's few
    # thousand tokens, S's about 115K split finer, M's ~1.5M) and how much of it is shown
    analysis_axes=(
        AnalysisAxis(
            "sessions_after_answer", "haystack sessions after the answer", (0, 1, 5, 10, 25, 50)
        ),
        AnalysisAxis(
            "history_tokens",
            "history tokens",
            (0, 10_000, 100_000, 110_000, 120_000, 1_000_000),
        ),
        AnalysisAxis("n_sessions_shown", "haystack sessions shown", (0, 2, 10, 30, 50)),
    ),
    scores=(
        ScoreSpec("longmemeval_judge", "judge", "judge"),
        ScoreSpec("longmemeval_retrieval", "retrieval", "retrieval"),
        *SHARED_SCORES,
    ),
    judge=criterion_judge(("judge", "category", "abstention"), LONGMEMEVAL_CRITERIA),
    lm_eval_group=None,
    inspect_module="memevals.inspect_tasks.longmemeval",
    lm_eval=_LM_EVAL,
    scoring_module="memevals.benchmarks.longmemeval.scoring",
    scorers=("criterion_for_longmemeval",),
)
