"""Memory strategies: how a model is given its conversation history (framework-free).

`locomo_context(context, ...)` validates the options up front (before any model call) and returns
a callable (conversation, question) -> context used by both the Inspect and lm-eval tasks. The
retrievers and the token counter work on generic `MemoryUnit`s so the other benchmarks reuse them.
"""

from __future__ import annotations

from memevals.memory.locomo import (
    CONTEXT_MODES,
    DEFAULT_MAX_CONTEXT_TOKENS,
    DEFAULT_RETRIEVAL_UNIT,
    DEFAULT_RETRIEVER,
    DEFAULT_TOP_K,
    RETRIEVAL_UNITS,
    UNIT_BUILDERS,
    LocomoMemory,
    annotate_items,
    dialog_units,
    evidence_turns,
    locomo_context,
    observation_units,
    summary_units,
    truncate_to_budget,
)
from memevals.memory.retrieval import (
    DEFAULT_EMBEDDING_MODEL,
    RETRIEVERS,
    BM25Retriever,
    EmbeddingRetriever,
    Index,
    IndexCache,
    MemoryUnit,
    Retriever,
    make_retriever,
    packaged_minilm_path,
    resolve_embedding_model,
    top_k,
)
from memevals.memory.tokens import (
    TOKEN_COUNTERS,
    TokenCounter,
    approx_token_count,
    count_tokens,
    get_token_counter,
)

__all__ = [
    "CONTEXT_MODES",
    "DEFAULT_EMBEDDING_MODEL",
    "DEFAULT_MAX_CONTEXT_TOKENS",
    "DEFAULT_RETRIEVAL_UNIT",
    "DEFAULT_RETRIEVER",
    "DEFAULT_TOP_K",
    "RETRIEVAL_UNITS",
    "RETRIEVERS",
    "TOKEN_COUNTERS",
    "UNIT_BUILDERS",
    "BM25Retriever",
    "EmbeddingRetriever",
    "Index",
    "IndexCache",
    "LocomoMemory",
    "MemoryUnit",
    "Retriever",
    "TokenCounter",
    "annotate_items",
    "approx_token_count",
    "count_tokens",
    "dialog_units",
    "evidence_turns",
    "get_token_counter",
    "locomo_context",
    "make_retriever",
    "observation_units",
    "packaged_minilm_path",
    "resolve_embedding_model",
    "summary_units",
    "top_k",
    "truncate_to_budget",
]
