"""The embedding retriever's vector cache (core.retrievers): a second encoding of the same texts
by the same model reads the vectors the first one wrote, byte for byte, and calls the model not
at all; other texts are encoded; a cache that cannot be written costs only the reuse."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memevals.core.retrievers import EmbeddingRetriever, MemoryUnit

TURNS = [
    "Caroline went to an LGBTQ support group on 7 May 2023.",
    "Melanie painted a lake at sunrise last year.",
    "Caroline is researching adoption agencies.",
]


@pytest.fixture
def retriever(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[EmbeddingRetriever, list]:
    """The packaged MiniLM with its `encode` counted, the cache in tmp_path."""
    pytest.importorskip("sentence_transformers")
    monkeypatch.setenv("MEMEVALS_CACHE_DIR", str(tmp_path / "cache"))
    r = EmbeddingRetriever()
    calls: list[list[str]] = []
    encode = r.model.encode

    def counted(texts: list[str], **kwargs: Any) -> Any:
        calls.append(list(texts))
        return encode(texts, **kwargs)

    monkeypatch.setattr(r.model, "encode", counted)
    return r, calls


def test_the_same_texts_are_read_back_not_encoded(
    retriever: tuple[EmbeddingRetriever, list], tmp_path: Path
) -> None:
    r, calls = retriever
    first = r.encode(TURNS)
    assert calls == [TURNS] and first.shape == (3, 384)
    again = r.encode(TURNS)
    assert calls == [TURNS]  # no second call
    assert again.tobytes() == first.tobytes() and again.dtype == first.dtype
    assert len(list((tmp_path / "cache" / "embeddings").rglob("*.npy"))) == 1
    # a ranking from the cache equals the one encoded now (queries are cached the same way)
    units = [MemoryUnit(id=f"D1:{i}", text=t) for i, t in enumerate(TURNS)]
    ranked = r.index(units).rank_many(["When did Caroline go to the support group?"])
    assert ranked == [[0, 2, 1]]
    assert len(calls) == 2  # the query; the units came from the cache
    assert r.index(units).rank_many(["When did Caroline go to the support group?"]) == ranked
    assert len(calls) == 2
    # one query (a memory system's timed retrieval) is encoded, not cached: no file per question
    files = sorted((tmp_path / "cache" / "embeddings").rglob("*.npy"))
    assert len(files) == 2  # the units and the batch of one question above
    assert r.index(units).rank("When did Caroline go to the support group?") == ranked[0]
    assert len(calls) == 3
    assert sorted((tmp_path / "cache" / "embeddings").rglob("*.npy")) == files


def test_other_texts_are_encoded(retriever: tuple[EmbeddingRetriever, list]) -> None:
    r, calls = retriever
    r.encode(TURNS)
    changed = [*TURNS[:2], TURNS[2] + "!"]
    out = r.encode(changed)
    assert calls == [TURNS, changed]
    assert not np.array_equal(out[2], r.encode(TURNS)[2])
    assert np.array_equal(out[:2], r.encode(TURNS)[:2])  # the same model, the same two texts


def test_an_unwritable_cache_only_costs_the_reuse(
    retriever: tuple[EmbeddingRetriever, list],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    r, calls = retriever
    (tmp_path / "cache").write_text("a file where the cache folder belongs", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="memevals.core.retrievers"):
        first = r.encode(TURNS)
        second = r.encode(TURNS)
    assert len(calls) == 2 and first.tobytes() == second.tobytes()
    folder = f"embedding cache {tmp_path / 'cache' / 'embeddings'}/"
    assert len(caplog.messages) == 2
    assert all(m.startswith(folder) and " not written (" in m for m in caplog.messages)
