"""memevals' BM25 gives bm25s's exact scores on every LoCoMo conversation and question."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.memory import turn_line
from memevals.core.retrievers import BM25Retriever, MemoryUnit, bm25_tokens

bm25s = pytest.importorskip("bm25s")


def test_every_locomo_question_scores_as_bm25s(data_dir: Path) -> None:
    compared = 0
    for conv in load_locomo(data_dir):
        texts = [turn_line(t) for t in conv.turns]
        corpus = [bm25_tokens(t) for t in texts]
        model = bm25s.BM25()
        model.index([c or ["\x00"] for c in corpus], show_progress=False)
        index = BM25Retriever().index([MemoryUnit(str(i), t) for i, t in enumerate(texts)])
        vocab = {t for c in corpus for t in c}
        for qa in conv.qa:
            tokens = [t for t in bm25_tokens(qa.question) if t in vocab]
            if not tokens:
                continue
            want = np.asarray(model.get_scores(tokens))
            order = [int(i) for i in np.argsort(-want.astype(np.float64), kind="stable")]
            assert index.rank(qa.question) == order, (conv.sample_id, qa.index)
            got = np.zeros(len(texts), dtype=np.float32)
            for token in tokens:
                column = index._column(token)
                assert column is not None
                got[column[0]] += column[1]
            assert got.tobytes() == want.tobytes(), (conv.sample_id, qa.index)
            compared += 1
    assert compared > 1900
