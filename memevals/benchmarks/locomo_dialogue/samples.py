"""The one assembly of the locomo_dialogue samples, called by the Inspect task and by the
lm-eval task alike: options record in, items and the task-log summary out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memevals.benchmarks.locomo.data import load_conversations
from memevals.benchmarks.locomo_dialogue.memory import (
    DIALOGUE_CONTEXT_MODES,
    dialogue_context,
    dialogue_memory,
    rank_targets,
    select_turns,
)
from memevals.benchmarks.locomo_dialogue.prompts import DialogueItem, dialogue_item
from memevals.core.memory_options import MemoryOptions
from memevals.core.statistics import CLUSTER_KEY

__all__ = ["DialogueOptions", "build"]


@dataclass(frozen=True)
class DialogueOptions:
    """What decides the samples (the scorers' and the image fetcher's options stay with the
    frameworks). `max_images` applies only with `images`."""

    conversations: str | None = None  # comma-separated sample ids; None = all 10
    turns_per_conversation: int = 20  # 0 = every eligible turn
    seed: int = 0  # the draw of held-out turns
    images: bool = False
    max_images: int = 8
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    data_dir: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.max_images, bool) or self.max_images < 0:
            raise ValueError(f"max_images must be >= 0, got {self.max_images!r}")
        self.memory.checked(DIALOGUE_CONTEXT_MODES)  # a bad context fails before any work


def build(options: DialogueOptions) -> tuple[list[DialogueItem], dict[str, Any]]:
    """One item per held-out turn of the chosen conversations, and the memory log.

    Each item's `prompt_tokens` is the system count plus the user count by the strategy's
    counter (chat APIs tokenize each message on its own); the log holds the strategy's
    settings, the total, and the index builds of `rag`.
    """
    strategy = dialogue_memory(options.memory)
    context = options.memory.context
    counter = strategy.token_counter
    items: list[DialogueItem] = []
    for conv in load_conversations(options.data_dir, options.conversations):
        targets = select_turns(conv, options.turns_per_conversation, options.seed)
        rankings: Sequence[Sequence[int] | None] = (
            rank_targets(targets, strategy) if context == "rag" else [None] * len(targets)
        )
        for target, ranking in zip(targets, rankings, strict=True):
            ctx = dialogue_context(
                target,
                context,
                strategy,
                images=options.images,
                max_images=options.max_images,
                ranking=ranking,
            )
            item = dialogue_item(target, ctx, context)
            tokens = counter(item.system) + counter(item.user)
            # turns of one conversation share its history (README.md#standard-errors)
            md = {**item.metadata, "prompt_tokens": tokens, CLUSTER_KEY: conv.sample_id}
            items.append(replace(item, metadata=md))
    log: dict[str, Any] = {
        **strategy.settings(),
        "context": context,
        "prompt_tokens_total": sum(int(i.metadata["prompt_tokens"]) for i in items),
    }
    if strategy.index_cache is not None:
        log["index_builds"] = strategy.index_cache.builds
    return items, log
