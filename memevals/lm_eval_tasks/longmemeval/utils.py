"""lm-eval functions of the longmemeval tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.longmemeval.retrieval import headline_keys
from memevals.benchmarks.longmemeval.samples import (
    LongMemEvalOptions,
    LongMemEvalSamples,
    build,
    of_categories,
    parse_categories,
)
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import DEFAULT_PROTOCOL
from memevals.lm_eval_tasks import common

__all__ = ["LONGMEMEVAL_OPTIONS", "longmemeval_docs", "longmemeval_results"]

logger = logging.getLogger(__name__)

#: LongMemEval's options besides the shared memory ones (MemoryOptions.names()).
#: `answer_tokens` None: upstream's answer length (500, 800 with official step-by-step), which
#: is what the truncation budget reserves; lm-eval's own limit is the YAML's max_gen_toks.
LONGMEMEVAL_OPTIONS: dict[str, Any] = {
    "history_format": "json",
    "context_window": None,
    "answer_tokens": None,
    "data_dir": None,
    "verify_checksum": True,
    "chain_of_note": False,
    "step_by_step": False,
    "protocol": DEFAULT_PROTOCOL,
}


@lru_cache(maxsize=1)
def _every_category(options: LongMemEvalOptions) -> LongMemEvalSamples:
    """The questions of every category of a variant (`options.categories` is None), built
    once for all the category subtasks of a run: the files are large (S 277 MB, M 2.7 GB) and
    each subtask would otherwise re-read it (and re-run retrieval). A memory system's
    ingestions are made once too: the subject (and its run) is shared by the subtasks."""
    return build(options)


def _hashable(opts: Mapping[str, Any]) -> dict[str, Any]:
    """`memory_args` given as a JSON object in `--metadata` arrives as a dict; as its JSON
    text (which parse_memory_args reads the same) the options can key the cache above."""
    args = opts.get("memory_args")
    if isinstance(args, Mapping):
        return {**opts, "memory_args": json.dumps(dict(args), sort_keys=True)}
    return dict(opts)


def longmemeval_docs(variant: str, categories: str, **metadata: Any) -> DatasetDict:
    """LongMemEval documents of one variant and category (both from the YAML)."""
    task = f"longmemeval_{variant}[{categories}]"
    opts = common.checked_options(
        task, metadata, [*LONGMEMEVAL_OPTIONS, *MemoryOptions.names()], LONGMEMEVAL_OPTIONS
    )
    if common.as_bool(task, "chain_of_note", opts["chain_of_note"]):
        raise common.OptionError(
            f"{task}: chain_of_note needs one model call per session before the answer, which "
            "an lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/longmemeval -T chain_of_note=true)"
        )
    wanted = common.checked(task, lambda: parse_categories(categories))
    step_by_step = common.as_bool(task, "step_by_step", opts["step_by_step"])
    answer_tokens = opts["answer_tokens"]
    options = LongMemEvalOptions(
        variant=variant,
        memory=MemoryOptions.from_mapping(_hashable(opts)),
        history_format=opts["history_format"],
        context_window=opts["context_window"],
        answer_tokens=None
        if answer_tokens is None
        else common.as_int(task, "answer_tokens", answer_tokens),
        data_dir=None if opts["data_dir"] is None else str(opts["data_dir"]),
        verify_checksum=common.as_bool(task, "verify_checksum", opts["verify_checksum"]),
        protocol=str(opts["protocol"]),
        step_by_step=step_by_step,
    )
    if step_by_step and options.protocol == "official":
        # the YAML's generation length is fixed; a loader cannot change it per run
        logger.warning(
            "%s: upstream answers step by step in up to 800 tokens; pass --gen_kwargs "
            "max_gen_toks=800 (the task's YAML allows 500)",
            task,
        )
    everything = common.checked(task, lambda: _every_category(options))
    items = of_categories(everything.items, wanted)
    return common.to_docs(common.with_memory(task, items, everything.subject), task)


def longmemeval_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """LongMemEval is judged (`python -m memevals.tools.judge`); natively the prompt size and,
    with context=rag or a memory system, the official headline retrieval metrics (absent for the
    questions the official runner skips: `_abs` ones and those without a gold unit)."""
    md = common.doc_item(doc).metadata
    common.only_reply(results)
    out = {"prompt_tokens": common.prompt_tokens_of(doc, md)}
    scores = md.get("retrieval_scores")
    if scores is not None:
        out |= {k: float(scores[k]) for k in headline_keys(str(md["retrieval_unit"]))}
    return out
