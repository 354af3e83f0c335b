"""The official LoCoMo QA score (benchmarks/locomo/README.md#scoring), reimplemented for parity and
speed.

Parity: the normalisation order, NLTK Porter stemming (default mode), multiset token F1,
the category-1 comma rule, the category-3 `;` rule and the category-5 abstention rule give the
same value as the official scorer (to 1e-9). Speed: stems are cached per word and token
counts per normalised string, so re-scoring the same golds across many predictions is cheap.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from memevals.benchmarks.locomo.porter import porter_stem
from memevals.core.criteria_judge import (
    CRITERIA_SETS,
    RIGHT_WRONG,
    THREE_WAY,
    CriterionSpec,
    criterion,
    criterion_under,
    register_criteria,
)

__all__ = [
    "ABSTENTION_PHRASES",
    "ADVERSARIAL",
    "FACTUAL",
    "LOCOMO_CRITERIA",
    "LOCOMO_JUDGE_CRITERIA",
    "LONG_PREDICTION",
    "TEMPORAL",
    "abstained",
    "answer_tokens",
    "criterion_for_locomo",
    "evidence_recall_rule",
    "locomo_evidence_recall",
    "locomo_f1",
    "locomo_recall_for_mean",
    "multi_answer_f1",
    "normalize_answer",
    "token_f1",
]

_PUNCT_TABLE = str.maketrans("", "", string.punctuation)
_PUNCT_BUT_COMMA = str.maketrans("", "", string.punctuation.replace(",", ""))
_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_WORD_CHAR = re.compile(r"\w")

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
        stem = _STEMS[word] = porter_stem(word)
    return stem


def _split_words(normalized: str) -> list[str]:
    """Split lowercased, punctuation-free text into words, dropping the articles.

    Equal to splitting normalize_answer's result. The article regex can only match a whole
    whitespace-free word or a piece of one between non-word characters; when every word is made
    of letters and digits only, dropping the words equal to an article is the same thing and is
    cheaper than the regex. Otherwise the regex runs once over the whole text.
    """
    words = normalized.split()
    if "".join(words).isalnum():
        return [word for word in words if word not in _ARTICLE_WORDS]
    return _ARTICLES.sub(" ", normalized).split()


def _words(text: str) -> list[str]:
    """normalize_answer + split, in one pass (the words F1 counts, before stemming)."""
    return _split_words(text.replace(",", "").lower().translate(_PUNCT_TABLE))


def _tokens(text: str) -> list[str]:
    """normalize_answer + split + stem."""
    return [_stem(word) for word in _words(text)]


@lru_cache(maxsize=1 << 16)
def _token_counts(text: str) -> tuple[Counter[str], int]:
    tokens = _tokens(text)
    return Counter(tokens), len(tokens)


def answer_tokens(text: str) -> list[str]:
    """Stemmed tokens of `text` after normalisation (what F1 counts)."""
    return _tokens(text)


#: Predictions longer than this are counted without the cache and only partly stemmed.
LONG_PREDICTION = 4096


def _initials(counts: Iterable[str]) -> frozenset[str]:
    return frozenset(stem[:1] for stem in counts)


def _matchable(words: Sequence[str], initials: frozenset[str]) -> tuple[Counter[str], int]:
    """(stem counts restricted to stems that can equal a gold stem, full token count).

    A Porter stem is its lowercased word with a suffix rewritten, so it starts with the word's
    first character: a word whose first character starts no gold stem cannot match and is
    counted without being stemmed. Stemming dominates the cost of a long reply (a 1 MB reply
    of distinct words would take seconds); long replies also stay out of the token cache.
    """
    counts: Counter[str] = Counter()
    for word, n in Counter(words).items():
        if word[:1] in initials:
            counts[_stem(word)] += n
    return counts, len(words)


def _f1(pred_counts: Counter[str], n_pred: int, gold_counts: Counter[str], n_gold: int) -> float:
    if n_pred == 0 or n_gold == 0:
        return 0.0
    small, large = (
        (pred_counts, gold_counts)
        if len(pred_counts) < len(gold_counts)
        else (gold_counts, pred_counts)
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


def token_f1(prediction: str, gold: str) -> float:
    """Multiset token F1 of two strings after LoCoMo normalisation and stemming."""
    gold_counts, n_gold = _token_counts(gold)
    if len(prediction) > LONG_PREDICTION:
        pred_counts, n_pred = _matchable(_words(prediction), _initials(gold_counts))
    else:
        pred_counts, n_pred = _token_counts(prediction)
    return _f1(pred_counts, n_pred, gold_counts, n_gold)


def _word_starts(initials: frozenset[str]) -> re.Pattern[str]:
    """Finds a word starting with one of `initials` in normalised text. A word starts after
    whitespace, or (a piece left by removing an article inside a word) with a non-word
    character, so initials that are not word characters match anywhere."""
    word = "".join(sorted(c for c in initials if _WORD_CHAR.match(c)))
    other = "".join(sorted(c for c in initials if not _WORD_CHAR.match(c)))
    alternatives = [rf"(?:^|\s)[{re.escape(word)}]"] if word else []
    if other:
        alternatives.append(f"[{re.escape(other)}]")
    return re.compile("|".join(alternatives))


def multi_answer_f1(prediction: str, gold: str) -> float:
    """Category-1 rule: mean over comma-separated gold parts of the best-matching predicted part.

    Repeated predicted parts are scored once, and only parts sharing a stem with a gold part
    are compared with it (any other part scores 0 against it): a long comma-separated reply
    costs one pass, not one pass per gold part.
    """
    golds = [g.strip() for g in gold.split(",")]
    gold_counts = {g: _token_counts(g) for g in golds}
    part_counts: list[tuple[Counter[str], int]] = []
    if len(prediction) > LONG_PREDICTION:
        initials = _initials(s for counts, _ in gold_counts.values() for s in counts)
        # Lowercasing and dropping punctuation commute with the split at commas, so a long
        # reply is normalised once; a part none of whose words starts with a gold stem's
        # first character cannot match and is skipped without being tokenised.
        if initials:
            starts = _word_starts(initials)
            normalized = prediction.lower().translate(_PUNCT_BUT_COMMA)
            for part in dict.fromkeys(normalized.split(",")):
                if starts.search(part) is None:
                    continue
                counts, n = _matchable(_split_words(part), initials)
                if counts:  # a part without a matchable stem scores 0 against every gold part
                    part_counts.append((counts, n))
    else:
        part_counts = [_token_counts(p.strip()) for p in dict.fromkeys(prediction.split(","))]
    postings: dict[str, list[int]] = {}
    for i, (counts, _) in enumerate(part_counts):
        for stem in counts:
            postings.setdefault(stem, []).append(i)
    best: dict[str, float] = {}
    for g, (counts, n_gold) in gold_counts.items():
        candidates = {i for stem in counts for i in postings.get(stem, ())}
        best[g] = max((_f1(*part_counts[i], counts, n_gold) for i in candidates), default=0.0)
    total = 0.0
    for g in golds:
        total += best[g]
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


# ---------------------------------------------------------------------------------------------
# Retrieval: LoCoMo's R@k (README.md#retrieval-metrics)


def locomo_evidence_recall(retrieved_ids: Sequence[str], evidence_ids: Sequence[str]) -> float:
    """LoCoMo recall of one question: hits / len(evidence), unrounded.

    `evidence_ids` are the question's raw `evidence` strings (not normalised: malformed ids never
    hit, duplicates count). `retrieved_ids` are the retrieved units' ids in rank order, observation
    ids already flattened. Summary mode is chosen by the first retrieved id alone (starts with
    ``S``); then evidence ``D<n>:<j>`` hits when ``S<n>`` was retrieved, comparing
    ``ev.split(':')[0][1:]`` with each retrieved id minus its first character.

    Empty evidence gives 1.0 (the official per-question value; it still adds 0 to a category sum,
    see `locomo_recall_for_mean`). Empty retrieval with evidence gives 0.0 (the official code
    crashes there).
    """
    evidence = list(evidence_ids)
    retrieved = list(retrieved_ids)
    if not evidence:
        return 1.0
    if not retrieved:
        return 0.0
    if retrieved[0].startswith("S"):
        sessions = [r[1:] for r in retrieved]
        hits = sum(ev.split(":")[0][1:] in sessions for ev in evidence)
    else:
        hits = sum(ev in retrieved for ev in evidence)
    return float(hits) / len(evidence)


def locomo_recall_for_mean(retrieved_ids: Sequence[str], evidence_ids: Sequence[str]) -> float:
    """The value one question adds to the official LoCoMo recall average.

    The official pipeline stores each recall rounded to 3 decimals and sums it only for questions
    with evidence, dividing by *all* questions of the category: a plain mean of these values
    therefore reproduces the per-category and overall recall.
    """
    if not list(evidence_ids):
        return 0.0
    return round(locomo_evidence_recall(retrieved_ids, evidence_ids), 3)


def evidence_recall_rule(retrieved_ids: list[str], evidence_ids: list[str]) -> tuple[float, float]:
    """LoCoMo's evidence-recall rule as an evidence-recall scorer applies it.

    Args:
        retrieved_ids: the retrieved units' ids in rank order.
        evidence_ids: the question's raw evidence strings.

    Returns:
        (what the question adds to the official average, its unrounded recall).
    """
    return (
        locomo_recall_for_mean(retrieved_ids, evidence_ids),
        locomo_evidence_recall(retrieved_ids, evidence_ids),
    )


# ---------------------------------------------------------------------------------------------
# The LLM judge's criteria (README.md#llm-judge; memevals.core.criteria_judge holds the machinery)

_FACTUAL_RULE = """\
Compare the candidate reply with the reference answer.
- "correct": the reply gives the same answer as the reference. Names, places, numbers and times \
must agree; wording may differ, and extra detail is fine if it does not contradict the \
reference. For a question that calls for inference, the reply is correct when it reaches the \
reference's conclusion by sound reasoning.
- "partial": the reply gets the key item of the reference right but leaves part of it out \
(for example some items of a list) or gets a minor detail slightly wrong.
- "wrong": the reply contradicts the reference, adds invented facts that matter, misses the key \
item, declines to answer, or hedges between several alternatives. Listing the reference among \
other, wrong options earns no credit."""

_TEMPORAL_RULE = """\
The question is about time: a date, a period, a duration or the order of events. Compare the \
time given in the candidate reply with the reference answer. Relative phrases (such as "last \
week" or "the Friday before the third session") are resolved against the session dates, when \
they are listed.
- "correct": the reply denotes the same date, period, duration or order as the reference. \
Other formats and equivalent phrasings of the same time count (for example "7 May 2023" and \
"the day before 8 May 2023"). When the reference names a period, a reply naming that period or \
a date inside it is correct.
- "wrong": any other time, even one day off; faulty date arithmetic; a reversed order; a time \
too vague to contain what the reference states (for example only the year when the reference \
gives the month); or no time at all."""

_ADVERSARIAL_RULE = """\
This question asks about something the conversation does not contain: it may attribute an \
event to the wrong person or ask about a detail that was never mentioned. The right reply says, \
in any wording, that the conversation does not provide this information.
- "correct": the reply states or clearly implies that the conversation does not contain or \
support an answer (for example "not mentioned", "no information available", "they never said").
- "wrong": the reply commits to a concrete answer, including one offered after a disclaimer."""

_LENIENT = {"lenient": "lenient"}

#: The criteria of LoCoMo's questions. Under the comparison set "lenient" the lenient rule
#: judges the questions with a reference answer (factual, temporal); refusals keep theirs.
FACTUAL = criterion(
    "factual",
    THREE_WAY,
    _FACTUAL_RULE,
    ("reference",),
    ("question", "evidence", "reference"),
    alternatives=_LENIENT,
)
TEMPORAL = criterion(
    "temporal",
    RIGHT_WRONG,
    _TEMPORAL_RULE,
    ("reference",),
    ("session_dates", "question_date", "question", "evidence", "reference"),
    alternatives=_LENIENT,
)
# The reference is never shown: for these questions it is a refusal or a distractor.
ADVERSARIAL = criterion("adversarial", RIGHT_WRONG, _ADVERSARIAL_RULE, (), ("question",))
LOCOMO_CRITERIA: tuple[CriterionSpec, ...] = (FACTUAL, TEMPORAL, ADVERSARIAL)
register_criteria(*LOCOMO_CRITERIA)

_LOCOMO_CRITERION = {
    "single_hop": FACTUAL.name,
    "multi_hop": FACTUAL.name,
    "open_domain": FACTUAL.name,
    "temporal": TEMPORAL.name,
    "adversarial": ADVERSARIAL.name,
}

#: Named sets of criteria a LoCoMo judge runs under: "default" (the per-category criteria
#: above) or "lenient" (the mem0-lineage rule for every question with a reference answer, for
#: comparison only).
LOCOMO_JUDGE_CRITERIA = CRITERIA_SETS


def criterion_for_locomo(category_name: str, criteria: str = "default") -> str:
    """Judge criterion of a LoCoMo category under a named set of criteria.

    Args:
        category_name: a category in memevals' spelling (single_hop) or with hyphens
            (single-hop), any case.
        criteria: one of LOCOMO_JUDGE_CRITERIA: "lenient" replaces the factual and temporal
            criteria; refusals keep theirs (they have no reference).

    Returns:
        The criterion's name.
    """
    key = category_name.strip().lower().replace("-", "_")
    try:
        criterion_name = _LOCOMO_CRITERION[key]
    except KeyError:
        raise ValueError(
            f"no judge criterion for LoCoMo category {category_name!r}; known: "
            + ", ".join(_LOCOMO_CRITERION)
        ) from None
    return criterion_under(criterion_name, criteria)
