"""A deliberately plain restatement of the official LoCoMo QA scoring rules
(benchmarks/locomo/README.md#scoring).

No caching and no shortcuts: each step written as the rule reads. Used as the parity oracle for
`memevals.scorers.locomo_f1` in tests and as the baseline in perf/scoring.py.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from functools import lru_cache

from nltk.stem import PorterStemmer

# nltk's stemmer, each word stemmed once per process (a pure function of the word: the parity
# tests stem the same answer words hundreds of thousands of times)
_ps_stem = lru_cache(maxsize=None)(PorterStemmer().stem)


def ref_normalize(s: str) -> str:
    s = s.replace(",", "")
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = re.sub(r"\b(a|an|the|and)\b", " ", s)
    return " ".join(s.split())


def ref_f1(prediction: str, gold: str) -> float:
    p = [_ps_stem(w) for w in ref_normalize(prediction).split()]
    g = [_ps_stem(w) for w in ref_normalize(gold).split()]
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(p)
    recall = same / len(g)
    return (2 * precision * recall) / (precision + recall)


def ref_multi_f1(prediction: str, gold: str) -> float:
    preds = [x.strip() for x in prediction.split(",")]
    golds = [x.strip() for x in gold.split(",")]
    scores = [max(ref_f1(p, g) for p in preds) for g in golds]
    return sum(scores) / len(scores)


def ref_score(prediction: str, answer: object, category: int) -> float:
    prediction = str(prediction)
    if category == 5:
        low = prediction.lower()
        return 1.0 if ("no information available" in low or "not mentioned" in low) else 0.0
    gold = str(answer)
    if category == 3:
        gold = gold.split(";")[0].strip()
    if category in (2, 3, 4):
        return ref_f1(prediction, gold)
    if category == 1:
        return ref_multi_f1(prediction, gold)
    raise ValueError(category)


def prediction_variants(question: str, gold: str, context: list[str], seed: int) -> list[str]:
    """Realistic and awkward predictions for one question (seeded): paraphrase-like edits,
    partial answers, reordered lists, sentences from the conversation, unicode and punctuation."""
    import random

    rng = random.Random(seed)
    words = gold.split()
    parts = [p.strip() for p in gold.split(",")]
    shuffled = parts[:]
    rng.shuffle(shuffled)
    sentence = rng.choice(context) if context else ""
    noise = " ".join(rng.choice(context).split()[:6]) if context else "x"
    return [
        gold,
        gold.upper() + "!!",
        f"The answer is {gold}.",
        " ".join(reversed(words)),
        " ".join(words[: max(1, len(words) // 2)]),
        ", ".join(shuffled),
        " and ".join(shuffled),
        sentence,
        f"{noise}, {gold}",
        "",
        "Not mentioned in the conversation",
        gold.replace(" ", "-") + " — café naïve İstanbul",
        f"{question} {gold}",
        "a an the and , ; :",
        str(rng.randint(0, 3000)),
    ]
