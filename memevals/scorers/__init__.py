"""Framework-free scoring functions: score your own predictions with these."""

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
    "abstained",
    "answer_tokens",
    "locomo_f1",
    "normalize_answer",
    "token_f1",
]
