"""The locomo-audit "AP baseline" answer files: deliberately wrong answers with the audit's own
gpt-4o-mini verdicts (dial481/locomo-audit, CC BY-NC 4.0).

`v1` holds one specific-but-wrong answer per LoCoMo question of categories 1-4 (1,540), `v2`
one vague-but-on-topic answer per question; each carries three verdicts of the lenient judge
prompt of the mem0 lineage. Question ids are ``locomo_<conversation index>_qa<qa index>``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from memevals.core.files import DataError, PinnedFile, resolve, sha256_of
from memevals.core.validation import Reader, load_json

__all__ = ["AUDIT_ANSWER_FILES", "AuditAnswer", "load_audit_answers", "parse_audit_answers"]

_BASE = (
    "https://raw.githubusercontent.com/dial481/locomo-audit/"
    "9493fb4b4af4256ed17a18e8fd0b3cfdeec29539/ap-baseline/"
)

AUDIT_ANSWER_FILES: dict[str, PinnedFile] = {
    "v1": PinnedFile(
        relpath="locomo_audit/ap-baseline/v1/ap_eval_results_scored.json",
        url=_BASE + "v1/ap_eval_results_scored.json",
        sha256="a83882eda3ff02fd04dace6edddd0ceed533a245fedb3069ffde02a9503c4e3a",
        size=656_280,
    ),
    "v2": PinnedFile(
        relpath="locomo_audit/ap-baseline/v2/ap_eval_results_scored.json",
        url=_BASE + "v2/ap_eval_results_scored.json",
        sha256="3c32acbdcf667967a4e1f9f541b06566ae5e7361dc92f79f9043af7d068adc6b",
        size=645_227,
    ),
}

_QUESTION_ID = re.compile(r"locomo_(\d+)_qa(\d+)")
_JUDGMENTS = ("judgment_1", "judgment_2", "judgment_3")


@dataclass(frozen=True)
class AuditAnswer:
    """One wrong answer of the audit and the audit's three verdicts on it."""

    question_id: str
    conversation_index: int  # position in locomo10.json
    qa_index: int  # position in that conversation's qa list
    question: str
    golden_answer: str
    answer: str
    category: int
    verdicts: tuple[bool, bool, bool]

    @property
    def audit_acceptance(self) -> float:
        """Share of the audit's three verdicts that accepted this answer."""
        return sum(self.verdicts) / len(self.verdicts)


def _parse_record(file: Path, where: str, obj: Any) -> AuditAnswer:
    r = Reader(file, where, obj)
    qid = r.str_("question_id")
    m = _QUESTION_ID.fullmatch(qid)
    if m is None:
        raise r.error("question_id", f"{qid!r} is not locomo_<conversation>_qa<index>")
    category_text = r.str_("category")
    if category_text not in {"1", "2", "3", "4"}:
        raise r.error("category", f"expected 1-4, got {category_text!r}")
    judged = Reader(file, f"{where} llm_judgments", r.dict_("llm_judgments"))
    if set(judged.obj) != set(_JUDGMENTS):
        raise r.error("llm_judgments", f"expected keys {list(_JUDGMENTS)}, got {list(judged.obj)}")
    verdicts = tuple(judged.get(k, bool) for k in _JUDGMENTS)
    return AuditAnswer(
        question_id=qid,
        conversation_index=int(m.group(1)),
        qa_index=int(m.group(2)),
        question=r.str_("question"),
        golden_answer=r.str_("golden_answer"),
        answer=r.str_("generated_answer"),
        category=int(category_text),
        verdicts=(verdicts[0], verdicts[1], verdicts[2]),
    )


def parse_audit_answers(raw: Any, file: Path) -> tuple[AuditAnswer, ...]:
    """Validate one answer file; any schema violation or duplicate question id is a DataError."""
    top = Reader(file, "file", raw)
    out: list[AuditAnswer] = []
    seen: set[str] = set()
    for user, records in top.dict_("detailed_results").items():
        if not isinstance(records, list):
            raise top.error(f"detailed_results.{user}", "expected a list of records")
        for j, obj in enumerate(records):
            answer = _parse_record(file, f"detailed_results.{user}[{j}]", obj)
            if answer.question_id in seen:
                raise DataError(f"duplicate question_id {answer.question_id!r}", file=file)
            seen.add(answer.question_id)
            out.append(answer)
    return tuple(out)


@lru_cache(maxsize=4)
def _load_cached(path: str, digest: str) -> tuple[AuditAnswer, ...]:
    p = Path(path)
    return parse_audit_answers(load_json(p), p)


def load_audit_answers(
    version: str, data_dir: str | os.PathLike[str] | None = None
) -> tuple[AuditAnswer, ...]:
    """The audit's wrong answers of `version` ("v1" specific, "v2" vague), sha256-verified."""
    try:
        pinned = AUDIT_ANSWER_FILES[version]
    except KeyError:
        raise ValueError(
            f"unknown audit answer file {version!r}; choose from {', '.join(AUDIT_ANSWER_FILES)}"
        ) from None
    path = resolve(pinned, data_dir)
    return _load_cached(str(path), sha256_of(path))
