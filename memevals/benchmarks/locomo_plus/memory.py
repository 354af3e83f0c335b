"""Memory strategies for LoCoMo-Plus cognitive samples (framework-free).

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

import dataclasses
from collections.abc import Sequence
from typing import Any

from memevals.benchmarks.locomo.memory import LocomoMemory
from memevals.benchmarks.locomo_plus.data import StitchedInstance
from memevals.benchmarks.locomo_plus.prompts import (
    CognitiveContext,
    CognitiveContextFn,
    cognitive_full,
    cognitive_none,
    dialogue_line,
    history,
    render_history,
)
from memevals.core.prompt_item import PromptItem
from memevals.core.retrievers import MemoryUnit
from memevals.core.tokens import TokenCounter

#: Context modes that apply to cognitive samples.
COGNITIVE_CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "rag", "oracle", "none")


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


def annotate_cognitive_items(
    items: Sequence[PromptItem], stitched: Sequence[StitchedInstance], memory: LocomoMemory
) -> tuple[list[PromptItem], dict[str, Any]]:
    """Add prompt size and, for retrieving modes, cue recall to each cognitive item's metadata.

    Returns the items and a summary for the task log (total prompt tokens, mean cue recall).
    """
    by_id = {st.instance.sample_id: st for st in stitched}
    out: list[PromptItem] = []
    total_tokens = 0
    recalls: list[float] = []
    for item in items:
        md = dict(item.metadata)
        tokens = memory.token_counter(item.as_text())
        total_tokens += tokens
        md["prompt_tokens"] = tokens
        md["token_counter"] = memory.token_counter.name
        retrieved = md.get("retrieved_ids")
        if retrieved is not None:
            md["cue_recall"] = cue_recall(retrieved, by_id[item.id])
            recalls.append(md["cue_recall"])
        out.append(dataclasses.replace(item, metadata=md))
    summary: dict[str, Any] = {"cognitive_prompt_tokens_total": total_tokens}
    if recalls:
        summary["cognitive_cue_recall_mean"] = round(sum(recalls) / len(recalls), 4)
    return out, summary


__all__ = [
    "COGNITIVE_CONTEXT_MODES",
    "annotate_cognitive_items",
    "cognitive_context",
    "cognitive_oracle",
    "cue_ids",
    "cue_recall",
    "history_units",
    "truncate_history",
    "turn_id",
]
