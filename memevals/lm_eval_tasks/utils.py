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
import inspect
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any, TypeVar

from datasets import Dataset, DatasetDict

from memevals.adapters.locomo import load_locomo
from memevals.adapters.locomo_plus import load_locomo_plus, stitch_all
from memevals.adapters.longmemeval import CATEGORIES, iter_longmemeval
from memevals.memory import LocomoMemory, get_token_counter, locomo_context
from memevals.memory.locomo_plus import annotate_cognitive_items, cognitive_context
from memevals.memory.longmemeval import headline_keys, longmemeval_memory, warn_if_oversized
from memevals.prompts import PromptItem
from memevals.prompts import longmemeval as lme_prompts
from memevals.prompts.dialogue import build_dialogue_items, dialogue_memory
from memevals.prompts.event_summary import build_event_items, select_conversations
from memevals.prompts.locomo import build_items as build_locomo_items
from memevals.prompts.locomo import prediction_for_scoring as locomo_prediction
from memevals.prompts.locomo_plus import COGNITIVE, build_plus_items, order_samples
from memevals.scorers import abstained, locomo_f1
from memevals.scorers.dialogue import (
    BleuStats,
    bertscore,
    clean_reply,
    corpus_bleu,
    get_bertscorer,
    overlap_scores,
)
from memevals.scorers.event_summary import rouge_scores
from memevals.scorers.retrieval import locomo_recall_for_mean, turn_precision_recall

logger = logging.getLogger(__name__)

T = TypeVar("T")

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


def _keyword_names(fn: Callable[..., Any]) -> list[str]:
    """Option names a core builder accepts (so its new options need no glue here)."""
    return [
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]


def _as_bool(task: str, name: str, value: Any) -> bool:
    """JSON gives booleans; `--model_args`-style strings give "true"/"false"."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "1", "yes", "false", "0", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise OptionError(f"{task}: option {name!r} must be true or false, got {value!r}")


def _checked(task: str, build: Callable[[], T]) -> T:
    """Run `build`, prefixing a ValueError from the shared core with the task name."""
    try:
        return build()
    except OptionError:
        raise
    except ValueError as exc:
        raise OptionError(f"{task}: {exc}") from exc


def to_docs(items: Sequence[PromptItem], task: str) -> DatasetDict:
    """PromptItems as a one-split ("test") dataset of flat string fields. The metadata travels
    as JSON, because Arrow needs one type per column (LoCoMo answers are str or int)."""
    if not items:
        raise OptionError(f"{task}: no documents (check the category and data options)")
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


def _prompt_tokens(doc: Mapping[str, Any], md: Mapping[str, Any]) -> float:
    """Prompt size by the same offline counter the Inspect tasks log (memevals.memory.tokens);
    the count a builder already stored in the metadata is reused."""
    if md.get("prompt_tokens") is not None:
        return float(md["prompt_tokens"])
    counter = get_token_counter(str(md.get("token_counter") or "auto"))
    return float(counter(doc_to_text(doc)))


# --------------------------------------------------------------------------- LoCoMo

#: LoCoMo options besides the memory options of `locomo_context` (context, max_context_tokens,
#: retrieval_unit, top_k, retriever, embedding_model, token_counter). `choice_seed` is the
#: Inspect task's `seed`: lm-eval merges model arguments into the metadata, and vLLM's own
#: `seed` model argument must not reorder the options.
LOCOMO_OPTIONS: dict[str, Any] = {
    "adversarial": "choice",
    "choice_seed": 0,
    "data_dir": None,
}


def _memory_option_names() -> list[str]:
    """The keyword options `locomo_context` accepts (so new memory options need no glue)."""
    return _keyword_names(locomo_context)


def _memory(task: str, opts: Mapping[str, Any]) -> LocomoMemory:
    names = _memory_option_names()
    return _checked(task, lambda: locomo_context(**{k: opts[k] for k in names if k in opts}))


def _with_memory_fields(items: Iterable[PromptItem], memory: LocomoMemory) -> list[PromptItem]:
    """What process_results needs to know about the strategy, per document."""
    extra = {"turn_level": memory.turn_level, "token_counter": memory.token_counter.name}
    return [replace(i, metadata={**i.metadata, **extra}) for i in items]


def locomo_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo QA documents of `categories` (from the YAML), options from `--metadata`."""
    task = f"locomo[{categories}]"
    opts = _options(task, metadata, [*LOCOMO_OPTIONS, *_memory_option_names()], LOCOMO_OPTIONS)
    memory = _memory(task, opts)
    items = _checked(
        task,
        lambda: build_locomo_items(
            load_locomo(opts["data_dir"]),
            categories=categories,
            context=memory,
            context_mode=memory.context,
            adversarial=opts["adversarial"],
            seed=int(opts["choice_seed"]),
        ),
    )
    return to_docs(_with_memory_fields(items, memory), task)


def _locomo_metrics(doc: Mapping[str, Any], md: Mapping[str, Any], reply: str) -> dict[str, float]:
    prediction = locomo_prediction(reply, dict(md))
    out = {
        "f1": locomo_f1(prediction, md["answer"], int(md["category_id"])),
        "abstention": 1.0 if abstained(prediction) else 0.0,
        "prompt_tokens": _prompt_tokens(doc, md),
    }
    retrieved = md.get("retrieved_ids")
    if retrieved is not None:
        retrieved_ids = [str(i) for i in retrieved]
        evidence = [str(e) for e in md["evidence"]]
        out["evidence_recall"] = locomo_recall_for_mean(retrieved_ids, evidence)
        pr = turn_precision_recall(retrieved_ids, evidence) if md.get("turn_level") else None
        if pr is not None:
            out["turn_precision"], out["turn_recall"] = pr
            out["selected_k"] = float(len(set(retrieved_ids)))
    return out


def locomo_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """Official LoCoMo F1 of one reply, whether it declines, its prompt size, and retrieval
    metrics when the context mode retrieves.

    `abstention` applies the official category-5 phrase rule to every reply: on the
    adversarial task it equals F1, elsewhere it is the rate of wrongful refusals.
    `evidence_recall` is the value the official LoCoMo recall averages (so its plain mean is
    the official figure); `turn_precision` / `turn_recall` / `selected_k` are HiGMem's set
    metrics over dia ids, absent for questions without evidence (HiGMem skips them) and for
    session summaries.
    """
    md = doc_item(doc).metadata
    return _locomo_metrics(doc, md, _reply(results))


# --------------------------------------------------------------------------- LoCoMo-Plus

LOCOMO_PLUS_OPTIONS: dict[str, Any] = {
    **LOCOMO_OPTIONS,
    "disclose_task": False,
    "gap_fix": False,
    "sample_order": "file",
}


def locomo_plus_docs(categories: str, **metadata: Any) -> DatasetDict:
    """LoCoMo-Plus documents of one category: a LoCoMo question category or `cognitive`."""
    task = f"locomo_plus[{categories}]"
    opts = _options(
        task, metadata, [*LOCOMO_PLUS_OPTIONS, *_memory_option_names()], LOCOMO_PLUS_OPTIONS
    )
    disclose = _as_bool(task, "disclose_task", opts["disclose_task"])
    gap_fix = _as_bool(task, "gap_fix", opts["gap_fix"])
    sample_order = str(opts["sample_order"])
    _checked(task, lambda: order_samples([], sample_order))
    memory = _memory(task, opts)
    conversations = load_locomo(opts["data_dir"])
    cognitive = categories == COGNITIVE
    cognitive_fn = _checked(task, lambda: cognitive_context(memory)) if cognitive else None
    stitched = (
        stitch_all(load_locomo_plus(opts["data_dir"]), conversations, gap_fix=gap_fix)
        if cognitive
        else []
    )
    items = _checked(
        task,
        lambda: build_plus_items(
            conversations,
            stitched,
            categories=categories,
            context=memory,
            **({"cognitive": cognitive_fn} if cognitive_fn is not None else {}),
            context_mode=memory.context,
            disclose_task=disclose,
            adversarial=opts["adversarial"],
            seed=int(opts["choice_seed"]),
            gap_fix=gap_fix,
        ),
    )
    if cognitive:
        # prompt size and, when the mode retrieves, whether the cue was found (cue_recall)
        items, _ = annotate_cognitive_items(items, stitched, memory)
    items = order_samples(items, sample_order)
    return to_docs(_with_memory_fields(items, memory), task)


def locomo_plus_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """LoCoMo questions: the LoCoMo metrics. Cognitive samples have no reference reply, so
    natively they get only the prompt size and, when the mode retrieves, `cue_recall` (the share
    of cue turns retrieved); `python -m memevals.judge` scores the replies."""
    md = doc_item(doc).metadata
    reply = _reply(results)
    if md.get("category") == COGNITIVE:
        out = {"prompt_tokens": _prompt_tokens(doc, md)}
        if md.get("cue_recall") is not None:
            out["cue_recall"] = float(md["cue_recall"])
        return out
    return _locomo_metrics(doc, md, reply)


# --------------------------------------------------------------------------- LongMemEval

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
    memory_names = _keyword_names(longmemeval_memory)
    opts = _options(task, metadata, [*LONGMEMEVAL_OPTIONS, *memory_names], LONGMEMEVAL_OPTIONS)
    if _as_bool(task, "chain_of_note", opts["chain_of_note"]):
        raise OptionError(
            f"{task}: chain_of_note needs one model call per session before the answer, which "
            "an lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/longmemeval -T chain_of_note=true)"
        )
    memory_options = tuple(sorted((k, opts[k]) for k in memory_names if k in opts))
    _checked(task, lambda: longmemeval_memory(**dict(memory_options)))  # fail before reading
    wanted = _checked(task, lambda: lme_prompts.parse_categories(categories))
    data_dir = None if opts["data_dir"] is None else str(opts["data_dir"])
    verify = _as_bool(task, "verify_checksum", opts["verify_checksum"])
    everything = _checked(
        task, lambda: _longmemeval_items(variant, memory_options, data_dir, verify)
    )
    items = [item for category in wanted for item in everything[category]]
    return to_docs(items, task)


def longmemeval_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """LongMemEval is judged (`python -m memevals.judge`); natively the prompt size and, with
    context=rag, the official headline retrieval metrics (absent for the questions the official
    runner skips: `_abs` ones and those without a gold unit)."""
    md = doc_item(doc).metadata
    _reply(results)
    out = {"prompt_tokens": _prompt_tokens(doc, md)}
    scores = md.get("retrieval_scores")
    if scores is not None:
        out |= {k: float(scores[k]) for k in headline_keys(str(md["retrieval_unit"]))}
    return out


# --------------------------------------------------------------------------- LoCoMo events

EVENT_SUMMARY_OPTIONS: dict[str, Any] = {
    "sessions": None,
    "conversations": None,
    "data_dir": None,
    "incremental": False,
}


def event_summary_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo event summarisation: one document per conversation and speaker."""
    task = "locomo_event_summary"
    opts = _options(task, metadata, EVENT_SUMMARY_OPTIONS, EVENT_SUMMARY_OPTIONS)
    if _as_bool(task, "incremental", opts["incremental"]):
        raise OptionError(
            f"{task}: incremental summarisation needs one model call per session, which an "
            "lm-eval generate_until task cannot make; use the Inspect task "
            "(inspect eval memevals/locomo_event_summary -T incremental=true)"
        )
    sessions = None if opts["sessions"] is None else _as_int(task, "sessions", opts["sessions"])
    conversations = load_locomo(opts["data_dir"])
    built = _checked(
        task,
        lambda: build_event_items(
            select_conversations(conversations, opts["conversations"]), sessions=sessions
        ),
    )
    return to_docs(built.items, task)


def event_summary_results(doc: Mapping[str, Any], results: Sequence[Any]) -> dict[str, float]:
    """ROUGE-1/2/L against the reference events (as the Inspect task reports them) and the
    prompt size; the FactScore precision/recall/F1 need the grader: `python -m memevals.judge`."""
    md = doc_item(doc).metadata
    out = dict(rouge_scores(_reply(results), str(doc["target"])))
    out["prompt_tokens"] = _prompt_tokens(doc, md)
    return out


# --------------------------------------------------------------------------- LoCoMo dialogue

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


def _as_int(task: str, name: str, value: Any) -> int:
    """JSON gives integers; `--model_args`-style strings give digits."""
    if not isinstance(value, bool):
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    raise OptionError(f"{task}: option {name!r} must be an integer, got {value!r}")


def dialogue_docs(**metadata: Any) -> DatasetDict:
    """LoCoMo dialogue generation: one document per held-out turn, built as the Inspect task
    builds its samples (photos always as their captions: lm-eval sends text only)."""
    task = "locomo_dialogue"
    memory_names = _keyword_names(dialogue_memory)
    opts = _options(
        task, metadata, [*DIALOGUE_OPTIONS, *memory_names, *_IMAGE_ONLY_OPTIONS], DIALOGUE_OPTIONS
    )
    if "seed" in metadata and "turn_seed" not in metadata:
        logger.warning(
            "%s: 'seed' (a model argument?) does not change the held-out turns; "
            "use --metadata '{\"turn_seed\": N}'",
            task,
        )
    images_given = [k for k in _IMAGE_ONLY_OPTIONS if k in metadata]
    if _as_bool(task, "images", opts["images"]) or images_given:
        raise OptionError(
            f"{task}: {', '.join(images_given) or 'images=true'}: lm-eval tasks send text only, "
            "so each photo is its caption; to send images use the Inspect task "
            "(inspect eval memevals/locomo_dialogue -T images=true)"
        )
    bert = _as_bool(task, "bertscore", opts["bertscore"])
    bert_model = None if opts["bertscore_model"] is None else str(opts["bertscore_model"])
    layers = opts["bertscore_layers"]
    bert_layers = None if layers is None else _as_int(task, "bertscore_layers", layers)
    if not bert and (bert_model is not None or bert_layers is not None):
        raise OptionError(
            f"{task}: bertscore_model and bertscore_layers apply only with bertscore=true"
        )
    turns = _as_int(task, "turns_per_conversation", opts["turns_per_conversation"])
    seed = _as_int(task, "turn_seed", opts["turn_seed"])
    memory_options = {k: opts[k] for k in memory_names if k in opts}
    memory = _checked(task, lambda: dialogue_memory(**memory_options))
    if bert:  # load the model once, now, so a missing one fails before any model call
        _checked(task, lambda: get_bertscorer(bert_model, bert_layers))
    context = str(
        opts.get("context", inspect.signature(dialogue_memory).parameters["context"].default)
    )
    built = _checked(
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
    prediction = clean_reply(_reply(results), str(md["speaker"]), str(md["other_speaker"]))
    values, stats = overlap_scores(prediction, reference)
    stats_row = stats.as_row()
    out: dict[str, Any] = {
        **values,
        "corpus_bleu1": stats_row,
        "corpus_bleu2": stats_row,
        "prompt_tokens": _prompt_tokens(doc, md),
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
