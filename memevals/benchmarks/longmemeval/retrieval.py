"""LongMemEval's retrieval metrics (official, benchmarks/longmemeval/README.md#retrieval-metrics),
framework-free: the retrieval units, the official gold, and recall_any / recall_all / ndcg_any at
session and turn level, for context=rag's ranking and a memory system's cited ids alike.

Indexing follows the official retrieval code: only user turns are indexed, a session unit is its
user turns joined, a turn unit is one user turn with id `<session_id>_<t>` (t counts all turns
from 1). Gold ids are the unit ids that contain `answer` after renaming: an evidence unit without
a user `has_answer` turn gets `answer` replaced by `noans`, so it no longer counts. Questions with
an `_abs` id, or with no gold unit at all, are skipped (the official runner skips both).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.longmemeval.data import Instance, Session, Turn
from memevals.core.retrieval_metrics import (
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
    turn_to_session,
)
from memevals.core.retrievers import MemoryUnit

__all__ = [
    "HEADLINE_KS",
    "HEADLINE_TURN_KS",
    "K_VALUES",
    "RetrievalUnit",
    "gold_ids",
    "headline_keys",
    "headline_scores",
    "official_scores",
    "retrieval_score",
    "session_metric_id",
    "session_scores",
    "session_units",
    "shown_turns",
    "turn_metric_id",
    "turn_scores",
    "turn_units",
]

#: The official cut-offs.
K_VALUES: tuple[int, ...] = (1, 3, 5, 10, 30, 50)
#: Reported as Inspect metrics (the paper's headline columns); all K_VALUES go to the metadata.
HEADLINE_KS: tuple[int, ...] = (5, 10)
HEADLINE_TURN_KS: tuple[int, ...] = (5, 10, 50)


@dataclass(frozen=True)
class RetrievalUnit:
    """A unit with what it points back to: its session and the turns shown when retrieved."""

    unit: MemoryUnit  # id = official id, ids = (metric id after the noans rename,)
    session: Session
    shown: tuple[Turn, ...]


def _user_text(turns: Sequence[Turn]) -> str:
    return " ".join(t.content for t in turns if t.role == "user")


def session_metric_id(session: Session) -> str:
    # the official rename: an evidence session without a user evidence turn no longer counts
    sid = session.session_id
    if "answer" in sid and not session.has_user_evidence:
        return sid.replace("answer", "noans")
    return sid


def turn_metric_id(session: Session, turn: Turn) -> str:
    # the official rename of user turns; an assistant turn (a memory system may cite one) is
    # never gold, since only user turns are indexed officially, so it is renamed too
    tid = session.turn_id(turn)
    keep = turn.has_answer and turn.role == "user"
    return tid if keep or "answer" not in tid else tid.replace("answer", "noans")


def shown_turns(session: Session, turn: Turn) -> tuple[Turn, ...]:
    """A turn as context=rag turn mode shows it: a user turn with the assistant reply after it."""
    # positions are 1-based, so the turn after `turn` is at index `turn.position`
    nxt = session.turns[turn.position] if turn.position < len(session.turns) else None
    if turn.role == "user" and nxt is not None and nxt.role == "assistant":
        return (turn, nxt)
    return (turn,)


def session_units(inst: Instance) -> list[RetrievalUnit]:
    """One unit per haystack session (file order): its user turns, joined."""
    out = []
    for s in inst.sessions:
        ids = (session_metric_id(s),)
        unit = MemoryUnit(id=s.session_id, text=_user_text(s.turns), date=s.date, ids=ids)
        out.append(RetrievalUnit(unit, s, s.turns))
    return out


def turn_units(inst: Instance) -> list[RetrievalUnit]:
    """One unit per user turn (file order); shown with the assistant turn right after it."""
    out = []
    for s in inst.sessions:
        for t in s.turns:
            if t.role != "user":
                continue
            ids = (turn_metric_id(s, t),)
            unit = MemoryUnit(id=s.turn_id(t), text=t.content, date=s.date, ids=ids)
            out.append(RetrievalUnit(unit, s, shown_turns(s, t)))
    return out


def gold_ids(units: Sequence[RetrievalUnit]) -> list[str]:
    """Official gold: the metric ids that still contain `answer` (deduplicated, in order)."""
    return list(dict.fromkeys(i for u in units for i in u.unit.metric_ids if "answer" in i))


def _corpus_ndcg(ranked: Sequence[str], gold: Sequence[str], k: int, relevant: int) -> float:
    """ndcg_any@k of a ranking that may stop before the haystack does.

    The official ideal DCG is built from every relevant entry of the whole ranked corpus
    (ndcg_any_at_k); a system's ranking is only `depth` deep, so the relevant entries it did
    not return (`relevant` in all, as context=rag's full ranking holds them) are added after
    the first k, where they change the ideal and nothing else. With that, a ranking whose
    first k agree with context=rag's gets rag's nDCG@k exactly."""
    head = list(ranked[:k])
    head += [""] * (k - len(head))  # "" is never gold (gold ids contain "answer")
    wanted = set(gold)
    missing = max(0, relevant - sum(1 for i in head if i in wanted))
    return ndcg_any_at_k(head + [gold[0]] * missing if gold else head, gold, k)


def _ndcg(ranked: Sequence[str], gold: Sequence[str], k: int, relevant: int | None) -> float:
    """ndcg_any@k of a full ranking (`relevant` None) or of one that may stop early."""
    if relevant is None:
        return ndcg_any_at_k(ranked, gold, k)
    return _corpus_ndcg(ranked, gold, k, relevant)


def session_scores(
    ranked: Sequence[str], gold: Sequence[str], prefix: str = "", *, partial: bool = False
) -> dict[str, float]:
    """The official recall_any / recall_all / ndcg_any at every cut-off. `partial`: the ranking
    may stop before the haystack does (a memory system's is `depth` deep), so nDCG's ideal
    counts the gold entries it did not return (`_corpus_ndcg`)."""
    relevant = len(gold) if partial else None
    out: dict[str, float] = {}
    for k in K_VALUES:
        out[f"{prefix}recall_any@{k}"] = recall_any_at_k(ranked, gold, k)
        out[f"{prefix}recall_all@{k}"] = recall_all_at_k(ranked, gold, k)
        out[f"{prefix}ndcg_any@{k}"] = _ndcg(ranked, gold, k, relevant)
    return out


def turn_scores(
    ranked_turns: Sequence[str], gold_turns: Sequence[str], *, partial: bool = False
) -> dict[str, float]:
    """Turn-level metrics (prefix `turn_`) and, as officially, the same run scored at session
    level by growing k until the top turns cover k sessions. `partial` as in `session_scores`;
    where such a ranking ends before covering k sessions, the session-level value is that of
    the turns returned (context=rag would look further down its full ranking)."""
    # every gold turn maps to a gold session entry of the full corpus
    relevant = len(gold_turns) if partial else None
    out = session_scores(ranked_turns, gold_turns, prefix="turn_", partial=partial)
    for k in K_VALUES:
        sessions, gold, effective = turn_to_session(ranked_turns, gold_turns, k)
        out[f"recall_any@{k}"] = recall_any_at_k(sessions, gold, effective)
        out[f"recall_all@{k}"] = recall_all_at_k(sessions, gold, effective)
        out[f"ndcg_any@{k}"] = _ndcg(sessions, gold, effective, relevant)
    return out


def headline_keys(retrieval_unit: str) -> list[str]:
    """The headline metrics' names (the paper's columns) at `retrieval_unit`'s level.

    Args:
        retrieval_unit: session or turn (turn adds the turn-level recall_all / ndcg_any).

    Returns:
        The metric names, as the scores and the lm-eval results name them.
    """
    keys = [f"{m}@{k}" for k in HEADLINE_KS for m in ("recall_any", "recall_all", "ndcg_any")]
    if retrieval_unit == "turn":
        keys += [f"turn_{m}@{k}" for k in HEADLINE_TURN_KS for m in ("recall_all", "ndcg_any")]
    return keys


def official_scores(
    inst: Instance,
    ranked: Sequence[str],
    gold: Sequence[str],
    *,
    turn_level: bool,
    partial: bool = False,
) -> tuple[dict[str, float] | None, str | None]:
    """The official metrics of one question's ranking, or why the official runner skips it.

    Args:
        inst: the question.
        ranked: the ranked metric ids (turn ids at turn level, else session ids).
        gold: the gold metric ids of the same level.
        turn_level: score turns (and sessions from them) rather than sessions.
        partial: the ranking may stop before the haystack does (a memory system's).

    Returns:
        (every metric at every cut-off, None) or (None, why skipped).
    """
    if inst.is_abstention:
        return None, "abstention question"
    if not gold:
        return None, "no user turn is marked has_answer"
    if turn_level:
        return turn_scores(ranked, gold, partial=partial), None
    return session_scores(ranked, gold, partial=partial), None


def headline_scores(metadata: Mapping[str, Any]) -> dict[str, float] | None:
    """A sample's headline retrieval metrics (the paper's columns), from its metadata.

    Args:
        metadata: the sample's metadata (`retrieval_scores`, `retrieval_unit`).

    Returns:
        The headline metrics, or None when the question was skipped.
    """
    scores = metadata.get("retrieval_scores")
    if scores is None:
        return None
    return {k: float(scores[k]) for k in headline_keys(str(metadata["retrieval_unit"]))}


def retrieval_score(
    sample_id: object, metadata: Mapping[str, Any]
) -> tuple[dict[str, float] | None, str, dict[str, Any]]:
    """A sample's retrieval score, as its context (rag, or a memory system's items) logged it.

    Args:
        sample_id: the sample's id, for messages.
        metadata: the sample's metadata.

    Returns:
        The headline metrics (None: skipped, as the official runner skips the question), the
        explanation, and the score's metadata (every k, the retrieved ids).
    """
    if metadata.get("context") not in ("rag", "memory"):
        raise ValueError(
            f"sample {sample_id}: retrieval metrics need context=rag or a memory system"
        )
    ids = metadata.get("retrieved_ids")
    value = headline_scores(metadata)
    if value is None:
        why = f"skipped for retrieval metrics: {metadata.get('retrieval_skipped')}"
        return None, why, {"retrieved_ids": ids}
    scores = metadata["retrieval_scores"]
    return value, f"retrieved (best first): {ids}", {"all_k": scores, "retrieved_ids": ids}
