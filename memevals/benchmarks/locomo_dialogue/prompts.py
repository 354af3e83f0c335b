"""LoCoMo dialogue generation prompts (BENCHMARKS.md §1.12): held-out turns and their history.

**Held-out turns.** For each conversation, the eligible turns are those with a preceding turn
in the same session by the other speaker (the model always answers something). From them,
`turns_per_conversation` turns are drawn with `random.Random("locomo-dialogue:<seed>:<conv>")`
(a string seed, so the draw is the same on every machine and Python run) and put in
chronological order; 0 takes every eligible turn.

**History.** Everything before the held-out turn, shown by one of these context modes:

- `full`: every earlier turn, in dated session blocks (as in the QA prompt);
- `truncated`: the most recent earlier turns within `max_context_tokens`
  (`memevals.memory.truncate_to_budget`);
- `session`: only the earlier turns of the current session (the paper's "base" setting);
- `rag`: the `top_k` units of the *earlier sessions* most similar to the message being answered
  (observations by default, the paper's best setting; or session summaries or dialog turns),
  then the current session so far. Units of the current session are never retrieved: its
  observations and summary were written from the whole session, the held-out turn included.

**Images.** A turn that shared a photo shows its BLIP caption, as the paper's agents saw it.
With images on, the most recent `max_images` photo turns of the history carry an `ImagePart`
instead (the image URL, with the caption kept as fallback text).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.locomo import memory as memory
from memevals.benchmarks.locomo.data import Conversation, Session, Turn
from memevals.benchmarks.locomo.memory import LocomoMemory, locomo_context
from memevals.benchmarks.locomo.prompts import preamble, session_header, turn_line
from memevals.core.prompt_item import PromptItem
from memevals.core.retrievers import Index, MemoryUnit, reject_options_outside

__all__ = [
    "DIALOGUE_CONTEXT_MODES",
    "DIALOGUE_RETRIEVAL_UNIT",
    "DialogueContext",
    "DialogueTurn",
    "ImagePart",
    "Part",
    "build_dialogue_items",
    "caption_text",
    "dialogue_context",
    "dialogue_memory",
    "eligible_turns",
    "history_sessions",
    "item_metadata",
    "join_parts",
    "reply_instruction",
    "select_turns",
]

DIALOGUE_CONTEXT_MODES: tuple[str, ...] = ("full", "truncated", "session", "rag")

#: What context=rag retrieves when retrieval_unit is not given: observations, the paper's best
#: setting (the QA tasks default to dialog turns instead).
DIALOGUE_RETRIEVAL_UNIT = "observation"


@dataclass(frozen=True)
class ImagePart:
    """A shared photo shown as an image: its URL and the caption used when it cannot be had."""

    url: str
    caption: str
    dia_id: str


Part = str | ImagePart


@dataclass(frozen=True)
class DialogueTurn:
    """A held-out turn: `position` is its index in `conv.turns`."""

    conv: Conversation
    position: int

    @property
    def turn(self) -> Turn:
        return self.conv.turns[self.position]

    @property
    def speaker(self) -> str:
        return self.turn.speaker

    @property
    def other(self) -> str:
        return self.conv.other_speaker(self.speaker)


def _check_text(conv: Conversation, turn: Turn) -> None:
    if not turn.text.strip():
        raise ValueError(
            f"conversation {conv.sample_id}: turn {turn.dia_id} has an empty 'text' field; "
            "a held-out turn needs its text as the reference"
        )


def eligible_turns(conv: Conversation) -> list[int]:
    """Positions of turns that answer the other speaker within the same session."""
    turns = conv.turns
    return [
        i
        for i in range(1, len(turns))
        if turns[i].session == turns[i - 1].session and turns[i].speaker != turns[i - 1].speaker
    ]


def select_turns(conv: Conversation, n: int, seed: int) -> list[DialogueTurn]:
    """`n` eligible turns drawn with a seeded generator, chronological (0 = all eligible).

    Raises ValueError naming the conversation, turn and field when a chosen turn has no text.
    """
    if isinstance(n, bool) or n < 0:
        raise ValueError(f"turns_per_conversation must be >= 0, got {n!r}")
    pool = eligible_turns(conv)
    if n and n < len(pool):
        rng = random.Random(f"locomo-dialogue:{seed}:{conv.sample_id}")
        pool = sorted(rng.sample(pool, n))
    chosen = [DialogueTurn(conv, i) for i in pool]
    for d in chosen:
        _check_text(conv, d.turn)
    return chosen


def reply_instruction(target: DialogueTurn) -> str:
    s, o = target.speaker, target.other
    return (
        f"You are {s}. Write {s}'s next message to {o} in this conversation: one chat message "
        f"in {s}'s voice that follows naturally from what was just said. Reply with the "
        "message text only, without a name, quotation marks or stage directions."
    )


# ---------------------------------------------------------------------------------------------
# History


def history_sessions(target: DialogueTurn) -> list[tuple[Session, list[Turn]]]:
    """(session, earlier turns) blocks of everything said before the held-out turn."""
    turn = target.turn
    out: list[tuple[Session, list[Turn]]] = []
    for s in target.conv.sessions:
        if s.index < turn.session:
            out.append((s, list(s.turns)))
        elif s.index == turn.session:
            out.append((s, list(s.turns[: _index_in(s, turn)])))
    return out


def _index_in(session: Session, turn: Turn) -> int:
    for j, t in enumerate(session.turns):
        if t is turn:
            return j
    raise ValueError(f"turn {turn.dia_id} is not in session {session.index}")


def _prefix_conversation(target: DialogueTurn) -> Conversation:
    blocks = history_sessions(target)
    sessions = tuple(dataclasses.replace(s, turns=tuple(ts)) for s, ts in blocks if ts)
    return dataclasses.replace(target.conv, sessions=sessions, qa=())


def _session_parts(
    blocks: Sequence[tuple[Session, Sequence[Turn]]], image_ids: set[str]
) -> list[Part]:
    """`render_sessions`'s text, with each chosen photo turn followed by an ImagePart."""
    parts: list[Part] = []
    for session, turns in blocks:
        if not turns:
            continue
        if parts:
            parts.append("\n\n")
        parts.append(session_header(session))
        for t in turns:
            parts.append("\n")
            if t.dia_id in image_ids and t.img_url:
                parts.append(f'{t.speaker} said, "{t.text.strip()}" and shared this image:')
                parts.append(ImagePart(t.img_url[0], (t.blip_caption or "").strip(), t.dia_id))
            else:
                parts.append(turn_line(t))
    return _merge(parts)


def _merge(parts: Sequence[Part]) -> list[Part]:
    out: list[Part] = []
    for p in parts:
        if isinstance(p, str) and out and isinstance(out[-1], str):
            out[-1] += p
        else:
            out.append(p)
    return out


def caption_text(part: ImagePart) -> str:
    """What replaces an image that is not sent: its caption, as in the caption-only prompt."""
    return f" {part.caption}." if part.caption else " (the image is not available)."


def join_parts(parts: Sequence[Part]) -> str:
    """The parts as plain text, each image replaced by its caption (the fallback rendering)."""
    return "".join(p if isinstance(p, str) else caption_text(p) for p in parts)


def _image_ids(blocks: Sequence[tuple[Session, Sequence[Turn]]], max_images: int) -> set[str]:
    photo_turns = [t.dia_id for _, ts in blocks for t in ts if t.img_url]
    return set(photo_turns[len(photo_turns) - max_images :]) if max_images > 0 else set()


@dataclass(frozen=True)
class DialogueContext:
    """What the model reads before the instruction, and what was selected for the log."""

    parts: list[Part]
    retrieved_ids: tuple[str, ...] | None = None
    turns_shown: int = 0

    @property
    def text(self) -> str:
        return join_parts(self.parts)


def dialogue_context(
    target: DialogueTurn,
    mode: str,
    memory_strategy: LocomoMemory,
    *,
    images: bool = False,
    max_images: int = 0,
    ranking: Sequence[int] | None = None,
) -> DialogueContext:
    """The history of `target` under `mode` (see module doc); `memory_strategy` carries the
    validated truncation budget, token counter, retriever and index cache. With `rag`,
    `ranking` is the index's ranking for this target's query when the caller ranked all of a
    conversation's queries at once (`rank_targets`); otherwise the query is ranked here."""
    conv = target.conv
    if mode not in DIALOGUE_CONTEXT_MODES:
        allowed = ", ".join(DIALOGUE_CONTEXT_MODES)
        raise ValueError(f"context={mode!r} is not supported; allowed values: {allowed}")
    if mode == "truncated":
        assert memory_strategy.max_context_tokens is not None
        prefix = _prefix_conversation(target)
        _, kept = memory.truncate_to_budget(
            prefix, memory_strategy.max_context_tokens, memory_strategy.token_counter
        )
        blocks = memory.recent_turn_blocks(prefix, kept)
    elif mode == "full":
        blocks = history_sessions(target)
    else:  # session, rag: the current session so far
        blocks = [b for b in history_sessions(target) if b[0].index == target.turn.session]
    ids = _image_ids(blocks, max_images) if images else set()
    dialogue = _session_parts(blocks, ids)
    shown = sum(len(ts) for _, ts in blocks)
    if mode != "rag":
        return DialogueContext([preamble(conv) + "\n\n", *dialogue], None, shown)

    # rag: retrieve from earlier sessions only; query = the message being answered
    assert memory_strategy.top_k is not None
    index, units = _rag_index(conv, memory_strategy)
    if ranking is None:
        ranking = index.rank(_rag_query(target))
    earlier = target.turn.session
    picked = [p for p in ranking if memory.unit_session(units[p]) < earlier][
        : memory_strategy.top_k
    ]
    retrieved = tuple(i for p in picked for i in units[p].metric_ids)
    excerpts = memory.render_excerpts(
        conv,
        [units[p] for p in sorted(picked)],
        blank_line=memory_strategy.retrieval_unit == "summary",
    )
    head = (
        f"{excerpts}\n\nThe conversation now continues:\n\n"
        if excerpts
        else f"{preamble(conv)}\n\n"
    )
    return DialogueContext([head, *dialogue], retrieved, shown)


def _rag_query(target: DialogueTurn) -> str:
    return target.conv.turns[target.position - 1].text  # the message being answered


def _rag_index(
    conv: Conversation, memory_strategy: LocomoMemory
) -> tuple[Index, Sequence[MemoryUnit]]:
    assert memory_strategy.index_cache is not None and memory_strategy.retrieval_unit
    build = memory.UNIT_BUILDERS[memory_strategy.retrieval_unit]
    return memory_strategy.index_cache.get(
        f"{conv.sample_id}/{memory_strategy.retrieval_unit}", lambda: build(conv)
    )


def rank_targets(targets: Sequence[DialogueTurn], memory_strategy: LocomoMemory) -> list[list[int]]:
    """The index's rankings for the queries of `targets` (one conversation), in one batch: an
    embedding retriever encodes them together instead of one encoder call per held-out turn."""
    if not targets:
        return []
    index, _ = _rag_index(targets[0].conv, memory_strategy)
    return index.rank_many([_rag_query(t) for t in targets])


def item_metadata(target: DialogueTurn, ctx: DialogueContext) -> dict[str, Any]:
    t = target.turn
    return {
        "benchmark": "locomo",
        "task": "dialogue",
        "conversation_id": target.conv.sample_id,
        "dia_id": t.dia_id,
        "session": t.session,
        "speaker": target.speaker,
        "other_speaker": target.other,
        "previous_turn": target.conv.turns[target.position - 1].dia_id,
        "target_has_image": bool(t.img_url or t.blip_caption),
        "turns_shown": ctx.turns_shown,
        "retrieved_ids": list(ctx.retrieved_ids) if ctx.retrieved_ids is not None else None,
        "images": [
            {"dia_id": p.dia_id, "url": p.url, "caption": p.caption}
            for p in ctx.parts
            if isinstance(p, ImagePart)
        ],
    }


# ---------------------------------------------------------------------------------------------
# Options and items (shared by the Inspect and lm-eval tasks)


def dialogue_memory(
    context: str = "full",
    *,
    max_context_tokens: int | None = None,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
) -> LocomoMemory:
    """Validate the dialogue task's context options and build the memory strategy behind them.

    Raises ValueError naming the option. Options of another mode are rejected, not ignored.
    `session` uses the full-history strategy (`dialogue_context` cuts the history itself);
    `rag` retrieves observations unless told otherwise (`DIALOGUE_RETRIEVAL_UNIT`).
    """
    if context not in DIALOGUE_CONTEXT_MODES:
        raise ValueError(
            f"context={context!r} is not supported; allowed values: "
            + ", ".join(DIALOGUE_CONTEXT_MODES)
        )
    reject_options_outside(
        "rag",
        context,
        retrieval_unit=retrieval_unit,
        top_k=top_k,
        retriever=retriever,
        embedding_model=embedding_model,
    )
    reject_options_outside("truncated", context, max_context_tokens=max_context_tokens)
    if context == "truncated":
        return locomo_context("truncated", max_context_tokens=max_context_tokens)
    if context == "rag":
        return locomo_context(
            "rag",
            retrieval_unit=retrieval_unit or DIALOGUE_RETRIEVAL_UNIT,
            top_k=top_k,
            retriever=retriever,
            embedding_model=embedding_model,
        )
    return locomo_context("full")


def build_dialogue_items(
    conversations: Sequence[Conversation],
    context: str,
    memory_strategy: LocomoMemory,
    *,
    turns_per_conversation: int = 20,
    seed: int = 0,
    images: bool = False,
    max_images: int = 0,
) -> list[tuple[PromptItem, DialogueContext]]:
    """One item per held-out turn: the history as `system` (images as their captions), the
    reply instruction as `user`, the real turn as `target`; with the `DialogueContext` whose
    parts carry the images. Sample ids are `<conversation>-<dia id>`, e.g. `conv-26-D1:7`.

    `prompt_tokens` in the metadata counts `PromptItem.as_text()` with the strategy's counter.
    """
    out: list[tuple[PromptItem, DialogueContext]] = []
    for conv in conversations:
        targets = select_turns(conv, turns_per_conversation, seed)
        rankings: Sequence[Sequence[int] | None] = (
            rank_targets(targets, memory_strategy) if context == "rag" else [None] * len(targets)
        )
        for target, ranking in zip(targets, rankings, strict=True):
            ctx = dialogue_context(
                target,
                context,
                memory_strategy,
                images=images,
                max_images=max_images,
                ranking=ranking,
            )
            instruction = reply_instruction(target)
            md = item_metadata(target, ctx)
            tokens = memory_strategy.token_counter(f"{ctx.text}\n\n{instruction}")
            md |= {"context": context, "prompt_tokens": tokens}
            item = PromptItem(
                id=f"{conv.sample_id}-{target.turn.dia_id}",
                system=ctx.text,
                user=instruction,
                target=target.turn.text.strip(),
                metadata=md,
            )
            out.append((item, ctx))
    return out
