"""lm-eval functions of the longmemeval tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.longmemeval.official import ANSWER_TOKENS, STEP_BY_STEP_ANSWER_TOKENS
from memevals.benchmarks.longmemeval.retrieval import headline_scores
from memevals.benchmarks.longmemeval.samples import (
    LongMemEvalBuild,
    LongMemEvalOptions,
    build,
    of_categories,
    parse_categories,
)
from memevals.lm_eval_tasks import option_checks
from memevals.lm_eval_tasks.build_cache import RecentBuilds
from memevals.lm_eval_tasks.documents import doc_item, only_reply, prompt_tokens_of, to_docs
from memevals.lm_eval_tasks.inspect_only import GENERATION, YAML_TASK, not_taken
from memevals.lm_eval_tasks.memory_contexts import with_memory

__all__ = ["INSPECT_ONLY", "longmemeval_docs", "longmemeval_results"]

logger = logging.getLogger(__name__)

#: LongMemEvalOptions fields (and Inspect options) of the Inspect task only (the judge's and the
#: uncertainty figures' are declared so in core.options).
INSPECT_ONLY = {
    "variant": YAML_TASK,
    "categories": YAML_TASK,
    "max_tokens": GENERATION + " (answer_tokens is what the truncation budget reserves)",
    "note_max_tokens": "chain_of_note is Inspect-only (one call per session)",
}
_NOT_METADATA = not_taken(LongMemEvalOptions, INSPECT_ONLY)

#: The builds of this process: every category of a variant is built once for all the category
#: subtasks of a run, as the files are large (S 277 MB, M 2.7 GB) and each subtask would
#: otherwise re-read it (and re-run retrieval); a memory system's ingestions are made once too
#: (the subtasks share its subject).
_BUILT: RecentBuilds[LongMemEvalOptions, LongMemEvalBuild] = RecentBuilds(build)


def longmemeval_docs(variant: str, categories: str, **metadata: Any) -> DatasetDict:
    """LongMemEval documents of one variant and category.

    Args:
        variant: the subtask's variant (from the YAML).
        categories: the subtask's category (from the YAML).
        **metadata: the YAML's metadata and lm-eval's `--metadata`.

    Returns:
        The one-split dataset lm-eval reads.
    """
    task = f"longmemeval_{variant}[{categories}]"
    given = option_checks.metadata_options(
        LongMemEvalOptions, task, metadata, ignored=_NOT_METADATA
    )
    options = dataclasses.replace(given, variant=variant)
    if options.chain_of_note:
        raise option_checks.OptionError(
            f"{task}: chain_of_note needs one model call per session before the answer, which "
            "an lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/longmemeval -T chain_of_note=true)"
        )
    wanted = option_checks.checked(task, lambda: parse_categories(categories))
    if options.step_by_step and options.protocol.official:
        # the YAML's generation length is fixed; a loader cannot change it per run
        logger.warning(
            "%s: upstream answers step by step in up to %d tokens; pass --gen_kwargs "
            "max_gen_toks=%d (the task's YAML allows %d)",
            task,
            STEP_BY_STEP_ANSWER_TOKENS,
            STEP_BY_STEP_ANSWER_TOKENS,
            ANSWER_TOKENS,
        )
    everything = option_checks.checked(task, lambda: _BUILT(options))
    items = of_categories(everything.items, wanted)
    return to_docs(with_memory(task, items, everything.subject), task)


def longmemeval_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """LongMemEval is judged (`python -m memevals.tools.judge`); natively the prompt size and,
    with context=rag or a memory system, the official headline retrieval metrics (absent for the
    questions the official runner skips: `_abs` ones and those without a gold unit)."""
    md = doc_item(doc).metadata
    only_reply(results)
    out = {"prompt_tokens": prompt_tokens_of(doc, md)}
    return out | (headline_scores(md) or {})
