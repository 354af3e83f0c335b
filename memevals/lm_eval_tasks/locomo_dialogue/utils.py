"""lm-eval functions of the locomo_dialogue tasks: documents and per-reply scores (YAML beside)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from datasets import DatasetDict

from memevals.benchmarks.locomo_dialogue import scoring
from memevals.benchmarks.locomo_dialogue.samples import DialogueOptions, build
from memevals.core.memory_options import MemoryOptions
from memevals.core.options import lm_eval_aliases, shared_options
from memevals.lm_eval_tasks import option_checks
from memevals.lm_eval_tasks.clustered_stderr import with_clusters
from memevals.lm_eval_tasks.documents import doc_item, only_reply, prompt_tokens_of, to_docs
from memevals.lm_eval_tasks.inspect_only import GENERATION, not_taken

__all__ = [
    "ALIASES",
    "INSPECT_ONLY",
    "corpus_bleu1",
    "corpus_bleu2",
    "dialogue_docs",
    "dialogue_results",
]

#: `--metadata` key -> DialogueOptions field: `turn_seed` draws the held-out turns (a model's
#: `seed` argument, which lm-eval merges in, must not change the documents).
ALIASES = lm_eval_aliases("turn_seed")
#: Options of the Inspect task only (the uncertainty figures' are declared so in core.options).
INSPECT_ONLY = {
    "max_tokens": GENERATION,
    "token_counter": "budgets and prompt sizes use the default counter",
}
_NOT_HERE = not_taken(DialogueOptions, INSPECT_ONLY)
#: Memory-system options, refused (a key lm-eval would otherwise ignore must not run the task
#: without the system it names): the dialogue task has no memory-system mode.
_MEMORY_SYSTEM_OPTIONS = tuple(
    o.name for o in shared_options(MemoryOptions.names()) if o.group == "memory"
)
_NO_MEMORY = "the dialogue task has no memory-system mode"
#: Inspect options that only make sense when images are sent, which lm-eval cannot do.
_IMAGE_ONLY_OPTIONS = ("max_images", "image_timeout")


def _refused(task: str, metadata: Mapping[str, Any]) -> None:
    """A memory system or images asked of a task that sends text only."""
    systems_given = [k for k in _MEMORY_SYSTEM_OPTIONS if k in metadata]
    if systems_given:
        raise option_checks.OptionError(
            f"{task}: {', '.join(systems_given)}: {_NO_MEMORY}; "
            "its context options are context, max_context_tokens and the context=rag options"
        )
    images_given = [k for k in _IMAGE_ONLY_OPTIONS if k in metadata]
    if images_given or option_checks.as_bool(task, "images", metadata.get("images", False)):
        raise option_checks.OptionError(
            f"{task}: {', '.join(images_given) or 'images=true'}: lm-eval tasks send text only, "
            "so each photo is its caption; to send images use the Inspect task "
            "(inspect eval memevals/locomo_dialogue -T images=true)"
        )


def dialogue_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo dialogue generation: one document per held-out turn, built as the Inspect task
    builds its samples (photos always as their captions: lm-eval sends text only). BERTScore
    is off unless asked (`bertscore: true`); `turn_seed` is the Inspect task's `seed` (a
    `seed` model argument, which lm-eval merges in, must not change the documents)."""
    task = "locomo_dialogue"
    _refused(task, metadata)
    options = option_checks.metadata_options(
        DialogueOptions,
        task,
        {"bertscore": False, **metadata},
        ignored={**_NOT_HERE, **dict.fromkeys(_MEMORY_SYSTEM_OPTIONS, _NO_MEMORY)},
        aliases=ALIASES,
    )
    if options.bertscore:  # load the model once, now, so a missing one fails before any call
        option_checks.checked(
            task, lambda: scoring.get_bertscorer(options.bertscore_model, options.bertscore_layers)
        )
    items = option_checks.checked(task, lambda: build(options)).items
    extra = {
        "bertscore": options.bertscore,
        "bertscore_model": options.bertscore_model,
        "bertscore_layers": options.bertscore_layers,
    }
    return to_docs([replace(item, metadata={**item.metadata, **extra}) for item in items], task)


def dialogue_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, Any]:
    """BLEU-1/2 and ROUGE-L of the cleaned reply (as the Inspect scorer computes them), the
    reply's n-gram statistics for corpus BLEU, the prompt size, and BERTScore F1 when the task
    was built with bertscore=true. BLEU-1/2 and ROUGE-L also come as `<name>_stderr_clustered`
    (value, conversation id), aggregated into the conversation-clustered standard error."""
    md = doc_item(doc).metadata
    reference = str(doc["target"])
    prediction = scoring.clean_reply(
        only_reply(results), str(md["speaker"]), str(md["other_speaker"])
    )
    values, stats = scoring.overlap_scores(prediction, reference)
    stats_row = stats.as_row()
    out: dict[str, Any] = {
        **with_clusters(values, md, values),
        "corpus_bleu1": stats_row,
        "corpus_bleu2": stats_row,
        "prompt_tokens": prompt_tokens_of(doc, md),
    }
    if md.get("bertscore"):
        scorer = scoring.get_bertscorer(md.get("bertscore_model"), md.get("bertscore_layers"))
        [result] = scoring.bertscore([prediction], [reference], scorer)
        out["bertscore_f1"] = result.f1
    return out


def corpus_bleu1(rows: Sequence[Mapping[str, Any]]) -> float:
    """Corpus BLEU-1 of a run from the per-reply statistics (the Inspect corpus_bleu_metric)."""
    return scoring.corpus_bleu_of_rows(rows, 1)


def corpus_bleu2(rows: Sequence[Mapping[str, Any]]) -> float:
    """Corpus BLEU-2 of a run from the per-reply statistics (the Inspect corpus_bleu_metric)."""
    return scoring.corpus_bleu_of_rows(rows, 2)
