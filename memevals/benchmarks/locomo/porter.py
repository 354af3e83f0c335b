"""Porter stemming that gives exactly NLTK's `PorterStemmer().stem` (its default mode), faster.

The official LoCoMo scorer stems every word with NLTK, and on a fresh run stemming is most of
the scoring time. NLTK re-derives each letter's consonant/vowel class inside every condition it
tests; here a word carries its class string (`c`/`v` per letter) alongside it, so a measure is a
`str.count` over a prefix. A prefix keeps its classes when a suffix is replaced (a letter's class
depends only on the letters before it), and no replacement starts with `y`, so the class string
of a rewritten word is the kept prefix's classes plus the replacement's fixed ones.

Rules (Porter 1980 plus NLTK's extensions): irregular forms; words of at most two characters
kept; step 1a (`ies` of a 4-letter word → `ie`); step 1b (`ied` → `ie`/`i`); step 1c (`y` → `i`
after a consonant that is not the first letter); step 2 (`alli` repeated, `bli`, `fulli`,
`logi`); steps 3, 4, 5a, 5b. Within a step the first rule whose suffix matches decides, even when
its condition fails. Parity with NLTK is tested word for word
(tests/benchmarks/locomo/test_porter.py).
"""

from __future__ import annotations

__all__ = ["porter_stem"]

_VOWELS = frozenset("aeiou")

#: NLTK's table of irregular forms (after lowercasing).
_IRREGULAR: dict[str, str] = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}


def _classes(word: str) -> str:
    """`c`/`v` per letter: aeiou are vowels, `y` is a vowel only right after a consonant."""
    out: list[str] = []
    consonant = False  # class of the previous letter; a leading `y` is a consonant
    for i, ch in enumerate(word):
        if ch in _VOWELS:
            consonant = False
        elif ch == "y" and i:
            consonant = not consonant
        else:
            consonant = True
        out.append("c" if consonant else "v")
    return "".join(out)


def _fixed(replacement: str) -> tuple[str, str]:
    # Replacements never start with `y`, so their classes do not depend on what precedes them.
    return replacement, _classes(replacement)


# A rule: (suffix, replacement, replacement's classes). Rules are grouped by the suffix's last
# letter (only those can match a word ending in that letter), keeping their order within a step.
_Rule = tuple[str, str, str]


def _by_last_letter(rules: list[tuple[str, str]]) -> dict[str, tuple[_Rule, ...]]:
    table: dict[str, list[_Rule]] = {}
    for suffix, replacement in rules:
        table.setdefault(suffix[-1], []).append((suffix, *_fixed(replacement)))
    return {k: tuple(v) for k, v in table.items()}


_STEP2 = _by_last_letter(
    [
        ("ational", "ate"),
        ("tional", "tion"),
        ("enci", "ence"),
        ("anci", "ance"),
        ("izer", "ize"),
        ("bli", "ble"),
        ("alli", "al"),
        ("entli", "ent"),
        ("eli", "e"),
        ("ousli", "ous"),
        ("ization", "ize"),
        ("ation", "ate"),
        ("ator", "ate"),
        ("alism", "al"),
        ("iveness", "ive"),
        ("fulness", "ful"),
        ("ousness", "ous"),
        ("aliti", "al"),
        ("iviti", "ive"),
        ("biliti", "ble"),
        ("fulli", "ful"),
        ("logi", "log"),  # its measure is taken on the word minus `ogi` (NLTK)
    ]
)
_STEP3 = _by_last_letter(
    [
        ("icate", "ic"),
        ("ative", ""),
        ("alize", "al"),
        ("iciti", "ic"),
        ("ical", "ic"),
        ("ful", ""),
        ("ness", ""),
    ]
)
# Step 4 only removes (the replacement is empty); `ion` also needs the stem to end in s or t.
_STEP4 = _by_last_letter(
    [
        (suffix, "")
        for suffix in [
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
            "ion",
            "ou",
            "ism",
            "ate",
            "iti",
            "ous",
            "ive",
            "ize",
        ]
    ]
)


def _ends_cvc(w: str, c: str, n: int) -> bool:
    """Porter's *o on the first n letters, with NLTK's two-letter vowel-consonant case."""
    if n >= 3:
        return c[n - 3 : n] == "cvc" and w[n - 1] not in "wxy"
    return n == 2 and c[:2] == "vc"


def _step1(w: str, c: str) -> tuple[str, str]:
    # 1a: plurals.
    if w[-1:] == "s":
        if w.endswith("ies") and len(w) == 4:
            w, c = w[:-3] + "ie", c[:-3] + "vv"
        elif w.endswith("sses") or w.endswith("ies"):
            w, c = w[:-2], c[:-2]
        elif not w.endswith("ss"):
            w, c = w[:-1], c[:-1]
    # 1b: -eed, -ed, -ing.
    if w.endswith("ied"):  # NLTK: -ied -> -ie in a 4-letter word, else -i
        cut = 1 if len(w) == 4 else 2
        w, c = w[:-cut], c[:-cut]
    elif w.endswith("eed"):
        if c.count("vc", 0, len(w) - 3):
            w, c = w[:-1], c[:-1]
    else:
        cut = 2 if w.endswith("ed") else 3 if w.endswith("ing") else 0
        if cut and "v" in c[:-cut]:
            w, c = w[:-cut], c[:-cut]
            n = len(w)
            if w.endswith("at") or w.endswith("bl") or w.endswith("iz"):
                w, c = w + "e", c + "v"
            elif n >= 2 and w[-1] == w[-2] and c[-1] == "c":
                if w[-1] not in "lsz":
                    w, c = w[:-1], c[:-1]
            elif c.count("vc") == 1 and _ends_cvc(w, c, n):
                w, c = w + "e", c + "v"
    # 1c: y -> i after a consonant that is not the word's first letter.
    if w[-1:] == "y" and len(w) > 2 and c[-2] == "c":
        w, c = w[:-1] + "i", c[:-1] + "v"
    return w, c


def _rewrite(w: str, c: str, rules: dict[str, tuple[_Rule, ...]]) -> tuple[str, str]:
    """Steps 2 and 3: the first matching suffix is replaced when the stem's measure is > 0."""
    for suffix, replacement, classes in rules.get(w[-1:], ()):
        if w.endswith(suffix):
            keep = len(w) - len(suffix)
            # NLTK measures `logi`'s stem (a step 2 rule) with the `l` still on it.
            end = keep + 1 if suffix == "logi" else keep
            if c.count("vc", 0, end):
                return w[:keep] + replacement, c[:keep] + classes
            return w, c
    return w, c


def _step2(w: str, c: str) -> tuple[str, str]:
    # NLTK: a measured `alli` becomes `al` and step 2 starts over on the result.
    while w.endswith("alli") and c.count("vc", 0, len(w) - 4):
        w, c = w[:-2], c[:-2]
    return _rewrite(w, c, _STEP2)


def _step4(w: str, c: str) -> tuple[str, str]:
    for suffix, _, _ in _STEP4.get(w[-1:], ()):
        if w.endswith(suffix):
            keep = len(w) - len(suffix)
            if c.count("vc", 0, keep) > 1 and (suffix != "ion" or w[keep - 1] in "st"):
                return w[:keep], c[:keep]
            return w, c
    return w, c


def _step5(w: str, c: str) -> str:
    if w[-1:] == "e":
        m = c.count("vc", 0, len(w) - 1)
        if m > 1 or (m == 1 and not _ends_cvc(w, c, len(w) - 1)):
            w, c = w[:-1], c[:-1]
    if w.endswith("ll") and c.count("vc", 0, len(w) - 1) > 1:
        w = w[:-1]
    return w


def porter_stem(word: str) -> str:
    """The stem NLTK's `PorterStemmer().stem(word)` returns, for any string."""
    w = word.lower()
    irregular = _IRREGULAR.get(w)
    if irregular is not None:
        return irregular
    if len(word) <= 2:
        return w
    c = _classes(w)
    w, c = _step1(w, c)
    w, c = _step2(w, c)
    w, c = _rewrite(w, c, _STEP3)
    w, c = _step4(w, c)
    return _step5(w, c)
