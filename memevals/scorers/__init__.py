"""Framework-free scoring functions: score your own predictions with these."""

from memevals.scorers.agreement import cohen_kappa
from memevals.scorers.judge import (
    JUDGE_CRITERIA,
    JudgeInput,
    Verdict,
    criterion_for_locomo,
    criterion_for_longmemeval,
    judge_prompt,
    parse_verdict,
)
from memevals.scorers.locomo_qa import (
    ABSTENTION_PHRASES,
    abstained,
    answer_tokens,
    locomo_f1,
    normalize_answer,
    token_f1,
)
from memevals.scorers.retrieval import (
    locomo_evidence_recall,
    locomo_recall_for_mean,
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
    turn_precision_recall,
    turn_to_session,
)

__all__ = [
    "ABSTENTION_PHRASES",
    "JUDGE_CRITERIA",
    "JudgeInput",
    "Verdict",
    "abstained",
    "answer_tokens",
    "cohen_kappa",
    "criterion_for_locomo",
    "criterion_for_longmemeval",
    "judge_prompt",
    "locomo_evidence_recall",
    "locomo_f1",
    "locomo_recall_for_mean",
    "ndcg_any_at_k",
    "normalize_answer",
    "parse_verdict",
    "recall_all_at_k",
    "recall_any_at_k",
    "token_f1",
    "turn_precision_recall",
    "turn_to_session",
]
