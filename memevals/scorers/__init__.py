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
    "locomo_f1",
    "normalize_answer",
    "parse_verdict",
    "token_f1",
]
