"""LongMemEval retrieval (context=rag): sessions or user turns as retrieval units, the official
gold rules, and the official recall_any / recall_all / ndcg_any at session and turn level.

Indexing follows the official retrieval code (BENCHMARKS.md §3.6): only user turns are indexed,
a session unit is its user turns joined, a turn unit is one user turn with id
`<session_id>_<t>` (t counts all turns from 1). Gold ids are the unit ids that contain `answer`
after renaming: an evidence unit without a user `has_answer` turn gets `answer` replaced by
`noans`, so it no longer counts. Questions with an `_abs` id, or with no gold unit at all, are
skipped for the retrieval metrics (the official runner skips both).

What the model reads: a retrieved session is shown whole (both roles, like the full history); a
retrieved user turn is shown with the assistant reply that follows it. Both in date order.
The retrievers themselves (BM25, embeddings) are the shared ones of memevals.memory.retrieval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memevals.adapters.longmemeval import Instance, Session, Turn
from memevals.memory.retrieval import (
    RETRIEVERS,
    MemoryUnit,
    Retriever,
    make_retriever,
    reject_rag_only_options,
    resolve_embedding_model,
)
from memevals.prompts.longmemeval import (
    SessionBlock,
    render_turns,
    select_sessions,
    session_blocks,
)
from memevals.scorers.retrieval import (
    ndcg_any_at_k,
    recall_all_at_k,
    recall_any_at_k,
    turn_to_session,
)

CONTEXT_MODES: tuple[str, ...] = ("full", "rag", "oracle", "none")
RETRIEVAL_UNITS: tuple[str, ...] = ("session", "turn")
DEFAULT_RETRIEVAL_UNIT = "session"
DEFAULT_TOP_K = 5
DEFAULT_RETRIEVER = "bm25"
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


def session_units(inst: Instance) -> list[RetrievalUnit]:
    """One unit per haystack session (file order): its user turns, joined."""
    out = []
    for s in inst.sessions:
        metric_id = s.session_id
        if "answer" in metric_id and not s.has_user_evidence:
            metric_id = metric_id.replace("answer", "noans")
        unit = MemoryUnit(id=s.session_id, text=_user_text(s.turns), date=s.date, ids=(metric_id,))
        out.append(RetrievalUnit(unit, s, s.turns))
    return out


def turn_units(inst: Instance) -> list[RetrievalUnit]:
    """One unit per user turn (file order); shown with the assistant turn right after it."""
    out = []
    for s in inst.sessions:
        for i, t in enumerate(s.turns):
            if t.role != "user":
                continue
            tid = s.turn_id(t)
            metric_id = (
                tid if t.has_answer or "answer" not in tid else tid.replace("answer", "noans")
            )
            nxt = s.turns[i + 1] if i + 1 < len(s.turns) else None
            shown = (t, nxt) if nxt is not None and nxt.role == "assistant" else (t,)
            unit = MemoryUnit(id=tid, text=t.content, date=s.date, ids=(metric_id,))
            out.append(RetrievalUnit(unit, s, shown))
    return out


def gold_ids(units: Sequence[RetrievalUnit]) -> list[str]:
    """Official gold: the metric ids that still contain `answer` (deduplicated, in order)."""
    return list(dict.fromkeys(i for u in units for i in u.unit.metric_ids if "answer" in i))


def session_scores(
    ranked: Sequence[str], gold: Sequence[str], prefix: str = ""
) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in K_VALUES:
        out[f"{prefix}recall_any@{k}"] = recall_any_at_k(ranked, gold, k)
        out[f"{prefix}recall_all@{k}"] = recall_all_at_k(ranked, gold, k)
        out[f"{prefix}ndcg_any@{k}"] = ndcg_any_at_k(ranked, gold, k)
    return out


def turn_scores(ranked_turns: Sequence[str], gold_turns: Sequence[str]) -> dict[str, float]:
    """Turn-level metrics (prefix `turn_`) and, as officially, the same run scored at session
    level by growing k until the top turns cover k sessions."""
    out = session_scores(ranked_turns, gold_turns, prefix="turn_")
    for k in K_VALUES:
        sessions, gold, effective = turn_to_session(ranked_turns, gold_turns, k)
        out[f"recall_any@{k}"] = recall_any_at_k(sessions, gold, effective)
        out[f"recall_all@{k}"] = recall_all_at_k(sessions, gold, effective)
        out[f"ndcg_any@{k}"] = ndcg_any_at_k(sessions, gold, effective)
    return out


def headline_keys(retrieval_unit: str) -> list[str]:
    keys = [f"{m}@{k}" for k in HEADLINE_KS for m in ("recall_any", "recall_all", "ndcg_any")]
    if retrieval_unit == "turn":
        keys += [f"turn_{m}@{k}" for k in HEADLINE_TURN_KS for m in ("recall_all", "ndcg_any")]
    return keys


@dataclass(frozen=True)
class LmeContext:
    """What one question gets: the blocks shown, and for rag the retrieval record."""

    blocks: tuple[SessionBlock, ...]
    retrieved_ids: tuple[str, ...] | None = None  # top_k official unit ids, best first
    retrieval_scores: dict[str, float] | None = None  # None when skipped or not rag
    retrieval_skipped: str | None = None  # why the metrics skip this question


def _turn_blocks(chosen: Sequence[RetrievalUnit], history_format: str) -> tuple[SessionBlock, ...]:
    """Retrieved turns grouped by session, sessions in date order, turns in session order."""
    by_session: dict[int, tuple[Session, dict[int, Turn]]] = {}
    for u in chosen:
        _, turns = by_session.setdefault(u.session.index, (u.session, {}))
        for t in u.shown:
            turns[t.position] = t
    ordered = sorted(by_session.values(), key=lambda st: (st[0].when, st[0].index))
    return tuple(
        SessionBlock(
            s.session_id, s.date, render_turns([turns[p] for p in sorted(turns)], history_format)
        )
        for s, turns in ordered
    )


@dataclass
class LongMemEvalMemory:
    """A validated strategy; call it on an instance to get its context."""

    context: str
    history_format: str = "json"
    retrieval_unit: str | None = None
    top_k: int | None = None
    retriever: Retriever | None = None
    embedding_model: str | None = None

    def settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {"context": self.context, "history_format": self.history_format}
        if self.context == "rag":
            assert self.retriever is not None
            out |= {
                "retrieval_unit": self.retrieval_unit,
                "top_k": self.top_k,
                "retriever": self.retriever.name,
            }
            if self.embedding_model is not None:
                out["embedding_model"] = self.embedding_model
        return out

    def __call__(self, inst: Instance) -> LmeContext:
        if self.context != "rag":
            return LmeContext(
                session_blocks(select_sessions(inst, self.context), self.history_format)
            )
        assert self.retriever is not None and self.top_k is not None
        units = turn_units(inst) if self.retrieval_unit == "turn" else session_units(inst)
        ranking = self.retriever.index([u.unit for u in units]).rank(inst.question)
        chosen = [units[p] for p in ranking[: self.top_k]]
        if self.retrieval_unit == "turn":
            blocks = _turn_blocks(chosen, self.history_format)
        else:
            blocks = session_blocks([u.session for u in chosen], self.history_format)
        ranked_metric_ids = [i for p in ranking for i in units[p].unit.metric_ids]
        gold = gold_ids(units)
        skipped = None
        scores = None
        if inst.is_abstention:
            skipped = "abstention question"
        elif not gold:
            skipped = "no user turn is marked has_answer"
        elif self.retrieval_unit == "turn":
            scores = turn_scores(ranked_metric_ids, gold)
        else:
            scores = session_scores(ranked_metric_ids, gold)
        return LmeContext(
            blocks=blocks,
            retrieved_ids=tuple(u.unit.id for u in chosen),
            retrieval_scores=scores,
            retrieval_skipped=skipped,
        )


def longmemeval_memory(
    context: str = "full",
    *,
    history_format: str = "json",
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
) -> LongMemEvalMemory:
    """Validate the options and build the strategy (raises ValueError naming the option).

    Retrieval options are rejected unless context=rag, so a sweep never silently runs another
    setting than the one asked for; an embedding model is loaded here, before any model call.
    """
    if context not in CONTEXT_MODES:
        raise ValueError(f"context={context!r} is not one of {', '.join(CONTEXT_MODES)}")
    reject_rag_only_options(
        context,
        retrieval_unit=retrieval_unit,
        top_k=top_k,
        retriever=retriever,
        embedding_model=embedding_model,
    )
    if context != "rag":
        return LongMemEvalMemory(context, history_format)
    unit = DEFAULT_RETRIEVAL_UNIT if retrieval_unit is None else retrieval_unit
    if unit not in RETRIEVAL_UNITS:
        raise ValueError(
            f"retrieval_unit={unit!r} is not one of {', '.join(RETRIEVAL_UNITS)} for LongMemEval"
        )
    k = DEFAULT_TOP_K if top_k is None else top_k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {k!r}")
    kind = DEFAULT_RETRIEVER if retriever is None else retriever
    if kind not in RETRIEVERS:
        raise ValueError(f"retriever={kind!r} is not one of {', '.join(RETRIEVERS)}")
    engine = make_retriever(kind, embedding_model)
    resolved = None
    if kind == "embedding":
        resolved = resolve_embedding_model(getattr(engine, "model_name", embedding_model or ""))
    return LongMemEvalMemory(
        context,
        history_format,
        retrieval_unit=unit,
        top_k=k,
        retriever=engine,
        embedding_model=resolved,
    )
