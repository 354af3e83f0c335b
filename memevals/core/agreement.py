"""Agreement between two judges on the same samples: raw agreement and Cohen's kappa.

Used to measure judge stability (the LoCoMo-Plus paper compares judges this way): a high score
from one judge means little if another judge would label the same replies differently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["Agreement", "agreement", "agreement_by_group", "cohen_kappa"]


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    """Unweighted Cohen's kappa of two label sequences (same items, same order).

    kappa = (p_o - p_e) / (1 - p_e), where p_o is the observed agreement and p_e the agreement
    expected by chance from each judge's label frequencies. None when it is undefined: no items,
    or both judges gave one and the same label to everything (p_e = 1).
    """
    if len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} vs {len(b)}")
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    freq_a, freq_b = Counter(a), Counter(b)
    expected = sum(freq_a[label] * freq_b.get(label, 0) for label in freq_a) / (n * n)
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


@dataclass(frozen=True)
class Agreement:
    """Agreement of two judges over the samples both of them scored."""

    n: int
    agree: float | None  # fraction of samples with the same label; None when n == 0
    kappa: float | None
    score_a: float | None  # mean score of judge A over these samples
    score_b: float | None


def agreement(
    labels_a: Sequence[str],
    labels_b: Sequence[str],
    scores_a: Sequence[float],
    scores_b: Sequence[float],
) -> Agreement:
    n = len(labels_a)
    if not (len(labels_b) == len(scores_a) == len(scores_b) == n):
        raise ValueError("labels and scores must all have the same length")
    if n == 0:
        return Agreement(0, None, None, None, None)
    same = sum(x == y for x, y in zip(labels_a, labels_b, strict=True))
    return Agreement(
        n=n,
        agree=same / n,
        kappa=cohen_kappa(labels_a, labels_b),
        score_a=sum(scores_a) / n,
        score_b=sum(scores_b) / n,
    )


def agreement_by_group(
    pairs: Mapping[str, Sequence[tuple[str, float, str, float]]],
) -> dict[str, Agreement]:
    """Per group (e.g. category): (label_a, score_a, label_b, score_b) tuples -> Agreement;
    the extra key "all" pools every group."""
    if "all" in pairs:
        raise ValueError('a group is named "all", which clashes with the pooled row')
    out: dict[str, Agreement] = {}
    pooled: list[tuple[str, float, str, float]] = []
    for group, rows in pairs.items():
        pooled.extend(rows)
        out[group] = _from_rows(rows)
    out["all"] = _from_rows(pooled)
    return out


def _from_rows(rows: Sequence[tuple[str, float, str, float]]) -> Agreement:
    return agreement(
        [r[0] for r in rows], [r[2] for r in rows], [r[1] for r in rows], [r[3] for r in rows]
    )
