"""Agreement between judges on the same samples: raw agreement and Cohen's kappa for two
judges, raw agreement and Fleiss' kappa for one judge asked N times (repeated judging).

Used to measure judge stability (the LoCoMo-Plus paper compares judges this way): a high score
from one judge means little if another judge, or the same judge asked again, would label the
same replies differently.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

__all__ = [
    "Agreement",
    "RepeatedAgreement",
    "agreement",
    "agreement_by_group",
    "agreement_figures",
    "cohen_kappa",
    "fleiss_kappa",
    "repeated_agreement",
]


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


def fleiss_kappa(ratings: Sequence[Sequence[Hashable]]) -> float | None:
    """Fleiss' kappa of N ratings per item (statsmodels' implementation, method "fleiss").

    ``ratings[i]`` holds the N labels item i received; every item needs the same N >= 2. None
    when it is undefined: no items, or every rating is one and the same label (chance agreement
    is then 1).
    """
    import numpy as np
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

    if not ratings:
        return None
    width = len(ratings[0])
    if width < 2 or any(len(r) != width for r in ratings):
        raise ValueError(
            f"Fleiss' kappa needs the same number (>= 2) of ratings per item, got "
            f"{sorted({len(r) for r in ratings})}"
        )
    codes: dict[Hashable, int] = {}
    table = np.array([[codes.setdefault(x, len(codes)) for x in row] for row in ratings])
    if len(codes) < 2:
        return None
    counts, _ = aggregate_raters(table, n_cat=len(codes))
    return float(sm_fleiss_kappa(counts, method="fleiss"))


@dataclass(frozen=True)
class RepeatedAgreement:
    """Agreement of N repeated judgments over the items that received all N."""

    items: int  # items with N readable verdicts (the others are left out, and counted)
    incomplete: int  # items with at least one unreadable verdict
    agree: float | None  # share of items whose N labels are all the same; None when items == 0
    kappa: float | None  # Fleiss' kappa; None when undefined


def repeated_agreement(ratings: Sequence[Sequence[Hashable | None]]) -> RepeatedAgreement:
    """Raw agreement and Fleiss' kappa of per-item label lists, where None marks an unreadable
    verdict: an item with any None is left out (Fleiss' kappa needs N ratings per item)."""
    complete = [list(r) for r in ratings if r and all(x is not None for x in r)]
    incomplete = len(ratings) - len(complete)
    if not complete:
        return RepeatedAgreement(0, incomplete, None, None)
    agree = sum(len(set(r)) == 1 for r in complete) / len(complete)
    return RepeatedAgreement(len(complete), incomplete, agree, fleiss_kappa(complete))


def agreement_figures(
    prefix: str, ratings: Sequence[Sequence[Hashable | None]]
) -> dict[str, float]:
    """The defined figures of `repeated_agreement` as named numbers.

    Args:
        prefix: put before each name (e.g. "judge_" or a category's "temporal_").
        ratings: per-item label lists, None marking an unreadable verdict.

    Returns:
        `{prefix}agreement` and `{prefix}kappa`, each only when it is defined.
    """
    result = repeated_agreement(ratings)
    out: dict[str, float] = {}
    if result.agree is not None:
        out[f"{prefix}agreement"] = result.agree
    if result.kappa is not None:
        out[f"{prefix}kappa"] = result.kappa
    return out
