"""LoCoMo dialogue generation's record: what the shared layers read about it
(memevals.core.benchmark).

Its tasks and samples write `benchmark: "locomo"` (with `task: "dialogue"`) into their
metadata, as they did before records existed (`Benchmark.name` says how a log finds its record).
"""

from __future__ import annotations

from memevals.benchmarks.locomo.data import LOCOMO_FILE
from memevals.benchmarks.locomo.memory import DEFAULT_MAX_CONTEXT_TOKENS, RAG_DEFAULTS
from memevals.benchmarks.locomo_dialogue.memory import DIALOGUE_RETRIEVAL_UNIT
from memevals.benchmarks.locomo_dialogue.samples import DEFAULT_MAX_TOKENS
from memevals.core.benchmark import (
    LmEvalMetric,
    LmEvalSpec,
    LmEvalTask,
    ScoreSpec,
    declare,
    means_then_clustered,
)

#: The thin lm-eval module (named, not imported: the framework layer sits above the records).
_LM_EVAL_MODULE = "memevals.lm_eval_tasks.locomo_dialogue.utils"

RECORD = declare(
    __file__,
    name="locomo_dialogue",
    cluster="conversation",
    legacy_cluster_key="conversation_id",
    context_defaults=RAG_DEFAULTS.context_defaults(
        retrieval_unit=DIALOGUE_RETRIEVAL_UNIT, max_context_tokens=DEFAULT_MAX_CONTEXT_TOKENS
    ),
    label_options={"images": False},
    scores=(
        ScoreSpec("dialogue_overlap", "answer", "overlap"),
        ScoreSpec("dialogue_bertscore", "answer", "bertscore"),
        ScoreSpec("dialogue_images", "tokens", "images"),
    ),
    data=(LOCOMO_FILE,),
    inspect_module="memevals.inspect_tasks.locomo_dialogue",
    lm_eval=LmEvalSpec(
        tasks=(LmEvalTask("locomo_dialogue"),),
        custom_dataset=f"{_LM_EVAL_MODULE}.dialogue_docs",
        process_results=f"{_LM_EVAL_MODULE}.dialogue_results",
        metric_list=(
            *means_then_clustered("bleu1", "bleu2", "rougeL", score="dialogue_overlap"),
            LmEvalMetric("corpus_bleu1", f"{_LM_EVAL_MODULE}.corpus_bleu1"),
            LmEvalMetric("corpus_bleu2", f"{_LM_EVAL_MODULE}.corpus_bleu2"),
            LmEvalMetric("prompt_tokens", higher_is_better=False),
            LmEvalMetric(
                "bertscore_f1",
                comment="Reported only with bertscore=true.",
                score="dialogue_bertscore",
            ),
        ),
        max_gen_toks=DEFAULT_MAX_TOKENS,
        comment="LoCoMo dialogue generation: one document per held-out turn (photos as their "
        "captions; lm-eval\nsends text only). Native: BLEU-1/2 (sentence mean and corpus), "
        "ROUGE-L, prompt size; with\n--metadata '{\"bertscore\": true, ...}' also BERTScore F1.",
    ),
    scoring_module="memevals.benchmarks.locomo_dialogue.scoring",
    scorers=("bertscore", "bleu", "clean_reply", "corpus_bleu", "rouge_l"),
)
