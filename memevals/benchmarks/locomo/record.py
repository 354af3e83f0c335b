"""LoCoMo QA's record: what the shared layers read about it (memevals.core.benchmark)."""

from __future__ import annotations

from memevals.benchmarks.locomo.data import CATEGORY_NAMES, LOCOMO_FILE, PAPER_ORDER
from memevals.benchmarks.locomo.memory import DEFAULT_MAX_CONTEXT_TOKENS, RAG_DEFAULTS
from memevals.benchmarks.locomo.official import ANSWER_TOKENS
from memevals.benchmarks.locomo.prompts import prediction_for_scoring
from memevals.benchmarks.locomo.scoring import LOCOMO_CRITERIA
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

#: What the lm-eval group reports (written into its generated YAML).
_GROUP_COMMENT = """\
LoCoMo QA: the overall score is the official micro average over all questions
(each category weighted by its number of questions); evidence_recall likewise matches the
official overall recall. turn_precision / turn_recall / selected_k are per category only:
HiGMem skips questions without evidence, which lm-eval's size weighting cannot account for."""

#: The thin lm-eval module (named, not imported: the framework layer sits above the records).
_LM_EVAL_MODULE = "memevals.lm_eval_tasks.locomo.utils"

#: How far back a question's evidence lies (sessions, turns, tokens), with the bucket edges
#: (LoCoMo-Plus buckets its LoCoMo questions and cues the same way).
EVIDENCE_AXES: tuple[AnalysisAxis, ...] = (
    AnalysisAxis("sessions_after_evidence", "sessions after the evidence", (0, 2, 5, 10, 20)),
    AnalysisAxis("turns_after_evidence", "turns after the evidence", (0, 100, 200, 400)),
    AnalysisAxis(
        "tokens_after_evidence", "tokens after the evidence", (0, 1000, 2000, 4000, 8000, 16000)
    ),
)


def evidence_metrics(retrieves: str) -> tuple[LmEvalMetric, ...]:
    """The evidence metrics of a LoCoMo question as an lm-eval base lists them (LoCoMo-Plus
    reports its LoCoMo questions' the same way).

    Args:
        retrieves: when they are reported (the context modes that retrieve).

    Returns:
        evidence_recall and its clustered error, then the turn-level precision, recall and k.
    """
    return (
        LmEvalMetric("evidence_recall", comment=f"Reported only when {retrieves}."),
        clustered("evidence_recall"),
        LmEvalMetric("turn_precision"),
        LmEvalMetric("turn_recall"),
        LmEvalMetric("selected_k", higher_is_better=False),
    )


RECORD = declare(
    __file__,
    name="locomo",
    fixed={f"locomo_{c}": {"categories": c} for c in CATEGORY_NAMES.values()},
    categories=PAPER_ORDER,
    cluster="conversation",
    legacy_cluster_key="conversation_id",
    context_defaults=RAG_DEFAULTS.context_defaults(max_context_tokens=DEFAULT_MAX_CONTEXT_TOKENS),
    label_options={"adversarial": "choice", "seed": 0, "gold": "original"},
    # how far back the evidence lies from the question, asked at the end of the conversation
    analysis_axes=EVIDENCE_AXES,
    scores=(
        ScoreSpec("locomo_f1_scorer", "answer", "f1"),
        ScoreSpec("llm_judge", "judge", "judge"),
        # protocol=official: LoCoMo-Plus's upstream judge
        ScoreSpec("locomo_official_judge", "judge", "judge"),
        ScoreSpec("evidence_recall", "retrieval", "evidence_recall"),
        *SHARED_SCORES,
    ),
    # a letter reply to a two-option question is judged as the option it chose
    judge=criterion_judge(
        ("judge", "answer", "category_id"), LOCOMO_CRITERIA, prediction=prediction_for_scoring
    ),
    data=(LOCOMO_FILE,),
    lm_eval_group="locomo",
    inspect_module="memevals.inspect_tasks.locomo",
    lm_eval=LmEvalSpec(
        custom_dataset=f"{_LM_EVAL_MODULE}.locomo_docs",
        process_results=f"{_LM_EVAL_MODULE}.locomo_results",
        metric_list=(
            LmEvalMetric("f1"),
            clustered("f1"),
            LmEvalMetric("abstention", higher_is_better=False),
            LmEvalMetric("prompt_tokens", higher_is_better=False),
            *evidence_metrics("the context mode retrieves (rag, oracle)"),
        ),
        # the paper's answer length, greedy
        max_gen_toks=ANSWER_TOKENS,
        tasks=tuple(LmEvalTask(f"locomo_{c}", {"categories": c}) for c in PAPER_ORDER),
        groups=(
            LmEvalGroup(
                "locomo",
                tuple(f"locomo_{c}" for c in PAPER_ORDER),
                aggregate=("f1", "abstention", "prompt_tokens", "evidence_recall"),
                comment=_GROUP_COMMENT,
            ),
        ),
    ),
    scoring_module="memevals.benchmarks.locomo.scoring",
    scorers=(
        "ABSTENTION_PHRASES",
        "abstained",
        "answer_tokens",
        "criterion_for_locomo",
        "locomo_evidence_recall",
        "locomo_f1",
        "locomo_recall_for_mean",
        "normalize_answer",
        "token_f1",
    ),
)
