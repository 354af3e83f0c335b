"""judge_check's scoring, framework-free: the grader's verdict on one candidate, and the run's
figures from every sample's (score value, sample metadata).

A readable verdict with any credit ("correct", or "partial" where the criterion has it) counts
as accepted; an unreadable one leaves the sample unscored (NaN), counted, never wrong.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from memevals.core.criteria_judge import parse_verdict

__all__ = ["GRADER_MAX_TOKENS", "KINDS", "REPLIES_KEY", "WRONG_KINDS", "figures", "verdict_score"]

#: Candidate kinds, in sample order; the wrong kinds map to the audit file they come from.
KINDS = ("gold", "specific_wrong", "vague_wrong")
WRONG_KINDS: dict[str, str] = {"specific_wrong": "v1", "vague_wrong": "v2"}
#: The grader's token limit (as the llm_judge scorer's default).
GRADER_MAX_TOKENS = 256
#: The sample-metadata key the solver keeps the grader's replies under (repairs included).
REPLIES_KEY = "judge_check_replies"

#: One sample's score value and its sample metadata, as a metric sees them.
Row = tuple[Any, Mapping[str, Any]]


def verdict_score(reply: str, should: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """The score of one graded candidate: 1 when the verdict gives it any credit, 0 when none,
    NaN (unscored) when no reply could be read.

    Args:
        reply: the grader's last reply.
        should: the target ("accept" or "reject"), for the explanation.
        metadata: the sample's metadata (criterion, kind, candidate, the replies).

    Returns:
        The score's fields: value, answer, explanation, metadata (and reason when unscored).
    """
    criterion = str(metadata["criterion"])
    verdict = parse_verdict(reply, criterion)
    replies = metadata.get(REPLIES_KEY, [reply])
    md: dict[str, Any] = {
        "kind": metadata["kind"],
        "criterion": criterion,
        "label": verdict.label if verdict else None,
        "credit": verdict.score if verdict else None,
        "replies": replies,
    }
    answer = str(metadata["candidate"])
    if verdict is None:
        return {
            "value": {"accepted": math.nan, "unscored": 1},
            "answer": answer,
            "reason": "grader_failed",
            "explanation": f"UNSCORED: no readable verdict in {len(replies)} attempt(s)",
            "metadata": md,
        }
    return {
        "value": {"accepted": 1.0 if verdict.score > 0 else 0.0, "unscored": 0},
        "answer": answer,
        "explanation": f"{verdict.label}: {verdict.reason} (should {should})",
        "metadata": md,
    }


def _rate(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _accepted(value: Any) -> float:
    """The sample's accepted value (NaN when unscored). Scores are dicts: Inspect drops a bare
    NaN score before any metric sees it, and the unscored must still be counted."""
    if not isinstance(value, Mapping) or "accepted" not in value:
        raise ValueError(f"judge_check metric: score {value!r} has no 'accepted' key")
    accepted = value["accepted"]
    if not isinstance(accepted, int | float):
        raise ValueError(f"judge_check metric: score {value!r} has no numeric 'accepted'")
    return float(accepted)


def _rates(rows: Sequence[Row]) -> tuple[dict[str, float], int]:
    """Acceptance rate per candidate kind (kinds without a scored sample left out) and the
    number of unscored samples."""
    accepted: dict[str, list[float]] = {k: [] for k in KINDS}
    unscored = 0
    for value, md in rows:
        number = _accepted(value)
        if math.isnan(number):
            unscored += 1
        else:
            accepted[str(md["kind"])].append(number)
    rates = {k: r for k in KINDS if (r := _rate(accepted[k])) is not None}
    return rates, unscored


def _balanced(rates: Mapping[str, float]) -> float | None:
    """Balanced accuracy: the mean over the wrong kinds present of (gold accept rate + wrong
    reject rate) / 2; None without gold or wrong candidates scored."""
    if "gold" not in rates:
        return None
    per_kind = [(rates["gold"] + 1.0 - rates[k]) / 2 for k in WRONG_KINDS if k in rates]
    return sum(per_kind) / len(per_kind) if per_kind else None


def figures(rows: Sequence[Row]) -> dict[str, float]:
    """The grader's separation of right from wrong answers, headline first: `balanced`, the
    acceptance rate per candidate kind (`<kind>_accept`), the audit's own mean acceptance per
    wrong kind (`<kind>_audit_accept`), `unscored`, then `<category>_balanced`. A figure with
    nothing scored to compute it from is left out (never NaN).

    Args:
        rows: each sample's score value and sample metadata.

    Returns:
        The figures by name.
    """
    rates, unscored = _rates(rows)
    out: dict[str, float] = {}
    if (balanced := _balanced(rates)) is not None:
        out["balanced"] = balanced
    out |= {f"{kind}_accept": rate for kind, rate in rates.items()}
    for kind in WRONG_KINDS:
        audit = [
            sum(bool(v) for v in verdicts) / len(verdicts)
            for _, md in rows
            if md["kind"] == kind and (verdicts := md.get("audit_verdicts"))
        ]
        if (rate := _rate(audit)) is not None:
            out[f"{kind}_audit_accept"] = rate
    out["unscored"] = float(unscored)
    for category in sorted({str(md["category"]) for _, md in rows}):
        subset = [row for row in rows if row[1]["category"] == category]
        if (balanced := _balanced(_rates(subset)[0])) is not None:
            out[f"{category}_balanced"] = balanced
    return out
