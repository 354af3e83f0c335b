"""judge_check samples: for each LoCoMo question of categories 1-4, three candidate answers for
the model under test to grade with memevals' own judge prompt.

The candidates are the gold answer itself (a good grader accepts it), the audit's
specific-but-wrong answer (v1) and its vague-but-on-topic answer (v2) (a good grader rejects
both). `build(options)` is the one assembly: the items, the task's log metadata and the
grader's call settings (temperature 0, the llm_judge scorer's token limit); the Inspect task only
wraps it.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from typing import Any

from memevals.benchmarks.judge_check.data import AUDIT_ANSWER_FILES, AuditAnswer, load_audit_answers
from memevals.benchmarks.judge_check.scoring import GRADER_MAX_TOKENS, KINDS, WRONG_KINDS
from memevals.benchmarks.locomo.audit import load_audit, match_audit
from memevals.benchmarks.locomo.data import CATEGORY_NAMES, Conversation, load_locomo
from memevals.benchmarks.locomo.prompts import judge_inputs
from memevals.benchmarks.locomo.scoring import LOCOMO_JUDGE_CRITERIA, criterion_for_locomo
from memevals.core.build import Build
from memevals.core.criteria_judge import JudgeInput, judge_prompt
from memevals.core.files import DataError
from memevals.core.prompt_item import PromptItem
from memevals.core.statistics import CLUSTER_KEY

__all__ = ["GRADER_MAX_TOKENS", "KINDS", "WRONG_KINDS", "JudgeCheckOptions", "build"]

ACCEPT, REJECT = "accept", "reject"
#: `gold` option: every question, or only those whose gold the audit does not mark wrong.
GOLD_CHOICES = ("original", "audited")


@dataclass(frozen=True)
class JudgeCheckOptions:
    """The task's options: which criteria the grader is given, and where the data lives."""

    judge_criteria: str = "default"
    gold: str = "original"
    data_dir: str | os.PathLike[str] | None = None

    def __post_init__(self) -> None:
        if self.gold not in GOLD_CHOICES:
            raise ValueError(
                f"judge_check: gold={self.gold!r}; choose from {', '.join(GOLD_CHOICES)}"
            )
        if self.judge_criteria not in LOCOMO_JUDGE_CRITERIA:
            raise ValueError(
                f"judge_check: judge_criteria={self.judge_criteria!r}; choose from "
                + ", ".join(LOCOMO_JUDGE_CRITERIA)
            )


def _matched(
    conversations: list[Conversation], answers: dict[str, tuple[AuditAnswer, ...]]
) -> list[tuple[Conversation, int, dict[str, AuditAnswer]]]:
    """(conversation, qa index, {kind: audit answer}) per question, in LoCoMo order; the two
    files must cover the same questions and match LoCoMo's question text and category."""
    by_kind = {kind: {a.question_id: a for a in answers[v]} for kind, v in WRONG_KINDS.items()}
    ids = [set(d) for d in by_kind.values()]
    if ids[0] != ids[1]:
        odd = sorted(ids[0] ^ ids[1])[:5]
        raise DataError(f"audit answer files v1 and v2 cover different questions, e.g. {odd}")
    out = []
    for qid in sorted(
        ids[0],
        key=lambda q: (
            by_kind["specific_wrong"][q].conversation_index,
            by_kind["specific_wrong"][q].qa_index,
        ),
    ):
        first = by_kind["specific_wrong"][qid]
        ci, qi = first.conversation_index, first.qa_index
        if ci >= len(conversations) or qi >= len(conversations[ci].qa):
            raise DataError(f"audit question {qid}: no such LoCoMo question")
        qa = conversations[ci].qa[qi]
        for kind in WRONG_KINDS:
            a = by_kind[kind][qid]
            if a.question.strip() != qa.question.strip() or a.category != qa.category:
                raise DataError(
                    f"audit {WRONG_KINDS[kind]} question {qid} ({a.question!r}, category "
                    f"{a.category}) does not match LoCoMo {conversations[ci].sample_id} "
                    f"qa[{qi}] ({qa.question!r}, category {qa.category})"
                )
        out.append((conversations[ci], qi, {k: by_kind[k][qid] for k in WRONG_KINDS}))
    return out


def _question_items(
    conv: Conversation, qi: int, audit: dict[str, AuditAnswer], judge_criteria: str
) -> list[PromptItem]:
    """The three items of one question: its gold and the audit's two wrong answers, each
    inside the judge prompt the llm_judge scorer sends for it."""
    qa = conv.qa[qi]
    category = CATEGORY_NAMES[qa.category]
    judge = dict(judge_inputs(conv, qa))
    judge["criterion"] = criterion_for_locomo(category, judge_criteria)
    gold = str(qa.answer)
    candidates = {"gold": gold} | {k: a.answer for k, a in audit.items()}
    items: list[PromptItem] = []
    for kind, candidate in candidates.items():
        inp = JudgeInput.from_metadata(judge, candidate, ignore=("prediction_map",))
        wrong = audit.get(kind)
        items.append(
            PromptItem(
                id=f"{conv.sample_id}-q{qi}-{kind}",
                system="",
                user=judge_prompt(inp),
                target=ACCEPT if kind == "gold" else REJECT,
                metadata={
                    "kind": kind,
                    "category": category,
                    CLUSTER_KEY: conv.sample_id,
                    "conversation_id": conv.sample_id,
                    "qa_index": qi,
                    "question_id": next(iter(audit.values())).question_id,
                    "criterion": inp.criterion,
                    "candidate": candidate,
                    "reference": gold,
                    "audit_verdicts": list(wrong.verdicts) if wrong else None,
                },
            )
        )
    return items


def build(options: JudgeCheckOptions) -> Build:
    """One item per (question, candidate kind), question-major (so `--limit` keeps all three
    kinds of its first questions), the task log's summary, and the grader's settings.

    Args:
        options: the task's options.

    Returns:
        The build (temperature 0, `GRADER_MAX_TOKENS`).
    """
    conversations = load_locomo(options.data_dir)
    answers = {v: load_audit_answers(v, options.data_dir) for v in WRONG_KINDS.values()}
    # gold=audited: a question whose gold the audit marks wrong (any error but a wrong
    # citation) cannot tell a good grader from a bad one, so it is left out
    wrong_gold = set()
    if options.gold == "audited":
        records = match_audit(conversations, load_audit(options.data_dir))
        wrong_gold = {key for key, rec in records.items() if rec.corrupts_score}
    items: list[PromptItem] = []
    skipped: Counter[str] = Counter()
    for conv, qi, audit in _matched(conversations, answers):
        if (conv.sample_id, qi) in wrong_gold:
            skipped[CATEGORY_NAMES[conv.qa[qi].category]] += 1
            continue
        items += _question_items(conv, qi, audit, options.judge_criteria)
    log: dict[str, Any] = {
        "benchmark": "judge_check",
        "judge_criteria": options.judge_criteria,
        "gold": options.gold,
        "skipped_wrong_gold": dict(skipped),
        "questions": len(items) // len(KINDS),
        "samples_per_kind": dict(Counter(str(i.metadata["kind"]) for i in items)),
        "audit_files": {v: f.url for v, f in AUDIT_ANSWER_FILES.items()},
    }
    return Build.of(items, log, max_tokens=GRADER_MAX_TOKENS, temperature=0.0)
