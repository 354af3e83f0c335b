"""memevals' Porter stemmer must give NLTK's stem (default mode) for every string."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.stem import PorterStemmer

from memevals.benchmarks.locomo.porter import porter_stem

NLTK = PorterStemmer()

# Every suffix a rule looks at, so generated words reach every branch of every step.
SUFFIXES = [
    "ational",
    "tional",
    "enci",
    "anci",
    "izer",
    "bli",
    "abli",
    "alli",
    "entli",
    "eli",
    "ousli",
    "ization",
    "ation",
    "ator",
    "alism",
    "iveness",
    "fulness",
    "ousness",
    "aliti",
    "iviti",
    "biliti",
    "fulli",
    "logi",
    "icate",
    "ative",
    "alize",
    "iciti",
    "ical",
    "ful",
    "ness",
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "sion",
    "tion",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
    "e",
    "ll",
    "s",
    "sses",
    "ies",
    "ss",
    "ied",
    "eed",
    "ed",
    "ing",
    "y",
    "at",
    "bl",
    "iz",
    "ying",
    "ement",
]


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        # Porter (1980)'s own examples, step by step.
        ("caresses", "caress"),
        ("ponies", "poni"),
        ("ties", "tie"),  # NLTK: a 4-letter -ies word keeps -ie
        ("cats", "cat"),
        ("feed", "feed"),
        ("agreed", "agre"),
        ("plastered", "plaster"),
        ("bled", "bled"),
        ("motoring", "motor"),
        ("sing", "sing"),
        ("conflated", "conflat"),
        ("hopping", "hop"),
        ("falling", "fall"),
        ("hissing", "hiss"),
        ("filing", "file"),
        ("happy", "happi"),
        ("enjoy", "enjoy"),  # NLTK: y -> i only after a consonant
        ("relational", "relat"),
        ("conditional", "condit"),
        ("rational", "ration"),
        ("generalization", "gener"),
        ("hopefulness", "hope"),
        ("electrical", "electr"),
        ("adoption", "adopt"),
        ("controlling", "control"),
        ("roll", "roll"),
        ("rate", "rate"),
        ("cease", "ceas"),
        # NLTK's irregular forms and its short-word rule.
        ("skies", "sky"),
        ("Dying", "die"),
        ("news", "news"),
        ("as", "as"),
        ("IS", "is"),
        ("", ""),
    ],
)
def test_worked_examples(word: str, stem: str) -> None:
    assert porter_stem(word) == stem
    assert NLTK.stem(word) == stem


def _vocabulary(data_dir: Path) -> set[str]:
    words: set[str] = set()
    for name in ("locomo/locomo10.json", "locomo_plus/locomo_plus.json"):
        text = (data_dir / name).read_text(encoding="utf-8").lower()
        words.update(re.findall(r"\S+", text))
        words.update(re.findall(r"[a-z]+", text))
    return words


def test_equals_nltk_on_every_word_of_the_data(data_dir: Path) -> None:
    words = _vocabulary(data_dir)
    assert len(words) > 30_000
    diff = [(w, NLTK.stem(w), porter_stem(w)) for w in words if NLTK.stem(w) != porter_stem(w)]
    assert diff == []


def test_equals_nltk_on_generated_words_that_reach_every_rule() -> None:
    rng = random.Random(20261130)
    letters = "aeiouyyyllsszbdtgmnrcxwh"
    tails = ["", "", "", "s", "ly", "ing", "ed", "ness", "ies", "y", "e", "al", "ion"]
    diff = []
    for _ in range(60_000):
        word = "".join(rng.choice(letters) for _ in range(rng.randint(0, 6)))
        word += rng.choice(SUFFIXES) + rng.choice(tails)
        if porter_stem(word) != NLTK.stem(word):
            diff.append((word, NLTK.stem(word), porter_stem(word)))
    assert diff == []


@pytest.mark.parametrize(
    "word",
    [
        "y",
        "yy",
        "yyy",
        "y" * 500,
        "syzygy",
        "yying",
        "ayed",
        "İİİ",  # lowercases to more characters than it has
        "ΣΑΣ",
        "über",
        "naïveté",
        "1990s",
        "2ed",
        "___ing",
        "SKIES",
        "Proceeding",
        "rationalli",
        "analogi",
        "ies",
        "ied",
        "eed",
        "ing",
    ],
)
def test_equals_nltk_on_odd_strings(word: str) -> None:
    assert porter_stem(word) == NLTK.stem(word)


@settings(max_examples=3000, deadline=None)
@given(st.text(alphabet=st.sampled_from("aeiouyslbdtzIYÉ1 -"), max_size=14) | st.text())
def test_equals_nltk_on_any_text(word: str) -> None:
    assert porter_stem(word) == NLTK.stem(word)
