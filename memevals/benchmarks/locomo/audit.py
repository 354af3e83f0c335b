"""The locomo-audit corrections (dial481/locomo-audit): audited gold and score ceilings.

The audit lists 156 LoCoMo QA items whose gold answer or cited evidence is wrong. With
`gold="audited"` the samples take the audit's `correct_answer` / `correct_evidence`; either way
a run logs the per-category ceilings, the best score an honest system can reach on the official
gold (benchmarks/locomo/README.md#audited-gold).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from memevals.benchmarks.locomo.data import CATEGORY_NAMES, QA, Conversation, split_evidence
from memevals.core.files import DataError, PinnedFile, resolve, sha256_of
from memevals.core.validation import Reader, load_json

__all__ = [
    "AUDITED_CATEGORIES",
    "AUDIT_FILE",
    "GOLD_VARIANTS",
    "WRONG_CITATION",
    "AuditRecord",
    "Gold",
    "apply_gold",
    "audited_conversations",
    "ceilings",
    "check_gold",
    "gold_metadata",
    "load_audit",
    "load_audit_file",
    "match_audit",
    "parse_audit",
]

logger = logging.getLogger(__name__)

AUDIT_FILE = PinnedFile(
    relpath="locomo_audit/errors.json",
    url="https://raw.githubusercontent.com/dial481/locomo-audit/"
    "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539/errors.json",
    sha256="f298ef46263fada20688a1d672be37d4f488c6da3b19343eea55ae5c1b5fe55e",
    size=150_552,
)

#: `gold` values: the official answers (the published protocol) or the audit's corrections.
GOLD_VARIANTS: tuple[str, ...] = ("original", "audited")
#: The one error type that leaves the gold answer right (only the cited turns are wrong), so it
#: does not lower the reachable score.
WRONG_CITATION = "WRONG_CITATION"
#: The categories the audit covers (file numbers 1-4; adversarial has no gold answer).
AUDITED_CATEGORIES: tuple[int, ...] = (1, 2, 3, 4)

_QUESTION_ID = re.compile(r"locomo_(\d+)_qa(\d+)")


@dataclass(frozen=True)
class AuditRecord:
    """One audited QA item, as in errors.json (evidence as raw strings, like `QA.evidence`)."""

    question_id: str
    conversation_index: int  # position of the conversation in locomo10.json
    qa_index: int  # position in that conversation's full qa list
    question: str
    category: int  # LoCoMo file category number
    error_type: str
    golden_answer: str
    correct_answer: str
    cited_evidence: tuple[str, ...]
    correct_evidence: tuple[str, ...]
    file: str = field(default="", compare=False, repr=False)  # for error messages

    @property
    def corrupts_score(self) -> bool:
        return self.error_type != WRONG_CITATION


def check_gold(gold: str) -> None:
    if gold not in GOLD_VARIANTS:
        raise ValueError(f"gold={gold!r} is not one of {', '.join(GOLD_VARIANTS)}")


def _string_list(r: Reader, name: str) -> tuple[str, ...]:
    value = r.list_(name)
    if not all(isinstance(v, str) for v in value):
        raise r.error(name, "expected a list of strings")
    return tuple(value)


def parse_audit(raw: Any, file: Path) -> tuple[AuditRecord, ...]:
    """Validate and convert errors.json; any schema violation raises DataError."""
    if not isinstance(raw, list):
        raise DataError(f"expected a list of audit records, got {type(raw).__name__}", file=file)
    out: list[AuditRecord] = []
    seen: set[str] = set()
    for n, obj in enumerate(raw):
        r = Reader(file, f"record[{n}]", obj)
        qid = r.id_("question_id")
        r = Reader(file, qid, obj)
        m = _QUESTION_ID.fullmatch(qid)
        if not m:
            raise r.error("question_id", f"{qid!r} is not locomo_<conversation>_qa<index>")
        if qid in seen:
            raise r.error("question_id", "duplicate question_id")
        seen.add(qid)
        category = r.get("category", int)
        if category not in AUDITED_CATEGORIES:
            raise r.error("category", f"{category} is not a LoCoMo category 1-4")
        out.append(
            AuditRecord(
                question_id=qid,
                conversation_index=int(m.group(1)),
                qa_index=int(m.group(2)),
                question=r.str_("question"),
                category=category,
                error_type=r.str_("error_type"),
                golden_answer=r.str_("golden_answer"),
                correct_answer=r.str_("correct_answer"),
                cited_evidence=_string_list(r, "cited_evidence"),
                correct_evidence=_string_list(r, "correct_evidence"),
                file=str(file),
            )
        )
    return tuple(out)


@lru_cache(maxsize=4)
def _load_cached(path: str, digest: str) -> tuple[AuditRecord, ...]:
    p = Path(path)
    return parse_audit(load_json(p), p)


def load_audit(data_dir: str | os.PathLike[str] | None = None) -> tuple[AuditRecord, ...]:
    """The 156 audit records, verified against the pinned sha256."""
    path = resolve(AUDIT_FILE, data_dir)
    return _load_cached(str(path), sha256_of(path))


def load_audit_file(path: str | os.PathLike[str]) -> tuple[AuditRecord, ...]:
    """Parse an errors.json-schema file without checksum (edited copies, fixtures)."""
    p = Path(path)
    return parse_audit(load_json(p), p)


def match_audit(
    conversations: Sequence[Conversation], records: Sequence[AuditRecord]
) -> dict[tuple[str, int], AuditRecord]:
    """(conversation sample id, qa index) -> its record. `conversations` are all of LoCoMo in
    file order (the ids count from it). A record pointing nowhere, or whose question, category
    or gold answer differs from the LoCoMo item, is a DataError naming both."""
    out: dict[tuple[str, int], AuditRecord] = {}
    for rec in records:
        if rec.conversation_index >= len(conversations):
            raise DataError(
                f"conversation {rec.conversation_index} does not exist "
                f"(LoCoMo has {len(conversations)})",
                file=rec.file,
                record=rec.question_id,
                field="question_id",
            )
        conv = conversations[rec.conversation_index]
        if rec.qa_index >= len(conv.qa):
            raise DataError(
                f"{conv.sample_id} has no qa[{rec.qa_index}] (it has {len(conv.qa)} questions)",
                file=rec.file,
                record=rec.question_id,
                field="question_id",
            )
        qa = conv.qa[rec.qa_index]
        checks = (
            ("question", rec.question, qa.question),
            ("category", rec.category, qa.category),
            ("golden_answer", rec.golden_answer, str(qa.answer)),
        )
        for name, audited, official in checks:
            if audited != official:
                raise DataError(
                    f"does not match LoCoMo {conv.sample_id} qa[{rec.qa_index}]: "
                    f"audit has {audited!r}, LoCoMo has {official!r}",
                    file=rec.file,
                    record=rec.question_id,
                    field=name,
                )
        out[(conv.sample_id, rec.qa_index)] = rec
    return out


def ceilings(
    conversations: Sequence[Conversation], records: Sequence[AuditRecord]
) -> dict[str, float]:
    """Per category (1-4, by name) and `overall` over 1-4: the share of questions whose gold the
    audit does not mark score-corrupting (any error type but WRONG_CITATION)."""
    matched = match_audit(conversations, records)
    totals = Counter(qa.category for c in conversations for qa in c.qa)
    bad = Counter(rec.category for rec in matched.values() if rec.corrupts_score)
    out = {CATEGORY_NAMES[k]: 1.0 - bad[k] / totals[k] for k in AUDITED_CATEGORIES}
    n = sum(totals[k] for k in AUDITED_CATEGORIES)
    out["overall"] = 1.0 - sum(bad[k] for k in AUDITED_CATEGORIES) / n
    return out


def _audited_qa(qa: QA, rec: AuditRecord) -> QA:
    ids, bad = split_evidence(rec.correct_evidence)
    return dataclasses.replace(
        qa,
        answer=rec.correct_answer,
        evidence=rec.correct_evidence,
        evidence_ids=ids,
        malformed_evidence=bad,
    )


def audited_conversations(
    conversations: Sequence[Conversation], matched: Mapping[tuple[str, int], AuditRecord]
) -> list[Conversation]:
    """The conversations with every audited question's answer and evidence corrected; the
    dialog itself is unchanged."""
    out = []
    for conv in conversations:
        qa = tuple(
            _audited_qa(q, matched[(conv.sample_id, q.index)])
            if (conv.sample_id, q.index) in matched
            else q
            for q in conv.qa
        )
        out.append(dataclasses.replace(conv, qa=qa))
    return out


def gold_metadata(qa: QA, rec: AuditRecord) -> dict[str, Any]:
    """What a sample whose gold the audit changed records: both answers, the error type and,
    when it changed, the evidence both ways. Empty when the audit changes nothing."""
    md: dict[str, Any] = {}
    if rec.correct_answer != str(qa.answer):
        md = {"gold_original": qa.answer, "gold_audited": rec.correct_answer}
    if tuple(rec.correct_evidence) != tuple(qa.evidence):
        md["evidence_original"] = list(qa.evidence)
        md["evidence_audited"] = list(rec.correct_evidence)
    if md:
        md["audit_error_type"] = rec.error_type
        md["audit_question_id"] = rec.question_id
    return md


@dataclass(frozen=True)
class Gold:
    """The conversations to build samples from, per-sample gold records, and the log entry."""

    conversations: list[Conversation]
    changes: dict[tuple[str, int], dict[str, Any]]
    log: dict[str, Any]


def apply_gold(
    conversations: Sequence[Conversation],
    gold: str,
    data_dir: str | os.PathLike[str] | None = None,
) -> Gold:
    """`gold="original"` keeps the conversations as they are; `"audited"` corrects them. Both
    read the audit to log the ceilings (and how many answers / evidence lists the audit
    changes)."""
    check_gold(gold)
    try:
        records = load_audit(data_dir)
    except DataError as exc:
        if gold == "audited":
            raise
        # The official protocol needs no audit: a data folder without the audit file still
        # runs, and the log says why it has no ceilings (never a silent gap).
        logger.warning("LoCoMo: the gold ceilings are unavailable (%s)", exc)
        return Gold(
            list(conversations),
            {},
            {"gold": gold, "gold_ceilings": None, "gold_ceilings_unavailable": str(exc)},
        )
    matched = match_audit(conversations, records)
    changes: dict[tuple[str, int], dict[str, Any]] = {}
    by_id = {c.sample_id: c for c in conversations}
    for key, rec in matched.items():
        md = gold_metadata(by_id[key[0]].qa[key[1]], rec)
        if md:
            changes[key] = md
    log: dict[str, Any] = {
        "gold": gold,
        "audit_sha256": AUDIT_FILE.sha256,
        "audit_records": len(matched),
        "audit_answers_changed": sum("gold_audited" in md for md in changes.values()),
        "audit_evidence_changed": sum("evidence_audited" in md for md in changes.values()),
        "gold_ceilings": {k: round(v, 6) for k, v in ceilings(conversations, records).items()},
    }
    if gold == "original":
        return Gold(list(conversations), {}, log)
    return Gold(audited_conversations(conversations, matched), changes, log)
