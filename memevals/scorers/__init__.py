"""Framework-free scoring functions: score your own predictions with these."""

from memevals.benchmarks.locomo.scoring import (
    ABSTENTION_PHRASES,
    abstained,
    answer_tokens,
    locomo_f1,
    normalize_answer,
    token_f1,
)
from memevals.benchmarks.locomo_dialogue.scoring import (
    bertscore,
    bleu,
    clean_reply,
    corpus_bleu,
    rouge_l,
)
from memevals.benchmarks.locomo_event_summary.scoring import fact_score, factscore, rouge_scores
from memevals.core.agreement import cohen_kappa
from memevals.core.judge import (
    JUDGE_CRITERIA,
    JudgeInput,
    Verdict,
    criterion_for_locomo,
    criterion_for_longmemeval,
    judge_prompt,
    parse_verdict,
)
from memevals.core.retrieval_metrics import (
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
    "bertscore",
    "bleu",
    "clean_reply",
    "cohen_kappa",
    "corpus_bleu",
    "criterion_for_locomo",
    "criterion_for_longmemeval",
    "fact_score",
    "factscore",
    "judge_prompt",
    "locomo_evidence_recall",
    "locomo_f1",
    "locomo_recall_for_mean",
    "ndcg_any_at_k",
    "normalize_answer",
    "parse_verdict",
    "recall_all_at_k",
    "recall_any_at_k",
    "rouge_l",
    "rouge_scores",
    "token_f1",
    "turn_precision_recall",
    "turn_to_session",
]
