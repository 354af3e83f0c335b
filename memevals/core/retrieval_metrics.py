"""Retrieval metrics with the exact rules of the official code (the "Retrieval metrics" sections
of memevals/benchmarks/locomo/README.md and memevals/benchmarks/longmemeval/README.md).

Two families, kept apart on purpose because their rules disagree (LoCoMo's own R@k, evidence
as a list with duplicates counted, lives with LoCoMo's scoring in memevals.benchmarks.locomo):

- `turn_precision_recall`: HiGMem's question-level precision/recall over *sets* of raw ids; a
  question without gold evidence is skipped (``None``).
- `recall_any_at_k`, `recall_all_at_k`, `ndcg_any_at_k`: LongMemEval's metrics over the whole
  ranked corpus; `turn_to_session` converts a turn-level ranking to the session level.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

__all__ = [
    "ndcg_any_at_k",
    "recall_all_at_k",
    "recall_any_at_k",
    "strip_turn_index",
    "turn_precision_recall",
    "turn_to_session",
]


def turn_precision_recall(
    selected_ids: Collection[str], gold_ids: Collection[str]
) -> tuple[float, float] | None:
    """HiGMem (precision, recall) of one question over sets of raw turn ids.

    None when there is no gold evidence (the question is skipped); precision 0 when nothing was
    selected (the question still counts). K(q), the HiGMem "Avg K" term, is ``len(set(selected))``.
    """
    gold = set(gold_ids)
    if not gold:
        return None
    selected = set(selected_ids)
    hits = len(gold & selected)
    precision = hits / len(selected) if selected else 0.0
    return precision, hits / len(gold)


def _check_k(k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")


def recall_any_at_k(ranked_ids: Sequence[str], gold_ids: Collection[str], k: int) -> float:
    """LongMemEval recall_any@k: 1.0 if any gold id is among the top k ranked ids (0 if no gold)."""
    _check_k(k)
    top = set(ranked_ids[:k])
    return float(any(g in top for g in gold_ids))


def recall_all_at_k(ranked_ids: Sequence[str], gold_ids: Collection[str], k: int) -> float:
    """LongMemEval recall_all@k: 1.0 if every gold id is among the top k (1.0 if no gold)."""
    _check_k(k)
    top = set(ranked_ids[:k])
    return float(all(g in top for g in gold_ids))


def _dcg(relevances: Sequence[int], k: int) -> float:
    rel = np.asarray(relevances, dtype=np.float64)[:k]
    if rel.size == 0:
        return 0.0
    # Position 1 is not discounted and position i >= 2 is divided by log2(i): ranks 1 and 2 weigh
    # the same, as in the official code.
    return float(rel[0] + np.sum(rel[1:] / np.log2(np.arange(2, rel.size + 1))))


def ndcg_any_at_k(ranked_ids: Sequence[str], gold_ids: Collection[str], k: int) -> float:
    """LongMemEval ndcg_any@k with binary relevance.

    `ranked_ids` must be the *whole* ranked corpus, best first: the ideal DCG is built from the
    relevance of every corpus entry (duplicate ids each count; gold ids absent from the corpus do
    not), so nDCG can be 1.0 while recall_all is 0. No relevant entry gives 0.0.
    """
    _check_k(k)
    gold = set(gold_ids)
    relevances = [1 if doc in gold else 0 for doc in ranked_ids]
    ideal = _dcg(sorted(relevances, reverse=True), k)
    if ideal == 0:
        return 0.0
    return _dcg(relevances, k) / ideal


def strip_turn_index(turn_id: str) -> str:
    """LongMemEval turn id ``<session_id>_<t>`` -> ``<session_id>`` (drops the last ``_`` part)."""
    return "_".join(turn_id.split("_")[:-1])


def turn_to_session(
    ranked_turn_ids: Sequence[str], gold_turn_ids: Collection[str], k: int
) -> tuple[list[str], list[str], int]:
    """Turn-level ranking -> (session-level ranked ids, session gold ids, effective k).

    As the official code: session ids keep their duplicates in rank order, the gold is
    de-duplicated, and k grows until the top k' turns cover k distinct sessions (or the corpus
    is exhausted). Score with the three metrics above at the returned k.
    """
    _check_k(k)
    sessions = [strip_turn_index(t) for t in ranked_turn_ids]
    gold = list(dict.fromkeys(strip_turn_index(t) for t in gold_turn_ids))
    effective = k
    while effective <= len(sessions) and len(set(sessions[:effective])) < k:
        effective += 1
    return sessions, gold, effective
