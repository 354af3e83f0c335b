"""The per-process memos behind fast sample builds give what an uncached call gives.

Token counts are memoised by a digest of the text (`core.tokens._CountMemo`), BM25 tokens per
text (`core.retrievers._bm25_tokens`), and the stemmer's nltk import waits for the first stem.
"""

from __future__ import annotations

import random
import subprocess
import sys

import pytest

from memevals.core import retrievers, tokens
from memevals.core.retrievers import bm25_tokens
from memevals.core.tokens import _CountMemo, get_token_counter


def test_count_memo_counts_each_distinct_text_once_and_keeps_values_exact() -> None:
    calls: list[str] = []

    def count(text: str) -> int:
        calls.append(text)
        return len(text.split())

    memo = _CountMemo(max_entries=4)
    assert [memo.get(t, count) for t in ("a b", "a b", "c", "a  b", "a b")] == [2, 2, 1, 2, 2]
    # "a  b" differs from "a b" by one space: a text of its own, never the other's count
    assert calls == ["a b", "c", "a  b"]
    # full: the oldest half goes, then the values are computed again, still exact
    for t in ("d", "e f", "g h i"):
        memo.get(t, count)
    assert len(memo._counts) <= 4
    calls.clear()
    assert memo.get("a b", count) == 2
    assert memo.get("g h i", count) == 3
    assert calls == ["a b"]


def test_count_memo_tells_apart_texts_with_lone_surrogates() -> None:
    memo = _CountMemo()
    assert memo.get("x\ud800", len) == 2
    assert memo.get("x\ud801", lambda t: 7) == 7


def test_memoised_bpe_counts_equal_the_tokenizer_and_share_one_encoding() -> None:
    pytest.importorskip("bpe_openai")
    auto, cl100k = get_token_counter("auto"), get_token_counter("cl100k_base")
    assert (auto.name, cl100k.name) == ("cl100k_base", "cl100k_base")
    encoding = tokens._encoding("cl100k_base")
    texts = ["Hello world", "Caroline: I went to the LGBTQ support group.\n", "", "x" * 10]
    for text in texts * 2:
        assert auto(text) == cl100k(text) == len(encoding.encode_ordinary(text))
    assert [auto(t) for t in texts] == [2, 11, 0, 2]
    assert tokens._encoding("cl100k_base") is encoding  # loaded once per process


def test_bm25_tokens_returns_a_new_list_each_call() -> None:
    first = bm25_tokens("The runners were running faster")
    assert first == ["runner", "were", "run", "faster"]
    first.append("mutated")
    assert bm25_tokens("The runners were running faster") == ["runner", "were", "run", "faster"]
    assert retrievers._bm25_tokens("The runners were running faster") == (
        "runner",
        "were",
        "run",
        "faster",
    )


def test_importing_the_retrievers_does_not_import_nltk() -> None:
    # a fresh interpreter: what the import itself loads is the point (the worker has nltk)
    code = (
        "import sys, memevals.core.retrievers as r; "
        "print('nltk' in sys.modules); r.bm25_tokens('stemming'); print('nltk' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.split() == ["False", "True"]


def test_per_object_memo_is_keyed_on_the_live_object() -> None:
    import gc
    from dataclasses import dataclass

    from memevals.core.memo import per_object

    @dataclass(frozen=True)
    class Box:
        text: str

    calls: list[str] = []

    @per_object
    def shout(box: Box) -> str:
        calls.append(box.text)
        return box.text.upper()

    a, b = Box("hi"), Box("hi")
    assert [shout(a), shout(a), shout(b)] == ["HI", "HI", "HI"]
    assert calls == ["hi", "hi"]  # equal objects are computed each, never confused
    del a, b
    gc.collect()
    # dead objects leave nothing behind: a new object at a reused address is computed afresh
    fresh = [Box(str(i)) for i in range(50)]
    assert [shout(x) for x in fresh] == [str(i) for i in range(50)]
    assert calls[2:] == [str(i) for i in range(50)]


def test_long_texts_count_as_the_sum_of_their_line_chunks_exactly() -> None:
    """A long text is counted in chunks cut before a letter that starts a line; the sum equals
    tokenizing the whole text, also around whitespace runs, punctuation, digits, non-ASCII
    letters and contractions at line starts, and across `_pieces`' 200K-character cuts."""
    pytest.importorskip("bpe_openai")
    lines = [
        'Caroline said, "I went to the group."   ',
        "Melanie: ...!!\n\n",
        "  indented line\t",
        "1234567 numbers first",
        "'s a contraction at the start",
        "Émilie écrit — naïve café",
        "x\r",
        "DATE: 1:56 pm on 8 May, 2023",
        " \n \n",
        "end.",
    ]
    rng = random.Random(3)
    # Every other line is unique, so chunk cuts (chosen by the hash of a line, which Python
    # seeds per process) fall often under any PYTHONHASHSEED, not only when one of the ten
    # repeated lines happens to hash to a cut.
    text = "\n".join(
        f"Note {i} of the log." if i % 2 == 0 else rng.choice(lines) for i in range(2000)
    )
    assert len(tokens._blocks(text)) > 20
    assert "".join(tokens._blocks(text)) == text
    huge = text * 40  # over _MAX_PIECE_CHARS: counted in newline-cut pieces as before
    for name in ("cl100k_base", "o200k_base"):
        encoding = tokens._encoding(name)
        counter = get_token_counter(name)
        for t in (text, text[1:], text + "\nTail", huge):
            want = sum(len(encoding.encode_ordinary(p)) for p in tokens._pieces(t))
            assert counter(t) == want, name
    approx = get_token_counter("approx")
    assert approx(huge) == tokens.approx_token_count(huge)


def test_a_long_text_counted_again_is_one_lookup(monkeypatch: pytest.MonkeyPatch) -> None:
    """A long text's count is memoised whole too: asked again, it is not split into blocks."""
    pytest.importorskip("bpe_openai")
    calls: list[int] = []
    split = tokens._blocks

    def counted_blocks(text: str) -> list[str]:
        calls.append(len(text))
        return split(text)

    monkeypatch.setattr(tokens, "_blocks", counted_blocks)
    counter = get_token_counter("o200k_base")
    text = "\n".join(f"Speaker {i}: line number {i} of a long test text." for i in range(400))
    encoding = tokens._encoding("o200k_base")
    want = len(encoding.encode_ordinary(text))
    assert [counter(text), counter(text), counter(text + "\nTail")] == [
        want,
        want,
        len(encoding.encode_ordinary(text + "\nTail")),
    ]
    assert calls == [len(text), len(text) + 5]  # the repeat was a lookup
