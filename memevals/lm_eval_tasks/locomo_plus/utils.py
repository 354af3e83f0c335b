"""lm-eval functions of the locomo_plus tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_plus import samples
from memevals.benchmarks.locomo_plus.prompts import COGNITIVE
from memevals.core.options import lm_eval_aliases
from memevals.lm_eval_tasks import option_checks, sample_notes
from memevals.lm_eval_tasks.documents import doc_item, only_reply, prompt_tokens_of, to_docs
from memevals.lm_eval_tasks.inspect_only import GENERATION, YAML_TASK, not_taken
from memevals.lm_eval_tasks.locomo.utils import locomo_metrics
from memevals.lm_eval_tasks.memory_contexts import with_memory

__all__ = ["ALIASES", "INSPECT_ONLY", "locomo_plus_docs", "locomo_plus_results"]

#: `--metadata` key -> LocomoPlusOptions field. `choice_seed` is the two-option seed: lm-eval
#: merges model arguments into the metadata, and vLLM's own `seed` must not reorder options.
ALIASES = lm_eval_aliases("choice_seed")
#: LocomoPlusOptions fields of the Inspect task only (the judge's and the uncertainty figures'
#: are declared so in core.options).
INSPECT_ONLY = {"categories": YAML_TASK, "max_tokens": GENERATION}


def locomo_plus_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo-Plus documents of one category: a LoCoMo question category or `cognitive`; with
    `--metadata '{"memory": "<name>"}'` each document's context comes from that memory system
    (`with_memory`), as in the Inspect task."""
    task = f"locomo_plus[{categories}]"
    given = option_checks.metadata_options(
        samples.LocomoPlusOptions,
        task,
        metadata,
        ignored=not_taken(samples.LocomoPlusOptions, INSPECT_ONLY),
        aliases=ALIASES,
    )
    options = dataclasses.replace(given, categories=categories)
    built = option_checks.checked(task, lambda: samples.build(options))
    sample_notes.keep(built.notes)
    return to_docs(with_memory(task, built.items, built.subject), task)


def locomo_plus_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """LoCoMo questions: the LoCoMo metrics. Cognitive samples have no reference reply, so
    natively they get only the prompt size and, when the mode retrieves, `cue_recall` (the share
    of cue turns retrieved); `python -m memevals.tools.judge` scores the replies."""
    sample_notes.say(str(doc["id"]))
    md = doc_item(doc).metadata
    reply = only_reply(results)
    if md.get("category") == COGNITIVE:
        out: dict[str, Any] = {"prompt_tokens": prompt_tokens_of(doc, md)}
        if md.get("cue_recall") is not None:
            out["cue_recall"] = float(md["cue_recall"])
        return out
    return locomo_metrics(doc, md, reply)
