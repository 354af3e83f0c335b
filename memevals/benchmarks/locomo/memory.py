"""LoCoMo memory strategies: what the model is given of the conversation for one question, and
how that history is rendered.

The layout follows the paper's protocol (benchmarks/locomo/README.md#memory-strategies): session
blocks with a date header
and `<speaker> said, "<text>"` lines, image turns adding their caption; all wording is ours.
The whole conversation is one context string, identical for every question of that
conversation, so provider prompt caches can reuse it.

- `full`: the whole conversation.
- `truncated`: the most recent whole turns that fit `max_context_tokens` (preamble and session
  headers included in the count; a session's header is kept when any of its turns is kept).
- `rag`: the `top_k` units most similar to the raw question (dialog turns, observations or session
  summaries; BM25 or embeddings), shown in chronological order as ``<session date>: <text>``.
- `oracle`: only the gold evidence turns, shown like `rag` dialog turns (the retrieval ceiling).
- `none`: no context (the floor).
- `memory`: a memory system under test (`-T memory=<name>`, docs/memory_systems.md) retrieves
  `top_k` items; they are shown like `rag` excerpts, in chronological order of the turns they
  cite (`locomo_history`, `memory_context`). No items is the system's answer: no context, as
  `none` (the question alone, under either protocol).

The options arrive as one `MemoryOptions` record (`locomo_memory`); everything here is
framework-free.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memevals.benchmarks.locomo.data import QA, Conversation, Session, Turn
from memevals.core.memo import per_object
from memevals.core.memory_harness import Rendered, Renderer, Retrieval
from memevals.core.memory_options import MEMORY_CONTEXT, MemoryOptions, MemoryStrategy, RagDefaults
from memevals.core.memory_system import History, MemoryItem
from memevals.core.memory_system import Session as HistorySession
from memevals.core.memory_system import Turn as HistoryTurn
from memevals.core.retrievers import IndexCache, MemoryUnit, positive_tokens, strategy_settings
from memevals.core.tokens import TokenCounter, get_token_counter

__all__ = [
    "CONTEXT_MODES",
    "DEFAULT_MAX_CONTEXT_TOKENS",
    "DEFAULT_RETRIEVAL_UNIT",
    "DEFAULT_RETRIEVER",
    "DEFAULT_TOP_K",
    "RAG_DEFAULTS",
    "RETRIEVAL_UNITS",
    "UNIT_BUILDERS",
    "ContextFn",
    "LocomoContext",
    "LocomoMemory",
    "dialog_units",
    "evidence_turns",
    "excerpt_preamble",
    "full_context",
    "locomo_history",
    "locomo_memory",
    "memory_context",
    "memory_renderer",
    "no_context",
    "observation_units",
    "preamble",
    "recent_turn_blocks",
    "render_conversation",
    "render_excerpts",
    "render_recent_turns",
    "render_sessions",
    "session_header",
    "summary_units",
    "truncate_to_budget",
    "turn_line",
    "unit_session",
]

CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "rag", "oracle", "none")
RETRIEVAL_UNITS: tuple[str, ...] = ("dialog", "observation", "summary")
DEFAULT_MAX_CONTEXT_TOKENS = 4000
DEFAULT_TOP_K = 5
DEFAULT_RETRIEVAL_UNIT = "dialog"
DEFAULT_RETRIEVER = "bm25"
RAG_DEFAULTS = RagDefaults(
    benchmark="LoCoMo",
    units=RETRIEVAL_UNITS,
    unit=DEFAULT_RETRIEVAL_UNIT,
    top_k=DEFAULT_TOP_K,
    retriever=DEFAULT_RETRIEVER,
)


# --------------------------------------------------------------------------------------------
# The conversation as the model sees it


def turn_line(turn: Turn) -> str:
    """`<speaker> said, "<text>"` plus the shared image's caption, as the paper's agents saw it."""
    line = f'{turn.speaker} said, "{turn.text.strip()}"'
    if turn.blip_caption:
        line += f" and shared {turn.blip_caption.strip()}."
    return line


def session_header(session: Session) -> str:
    return f"DATE: {session.date_time}\nCONVERSATION (session {session.index}):"


def render_sessions(blocks: Iterable[tuple[Session, Sequence[Turn]]]) -> str:
    """Render (session, turns-to-show) pairs as dated blocks, in the order given."""
    parts = []
    for session, turns in blocks:
        if not turns:
            continue
        lines = [session_header(session), *(turn_line(t) for t in turns)]
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def preamble(conv: Conversation) -> str:
    return (
        f"Below is a conversation between {conv.speaker_a} and {conv.speaker_b} that took place "
        "over several sessions. Each session starts with the date and time it was held."
    )


@per_object
def render_conversation(conv: Conversation) -> str:
    """The whole conversation, chronological, with a short preamble (rendered once per
    conversation object: every question of the full-context prompt shows it)."""
    body = render_sessions((s, s.turns) for s in conv.sessions)
    return f"{preamble(conv)}\n\n{body}"


@dataclass(frozen=True)
class LocomoContext:
    """What a memory strategy gives the model for one question."""

    text: str
    retrieved_ids: tuple[str, ...] | None = None  # None when the strategy does not retrieve
    #: a window that holds no turn of the conversation (protocol=official, which sends the
    #: prompt as upstream does; under memevals such a budget is an error)
    empty: bool = False


#: A memory strategy: (conversation, question) -> context. `full` ignores the question.
ContextFn = Callable[[Conversation, QA], LocomoContext]


def full_context(conv: Conversation, qa: QA) -> LocomoContext:
    return LocomoContext(text=render_conversation(conv))


def no_context(conv: Conversation, qa: QA) -> LocomoContext:
    return LocomoContext(text="")


# --------------------------------------------------------------------------------------------
# Units


def _session_dates(conv: Conversation) -> dict[int, str]:
    return {s.index: s.date_time for s in conv.sessions}


def dialog_units(conv: Conversation) -> list[MemoryUnit]:
    """One unit per turn: `<speaker> said, "<text>"` (+ the image caption), id = dia_id."""
    return [
        MemoryUnit(id=t.dia_id, text=turn_line(t), date=s.date_time)
        for s in conv.sessions
        for t in s.turns
    ]


def unit_session(unit: MemoryUnit) -> int:
    """Session number of a LoCoMo memory unit id: D<n>:<j>, O<n>:<k> or S<n>."""
    return int(unit.id[1:].split(":")[0])


def observation_units(conv: Conversation) -> list[MemoryUnit]:
    """One unit per observation; its metric ids are the flattened dia ids it was drawn from."""
    if not conv.observations:
        raise ValueError(
            f"conversation {conv.sample_id} has no 'observation' field, which "
            "retrieval_unit='observation' needs"
        )
    dates = _session_dates(conv)
    units = []
    for n, obs in enumerate(conv.observations):
        if obs.session not in dates:
            raise ValueError(
                f"conversation {conv.sample_id}: field 'observation' refers to session "
                f"{obs.session}, which does not exist"
            )
        units.append(
            MemoryUnit(
                id=f"O{obs.session}:{n}", text=obs.text, date=dates[obs.session], ids=obs.dia_ids
            )
        )
    # Chronological: by session, file order within a session.
    return sorted(units, key=unit_session)


def summary_units(conv: Conversation) -> list[MemoryUnit]:
    """One unit per session summary, id `S<n>`."""
    if not conv.session_summaries:
        raise ValueError(
            f"conversation {conv.sample_id} has no 'session_summary' field, which "
            "retrieval_unit='summary' needs"
        )
    dates = _session_dates(conv)
    units = []
    for n, text in conv.session_summaries:
        if n not in dates:
            raise ValueError(
                f"conversation {conv.sample_id}: field 'session_summary' has a summary for "
                f"session {n}, which does not exist"
            )
        units.append(MemoryUnit(id=f"S{n}", text=text, date=dates[n]))
    return units


UNIT_BUILDERS = {
    "dialog": dialog_units,
    "observation": observation_units,
    "summary": summary_units,
}


# --------------------------------------------------------------------------------------------
# Excerpts, truncation


def excerpt_preamble(conv: Conversation) -> str:
    return (
        f"Below are excerpts from a conversation between {conv.speaker_a} and {conv.speaker_b} "
        "that took place over several sessions, listed in chronological order. Each excerpt "
        "starts with the date of its session."
    )


def render_excerpts(conv: Conversation, units: Sequence[MemoryUnit], *, blank_line: bool) -> str:
    """`<date>: <text>` lines (blank-line separated for long units such as summaries)."""
    if not units:
        return ""
    sep = "\n\n" if blank_line else "\n"
    body = sep.join(f"{u.date}: {u.text}" if u.date else u.text for u in units)
    return f"{excerpt_preamble(conv)}\n\n{body}"


def recent_turn_blocks(conv: Conversation, n: int) -> list[tuple[Session, list[Turn]]]:
    """The last `n` turns grouped under their sessions, so each kept session shows its header
    once (truncation here and in the dialogue task)."""
    turns = list(conv.turns)
    kept = turns[len(turns) - n :] if n > 0 else []
    sessions = {s.index: s for s in conv.sessions}
    blocks: list[tuple[Session, list[Turn]]] = []
    for t in kept:
        if not blocks or blocks[-1][0].index != t.session:
            blocks.append((sessions[t.session], []))
        blocks[-1][1].append(t)
    return blocks


def render_recent_turns(conv: Conversation, n: int) -> str:
    """Preamble plus the last `n` turns, each with its session's header."""
    return f"{preamble(conv)}\n\n{render_sessions(recent_turn_blocks(conv, n))}"


def truncate_to_budget(conv: Conversation, budget: int, counter: TokenCounter) -> tuple[str, int]:
    """The most recent whole turns whose rendering fits `budget` tokens: (text, turns kept).

    Binary search on the number of turns with the exact count of the rendered text, so the
    budget holds for the text actually sent (BPE counts are not additive across lines).
    Raises ValueError when not even the last turn fits.
    """
    total = len(conv.turns)
    if counter(render_recent_turns(conv, total)) <= budget:
        return render_recent_turns(conv, total), total
    lo, hi = 0, total  # invariant: lo fits (or is 0), hi does not fit
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if counter(render_recent_turns(conv, mid)) <= budget:
            lo = mid
        else:
            hi = mid
    if lo == 0:
        need = counter(render_recent_turns(conv, 1))
        raise ValueError(
            f"max_context_tokens={budget} is smaller than one turn: the last turn of "
            f"{conv.sample_id} with the preamble and its session header needs {need} tokens "
            f"({counter.name}); use a larger max_context_tokens"
        )
    return render_recent_turns(conv, lo), lo


# --------------------------------------------------------------------------------------------
# Oracle


def evidence_turns(conv: Conversation, qa: QA) -> tuple[list[Turn], tuple[str, ...]]:
    """(gold evidence turns in chronological order, evidence pieces that match no turn).

    Evidence strings are split and normalised by the adapter (``"D8:6; D9:17"`` gives two ids,
    ``"D30:05"`` becomes ``D30:5``); malformed pieces and ids of missing turns are returned as
    unmatched so the caller can report them.
    """
    position = conv.turn_positions
    found: dict[str, Turn] = {}
    unmatched = list(qa.malformed_evidence)
    for dia_id in qa.evidence_ids:
        turn = conv.turn(dia_id)
        if turn is None:
            unmatched.append(dia_id)
        else:
            found.setdefault(dia_id, turn)
    ordered = sorted(found.values(), key=lambda t: position[t.dia_id])
    return ordered, tuple(unmatched)


# --------------------------------------------------------------------------------------------
# The strategy object


@dataclass(frozen=True)
class LocomoMemory(MemoryStrategy):
    """A validated memory strategy; call it as (conversation, question) -> LocomoContext.

    Per-conversation work (truncation, retrieval indexes) is cached on the object, so one task
    builds each index once however many questions it asks.
    """

    index_cache: IndexCache | None = None
    _truncated: dict[str, tuple[str, int]] = field(default_factory=dict, repr=False)
    _rankings: dict[tuple[str, str], list[int]] = field(default_factory=dict, repr=False)

    @property
    def retrieves(self) -> bool:
        """True when the strategy selects ids that retrieval metrics can score."""
        return self.context in ("rag", "oracle", MEMORY_CONTEXT)

    @property
    def turn_level(self) -> bool:
        """True when the selected ids are dia ids (turn-level metrics make sense; a memory
        system's session ids count as all the session's turns)."""
        return self.context in ("oracle", MEMORY_CONTEXT) or (
            self.context == "rag" and self.retrieval_unit in ("dialog", "observation")
        )

    def settings(self) -> dict[str, Any]:
        """The strategy's parameters, for the log (only those that apply to the mode)."""
        return strategy_settings(self, self.token_counter.name)

    def __call__(self, conv: Conversation, qa: QA) -> LocomoContext:
        if self.context == "full":
            return full_context(conv, qa)
        if self.context in ("none", MEMORY_CONTEXT):
            return no_context(conv, qa)  # memory: the system's context comes at run time
        if self.context == "truncated":
            return LocomoContext(text=self.truncated(conv)[0])
        if self.context == "oracle":
            turns, _ = evidence_turns(conv, qa)
            date = _session_dates(conv)
            units = [MemoryUnit(t.dia_id, turn_line(t), date[t.session]) for t in turns]
            return LocomoContext(
                text=render_excerpts(conv, units, blank_line=False),
                retrieved_ids=tuple(t.dia_id for t in turns),
            )
        return self._rag(conv, qa)

    def turns_kept(self) -> dict[str, int]:
        """Turns kept per conversation truncated so far (conversation id -> count)."""
        return {cid: n for cid, (_, n) in self._truncated.items()}

    def truncated(self, conv: Conversation) -> tuple[str, int]:
        """(context text, turns kept) for `conv` under the token budget (cached)."""
        assert self.max_context_tokens is not None
        hit = self._truncated.get(conv.sample_id)
        if hit is None:
            hit = truncate_to_budget(conv, self.max_context_tokens, self.token_counter)
            self._truncated[conv.sample_id] = hit
        return hit

    def retrieve(
        self, conv: Conversation, question: str
    ) -> tuple[list[int], tuple[MemoryUnit, ...]]:
        """(positions of the top_k units for `question`, best first; all units of `conv`).

        The first question of a conversation ranks all its questions in one batch (one encoder
        call instead of hundreds for the embedding retriever); later questions hit the cache.
        """
        assert self.index_cache is not None and self.retrieval_unit and self.top_k
        build = UNIT_BUILDERS[self.retrieval_unit]
        index, units = self.index_cache.get(conv.sample_id, lambda: build(conv))
        key = (conv.sample_id, question)
        if key not in self._rankings:
            pending = list(dict.fromkeys([question, *(q.question for q in conv.qa)]))
            pending = [q for q in pending if (conv.sample_id, q) not in self._rankings]
            for q, ranking in zip(pending, index.rank_many(pending), strict=True):
                self._rankings[(conv.sample_id, q)] = ranking[: self.top_k]
        return self._rankings[key], units

    def _rag(self, conv: Conversation, qa: QA) -> LocomoContext:
        positions, units = self.retrieve(conv, qa.question)  # the raw question, no hint
        # Metric ids in rank order (observations flattened, duplicates kept), as officially.
        retrieved_ids = tuple(i for p in positions for i in units[p].metric_ids)
        shown = [units[p] for p in sorted(positions)]  # units are built chronologically
        text = render_excerpts(conv, shown, blank_line=self.retrieval_unit == "summary")
        return LocomoContext(text=text, retrieved_ids=retrieved_ids)


# --------------------------------------------------------------------------------------------
# A memory system under test


def locomo_history(conv: Conversation) -> History:
    """The conversation as a memory system ingests it: sessions `S<n>` in order, turns by dia
    id, each turn's `search_text` the line context=rag indexes (so `memory=bm25` is that rag)."""
    return History(
        history_id=conv.sample_id,
        sessions=tuple(
            HistorySession(
                session_id=f"S{s.index}",
                date=s.date_time,
                turns=tuple(
                    HistoryTurn(
                        turn_id=t.dia_id,
                        speaker=t.speaker,
                        text=t.text,
                        image_caption=t.blip_caption or None,
                        search_text=turn_line(t),
                    )
                    for t in s.turns
                ),
            )
            for s in conv.sessions
        ),
        speakers=(conv.speaker_a, conv.speaker_b),
        default_unit="turn",
    )


def _cited_turns(conv: Conversation, item: MemoryItem) -> list[str]:
    """The dia ids an item cites; a session id `S<n>` stands for all that session's turns."""
    sessions = {f"S{s.index}": s for s in conv.sessions}
    out: list[str] = []
    for source in item.source_ids:
        if source in sessions:
            out.extend(t.dia_id for t in sessions[source].turns)
        else:
            out.append(source)
    return out


def memory_context(conv: Conversation, items: Sequence[MemoryItem]) -> LocomoContext:
    """A memory system's items as the model reads them: `rag`-style excerpts in chronological
    order of the first turn each cites (items citing nothing last, in rank order). A verbatim
    item shows its source turns as the conversation renders them; any other item its own text,
    dated by the item or its first cited turn's session. Retrieved ids: the cited dia ids in
    rank order, duplicates kept (as observations are flattened in context=rag)."""
    position = conv.turn_positions
    dates = _session_dates(conv)
    shown: list[tuple[float, int, MemoryUnit]] = []
    retrieved: list[str] = []
    for rank, item in enumerate(items):
        cited = _cited_turns(conv, item)
        retrieved.extend(cited)
        if item.verbatim and cited:
            for dia_id in cited:
                turn = conv.turn(dia_id)
                assert turn is not None  # the harness checked every cited id
                unit = MemoryUnit(dia_id, turn_line(turn), dates[turn.session])
                shown.append((position[dia_id], rank, unit))
            continue
        first = min((position[i] for i in cited), default=None)
        date = item.date
        if date is None and first is not None:
            date = dates[conv.turns[first].session]
        unit = MemoryUnit(f"item{rank}", item.text.strip(), date or "")
        shown.append((float("inf") if first is None else first, rank, unit))
    units = [u for _, _, u in sorted(shown, key=lambda row: (row[0], row[1]))]
    # long notes (summaries) get a blank line between them, as context=rag shows summaries
    blank_line = any("\n" in i.text for i in items if not i.verbatim)
    return LocomoContext(
        text=render_excerpts(conv, units, blank_line=blank_line), retrieved_ids=tuple(retrieved)
    )


def memory_renderer(conversations: Sequence[Conversation]) -> Renderer:
    """The renderer of a memory subject over these conversations (`MemorySubject.render`)."""
    by_id = {c.sample_id: c for c in conversations}

    def render(item: Any, history: History, retrieval: Retrieval) -> Rendered:
        ctx = memory_context(by_id[history.history_id], retrieval.items)
        return Rendered(
            ctx.text, {"retrieved_ids": list(ctx.retrieved_ids or ()), "turn_level": True}
        )

    return render


def locomo_memory(options: MemoryOptions) -> LocomoMemory:
    """Validate the memory options and build the strategy (raises ValueError naming the option).

    Options that do not apply to `context` are rejected rather than ignored, so a sweep never
    silently runs a different setting than the one asked for. An embedding model is loaded
    here, before any model call, so one that cannot be loaded offline fails early.
    """
    context = options.checked(CONTEXT_MODES).context
    counter = get_token_counter(options.token_counter)
    fields: dict[str, Any] = {}
    if context == "truncated":
        fields["max_context_tokens"] = positive_tokens(
            "max_context_tokens",
            DEFAULT_MAX_CONTEXT_TOKENS
            if options.max_context_tokens is None
            else options.max_context_tokens,
        )
    memory = LocomoMemory.build(
        options, context, counter, default_top_k=DEFAULT_TOP_K, rag_defaults=RAG_DEFAULTS, **fields
    )
    if memory.retriever is None:
        return memory
    return dataclasses.replace(memory, index_cache=IndexCache(memory.retriever))
