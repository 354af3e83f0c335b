"""Framework-free scoring functions: score your own predictions with these.

The names come from what the benchmarks declare: each benchmark record's `scorers`, taken from
its `scoring_module` (memevals.core.benchmark), beside a few generic ones of memevals.core; and
`JUDGE_CRITERIA`, every criterion the records declare. Each is imported from its defining module
on first use (a module `__getattr__`), so `import memevals.scorers` loads no benchmark, and a
core name loads no benchmark either. A new benchmark's names appear here with no edit of this
file; the imports under TYPE_CHECKING give type checkers the built-in benchmarks' names
(tests/package/test_layering.py checks each is what the records declare).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memevals.benchmarks.locomo.scoring import ABSTENTION_PHRASES as ABSTENTION_PHRASES
    from memevals.benchmarks.locomo.scoring import abstained as abstained
    from memevals.benchmarks.locomo.scoring import answer_tokens as answer_tokens
    from memevals.benchmarks.locomo.scoring import criterion_for_locomo as criterion_for_locomo
    from memevals.benchmarks.locomo.scoring import locomo_evidence_recall as locomo_evidence_recall
    from memevals.benchmarks.locomo.scoring import locomo_f1 as locomo_f1
    from memevals.benchmarks.locomo.scoring import locomo_recall_for_mean as locomo_recall_for_mean
    from memevals.benchmarks.locomo.scoring import normalize_answer as normalize_answer
    from memevals.benchmarks.locomo.scoring import token_f1 as token_f1
    from memevals.benchmarks.locomo_dialogue.scoring import bertscore as bertscore
    from memevals.benchmarks.locomo_dialogue.scoring import bleu as bleu
    from memevals.benchmarks.locomo_dialogue.scoring import clean_reply as clean_reply
    from memevals.benchmarks.locomo_dialogue.scoring import corpus_bleu as corpus_bleu
    from memevals.benchmarks.locomo_dialogue.scoring import rouge_l as rouge_l
    from memevals.benchmarks.locomo_event_summary.scoring import fact_score as fact_score
    from memevals.benchmarks.locomo_event_summary.scoring import factscore as factscore
    from memevals.benchmarks.locomo_plus.scoring import (
        criterion_for_locomo_plus as criterion_for_locomo_plus,
    )
    from memevals.benchmarks.longmemeval.scoring import (
        criterion_for_longmemeval as criterion_for_longmemeval,
    )
    from memevals.core.agreement import cohen_kappa as cohen_kappa
    from memevals.core.criteria_judge import CriterionSpec as CriterionSpec
    from memevals.core.criteria_judge import JudgeInput as JudgeInput
    from memevals.core.criteria_judge import Verdict as Verdict
    from memevals.core.criteria_judge import judge_prompt as judge_prompt
    from memevals.core.criteria_judge import parse_verdict as parse_verdict
    from memevals.core.retrieval_metrics import ndcg_any_at_k as ndcg_any_at_k
    from memevals.core.retrieval_metrics import recall_all_at_k as recall_all_at_k
    from memevals.core.retrieval_metrics import recall_any_at_k as recall_any_at_k
    from memevals.core.retrieval_metrics import turn_precision_recall as turn_precision_recall
    from memevals.core.retrieval_metrics import turn_to_session as turn_to_session
    from memevals.core.text_overlap import rouge_scores as rouge_scores

    #: every judge criterion the benchmarks declare (memevals.benchmarks.judge_criteria())
    JUDGE_CRITERIA: dict[str, CriterionSpec]

#: The generic names, by the core module defining them (core names no benchmark).
CORE_SOURCES: dict[str, tuple[str, ...]] = {
    "memevals.core.agreement": ("cohen_kappa",),
    "memevals.core.criteria_judge": (
        "CriterionSpec",
        "JudgeInput",
        "Verdict",
        "judge_prompt",
        "parse_verdict",
    ),
    "memevals.core.retrieval_metrics": (
        "ndcg_any_at_k",
        "recall_all_at_k",
        "recall_any_at_k",
        "turn_precision_recall",
        "turn_to_session",
    ),
    "memevals.core.text_overlap": ("rouge_scores",),
}
_CORE_MODULE_OF = {name: module for module, names in CORE_SOURCES.items() for name in names}
#: Computed from the records on first use, not taken from a module.
_COMPUTED = ("JUDGE_CRITERIA",)


def sources() -> dict[str, tuple[str, ...]]:
    """Every defining module and the names taken from it: core's, then each record's.

    Returns:
        Module -> names; a name two modules offer is an error naming both.
    """
    records = importlib.import_module("memevals.benchmarks").records
    out = dict(CORE_SOURCES)
    owner = dict(_CORE_MODULE_OF)
    for record in records().values():
        if not record.scorers:
            continue
        if record.scoring_module is None:
            raise ValueError(f"benchmark {record.name}: scorers named without a scoring_module")
        for name in record.scorers:
            taken = owner.setdefault(name, record.scoring_module)
            if taken != record.scoring_module:
                raise ValueError(
                    f"memevals.scorers: {name!r} is offered by both {taken} and "
                    f"{record.scoring_module} (benchmark {record.name})"
                )
        module_names = out.get(record.scoring_module, ())
        out[record.scoring_module] = tuple(dict.fromkeys([*module_names, *record.scorers]))
    return out


def _public_names() -> list[str]:
    return sorted({*_COMPUTED, *(n for names in sources().values() for n in names)})


def __getattr__(name: str) -> Any:
    if name == "__all__":
        value: Any = _public_names()
    elif name == "JUDGE_CRITERIA":
        value = importlib.import_module("memevals.benchmarks").judge_criteria()
    else:
        module = _CORE_MODULE_OF.get(name)
        if module is None and not name.startswith("__"):
            module = next((m for m, ns in sources().items() if name in ns), None)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_public_names()})
