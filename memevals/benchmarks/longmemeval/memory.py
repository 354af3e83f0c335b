"""LongMemEval memory: which sessions the model sees and the dated history it reads.

The history (benchmarks/longmemeval/README.md#protocol, wording ours) is sorted by date, each
session in a
`### Session <i>` block that states its date; the body is the session's turns as JSON
(`has_answer` removed: it would give the answer away) or as `role: content` lines. The context
modes: full (every session), oracle (the answer sessions), none, truncated and rag (below).

Retrieval (context=rag): sessions or user turns as retrieval units, ranked by the shared
retriever and scored with the official metrics of memevals.benchmarks.longmemeval.retrieval.

What the model reads: a retrieved session is shown whole (both roles, like the full history); a
retrieved user turn is shown with the assistant reply that follows it. Both in date order.
The retrievers themselves (BM25, embeddings) are the shared ones of memevals.core.retrievers.

`memory`: a memory system under test (`-T memory=<name>`, docs/memory_systems.md) ingests the
haystack (`longmemeval_history`) and retrieves for the question; `memory_context` renders its
items (verbatim sessions and turns exactly as context=rag shows them, other items as dated
notes) and scores the ids they cite with the same official metrics.

`truncated` follows the official reader (benchmarks/longmemeval/README.md#protocol): the dated
history is cut to the
model's window − the answer length − 1000 tokens, keeping the **beginning** (the oldest
sessions; the cut may fall inside a session, as in the official code). The budget covers the
whole system message (history introduction included), counted by the offline counter of
memevals.core.tokens; `max_context_tokens` sets it directly.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.longmemeval.data import Instance, Session, Turn
from memevals.benchmarks.longmemeval.retrieval import (
    K_VALUES,
    RetrievalUnit,
    gold_ids,
    official_scores,
    session_metric_id,
    session_units,
    shown_turns,
    turn_metric_id,
    turn_units,
)
from memevals.core.memory_harness import Rendered, Renderer, Retrieval
from memevals.core.memory_options import MEMORY_CONTEXT, MemoryOptions, MemoryStrategy, RagDefaults
from memevals.core.memory_system import History, MemoryItem
from memevals.core.memory_system import Session as HistorySession
from memevals.core.memory_system import Turn as HistoryTurn
from memevals.core.retrievers import positive_tokens, strategy_settings
from memevals.core.tokens import get_token_counter

__all__ = [
    "CONTEXT_MODES",
    "DEFAULT_ANSWER_TOKENS",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_RETRIEVAL_UNIT",
    "DEFAULT_RETRIEVER",
    "DEFAULT_TOP_K",
    "HISTORY_FORMATS",
    "HISTORY_INTRO",
    "MEMORY_DEPTH",
    "MEMORY_NOTES_INTRO",
    "RAG_DEFAULTS",
    "RETRIEVAL_UNITS",
    "SELECTION_MODES",
    "TRUNCATION_RESERVE",
    "LmeContext",
    "LongMemEvalMemory",
    "MessageFn",
    "SessionBlock",
    "history_text",
    "longmemeval_history",
    "longmemeval_memory",
    "memory_context",
    "memory_depth",
    "memory_renderer",
    "render_blocks",
    "render_turns",
    "select_sessions",
    "session_blocks",
    "truncation_budget",
    "turn_json",
    "warn_if_oversized",
]

logger = logging.getLogger(__name__)

CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "rag", "oracle", "none")
#: The modes that pick whole sessions without a budget or a ranking (`select_sessions`).
SELECTION_MODES: tuple[str, ...] = ("full", "oracle", "none")
HISTORY_FORMATS: tuple[str, ...] = ("json", "text")
#: context=truncated without a budget: the window of gpt-4o, the paper's main reader.
DEFAULT_CONTEXT_WINDOW = 128_000
#: The official reader leaves this many tokens of the window for the prompt around the history.
TRUNCATION_RESERVE = 1000
#: The paper's answer length (what the budget reserves unless told otherwise).
DEFAULT_ANSWER_TOKENS = 500
RETRIEVAL_UNITS: tuple[str, ...] = ("session", "turn")
DEFAULT_RETRIEVAL_UNIT = "session"
DEFAULT_TOP_K = 5
DEFAULT_RETRIEVER = "bm25"
RAG_DEFAULTS = RagDefaults(
    benchmark="LongMemEval",
    units=RETRIEVAL_UNITS,
    unit=DEFAULT_RETRIEVAL_UNIT,
    top_k=DEFAULT_TOP_K,
    retriever=DEFAULT_RETRIEVER,
)

HISTORY_INTRO = (
    "You are a chat assistant with a long-term memory of your conversations with this user. "
    "Below are your earlier chat sessions with them, oldest first; each session begins with "
    "the date it took place. Use whatever in this history is relevant to answer the user's "
    "question. Dates matter: resolve words like 'last week' against the session dates and the "
    "current date."
)


# ---------------------------------------------------------------------------------------------
# Rendering the history


def _check_history_format(history_format: str) -> None:
    if history_format not in HISTORY_FORMATS:
        raise ValueError(
            f"history_format={history_format!r} is not one of {', '.join(HISTORY_FORMATS)}"
        )


def turn_json(turn: Turn) -> dict[str, str]:
    """The turn as the model sees it: role and content only (`has_answer` is withheld)."""
    return {"role": turn.role, "content": turn.content}


def render_turns(turns: Sequence[Turn], history_format: str) -> str:
    _check_history_format(history_format)
    if history_format == "json":
        return json.dumps([turn_json(t) for t in turns], ensure_ascii=False)
    return "\n".join(f"{t.role}: {t.content.strip()}" for t in turns)


@dataclass(frozen=True)
class SessionBlock:
    """One session as shown to the model (or to the note taker): its date and body text."""

    session_id: str
    date: str
    body: str


def session_blocks(
    sessions: Iterable[Session], history_format: str = "json"
) -> tuple[SessionBlock, ...]:
    """Blocks in chronological order (ties keep the given order); has_answer never shown."""
    ordered = sorted(sessions, key=lambda s: s.when)
    return tuple(
        SessionBlock(s.session_id, s.date, render_turns(s.turns, history_format)) for s in ordered
    )


def render_blocks(blocks: Sequence[SessionBlock], *, label: str = "Session content") -> str:
    return "\n\n".join(
        f"### Session {i}\nSession date: {b.date}\n{label}:\n{b.body}"
        for i, b in enumerate(blocks, start=1)
    )


def history_text(blocks: Sequence[SessionBlock]) -> str:
    """The system text for the given (chronological) blocks; empty when there are none."""
    if not blocks:
        return ""
    return f"{HISTORY_INTRO}\n\n{render_blocks(blocks)}"


def select_sessions(inst: Instance, context: str) -> tuple[Session, ...]:
    """Sessions a context mode shows: all (full), the answer sessions (oracle) or none."""
    if context == "full":
        return inst.sessions
    if context == "oracle":
        return inst.answer_sessions()
    if context == "none":
        return ()
    raise ValueError(f"context={context!r} is not one of {', '.join(SELECTION_MODES)}")


@dataclass(frozen=True)
class LmeContext:
    """What one question gets: the blocks shown, and for rag the retrieval record."""

    blocks: tuple[SessionBlock, ...]
    retrieved_ids: tuple[str, ...] | None = None  # top_k official unit ids, best first
    retrieval_scores: dict[str, float] | None = None  # None when skipped or not rag
    retrieval_skipped: str | None = None  # why the metrics skip this question
    system: str | None = None  # the system text when it is not history_text(blocks)
    system_tokens: int | None = None  # its token count, when already known
    history_tokens: int | None = None  # truncated: tokens of the whole history before the cut
    retrieval_unit: str | None = None  # memory: the level its cited ids are scored at
    #: what is shown before any layout, for protocol=official: sessions whole (turn None) or
    #: retrieved turns, in selection (file or rank) order
    units: tuple[tuple[Session, Turn | None], ...] = ()
    #: a memory system's items shown by their own text: (date, text), in rank order
    facts: tuple[tuple[str, str], ...] = ()

    @property
    def system_text(self) -> str:
        return history_text(self.blocks) if self.system is None else self.system


def _turn_blocks(chosen: Sequence[RetrievalUnit], history_format: str) -> tuple[SessionBlock, ...]:
    """Retrieved turns grouped by session, sessions in date order, turns in session order."""
    return _grouped_blocks([(u.session, u.shown) for u in chosen], history_format)


def _grouped_blocks(
    shown: Sequence[tuple[Session, Sequence[Turn]]], history_format: str
) -> tuple[SessionBlock, ...]:
    """(session, turns to show) pairs merged per session: sessions in date order (ties in file
    order), each session's turns once and in session order."""
    by_session: dict[int, tuple[Session, dict[int, Turn]]] = {}
    for session, turns_shown in shown:
        _, turns = by_session.setdefault(session.index, (session, {}))
        for t in turns_shown:
            turns[t.position] = t
    ordered = sorted(by_session.values(), key=lambda st: (st[0].when, st[0].index))
    return tuple(
        SessionBlock(
            s.session_id, s.date, render_turns([turns[p] for p in sorted(turns)], history_format)
        )
        for s, turns in ordered
    )


# ---------------------------------------------------------------------------------------------
# The strategy


@dataclass(frozen=True)
class LongMemEvalMemory(MemoryStrategy):
    """A validated strategy; call it on an instance to get its context."""

    history_format: str = "json"

    def settings(self) -> dict[str, Any]:
        """The strategy's parameters, for the log (only those that apply to the mode)."""
        return {
            "history_format": self.history_format,
            **strategy_settings(self, self.token_counter.name),
        }

    def __call__(self, inst: Instance) -> LmeContext:
        if self.context == "truncated":
            return self._truncated(inst)
        if self.context == MEMORY_CONTEXT:
            return LmeContext(())  # the system's context is retrieved at run time
        if self.context != "rag":
            selected = select_sessions(inst, self.context)
            return LmeContext(
                session_blocks(selected, self.history_format),
                units=tuple((s, None) for s in selected),
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
        turn_unit = self.retrieval_unit == "turn"
        scores, skipped = official_scores(
            inst, ranked_metric_ids, gold_ids(units), turn_level=turn_unit
        )
        return LmeContext(
            blocks=blocks,
            retrieved_ids=tuple(u.unit.id for u in chosen),
            retrieval_scores=scores,
            retrieval_skipped=skipped,
            units=tuple((u.session, u.shown[0] if turn_unit else None) for u in chosen),
        )

    def _truncated(self, inst: Instance) -> LmeContext:
        """The beginning of the dated history within max_context_tokens (official rule)."""
        assert self.max_context_tokens is not None
        blocks = session_blocks(inst.sessions, self.history_format)
        full = history_text(blocks)
        text, tokens, total = self.token_counter.head(full, self.max_context_tokens)
        if blocks and len(text) <= full.index("### Session 1\n") + len("### Session 1\n"):
            raise ValueError(
                f"{inst.question_id}: max_context_tokens={self.max_context_tokens} leaves no "
                "room for any session after the history introduction; give a larger "
                "max_context_tokens (or context_window)"
            )
        # sessions whose header made it into the kept text (the last one may be cut short)
        shown = tuple(b for i, b in enumerate(blocks, 1) if f"### Session {i}\n" in text)
        return LmeContext(
            blocks=shown,
            system=text,
            system_tokens=tokens,
            history_tokens=total,
            units=tuple((s, None) for s in inst.sessions),
        )


def warn_if_oversized(variant: str, context: str) -> None:
    """M with the whole history is ~1.5M tokens per question, beyond most readers' windows,
    and every rendered prompt is held in memory: say so once, before the long load. A memory
    system under test holds every haystack too (it ingests them), so it gets its own note."""
    if variant == "m" and context == MEMORY_CONTEXT:
        logger.warning(
            "LongMemEval M with a memory system: all 500 haystacks (~1.5M tokens each) are held "
            "in memory while the system ingests them (several GB)."
        )
    if variant == "m" and context == "full":
        logger.warning(
            "LongMemEval M with context=full: each history is ~1.5M tokens (longer than most "
            "models' windows) and all 500 prompts are held in memory (several GB). Use "
            "context=truncated (-T context_window=<your model's window>), rag or oracle "
            "unless your model really reads 1.5M tokens."
        )


def longmemeval_memory(
    options: MemoryOptions,
    *,
    history_format: str = "json",
    context_window: int | None = None,
    answer_tokens: int = DEFAULT_ANSWER_TOKENS,
) -> LongMemEvalMemory:
    """Validate the options and build the strategy (raises ValueError naming the option).

    Options that do not apply to `options.context` are rejected, so a sweep never silently
    runs another setting than the one asked for; an embedding model is loaded here, before any
    model call. context=truncated takes `max_context_tokens` (the budget of the system message)
    or `context_window` (default 128,000), from which the official budget window −
    answer_tokens − 1000 is derived.
    """
    _check_history_format(history_format)
    options = options.checked(CONTEXT_MODES, context_window=context_window)
    counter = get_token_counter(options.token_counter)
    context = options.context
    fields: dict[str, Any] = {"history_format": history_format}
    if context == "truncated":
        fields["max_context_tokens"] = truncation_budget(
            options.max_context_tokens, context_window, answer_tokens
        )
    return LongMemEvalMemory.build(
        options, context, counter, default_top_k=DEFAULT_TOP_K, rag_defaults=RAG_DEFAULTS, **fields
    )


def truncation_budget(
    max_context_tokens: int | None, context_window: int | None, answer_tokens: int
) -> int:
    """The history budget of context=truncated: `max_context_tokens` as given, or the official
    window − answer length − 1000 tokens."""
    if max_context_tokens is not None:
        if context_window is not None:
            raise ValueError(
                "give max_context_tokens (the history budget) or context_window (the model's "
                "window, from which the official budget is derived), not both"
            )
        return positive_tokens("max_context_tokens", max_context_tokens)
    window = positive_tokens(
        "context_window", DEFAULT_CONTEXT_WINDOW if context_window is None else context_window
    )
    answer = positive_tokens("answer_tokens", answer_tokens)
    budget = window - answer - TRUNCATION_RESERVE
    if budget < 1:
        raise ValueError(
            f"context_window={window} leaves no room for the history after the answer "
            f"({answer} tokens) and the official {TRUNCATION_RESERVE}-token reserve; "
            "give a larger context_window or set max_context_tokens"
        )
    return budget


# ---------------------------------------------------------------------------------------------
# A memory system under test

#: How deep a memory system is asked to rank: the largest official cut-off, so recall and
#: nDCG up to @50 are computed on the system's own ranking (context=rag ranks the whole
#: haystack); the model is shown only the first `top_k` items.
MEMORY_DEPTH = max(K_VALUES)

MEMORY_NOTES_INTRO = (
    "You are a chat assistant with a long-term memory of your conversations with this user. "
    "Below are notes your memory kept from your earlier chat sessions with them, oldest first; "
    "each note starts with the date of the session it comes from. Use whatever in these notes "
    "is relevant to answer the user's question. Dates matter: resolve words like 'last week' "
    "against the note dates and the current date."
)


def memory_depth(top_k: int) -> int:
    """The number of items a memory system is asked for: max(top_k, 50)."""
    return max(top_k, MEMORY_DEPTH)


def longmemeval_history(inst: Instance) -> History:
    """The question's haystack as a memory system ingests it (`has_answer` never included).

    Sessions keep the file's order, the order context=rag's units use (it decides BM25 ties,
    so `memory=bm25` ranks exactly as context=rag). In the S and M files that order is
    chronological; in the oracle file it is not (its sessions are listed unsorted), so a
    system that needs time order must sort by the session dates itself. Turn ids are the
    official `<session_id>_<t>`; only user turns carry `search_text`, since only they are
    indexed officially."""
    return History(
        history_id=inst.question_id,
        sessions=tuple(
            HistorySession(
                session_id=s.session_id,
                date=s.date,
                turns=tuple(
                    HistoryTurn(
                        turn_id=s.turn_id(t),
                        speaker=t.role,
                        text=t.content,
                        search_text=t.content if t.role == "user" else None,
                    )
                    for t in s.turns
                ),
            )
            for s in inst.sessions
        ),
        speakers=("user", "assistant"),
        default_unit="session",
    )


@dataclass(frozen=True)
class _Haystack:
    """Lookups of one instance for rendering and scoring a system's items."""

    sessions: dict[str, Session]
    turns: dict[str, tuple[Session, Turn]]

    @classmethod
    def of(cls, inst: Instance) -> _Haystack:
        return cls(
            sessions={s.session_id: s for s in inst.sessions},
            turns={s.turn_id(t): (s, t) for s in inst.sessions for t in s.turns},
        )

    def session_of(self, source: str) -> Session:
        return self.sessions[source] if source in self.sessions else self.turns[source][0]


def _memory_scores(
    inst: Instance, hay: _Haystack, items: Sequence[MemoryItem]
) -> tuple[str, dict[str, float] | None, str | None]:
    """(unit level, official scores or None, why skipped) of the ids `items` cite, in rank
    order with duplicates kept (as the official turn-to-session mapping keeps them).

    Items citing only turns are scored at turn level (and session level from the turns, as
    officially); otherwise every cited id counts as its session, at session level."""
    cited = [i for item in items for i in item.source_ids]
    turn_level = bool(cited) and all(i in hay.turns for i in cited)
    if turn_level:
        gold = gold_ids(turn_units(inst))
        ranked = [turn_metric_id(*hay.turns[i]) for i in cited]
    else:
        gold = gold_ids(session_units(inst))
        ranked = [session_metric_id(hay.session_of(i)) for i in cited]
    scores, skipped = official_scores(inst, ranked, gold, turn_level=turn_level, partial=True)
    return ("turn" if turn_level else "session"), scores, skipped


def _verbatim_blocks(
    hay: _Haystack, items: Sequence[MemoryItem], history_format: str
) -> tuple[SessionBlock, ...]:
    """Verbatim items as context=rag shows its units: cited sessions whole (session mode:
    date order, ties in rank order), cited turns with their reply, grouped per session (turn
    mode: date order, ties in file order); a mix follows turn mode with whole sessions."""
    sources = [i for item in items for i in item.source_ids]
    if all(i in hay.sessions for i in sources):
        ranked = [hay.sessions[i] for i in dict.fromkeys(sources)]
        return session_blocks(ranked, history_format)
    shown: list[tuple[Session, Sequence[Turn]]] = []
    for source in sources:
        if source in hay.sessions:
            shown.append((hay.sessions[source], hay.sessions[source].turns))
        else:
            session, turn = hay.turns[source]
            shown.append((session, shown_turns(session, turn)))
    return _grouped_blocks(shown, history_format)


def _first_session(hay: _Haystack, item: MemoryItem) -> Session | None:
    sessions = [hay.session_of(i) for i in item.source_ids]
    return min(sessions, key=lambda s: (s.when, s.index), default=None)


def _note_date(hay: _Haystack, item: MemoryItem) -> str:
    """A note's date: its own, else its first cited session's, else none."""
    first = _first_session(hay, item)
    return item.date or (first.date if first is not None else "")


def _notes_text(hay: _Haystack, items: Sequence[MemoryItem]) -> str:
    """Items shown by their own text: dated (the item's date, else its first cited session's),
    oldest first by the sessions they cite; items citing nothing follow in rank order."""
    rows: list[tuple[tuple[int, Any, int], int, str, str]] = []
    for rank, item in enumerate(items):
        first = _first_session(hay, item)
        key = (0, first.when, first.index) if first is not None else (1, 0, 0)
        rows.append((key, rank, _note_date(hay, item), item.text.strip()))
    rows.sort(key=lambda r: (r[0], r[1]))
    sep = "\n\n" if any("\n" in text for *_, text in rows) else "\n"
    body = sep.join(f"{date}: {text}" if date else text for _, _, date, text in rows)
    return f"{MEMORY_NOTES_INTRO}\n\n{body}"


def memory_context(
    inst: Instance, items: Sequence[MemoryItem], top_k: int, history_format: str = "json"
) -> LmeContext:
    """A memory system's ranked items (up to the depth asked) as the question's context.

    The first `top_k` are shown: verbatim items citing sessions or turns exactly as context=rag
    shows them (`_verbatim_blocks`, under the history introduction), any other item (a fact,
    a summary) as a dated note under a short introduction of its own. The retrieval metrics
    score every item's cited ids (`_memory_scores`); `retrieved_ids` are the official ids the
    shown items cite, best first."""
    _check_history_format(history_format)
    hay = _Haystack.of(inst)
    shown = list(items[:top_k])
    verbatim = [i for i in shown if i.verbatim and i.source_ids]
    notes = [i for i in shown if not (i.verbatim and i.source_ids)]
    blocks = _verbatim_blocks(hay, verbatim, history_format) if verbatim else ()
    parts = [history_text(blocks)] if blocks else []
    if notes:
        parts.append(_notes_text(hay, notes))
    unit, scores, skipped = _memory_scores(inst, hay, items)
    sources = dict.fromkeys(i for item in verbatim for i in item.source_ids)
    return LmeContext(
        blocks=blocks,
        retrieved_ids=tuple(dict.fromkeys(i for item in shown for i in item.source_ids)),
        retrieval_scores=scores,
        retrieval_skipped=skipped,
        system="\n\n".join(parts),
        retrieval_unit=unit,
        units=tuple(
            (hay.sessions[i], None) if i in hay.sessions else hay.turns[i] for i in sources
        ),
        facts=tuple((_note_date(hay, i), i.text.strip()) for i in notes),
    )


#: (question, its context, the sample's user text) -> (the one user message, its context part,
#: the session of each block shown): how a protocol puts a memory system's context in front of
#: the model.
MessageFn = Callable[[Instance, LmeContext, str], tuple[str, str, tuple[str, ...]]]


def memory_renderer(
    instances: Sequence[Instance],
    top_k: int,
    history_format: str = "json",
    message: MessageFn | None = None,
) -> Renderer:
    """The renderer of a memory subject over these questions (`MemorySubject.render`): the
    context and the same metadata fields as context=rag, read by the same scorers. With
    `message`, context and question become one user message (`Rendered.user`), as the samples
    built without a memory system are. No items (the system found nothing) is an answer: no
    context, the protocol's message for context=none, `n_sessions_shown` 0."""
    by_id = {i.question_id: i for i in instances}

    def render(item: Any, history: History, retrieval: Retrieval) -> Rendered:
        inst = by_id[history.history_id]
        ctx = memory_context(inst, retrieval.items, top_k, history_format)
        context, user = ctx.system_text, None
        shown_ids = tuple(b.session_id for b in ctx.blocks)
        if message is not None:
            user, context, shown_ids = message(inst, ctx, item.user)
        return Rendered(
            context,
            {
                "retrieval_unit": ctx.retrieval_unit,
                "retrieved_ids": list(ctx.retrieved_ids or ()),
                "retrieval_scores": ctx.retrieval_scores,
                "retrieval_skipped": ctx.retrieval_skipped,
                "n_sessions_shown": len(shown_ids),
                "session_ids_shown": list(shown_ids),
            },
            shown=min(top_k, len(retrieval.items)),
            user=user,
        )

    return render
