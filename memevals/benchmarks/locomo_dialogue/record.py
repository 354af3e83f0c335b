"""LoCoMo dialogue generation's record: what the shared layers read about it
(memevals.core.benchmark).

Its tasks and samples write `benchmark: "locomo"` (with `task: "dialogue"`) into their
metadata, as they did before records existed; a log is matched to this record by its task name
(`memevals.benchmarks.record_for_task("locomo_dialogue")`), never by that field.
"""

from __future__ import annotations

from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo.memory import (
    DEFAULT_MAX_CONTEXT_TOKENS,
    DEFAULT_RETRIEVER,
    DEFAULT_TOP_K,
)
from memevals.benchmarks.locomo_dialogue.memory import DIALOGUE_RETRIEVAL_UNIT
from memevals.core.benchmark import LmEvalSpec, LmEvalTask, ScoreSpec, declare

RECORD = declare(
    __file__,
    name="locomo_dialogue",
    cluster="conversation",
    legacy_cluster_key="conversation_id",
    context_defaults={
        "context": "full",
        "top_k": DEFAULT_TOP_K,
        "retrieval_unit": DIALOGUE_RETRIEVAL_UNIT,
        "retriever": DEFAULT_RETRIEVER,
        "max_context_tokens": DEFAULT_MAX_CONTEXT_TOKENS,
    },
    label_options={"images": False},
    scores=(
        ScoreSpec("dialogue_overlap", "answer", "overlap"),
        ScoreSpec("dialogue_bertscore", "answer", "bertscore"),
        ScoreSpec("dialogue_images", "tokens", "images"),
    ),
    data=(LOCOMO_FILE,),
    inspect_module="memevals.inspect_tasks.locomo_dialogue",
    lm_eval=LmEvalSpec(base="_locomo_dialogue_base.yaml", tasks=(LmEvalTask("locomo_dialogue"),)),
    scoring_module="memevals.benchmarks.locomo_dialogue.scoring",
    scorers=("bertscore", "bleu", "clean_reply", "corpus_bleu", "rouge_l"),
)
