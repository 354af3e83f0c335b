"""Framework-free scoring functions: score your own predictions with these.

Each name is defined in a benchmark's `scoring` module or in `memevals.core`, and imported from
there on first use (a module `__getattr__`), so `import memevals.scorers` loads no benchmark
until one of its functions is asked for. The imports under TYPE_CHECKING give type checkers
the same names; tests/test_layering.py checks that they and `_SOURCES` list the same names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memevals.benchmarks.locomo.scoring import ABSTENTION_PHRASES as ABSTENTION_PHRASES
    from memevals.benchmarks.locomo.scoring import abstained as abstained
    from memevals.benchmarks.locomo.scoring import answer_tokens as answer_tokens
    from memevals.benchmarks.locomo.scoring import criterion_for_locomo as criterion_for_locomo
    from memevals.benchmarks.locomo.scoring import locomo_f1 as locomo_f1
    from memevals.benchmarks.locomo.scoring import normalize_answer as normalize_answer
    from memevals.benchmarks.locomo.scoring import token_f1 as token_f1
    from memevals.benchmarks.locomo_dialogue.scoring import bertscore as bertscore
    from memevals.benchmarks.locomo_dialogue.scoring import bleu as bleu
    from memevals.benchmarks.locomo_dialogue.scoring import clean_reply as clean_reply
    from memevals.benchmarks.locomo_dialogue.scoring import corpus_bleu as corpus_bleu
    from memevals.benchmarks.locomo_dialogue.scoring import rouge_l as rouge_l
    from memevals.benchmarks.locomo_event_summary.scoring import fact_score as fact_score
    from memevals.benchmarks.locomo_event_summary.scoring import factscore as factscore
    from memevals.benchmarks.longmemeval.scoring import (
        criterion_for_longmemeval as criterion_for_longmemeval,
    )

    #: every judge criterion the benchmarks declare (memevals.benchmarks.judge_criteria())
    JUDGE_CRITERIA: dict[str, CriterionSpec]
    from memevals.core.agreement import cohen_kappa as cohen_kappa
    from memevals.core.judge import CriterionSpec as CriterionSpec
    from memevals.core.judge import JudgeInput as JudgeInput
    from memevals.core.judge import Verdict as Verdict
    from memevals.core.judge import judge_prompt as judge_prompt
    from memevals.core.judge import parse_verdict as parse_verdict
    from memevals.core.retrieval_metrics import locomo_evidence_recall as locomo_evidence_recall
    from memevals.core.retrieval_metrics import locomo_recall_for_mean as locomo_recall_for_mean
    from memevals.core.retrieval_metrics import ndcg_any_at_k as ndcg_any_at_k
    from memevals.core.retrieval_metrics import recall_all_at_k as recall_all_at_k
    from memevals.core.retrieval_metrics import recall_any_at_k as recall_any_at_k
    from memevals.core.retrieval_metrics import turn_precision_recall as turn_precision_recall
    from memevals.core.retrieval_metrics import turn_to_session as turn_to_session
    from memevals.core.text_overlap import rouge_scores as rouge_scores

#: Defining module -> the public names taken from it.
_SOURCES: dict[str, tuple[str, ...]] = {
    "memevals.benchmarks.locomo.scoring": (
        "ABSTENTION_PHRASES",
        "abstained",
        "answer_tokens",
        "criterion_for_locomo",
        "locomo_f1",
        "normalize_answer",
        "token_f1",
    ),
    "memevals.benchmarks.locomo_dialogue.scoring": (
        "bertscore",
        "bleu",
        "clean_reply",
        "corpus_bleu",
        "rouge_l",
    ),
    "memevals.benchmarks.locomo_event_summary.scoring": ("fact_score", "factscore"),
    "memevals.benchmarks.longmemeval.scoring": ("criterion_for_longmemeval",),
    "memevals.core.text_overlap": ("rouge_scores",),
    "memevals.core.agreement": ("cohen_kappa",),
    "memevals.core.judge": (
        "CriterionSpec",
        "JudgeInput",
        "Verdict",
        "judge_prompt",
        "parse_verdict",
    ),
    "memevals.core.retrieval_metrics": (
        "locomo_evidence_recall",
        "locomo_recall_for_mean",
        "ndcg_any_at_k",
        "recall_all_at_k",
        "recall_any_at_k",
        "turn_precision_recall",
        "turn_to_session",
    ),
}
_MODULE_OF = {name: module for module, names in _SOURCES.items() for name in names}

__all__ = [
    "ABSTENTION_PHRASES",
    "JUDGE_CRITERIA",
    "CriterionSpec",
    "JudgeInput",
    "Verdict",
    "abstained",
    "answer_tokens",
    "bertscore",
    "bleu",
    "clean_reply",
    "cohen_kappa",
    "corpus_bleu",
    "criterion_for_locomo",
    "criterion_for_longmemeval",
    "fact_score",
    "factscore",
    "judge_prompt",
    "locomo_evidence_recall",
    "locomo_f1",
    "locomo_recall_for_mean",
    "ndcg_any_at_k",
    "normalize_answer",
    "parse_verdict",
    "recall_all_at_k",
    "recall_any_at_k",
    "rouge_l",
    "rouge_scores",
    "token_f1",
    "turn_precision_recall",
    "turn_to_session",
]


def __getattr__(name: str) -> Any:
    if name == "JUDGE_CRITERIA":
        globals()[name] = importlib.import_module("memevals.benchmarks").judge_criteria()
        return globals()[name]
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
