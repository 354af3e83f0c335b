"""ROUGE between a generated text and a reference, shared by the generation benchmarks.

Event summarisation reports ROUGE-1/2/L and dialogue generation ROUGE-L; both use this one
wrapper over the `rouge-score` package, so the two tasks tokenise and stem alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

__all__ = ["ROUGE_TYPES", "rouge_scores"]

#: The ROUGE variants reported by default (F-measure of each).
ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")


@lru_cache(maxsize=4)
def _rouge_scorer(types: tuple[str, ...], use_stemmer: bool) -> Any:
    try:
        from rouge_score.rouge_scorer import RougeScorer
    except ImportError as exc:
        raise ValueError(
            "ROUGE needs the rouge-score package: pip install 'memevals[summary]'"
        ) from exc
    return RougeScorer(list(types), use_stemmer=use_stemmer)


def rouge_scores(
    prediction: str,
    reference: str,
    *,
    types: Sequence[str] = ROUGE_TYPES,
    use_stemmer: bool = True,
) -> dict[str, float]:
    """ROUGE F-measures of `prediction` against `reference`, computed by `rouge-score`.

    rouge-score lowercases and keeps only letters and digits; with `use_stemmer` it Porter-stems
    words (the usual setting in summarisation papers). `rougeL` is the longest common
    subsequence over the whole text (not the per-sentence `rougeLsum`).
    """
    scores = _rouge_scorer(tuple(types), use_stemmer).score(reference, prediction)
    return {name: float(scores[name].fmeasure) for name in types}
