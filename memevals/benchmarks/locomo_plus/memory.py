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

The rendering stays that of the official cognitive input (`<speaker> said, "<text>"` lines, no
dates): the cue has no date of its own, and dating only the host turns would point at it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from memevals.benchmarks.locomo.memory import LocomoMemory
from memevals.benchmarks.locomo_plus.stitch import StitchedInstance, StitchedTurn
from memevals.core.retrievers import MemoryUnit
from memevals.core.tokens import TokenCounter

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
    raise ValueError(
        f"context={mode!r} is not supported for LoCoMo-Plus cognitive samples; allowed values: "
        f"{', '.join(COGNITIVE_CONTEXT_MODES)}"
    )


def cue_recall(retrieved_ids: Sequence[str], st: StitchedInstance) -> float:
    """Share of the cue turns among `retrieved_ids`: did retrieval find the cue?"""
    found = set(retrieved_ids)
    cue = cue_ids(st)
    return sum(1 for c in cue if c in found) / len(cue)
