"""The official LoCoMo QA score (BENCHMARKS.md §1.7), reimplemented for parity and speed.

Parity: the normalisation order, NLTK Porter stemming (default mode), multiset token F1,
the category-1 comma rule, the category-3 `;` rule and the category-5 abstention rule give the
same value as the official scorer (to 1e-9). Speed: stems are cached per word and token
counts per normalised string, so re-scoring the same golds across many predictions is cheap.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

from nltk.stem import PorterStemmer

_STEMMER = PorterStemmer()
_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")

#: Phrases whose presence (case-insensitive substring) counts as declining to answer.
ABSTENTION_PHRASES: tuple[str, ...] = ("no information available", "not mentioned")


def normalize_answer(text: str) -> str:
    """Drop commas, lowercase, drop ASCII punctuation, blank out a/an/the/and, fold spaces."""
    text = text.replace(",", "").lower().translate(_PUNCT_TABLE)
    return " ".join(_ARTICLES.sub(" ", text).split())


_ARTICLE_WORDS = frozenset({"a", "an", "the", "and"})
_STEMS: dict[str, str] = {}
_STEM_CACHE_LIMIT = 1 << 20


def _stem(word: str) -> str:
    stem = _STEMS.get(word)
    if stem is None:
        if len(_STEMS) >= _STEM_CACHE_LIMIT:
            _STEMS.clear()
        stem = _STEMS[word] = str(_STEMMER.stem(word))
    return stem


def _tokens(text: str) -> list[str]:
    """normalize_answer + split + stem, in one pass.

    Equivalent to splitting normalize_answer(text): the article rule can only match inside a
    whitespace-free word, and a word of letters/digits only (no non-ASCII punctuation left)
    is an article exactly when it equals one, so the regex runs only on the rare other words.
    """
    out: list[str] = []
    for word in text.replace(",", "").lower().translate(_PUNCT_TABLE).split():
        if word.isalnum():
            if word not in _ARTICLE_WORDS:
                out.append(_stem(word))
        else:
            out.extend(_stem(piece) for piece in _ARTICLES.sub(" ", word).split())
    return out


@lru_cache(maxsize=1 << 16)
def _token_counts(text: str) -> tuple[Counter[str], int]:
    tokens = _tokens(text)
    return Counter(tokens), len(tokens)


def answer_tokens(text: str) -> list[str]:
    """Stemmed tokens of `text` after normalisation (what F1 counts)."""
    return _tokens(text)


def token_f1(prediction: str, gold: str) -> float:
    """Multiset token F1 of two strings after LoCoMo normalisation and stemming."""
    pred_counts, n_pred = _token_counts(prediction)
    gold_counts, n_gold = _token_counts(gold)
    if n_pred == 0 or n_gold == 0:
        return 0.0
    small, large = (
        (pred_counts, gold_counts)
        if len(pred_counts) < len(gold_counts)
        else (
            gold_counts,
            pred_counts,
        )
    )
    same = 0
    for tok, n in small.items():
        m = large.get(tok)
        if m:
            same += n if n < m else m
    if same == 0:
        return 0.0
    precision = same / n_pred
    recall = same / n_gold
    return 2 * precision * recall / (precision + recall)


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category-1 rule: mean over comma-separated gold parts of the best-matching predicted part."""
    preds = [p.strip() for p in prediction.split(",")]
    golds = [g.strip() for g in gold.split(",")]
    total = 0.0
    for g in golds:
        total += max(token_f1(p, g) for p in preds)
    return total / len(golds)


def abstained(prediction: str) -> bool:
    """True when the reply says the conversation does not hold the answer (category-5 rule)."""
    low = str(prediction).lower()
    return any(phrase in low for phrase in ABSTENTION_PHRASES)


def locomo_f1(prediction: str, answer: str | int | None, category: int) -> float:
    """The official LoCoMo QA score of one prediction, unrounded, in [0, 1].

    `category` is the file's number (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
    5 adversarial). Category 5 never reads `answer`; categories 1-4 require it.
    """
    prediction = str(prediction)
    if category == 5:
        return 1.0 if abstained(prediction) else 0.0
    if category not in (1, 2, 3, 4):
        raise ValueError(f"unknown LoCoMo category {category!r}; expected 1-5")
    if answer is None:
        raise ValueError(f"category {category} needs a gold answer, got None")
    gold = str(answer)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category == 1:
        return multi_answer_f1(prediction, gold)
    return token_f1(prediction, gold)
