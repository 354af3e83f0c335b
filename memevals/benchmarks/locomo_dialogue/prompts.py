"""LoCoMo dialogue generation prompts (benchmarks/locomo_dialogue/README.md#protocol): the reply
instruction and the item
of one held-out turn. What the model sees of the history comes from `memory`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.locomo_dialogue.memory import (
    DialogueContext,
    DialogueTurn,
    ImagePart,
    Part,
    caption_text,
)
from memevals.core.prompt_item import PromptItem

__all__ = ["DialogueItem", "dialogue_item", "item_metadata", "photo_layout", "reply_instruction"]


def reply_instruction(target: DialogueTurn) -> str:
    s, o = target.speaker, target.other
    return (
        f"You are {s}. Write {s}'s next message to {o} in this conversation: one chat message "
        f"in {s}'s voice that follows naturally from what was just said. Reply with the "
        "message text only, without a name, quotation marks or stage directions."
    )


@dataclass(frozen=True)
class DialogueItem(PromptItem):
    """A PromptItem whose history is also kept as parts, photos as `ImagePart`s, for a framework
    that can send images (`system` is the same history with each photo as its caption)."""

    parts: tuple[Part, ...] = ()


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
        "previous_turn": target.previous.dia_id,
        "target_has_image": bool(t.img_url or t.blip_caption),
        "turns_shown": ctx.turns_shown,
        "retrieved_ids": list(ctx.retrieved_ids) if ctx.retrieved_ids is not None else None,
        "images": [
            {"dia_id": p.dia_id, "url": p.url, "caption": p.caption}
            for p in ctx.parts
            if isinstance(p, ImagePart)
        ],
    }


def dialogue_item(target: DialogueTurn, ctx: DialogueContext, context: str) -> DialogueItem:
    """The history as `system` (photos as their captions), the reply instruction as `user`, the
    real turn as `target`. Sample ids are `<conversation>-<dia id>`, e.g. `conv-26-D1:7`."""
    return DialogueItem(
        id=f"{target.conv.sample_id}-{target.turn.dia_id}",
        system=ctx.text,
        user=reply_instruction(target),
        target=target.turn.text.strip(),
        metadata={**item_metadata(target, ctx), "context": context},
        parts=tuple(ctx.parts),
    )


def photo_layout(item: PromptItem) -> tuple[list[str], list[dict[str, Any]]]:
    """The prompt as one message of text parts, for a framework that sends images: the history
    with each photo as its caption part, then the instruction; and the photos' metadata
    entries, each with the index of its caption part (`part`).

    Args:
        item: the held-out turn's item (a `DialogueItem`).

    Returns:
        The text parts and the photo entries.
    """
    if not isinstance(item, DialogueItem):
        raise TypeError(f"{item.id}: not a dialogue item, it has no photos as parts")
    texts: list[str] = []
    photos = [dict(info) for info in item.metadata["images"]]
    pending = iter(photos)
    for p in item.parts:
        if isinstance(p, ImagePart):
            info = next(pending)
            if info["dia_id"] != p.dia_id:
                raise ValueError(f"{item.id}: photo {p.dia_id} is not in the item's metadata")
            info["part"] = len(texts)
            texts.append(caption_text(p))
        elif p:
            texts.append(p)
    texts.append(f"\n\n{item.user}")
    return texts, photos
