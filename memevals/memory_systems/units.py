"""`bm25` and `embedding`: today's retrievers as memory systems over the raw history.

Ingestion stores the history's units (turns or sessions) as JSON, and for `embedding` their
vectors (so a cached store is never encoded again); opening builds the index (BM25 or the
stored vectors, memevals.core.retrievers). A unit is what the
benchmark's own context=rag indexes: each turn's `search_text` (turns without one are not
indexed, e.g. LongMemEval's assistant turns), or a session's indexed turns joined by spaces.
Items are verbatim (the benchmark shows the source turns or sessions as its history renders
them), so `memory=bm25` gives the same contexts and retrieval metrics as `context=rag` with
BM25 over the same unit.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memevals.core.memory_system import History, IngestReport, MemoryItem, MemoryQuery, TextModel
from memevals.core.options import checked_value
from memevals.core.retrievers import (
    EmbeddingRetriever,
    Index,
    MemoryUnit,
    Retriever,
    make_retriever,
)

__all__ = [
    "UNITS",
    "UNITS_FILE",
    "VECTORS_FILE",
    "UnitIndex",
    "UnitSystem",
    "bm25_system",
    "embedding_system",
    "history_units",
    "save_vectors",
    "stored_index",
]

UNITS: tuple[str, ...] = ("auto", "turn", "session")
UNITS_FILE = "units.json"
VECTORS_FILE = "vectors.npy"


def history_units(history: History, unit: str) -> list[MemoryUnit]:
    """The units of `history` (`auto`: the benchmark's default unit), in history order."""
    chosen = history.default_unit if unit == "auto" else unit
    if chosen == "turn":
        return [
            MemoryUnit(id=t.turn_id, text=t.search_text, date=s.date)
            for s in history.sessions
            for t in s.turns
            if t.search_text is not None
        ]
    if chosen == "session":
        return [
            MemoryUnit(
                id=s.session_id,
                text=" ".join(t.search_text for t in s.turns if t.search_text is not None),
                date=s.date,
            )
            for s in history.sessions
        ]
    raise ValueError(f"unit={chosen!r} is not one of {', '.join(UNITS)}")


def save_vectors(retriever: Retriever, texts: Sequence[str], store: Path) -> None:
    """For an embedding retriever, store the vectors of `texts` (so a cached store is never
    encoded again, in any later process); nothing for BM25, whose index is cheap to build."""
    if isinstance(retriever, EmbeddingRetriever):
        np.save(store / VECTORS_FILE, retriever.encode(list(texts)))


def stored_index(retriever: Retriever, units: Sequence[MemoryUnit], store: Path) -> Index:
    """The index over `units`: from the vectors `save_vectors` stored, for embeddings, else
    built from the texts."""
    if isinstance(retriever, EmbeddingRetriever):
        path = store / VECTORS_FILE
        vectors = np.load(path)
        if vectors.shape[0] != len(units) and units:
            raise ValueError(f"{path}: {vectors.shape[0]} vectors for {len(units)} units")
        return retriever.index_vectors(vectors)
    return retriever.index(units)


@dataclass(frozen=True)
class UnitIndex:
    retriever_index: Index
    units: tuple[MemoryUnit, ...]

    def retrieve(self, query: MemoryQuery) -> Sequence[MemoryItem]:
        ranking = self.retriever_index.rank(query.text)[: query.k]
        return [
            MemoryItem(
                text=self.units[p].text,
                source_ids=(self.units[p].id,),
                date=self.units[p].date,
                verbatim=True,
            )
            for p in ranking
        ]


class UnitSystem:
    """A retriever over the history's own units (no model)."""

    version = "2"  # 2: embedding stores keep their vectors

    def __init__(self, retriever: str, unit: str = "auto", embedding_model: str | None = None):
        checked_value("unit", unit, UNITS)  # the closest unit named (unit='turnz')
        self.name = retriever
        self.unit = unit
        self.embedding_model = embedding_model
        self._retriever: Retriever = make_retriever(retriever, embedding_model)

    @property
    def args(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"unit": self.unit}
        if self.name == "embedding":
            out["embedding_model"] = getattr(self._retriever, "model_name", self.embedding_model)
        return out

    def ingest(self, history: History, store: Path, model: TextModel | None) -> IngestReport:
        units = history_units(history, self.unit)
        rows = [{"id": u.id, "text": u.text, "date": u.date} for u in units]
        (store / UNITS_FILE).write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
        save_vectors(self._retriever, [u.text for u in units], store)
        return IngestReport(items_stored=len(units))

    def open(self, store: Path, history: History) -> UnitIndex:
        rows = json.loads((store / UNITS_FILE).read_text(encoding="utf-8"))
        units = tuple(MemoryUnit(id=r["id"], text=r["text"], date=r["date"]) for r in rows)
        return UnitIndex(stored_index(self._retriever, units, store), units)


def bm25_system(unit: str = "auto") -> UnitSystem:
    """`-T memory=bm25`: Okapi BM25 over the history's turns or sessions."""
    return UnitSystem("bm25", unit)


def embedding_system(unit: str = "auto", embedding_model: str | None = None) -> UnitSystem:
    """`-T memory=embedding`: cosine similarity of sentence-transformers embeddings."""
    return UnitSystem("embedding", unit, embedding_model)
