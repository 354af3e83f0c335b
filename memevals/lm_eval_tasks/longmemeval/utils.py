"""lm-eval functions of the longmemeval tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.longmemeval import prompts as lme_prompts
from memevals.benchmarks.longmemeval.data import CATEGORIES, iter_longmemeval
from memevals.benchmarks.longmemeval.memory import (
    headline_keys,
    longmemeval_memory,
    warn_if_oversized,
)
from memevals.core.prompt_item import PromptItem
from memevals.lm_eval_tasks.common import (
    OptionError,
    as_bool,
    checked,
    checked_options,
    doc_item,
    keyword_names,
    only_reply,
    prompt_tokens_of,
    to_docs,
)

#: LongMemEval options besides those of `longmemeval_memory` (context, history_format,
#: max_context_tokens, context_window, token_counter, answer_tokens, retrieval_unit, top_k,
#: retriever, embedding_model).
LONGMEMEVAL_OPTIONS: dict[str, Any] = {
    "data_dir": None,
    "verify_checksum": True,
    "chain_of_note": False,
}


@lru_cache(maxsize=1)
def _longmemeval_items(
    variant: str,
    memory_options: tuple[tuple[str, Any], ...],
    data_dir: str | None,
    verify: bool,
) -> dict[str, tuple[PromptItem, ...]]:
    """Category -> its questions, for every category of a variant, built as the Inspect task
    builds them. Built once for all the category subtasks of a run: the files are large
    (S 277 MB, M 2.7 GB) and each subtask would otherwise re-read it (and re-run retrieval)."""
    memory = longmemeval_memory(**dict(memory_options))
    warn_if_oversized(variant, memory.context)
    by_category: dict[str, list[PromptItem]] = {c: [] for c in CATEGORIES}
    for inst in iter_longmemeval(variant, data_dir, verify_checksum=verify):
        item = memory.item(inst, variant=variant)
        for category, members in by_category.items():
            if lme_prompts.wanted(inst, [category]):
                members.append(item)
    return {c: tuple(members) for c, members in by_category.items()}


def longmemeval_docs(variant: str, categories: str, **metadata: Any) -> DatasetDict:
    """LongMemEval documents of one variant and category (both from the YAML)."""
    task = f"longmemeval_{variant}[{categories}]"
    memory_names = keyword_names(longmemeval_memory)
    opts = checked_options(
        task, metadata, [*LONGMEMEVAL_OPTIONS, *memory_names], LONGMEMEVAL_OPTIONS
    )
    if as_bool(task, "chain_of_note", opts["chain_of_note"]):
        raise OptionError(
            f"{task}: chain_of_note needs one model call per session before the answer, which "
            "an lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/longmemeval -T chain_of_note=true)"
        )
    memory_options = tuple(sorted((k, opts[k]) for k in memory_names if k in opts))
    checked(task, lambda: longmemeval_memory(**dict(memory_options)))  # fail before reading
    wanted = checked(task, lambda: lme_prompts.parse_categories(categories))
    data_dir = None if opts["data_dir"] is None else str(opts["data_dir"])
    verify = as_bool(task, "verify_checksum", opts["verify_checksum"])
    everything = checked(
        task, lambda: _longmemeval_items(variant, memory_options, data_dir, verify)
    )
    items = [item for category in wanted for item in everything[category]]
    return to_docs(items, task)


def longmemeval_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """LongMemEval is judged (`python -m memevals.tools.judge`); natively the prompt size and, with
    context=rag, the official headline retrieval metrics (absent for the questions the official
    runner skips: `_abs` ones and those without a gold unit)."""
    md = doc_item(doc).metadata
    only_reply(results)
    out = {"prompt_tokens": prompt_tokens_of(doc, md)}
    scores = md.get("retrieval_scores")
    if scores is not None:
        out |= {k: float(scores[k]) for k in headline_keys(str(md["retrieval_unit"]))}
    return out
