"""The Python side of the lm-eval YAML tasks: load documents, render prompts, score replies.

Everything here is glue. Documents come from the same adapters and prompt builders as the
Inspect tasks (one `PromptItem` per question), the prompt is `PromptItem.as_text()`, and the
scores come from `memevals.scorers`; no rule is restated here.

lm-eval calls `custom_dataset(**metadata, **dataset_kwargs)`, where `metadata` is the task
YAML's `metadata` merged with `--model_args` and `--metadata` (in that order). So the loaders
accept every key, use the ones they know, ignore the rest (model arguments, `version`, ...),
and reject a key that looks like a misspelt option rather than silently running the default.
"""

from __future__ import annotations

import difflib
import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from datasets import Dataset, DatasetDict

from memevals.adapters.locomo import load_locomo
from memevals.memory import locomo_context
from memevals.prompts import PromptItem
from memevals.prompts.locomo import build_items as build_locomo_items
from memevals.prompts.locomo import prediction_for_scoring as locomo_prediction
from memevals.scorers import abstained, locomo_f1

logger = logging.getLogger(__name__)

#: Document fields (every benchmark): the PromptItem plus its metadata as JSON, because
#: Arrow needs one type per column and metadata values differ (e.g. int or str answers).
DOC_FIELDS = ("id", "system", "user", "target", "category", "metadata")

#: Keys lm-eval itself puts into the metadata it passes to `custom_dataset`.
_LM_EVAL_KEYS = frozenset({"version", "config_source", "_metadata"})


class OptionError(ValueError):
    """A `--metadata` option is misspelt or has a bad value."""


def _options(
    task: str, given: Mapping[str, Any], known: Iterable[str], defaults: Mapping[str, Any]
) -> dict[str, Any]:
    """The known options with defaults filled in; unknown keys are ignored unless they look
    like a typo of a known one (they may be model arguments, which lm-eval merges in)."""
    known = set(known)
    for key in given:
        if key in known or key in _LM_EVAL_KEYS:
            continue
        close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=0.8)
        if close:
            raise OptionError(
                f"{task}: --metadata key {key!r} is not an option; did you mean {close[0]!r}? "
                f"Options: {', '.join(sorted(known))}"
            )
        logger.debug("%s: ignoring metadata key %r (not a memevals option)", task, key)
    if "seed" in given and "choice_seed" in known and "choice_seed" not in given:
        logger.warning(
            "%s: 'seed' (a model argument?) does not set the two-option order; "
            "use --metadata '{\"choice_seed\": N}'",
            task,
        )
    out = dict(defaults)
    out.update({k: v for k, v in given.items() if k in known})
    return out


def to_docs(items: Sequence[PromptItem], task: str) -> DatasetDict:
    """PromptItems as a one-split ("test") dataset of flat string fields."""
    if not items:
        raise ValueError(f"{task}: no documents (check the category and data options)")
    rows = [
        {
            "id": item.id,
            "system": item.system,
            "user": item.user,
            "target": item.target,
            "category": str(item.metadata.get("category", "")),
            "metadata": json.dumps(item.metadata, ensure_ascii=False),
        }
        for item in items
    ]
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


def _reply(results: Sequence[Any]) -> str:
    if len(results) != 1:
        raise ValueError(f"expected one generation per document, got {len(results)}")
    return str(results[0])


# --------------------------------------------------------------------------- LoCoMo

LOCOMO_OPTIONS: dict[str, Any] = {
    "context": "full",
    "adversarial": "choice",
    "choice_seed": 0,
    "data_dir": None,
}


def locomo_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo QA documents of `categories` (from the YAML), options from `--metadata`."""
    task = f"locomo[{categories}]"
    opts = _options(task, metadata, LOCOMO_OPTIONS, LOCOMO_OPTIONS)
    context_fn = locomo_context(opts["context"])
    items = build_locomo_items(
        load_locomo(opts["data_dir"]),
        categories=categories,
        context=context_fn,
        context_mode=opts["context"],
        adversarial=opts["adversarial"],
        seed=int(opts["choice_seed"]),
    )
    return to_docs(items, task)


def locomo_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """Official LoCoMo F1 of one reply, plus whether it declines to answer.

    `abstention` applies the official category-5 phrase rule to every reply: on the
    adversarial task it equals F1, elsewhere it is the rate of wrongful refusals.
    """
    md = doc_item(doc).metadata
    prediction = locomo_prediction(_reply(results), md)
    return {
        "f1": locomo_f1(prediction, md["answer"], int(md["category_id"])),
        "abstention": 1.0 if abstained(prediction) else 0.0,
    }
