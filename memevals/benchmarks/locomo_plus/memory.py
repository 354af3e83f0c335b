"""Memory strategies for LoCoMo-Plus cognitive samples: what the model sees of the stitched
history, and how it is rendered (framework-free).

A cognitive sample's history is the stitched dialogue without its trigger, and the trigger is the
query. The LoCoMo modes carry over with the same options (one `LocomoMemory` configures both):

- `full`: the whole history (the official input).
- `none`: nothing; the trigger alone.
- `oracle`: only the cue turns, the gold evidence (ids `cue:<n>`).
- `truncated`: the most recent whole lines that fit `max_context_tokens` with the preamble,
  counted by the same token counter as LoCoMo. The cue survives only if it is recent enough.
- `rag` (`retrieval_unit=dialog` only): the `top_k` history turns most similar to the trigger text,
  shown in dialogue order. Host turns keep their dia ids, cue turns are `cue:<n>`, so
  `retrieved_ids` says whether retrieval found the cue. Observations and session summaries do not
  cover the inserted cue, so those units are refused for cognitive samples.
- `memory`: a memory system under test (`-T memory=<name>`) ingests the stitched history as a
  History of its own (`stitched_history`, id `<host>+plus-<i>`, keyed on both data files) and
  retrieves `top_k` items for the trigger text; `cognitive_memory_context` renders them as `rag`
  renders its turns. The LoCoMo questions stay on the `locomo` task's stores (LoCoMo's sha256).

The rendering stays that of the official cognitive input (`<speaker> said, "<text>"` lines, no
dates): the cue has no date of its own, and dating only the host turns would point at it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.locomo.memory import LocomoMemory, memory_renderer
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance, StitchedTurn
from memevals.core.memory_harness import Rendered, Renderer, Retrieval
from memevals.core.memory_options import MEMORY_CONTEXT
from memevals.core.memory_system import History, MemoryItem, MemoryQuery
from memevals.core.memory_system import Session as HistorySession
from memevals.core.memory_system import Turn as HistoryTurn
from memevals.core.retrievers import MemoryUnit
from memevals.core.tokens import TokenCounter

__all__ = [
    "COGNITIVE_CONTEXT_MODES",
    "CUE_SESSION",
    "CognitiveContext",
    "CognitiveContextFn",
    "cognitive_context",
    "cognitive_full",
    "cognitive_memory_context",
    "cognitive_none",
    "cognitive_oracle",
    "cognitive_pending",
    "cognitive_preamble",
    "cue_ids",
    "cue_turn_recall",
    "dialogue_line",
    "history",
    "history_units",
    "plus_memory_renderer",
    "render_history",
    "stitched_data_sha256",
    "stitched_history",
    "stitched_history_id",
    "trigger_query",
    "truncate_history",
    "turn_id",
]

#: Context modes that apply to cognitive samples.
COGNITIVE_CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "rag", "oracle", "none")


# --------------------------------------------------------------------------- rendering


def dialogue_line(turn: StitchedTurn) -> str:
    """`<speaker> said, "<text>"`: the official cognitive line, with no caption."""
    return f'{turn.speaker} said, "{turn.text}"'


def cognitive_preamble(st: StitchedInstance) -> str:
    # Unlike the official preamble we do not claim that dates head the sessions: the stitched
    # dialogue has none.
    return f"Below is a conversation between {st.host.speaker_a} and {st.host.speaker_b}."


def history(st: StitchedInstance) -> tuple[StitchedTurn, ...]:
    """The stitched dialogue without the trigger (the trigger is the query)."""
    return st.dialogue[: len(st.dialogue) - len(st.trigger_turns)]


def render_history(st: StitchedInstance, positions: Iterable[int] | None = None) -> str:
    """The cognitive preamble and the chosen history lines (all when `positions` is None)."""
    turns = history(st)
    chosen = turns if positions is None else [turns[i] for i in positions]
    body = "\n".join(dialogue_line(t) for t in chosen)
    return f"{cognitive_preamble(st)}\n\n{body}"


# --------------------------------------------------------------------------- strategies


@dataclass(frozen=True)
class CognitiveContext:
    """What a memory strategy gives the model for one cognitive sample."""

    text: str
    #: positions in `StitchedInstance.dialogue` shown to the model; None = the whole history
    shown_turns: tuple[int, ...] | None = None
    #: ids a retrieving strategy selected, best first (dia ids; `cue:<n>` for cue turns)
    retrieved_ids: tuple[str, ...] | None = None


#: A memory strategy for cognitive samples: stitched instance -> context.
CognitiveContextFn = Callable[[StitchedInstance], CognitiveContext]


def cognitive_full(st: StitchedInstance) -> CognitiveContext:
    return CognitiveContext(text=render_history(st))


def cognitive_none(st: StitchedInstance) -> CognitiveContext:
    return CognitiveContext(text="", shown_turns=())


def cognitive_pending(st: StitchedInstance) -> CognitiveContext:
    """context=memory: nothing yet; the memory system's context comes at run time."""
    return CognitiveContext(text="")


def turn_id(st: StitchedInstance, position: int) -> str:
    """The id of a history turn: its dia id, or `cue:<n>` (1-based) for an inserted cue turn."""
    turn = st.dialogue[position]
    if turn.dia_id is not None:
        return turn.dia_id
    if turn.source == "cue":
        return f"cue:{position - st.cue_position + 1}"
    raise ValueError(f"{st.instance.sample_id}: turn {position} is not part of the history")


def cue_ids(st: StitchedInstance) -> tuple[str, ...]:
    return tuple(f"cue:{n}" for n in range(1, len(st.cue_turns) + 1))


def cognitive_oracle(st: StitchedInstance) -> CognitiveContext:
    """Only the cue, the gold evidence, as `oracle` gives LoCoMo its evidence turns."""
    positions = tuple(range(st.cue_position, st.cue_position + len(st.cue_turns)))
    return CognitiveContext(
        text=render_history(st, positions), shown_turns=positions, retrieved_ids=cue_ids(st)
    )


def truncate_history(
    st: StitchedInstance, budget: int, counter: TokenCounter
) -> tuple[str, tuple[int, ...]]:
    """The most recent whole history lines whose rendering fits `budget` tokens.

    Binary search on the number of lines kept, counting the rendered text itself. Raises
    ValueError when not even the last line fits.
    """
    total = len(history(st))

    def last(n: int) -> tuple[int, ...]:
        return tuple(range(total - n, total))

    if counter(render_history(st, last(total))) <= budget:
        return render_history(st, last(total)), last(total)
    lo, hi = 0, total  # lo fits (or is 0), hi does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if counter(render_history(st, last(mid))) <= budget:
            lo = mid
        else:
            hi = mid
    if lo == 0:
        need = counter(render_history(st, last(1)))
        raise ValueError(
            f"max_context_tokens={budget} is smaller than one turn: the last history line of "
            f"{st.instance.sample_id} with the preamble needs {need} tokens ({counter.name}); "
            "use a larger max_context_tokens"
        )
    return render_history(st, last(lo)), last(lo)


def history_units(st: StitchedInstance) -> list[MemoryUnit]:
    """One retrieval unit per history turn, in dialogue order (no dates: see module doc)."""
    return [MemoryUnit(id=turn_id(st, i), text=dialogue_line(t)) for i, t in enumerate(history(st))]


def _rag(memory: LocomoMemory, st: StitchedInstance) -> CognitiveContext:
    assert memory.retriever is not None and memory.top_k is not None
    units = history_units(st)
    # Every stitched dialogue differs (the cue sits in it), so each sample gets its own index.
    index = memory.retriever.index(units)
    query = " ".join(t.text for t in st.trigger_turns)
    ranked = index.rank(query)[: memory.top_k]
    shown = tuple(sorted(ranked))
    return CognitiveContext(
        text=render_history(st, shown),
        shown_turns=shown,
        retrieved_ids=tuple(units[p].id for p in ranked),
    )


def cognitive_context(memory: LocomoMemory) -> CognitiveContextFn:
    """The cognitive counterpart of a validated LoCoMo memory strategy (ValueError if none)."""
    mode = memory.context
    if mode == "full":
        return cognitive_full
    if mode == "none":
        return cognitive_none
    if mode == "oracle":
        return cognitive_oracle
    if mode == "truncated":
        budget, counter = memory.max_context_tokens, memory.token_counter
        assert budget is not None

        def truncated(st: StitchedInstance) -> CognitiveContext:
            text, shown = truncate_history(st, budget, counter)
            return CognitiveContext(text=text, shown_turns=shown)

        return truncated
    if mode == "rag":
        if memory.retrieval_unit != "dialog":
            raise ValueError(
                f"retrieval_unit={memory.retrieval_unit!r} does not apply to LoCoMo-Plus "
                "cognitive samples (observations and session summaries do not cover the "
                "inserted cue); use retrieval_unit=dialog, or leave cognitive out of categories"
            )

        def rag(st: StitchedInstance) -> CognitiveContext:
            return _rag(memory, st)

        return rag
    if mode == MEMORY_CONTEXT:
        return cognitive_pending
    raise ValueError(
        f"context={mode!r} is not supported for LoCoMo-Plus cognitive samples; allowed values: "
        f"{', '.join(COGNITIVE_CONTEXT_MODES)}"
    )


def cue_turn_recall(retrieved_ids: Sequence[str], st: StitchedInstance) -> float:
    """Share of the cue turns among `retrieved_ids`: did retrieval find the cue?"""
    found = set(retrieved_ids)
    cue = cue_ids(st)
    return sum(1 for c in cue if c in found) / len(cue)


# --------------------------------------------------------------------------- a memory system


#: The session id of the inserted cue block in a stitched history (host sessions keep `S<n>`).
CUE_SESSION = "cue"


def stitched_history_id(st: StitchedInstance) -> str:
    """`<host>+plus-<i>`: a history of its own, never confused with the host's."""
    return f"{st.host.sample_id}+{st.instance.sample_id}"


def stitched_history(st: StitchedInstance) -> History:
    """The stitched history (trigger excluded) as a memory system ingests it.

    Sessions are the dialogue's blocks in order: host sessions `S<n>`, the cue block `cue`.
    Turn ids are those `rag` scores (dia ids, `cue:<n>`), so cue recall works from the cited
    ids, and each turn's `search_text` is the line `rag` indexes (`memory=bm25` is that rag).
    Dates are left empty: the official cognitive input has none, and a system given the host
    dates but no real date of the cue would learn more than the model in context=full does.
    """
    blocks: list[tuple[str, list[HistoryTurn]]] = []
    for position, turn in enumerate(history(st)):
        session_id = f"S{turn.session}" if turn.source == "session" else CUE_SESSION
        if not blocks or blocks[-1][0] != session_id:
            blocks.append((session_id, []))
        blocks[-1][1].append(
            HistoryTurn(
                turn_id=turn_id(st, position),
                speaker=turn.speaker,
                text=turn.text,
                search_text=dialogue_line(turn),
            )
        )
    return History(
        history_id=stitched_history_id(st),
        sessions=tuple(HistorySession(sid, "", tuple(turns)) for sid, turns in blocks),
        speakers=(st.host.speaker_a, st.host.speaker_b),
        default_unit="turn",
    )


def trigger_query(st: StitchedInstance, k: int) -> MemoryQuery:
    """What a memory system is asked for a cognitive sample: the trigger text, as `rag` ranks."""
    return MemoryQuery(
        text=" ".join(t.text for t in st.trigger_turns), k=k, history_id=stitched_history_id(st)
    )


def stitched_data_sha256(locomo_sha256: str, locomo_plus_sha256: str) -> str:
    """The data sha256 of a stitched history's key: it is made of both files."""
    return hashlib.sha256(f"{locomo_sha256}+{locomo_plus_sha256}".encode()).hexdigest()


def _cited_positions(
    item: MemoryItem, position: Mapping[str, int], sessions: Mapping[str, Sequence[int]]
) -> list[int]:
    """History positions an item cites; a session id stands for all that session's turns (the
    harness has checked every id)."""
    out: list[int] = []
    for source in item.source_ids:
        out.extend(sessions[source] if source in sessions else [position[source]])
    return out


def cognitive_memory_context(
    st: StitchedInstance, items: Sequence[MemoryItem], hist: History | None = None
) -> CognitiveContext:
    """A memory system's items as the model reads them for a cognitive sample, like `rag`:
    the cognitive preamble and lines in dialogue order. A verbatim item shows its source turns
    as the history renders them; any other item its own text, placed at its first cited turn
    (items citing nothing last, in rank order). Retrieved ids: the cited ids in rank order,
    duplicates kept; shown turns: the positions shown verbatim. `hist` is `st`'s stitched
    history when the caller has it (the renderer does), so it is not built again."""
    turns = history(st)
    position = {turn_id(st, i): i for i in range(len(turns))}
    hist = stitched_history(st) if hist is None else hist
    sessions = {s.session_id: [position[t.turn_id] for t in s.turns] for s in hist.sessions}
    shown: list[tuple[float, int, str]] = []
    verbatim: set[int] = set()
    retrieved: list[str] = []
    for rank, item in enumerate(items):
        cited = _cited_positions(item, position, sessions)
        retrieved.extend(turn_id(st, p) for p in cited)
        if item.verbatim and cited:
            shown.extend((p, rank, dialogue_line(turns[p])) for p in cited)
            verbatim.update(cited)
            continue
        first = min(cited, default=None)
        shown.append((float("inf") if first is None else first, rank, item.text.strip()))
    if not shown:
        return CognitiveContext(text="", shown_turns=(), retrieved_ids=())
    lines = [text for _, _, text in sorted(shown, key=lambda row: (row[0], row[1]))]
    # long notes (summaries) get a blank line between them
    sep = "\n\n" if any("\n" in i.text for i in items if not i.verbatim) else "\n"
    return CognitiveContext(
        text=f"{cognitive_preamble(st)}\n\n{sep.join(lines)}",
        shown_turns=tuple(sorted(verbatim)),
        retrieved_ids=tuple(retrieved),
    )


def plus_memory_renderer(
    conversations: Sequence[Any], stitched: Sequence[StitchedInstance]
) -> Renderer:
    """The renderer of a LoCoMo-Plus memory subject: LoCoMo's for the LoCoMo questions (their
    fields as in the `locomo` task), `cognitive_memory_context` for stitched histories, with
    the fields context=rag gives a cognitive sample (`shown_turns`, `retrieved_ids`,
    `cue_recall`). No items gives no context (the question alone, as context=none) and cue
    recall 0."""
    locomo = memory_renderer(conversations)
    by_history = {stitched_history_id(st): st for st in stitched}

    def render(item: Any, hist: History, retrieval: Retrieval) -> Rendered:
        st = by_history.get(hist.history_id)
        if st is None:
            return locomo(item, hist, retrieval)
        ctx = cognitive_memory_context(st, retrieval.items, hist)
        retrieved = list(ctx.retrieved_ids or ())
        return Rendered(
            ctx.text,
            {
                "shown_turns": list(ctx.shown_turns or ()),
                "retrieved_ids": retrieved,
                "cue_recall": cue_turn_recall(retrieved, st),
                "turn_level": True,
            },
        )

    return render
