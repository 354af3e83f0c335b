"""LongMemEval's record: what the shared layers read about it (memevals.core.benchmark)."""

from __future__ import annotations

from memevals.benchmarks.longmemeval.data import CATEGORIES, VARIANTS
from memevals.benchmarks.longmemeval.memory import (
    DEFAULT_RETRIEVAL_UNIT,
    DEFAULT_RETRIEVER,
    DEFAULT_TOP_K,
)
from memevals.benchmarks.longmemeval.scoring import LONGMEMEVAL_CRITERIA
from memevals.core.benchmark import JudgeSpec, ScoreSpec, declare

RECORD = declare(
    __file__,
    name="longmemeval",
    fixed={
        **{f"longmemeval_{v}": {"variant": v} for v in VARIANTS},
        **{f"longmemeval_{c}": {"categories": c} for c in CATEGORIES},
    },
    categories=CATEGORIES,
    # every question has its own haystack: the question is the cluster
    cluster="question",
    legacy_cluster_key="question_id",
    context_defaults={
        "context": "full",
        "top_k": DEFAULT_TOP_K,
        "retrieval_unit": DEFAULT_RETRIEVAL_UNIT,
        "retriever": DEFAULT_RETRIEVER,
    },
    label_options={"variant": "s", "history_format": "json", "chain_of_note": False},
    # the `_abs` questions, scored within their type, are also reported together
    subgroups={"abstention": "abstention"},
    # the paper's task-averaged accuracy
    macro_average="task_avg",
    scores=(
        ScoreSpec("longmemeval_judge", "judge", "judge"),
        ScoreSpec("longmemeval_retrieval", "retrieval", "retrieval"),
        ScoreSpec("prompt_tokens", "tokens", "prompt_tokens"),
        ScoreSpec("memory_system", "memory", "memory"),
    ),
    judge=JudgeSpec(
        inputs=("judge", "category", "abstention"),
        criterion=lambda md: str(md["judge"]["criterion"]),
        criteria=LONGMEMEVAL_CRITERIA,
    ),
    lm_eval_group=None,
    inspect_module="memevals.inspect_tasks.longmemeval",
)
