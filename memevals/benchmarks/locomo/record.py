"""LoCoMo QA's record: what the shared layers read about it (memevals.core.benchmark)."""

from __future__ import annotations

from memevals.benchmarks.locomo.data import CATEGORY_NAMES, LOCOMO_FILE, PAPER_ORDER
from memevals.benchmarks.locomo.memory import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    DEFAULT_RETRIEVAL_UNIT,
    DEFAULT_RETRIEVER,
    DEFAULT_TOP_K,
)
from memevals.benchmarks.locomo.scoring import LOCOMO_CRITERIA
from memevals.core.benchmark import JudgeSpec, ScoreSpec, declare

RECORD = declare(
    __file__,
    name="locomo",
    fixed={f"locomo_{c}": {"categories": c} for c in CATEGORY_NAMES.values()},
    categories=PAPER_ORDER,
    cluster="conversation",
    legacy_cluster_key="conversation_id",
    context_defaults={
        "context": "full",
        "top_k": DEFAULT_TOP_K,
        "retrieval_unit": DEFAULT_RETRIEVAL_UNIT,
        "retriever": DEFAULT_RETRIEVER,
        "max_context_tokens": DEFAULT_MAX_CONTEXT_TOKENS,
    },
    label_options={"adversarial": "choice", "seed": 0, "gold": "original"},
    scores=(
        ScoreSpec("locomo_f1_scorer", "answer", "f1"),
        ScoreSpec("llm_judge", "judge", "judge"),
        ScoreSpec("evidence_recall", "retrieval", "evidence_recall"),
        ScoreSpec("prompt_tokens", "tokens", "prompt_tokens"),
        ScoreSpec("memory_system", "memory", "memory"),
    ),
    judge=JudgeSpec(
        inputs=("judge", "answer", "category_id"),
        criterion=lambda md: str(md["judge"]["criterion"]),
        criteria=LOCOMO_CRITERIA,
    ),
    data=(LOCOMO_FILE,),
    lm_eval_group="locomo",
    inspect_module="memevals.inspect_tasks.locomo",
)
