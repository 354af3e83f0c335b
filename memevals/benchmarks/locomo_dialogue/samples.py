"""The one assembly of the locomo_dialogue samples, called by the Inspect task and by the
lm-eval task alike: the options in, a `Build` (items, the task's log metadata, the reply's
token limit) out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memevals.benchmarks.locomo.data import LOCOMO_FILE, load_conversations
from memevals.benchmarks.locomo_dialogue.memory import (
    DIALOGUE_CONTEXT_MODES,
    dialogue_context,
    dialogue_memory,
    rank_targets,
    select_turns,
)
from memevals.benchmarks.locomo_dialogue.prompts import DialogueItem, dialogue_item
from memevals.benchmarks.locomo_dialogue.scoring import (
    check_bertscore_options,
    default_bertscore_layer,
)
from memevals.core.build import Build
from memevals.core.memory_options import MemoryOptions
from memevals.core.statistics import CLUSTER_KEY

__all__ = ["DEFAULT_MAX_TOKENS", "DialogueOptions", "build"]

#: The reply's token limit: the Inspect task's default and, through the record, lm-eval's
#: max_gen_toks.
DEFAULT_MAX_TOKENS = 128


@dataclass(frozen=True)
class DialogueOptions:
    """Every option of the dialogue task (Inspect's `-T`, lm-eval's `--metadata`), with their
    one set of defaults (the Inspect task's signature takes its defaults from here; lm-eval
    leaves BERTScore off unless asked, and sends no images)."""

    turns_per_conversation: int = 20  # 0 = every eligible turn
    seed: int = 0  # the draw of held-out turns (lm-eval: `turn_seed`)
    conversations: str | None = None  # comma-separated sample ids; None = all 10
    memory: MemoryOptions = field(default_factory=MemoryOptions)
    images: bool = False  # Inspect: send the history's photos as images
    max_images: int = 8  # with images: how many of the most recent photos are sent
    image_timeout: float = 10.0  # with images: seconds to wait for each download
    bertscore: bool = True  # also report BERTScore F1
    bertscore_model: str | None = None  # None: the library's default for English
    bertscore_layers: int | None = None
    max_tokens: int = DEFAULT_MAX_TOKENS  # the reply's token limit
    data_dir: str | None = None
    uncertainty: str = "default"  # Inspect: which uncertainty figures are shown

    def __post_init__(self) -> None:
        if isinstance(self.max_images, bool) or self.max_images < 0:
            raise ValueError(f"max_images must be >= 0, got {self.max_images!r}")
        self.memory.checked(DIALOGUE_CONTEXT_MODES)  # a bad context fails before any work
        if self.image_timeout <= 0:
            raise ValueError(f"image_timeout must be positive, got {self.image_timeout!r}")
        check_bertscore_options(self.bertscore, self.bertscore_model, self.bertscore_layers)


def build(options: DialogueOptions) -> Build:
    """One item per held-out turn of the chosen conversations, the task's log metadata (its
    `memory` entry: the strategy's settings, the prompt tokens' total, the index builds of
    `rag`) and the reply's token limit.

    Each item's `prompt_tokens` is the system count plus the user count by the strategy's
    counter (chat APIs tokenize each message on its own).

    Args:
        options: the task's options.

    Returns:
        The build (its items are `DialogueItem`s).
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
    metadata = {
        "benchmark": "locomo",
        "task": "dialogue",
        "turns_per_conversation": options.turns_per_conversation,
        "seed": options.seed,
        "images": options.images,
        "max_images": options.max_images if options.images else None,
        "bertscore_model": options.bertscore_model,
        # the layer read: the option, else memevals' default for the model (all-MiniLM-L6-v2)
        "bertscore_layers": options.bertscore_layers
        or default_bertscore_layer(options.bertscore_model),
        "memory": log,
        "data_sha256": LOCOMO_FILE.sha256,
    }
    return Build.of(items, metadata, max_tokens=options.max_tokens)
