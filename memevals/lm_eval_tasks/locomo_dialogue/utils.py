"""lm-eval functions of the locomo_dialogue tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

import inspect
import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo_dialogue.prompts import build_dialogue_items, dialogue_memory
from memevals.benchmarks.locomo_dialogue.scoring import (
    BleuStats,
    bertscore,
    clean_reply,
    corpus_bleu,
    get_bertscorer,
    overlap_scores,
)
from memevals.benchmarks.locomo_event_summary.prompts import select_conversations
from memevals.lm_eval_tasks.common import (
    OptionError,
    as_bool,
    as_int,
    checked,
    checked_options,
    doc_item,
    keyword_names,
    only_reply,
    prompt_tokens_of,
    to_docs,
)

logger = logging.getLogger(__name__)


#: Dialogue options besides the context options of `dialogue_memory` (context,
#: max_context_tokens, retrieval_unit, top_k, retriever, embedding_model). `turn_seed` is the
#: Inspect task's `seed` (the draw of held-out turns), renamed for the reason `choice_seed` is:
#: a `seed` model argument, which lm-eval merges in, must not change the documents.
DIALOGUE_OPTIONS: dict[str, Any] = {
    "turns_per_conversation": 20,
    "turn_seed": 0,
    "conversations": None,
    "data_dir": None,
    "images": False,
    "bertscore": False,
    "bertscore_model": None,
    "bertscore_layers": None,
}

#: Inspect options that only make sense when images are sent, which lm-eval cannot do.
_IMAGE_ONLY_OPTIONS = ("max_images", "image_timeout")


def dialogue_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo dialogue generation: one document per held-out turn, built as the Inspect task
    builds its samples (photos always as their captions: lm-eval sends text only)."""
    task = "locomo_dialogue"
    memory_names = keyword_names(dialogue_memory)
    opts = checked_options(
        task, metadata, [*DIALOGUE_OPTIONS, *memory_names, *_IMAGE_ONLY_OPTIONS], DIALOGUE_OPTIONS
    )
    if "seed" in metadata and "turn_seed" not in metadata:
        logger.warning(
            "%s: 'seed' (a model argument?) does not change the held-out turns; "
            "use --metadata '{\"turn_seed\": N}'",
            task,
        )
    images_given = [k for k in _IMAGE_ONLY_OPTIONS if k in metadata]
    if as_bool(task, "images", opts["images"]) or images_given:
        raise OptionError(
            f"{task}: {', '.join(images_given) or 'images=true'}: lm-eval tasks send text only, "
            "so each photo is its caption; to send images use the Inspect task "
            "(inspect eval memevals/locomo_dialogue -T images=true)"
        )
    bert = as_bool(task, "bertscore", opts["bertscore"])
    bert_model = None if opts["bertscore_model"] is None else str(opts["bertscore_model"])
    layers = opts["bertscore_layers"]
    bert_layers = None if layers is None else as_int(task, "bertscore_layers", layers)
    if not bert and (bert_model is not None or bert_layers is not None):
        raise OptionError(
            f"{task}: bertscore_model and bertscore_layers apply only with bertscore=true"
        )
    turns = as_int(task, "turns_per_conversation", opts["turns_per_conversation"])
    seed = as_int(task, "turn_seed", opts["turn_seed"])
    memory_options = {k: opts[k] for k in memory_names if k in opts}
    memory = checked(task, lambda: dialogue_memory(**memory_options))
    if bert:  # load the model once, now, so a missing one fails before any model call
        checked(task, lambda: get_bertscorer(bert_model, bert_layers))
    context = str(
        opts.get("context", inspect.signature(dialogue_memory).parameters["context"].default)
    )
    built = checked(
        task,
        lambda: build_dialogue_items(
            select_conversations(load_locomo(opts["data_dir"]), opts["conversations"]),
            context,
            memory,
            turns_per_conversation=turns,
            seed=seed,
        ),
    )
    extra = {"bertscore": bert, "bertscore_model": bert_model, "bertscore_layers": bert_layers}
    return to_docs([replace(item, metadata={**item.metadata, **extra}) for item, _ in built], task)


def dialogue_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """BLEU-1/2 and ROUGE-L of the cleaned reply (as the Inspect scorer computes them), the
    reply's n-gram statistics for corpus BLEU, the prompt size, and BERTScore F1 when the task
    was built with bertscore=true."""
    md = doc_item(doc).metadata
    reference = str(doc["target"])
    prediction = clean_reply(only_reply(results), str(md["speaker"]), str(md["other_speaker"]))
    values, stats = overlap_scores(prediction, reference)
    stats_row = stats.as_row()
    out: dict[str, Any] = {
        **values,
        "corpus_bleu1": stats_row,
        "corpus_bleu2": stats_row,
        "prompt_tokens": prompt_tokens_of(doc, md),
    }
    if md.get("bertscore"):
        scorer = get_bertscorer(md.get("bertscore_model"), md.get("bertscore_layers"))
        [result] = bertscore([prediction], [reference], scorer)
        out["bertscore_f1"] = result.f1
    return out


def _corpus_bleu_of(rows: Sequence[Mapping[str, Any]], order: int) -> float:
    return corpus_bleu([BleuStats.from_row(r) for r in rows], order)


def corpus_bleu1(rows: Sequence[Mapping[str, Any]]) -> float:
    """Corpus BLEU-1 of a run from the per-reply statistics (the Inspect corpus_bleu_metric)."""
    return _corpus_bleu_of(rows, 1)


def corpus_bleu2(rows: Sequence[Mapping[str, Any]]) -> float:
    """Corpus BLEU-2 of a run from the per-reply statistics (the Inspect corpus_bleu_metric)."""
    return _corpus_bleu_of(rows, 2)
