"""`locomo_dialogue`: LoCoMo's dialogue generation on Inspect (its README#protocol): a held-out
turn written from the history, scored with BLEU-1/2, ROUGE-L and BERTScore (the benchmark's
scoring.py); with `images=true` the history's photos are sent as images (inspect_tasks/images)."""

from __future__ import annotations

import functools

from inspect_ai import Task
from inspect_ai.scorer import Metric, Scorer, metric, scorer

from memevals.benchmarks.locomo_dialogue import memory, prompts, samples, scoring
from memevals.core.memory_options import MemoryOptions as _M
from memevals.core.options import options_from
from memevals.inspect_tasks import dataset, metrics, tasks
from memevals.inspect_tasks.images import attach_images, image_counts, photo_sample, with_photos
from memevals.inspect_tasks.metrics import keyed
from memevals.inspect_tasks.task_parts import from_fields, metadata_rows

__all__ = ["dialogue_bertscore", "dialogue_images", "dialogue_overlap", "locomo_dialogue"]

_O = samples.DialogueOptions
# conversation-clustered; three peer figures: intervals under -T uncertainty=full
_UNCERTAINTY: list[Metric] = metrics.uncertainty_metrics(by_category=False, intervals="full")


@metric(name="corpus")
def corpus_bleu_metric(order: int) -> Metric:
    """Corpus BLEU-`order` from the per-reply n-gram statistics in the score metadata."""
    return metadata_rows("bleu_stats", functools.partial(scoring.corpus_bleu_of_rows, order=order))


_BLEU = {f"bleu{n}": [*_UNCERTAINTY, corpus_bleu_metric(n)] for n in (1, 2)}


@scorer(metrics=keyed({**_BLEU, "rougeL": _UNCERTAINTY}, lead=False))
def dialogue_overlap() -> Scorer:
    """Sentence BLEU-1/2 (mean, plus corpus BLEU) and ROUGE-L of the cleaned reply."""
    return from_fields(scoring.overlap_score)


@scorer(metrics=keyed({"bertscore_f1": metrics.uncertainty_metrics(by_category=False)}))
def dialogue_bertscore(model: str | None = None, num_layers: int | None = None) -> Scorer:
    """BERTScore F1 of the cleaned reply (precision, recall in the metadata); model loaded once."""
    bert = scoring.get_bertscorer(model, num_layers)
    return from_fields(functools.partial(scoring.bertscore_score, scorer=bert))


@scorer(
    metrics=keyed(
        {"images_sent": [metrics.count()], "image_fallbacks": [metrics.count()]}, lead=False
    )
)
def dialogue_images() -> Scorer:
    """How many images were sent, and how many fell back to their caption (run totals)."""
    return image_counts()


@tasks.memevals_task(option_values=memory.DIALOGUE_OPTION_VALUES)
def locomo_dialogue(
    context: str = _M.context,
    turns_per_conversation: int = _O.turns_per_conversation,
    seed: int = _O.seed,
    conversations: str | None = None,
    max_context_tokens: int | None = None,
    retrieval_unit: str | None = None,
    top_k: int | None = None,
    retriever: str | None = None,
    embedding_model: str | None = None,
    images: bool = _O.images,
    max_images: int = _O.max_images,
    image_timeout: float = _O.image_timeout,
    bertscore: bool = _O.bertscore,
    bertscore_model: str | None = None,
    bertscore_layers: int | None = None,
    max_tokens: int = _O.max_tokens,
    data_dir: str | None = None,
    uncertainty: str = _O.uncertainty,
) -> Task:
    """LoCoMo dialogue generation: write a held-out turn from the history.

    Args:
        turns_per_conversation: held-out turns drawn per conversation (0 = every eligible turn).
        seed: seed of the draw.
        conversations: comma-separated conversation ids (e.g. conv-26); default all 10.
        images: send the history's photos as images (fetched; a gone one as its caption).
        max_images: images=true only: how many of the most recent photos are sent as images.
        image_timeout: seconds to wait for each image download.
        bertscore: also report BERTScore F1 (its model is loaded when the task is built).
        bertscore_model: a hub id, a local folder or all-MiniLM-L6-v2; default roberta-large.
        bertscore_layers: the layer BERTScore reads (needed for models bert-score does not know).
        max_tokens: the reply's token limit.
        data_dir: folder holding locomo/locomo10.json (overrides MEMEVALS_DATA_DIR).
    """
    o = options_from(_O, locals(), where="locomo_dialogue")
    bert = [dialogue_bertscore(bertscore_model, bertscore_layers)] if o.bertscore else []
    build = samples.build(o)
    if not o.images:  # the history is the item's system text (photos as captions), as in lm-eval
        return dataset.task_from_build(build, [dialogue_overlap(), *bert], name="locomo_dialogue")
    scorers = [dialogue_overlap(), *bert, dialogue_images()]
    built = dataset.task_from_build(build, scorers, name="locomo_dialogue")
    photos = [photo_sample(item, *prompts.photo_layout(item)) for item in build.items]
    return with_photos(built, photos, attach_images(o.image_timeout, id_key="dia_id"))


__all_tasks__ = tasks.declared_tasks(locomo_dialogue)
