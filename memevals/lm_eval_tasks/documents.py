"""A task's PromptItems as lm-eval documents and back: the one-split dataset, the prompt text
lm-eval sends, and what a scorer reads of a document (its item, its one reply, its prompt size).

Each benchmark folder's `utils.py` builds its documents from the benchmark's own samples and
scores with the benchmark's own rules; nothing here knows a benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import Dataset, DatasetDict

from memevals.core.prompt_item import PromptItem
from memevals.core.tokens import get_token_counter
from memevals.lm_eval_tasks.option_checks import OptionError

__all__ = ["doc_item", "doc_to_text", "only_reply", "prompt_tokens_of", "to_docs"]


def to_docs(items: Sequence[PromptItem], task: str, *, messages: bool = False) -> DatasetDict:
    """PromptItems as a one-split ("test") dataset of flat string fields. The metadata travels
    as JSON, because Arrow needs one type per column (LoCoMo answers are str or int).

    Args:
        items: the documents' items.
        task: the task's name, for the message when there are none.
        messages: also write each item's replayed chat (`messages`, JSON; BEAM's task class
            sends it).

    Returns:
        The dataset.
    """
    if not items:
        raise OptionError(f"{task}: no documents (check the category and data options)")
    rows = []
    for item in items:
        row = {
            "id": item.id,
            "system": item.system,
            "user": item.user,
            "target": item.target,
            "category": str(item.metadata.get("category", "")),
            "metadata": json.dumps(item.metadata, ensure_ascii=False),
        }
        if messages:
            row["messages"] = json.dumps([list(m) for m in item.messages], ensure_ascii=False)
        rows.append(row)
    return DatasetDict({"test": Dataset.from_list(rows)})


def doc_item(doc: Mapping[str, Any]) -> PromptItem:
    """The PromptItem a document was made from (metadata decoded)."""
    try:
        metadata = json.loads(doc["metadata"])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(
            f"document {doc.get('id')!r}: field 'metadata' is not the JSON memevals wrote ({exc})"
        ) from exc
    return PromptItem(
        id=str(doc["id"]),
        system=str(doc["system"]),
        user=str(doc["user"]),
        target=str(doc["target"]),
        metadata=metadata,
    )


def doc_to_text(doc: Mapping[str, Any]) -> str:
    """The exact text the Inspect tasks send (system and user joined), as one prompt.

    Context and question stay in one user turn under `--apply_chat_template`: lm-eval's HF
    model drops the system message when a chat template rejects it, which would silently
    remove the whole conversation.
    """
    return PromptItem(
        id=str(doc["id"]), system=str(doc["system"]), user=str(doc["user"]), target=""
    ).as_text()


def only_reply(results: Sequence[Any]) -> str:
    if len(results) != 1:
        raise ValueError(f"expected one generation per document, got {len(results)}")
    return str(results[0])


def prompt_tokens_of(doc: Mapping[str, Any], md: Mapping[str, Any]) -> float:
    """Prompt size by the same offline counter the Inspect tasks log (memevals.core.tokens);
    the count a builder already stored in the metadata is reused."""
    if md.get("prompt_tokens") is not None:
        return float(md["prompt_tokens"])
    counter = get_token_counter(str(md.get("token_counter") or "auto"))
    return float(counter(doc_to_text(doc)))
