"""memevals' BM25 index scores as bm25s does, bit for bit, with each column scored on demand.

`core.retrievers._BM25Index` replaces `bm25s.BM25().index(...)` (which scores every
(unit, token) pair up front) by the same float operations on a query's own columns; these tests
build both on the same corpora and compare the float32 scores exactly, then the rankings.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from memevals.core.retrievers import BM25Retriever, MemoryUnit, bm25_tokens

bm25s = pytest.importorskip("bm25s")


def bm25s_scores(texts: list[str], query: str) -> np.ndarray | None:
    """What the retriever computed before: bm25s over the same tokens (None: no query token
    is in the corpus, every unit keeps its place)."""
    corpus = [bm25_tokens(t) for t in texts]
    model = bm25s.BM25()
    model.index([c or ["\x00"] for c in corpus], show_progress=False)
    vocab = {t for c in corpus for t in c}
    tokens = [t for t in bm25_tokens(query) if t in vocab]
    return np.asarray(model.get_scores(tokens)) if tokens else None


def our_scores(texts: list[str], query: str) -> tuple[np.ndarray | None, list[int]]:
    index = BM25Retriever().index([MemoryUnit(str(i), t) for i, t in enumerate(texts)])
    vocab = {t for text in texts for t in bm25_tokens(text)}
    tokens = [t for t in bm25_tokens(query) if t in vocab]
    scores = np.zeros(index.size, dtype=np.float32)
    for token in tokens:
        column = index._column(token)
        assert column is not None
        scores[column[0]] += column[1]
    return (scores if tokens else None), index.rank(query)


def assert_same(texts: list[str], query: str) -> None:
    want = bm25s_scores(texts, query)
    got, ranking = our_scores(texts, query)
    if want is None:
        assert got is None and ranking == list(range(len(texts)))
        return
    assert got is not None
    assert got.dtype == want.dtype == np.float32
    assert got.tobytes() == want.tobytes()
    assert ranking == [int(i) for i in np.argsort(-want.astype(np.float64), kind="stable")]


def test_worked_example_ranks_and_scores_like_bm25s() -> None:
    texts = [
        "Caroline went to the support group yesterday.",
        "Melanie painted a sunset; painting relaxes her.",
        "",  # no tokens: bm25s's placeholder unit
        "The group met again and Caroline painted with the group.",
    ]
    assert_same(texts, "What did Caroline paint at the group?")
    _, ranking = our_scores(texts, "What did Caroline paint at the group?")
    assert ranking == [3, 0, 1, 2]
    assert_same(texts, "nothing matches zebra")  # no query token in the corpus
    assert_same(texts, "group group group painted")  # repeated query tokens add up each time
    assert_same([""], "anything")
    assert_same(["", ""], "")


def test_random_corpora_score_bit_for_bit() -> None:
    rng = random.Random(7)
    words = [f"w{i}x" for i in range(40)] + ["running", "runs", "ran", "painted", "painting"]
    for _ in range(60):
        texts = [
            " ".join(rng.choices(words, k=rng.randint(0, 30))) for _ in range(rng.randint(1, 80))
        ]
        for _ in range(5):
            assert_same(texts, " ".join(rng.choices(words, k=rng.randint(1, 8))))
