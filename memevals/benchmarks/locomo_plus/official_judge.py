"""LoCoMo-Plus's judge: the official grader of LoCoMo-Plus, and of LoCoMo with `judge=true`.

Upstream is xjtuleeyf/Locomo-Plus @ 059f4e3d, `evaluation_framework/task_eval/`. Its texts are
third-party material and never stand in memevals: each is a locator into the pinned file,
checked against the sha256 recorded here (memevals.core.upstream). What memevals writes itself
is upstream's *logic*, as read from those files: the per-category template (`prompt.py`)
filled with the reference, the prediction and the evidence turns rendered as its unified input
renders them, sent as its call site sends it (`call_model` with the default backend `call_llm`
and no category: the `utils.py` start sentence named "A" and "B", then the filled prompt
stripped, one user message, 512 tokens at temperature 0), its reply parsed and scored as
`llm_as_judge.py` does (correct 1, partial 0.5, wrong or unreadable 0).

LoCoMo's own modules import this one, so it imports nothing of another benchmark: it reads a
LoCoMo conversation and question through the few fields named below (`JudgedConversation`,
`JudgedQuestion`), which memevals.benchmarks.locomo.data's classes have.
"""

from __future__ import annotations

import functools
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, Protocol

from memevals.core.upstream import InlineText, Template, UpstreamFile, pinned_text
from memevals.core.upstream_judge import LABEL_RULES, OfficialJudge, OfficialLabel, split_around

__all__ = [
    "EMPTY_REPLY",
    "JUDGE_CATEGORY",
    "JUDGE_MAX_TOKENS",
    "JUDGE_RULE",
    "JUDGE_SCORES",
    "JUDGE_WRAPPER_NAMES",
    "PLUS_JUDGE",
    "PLUS_PROMPT",
    "PLUS_UTILS",
    "JudgeTexts",
    "evidence_text",
    "judge_inputs",
    "judge_prefix",
    "judge_prompt",
    "judge_request",
    "judge_score",
    "load_judge_texts",
    "locomo_judge",
    "parse_judge_reply",
    "plus_label",
]

PLUS_REPO = "xjtuleeyf/Locomo-Plus"
PLUS_COMMIT = "059f4e3d38f7f1f96765e8e2cb7de3097551bffb"
PLUS_PROMPT = UpstreamFile(
    PLUS_REPO,
    PLUS_COMMIT,
    "evaluation_framework/task_eval/prompt.py",
    "e43e3ee7115a30938e727fe0eab16694186c08e3f9619f9d8dd5e603d96fc2b1",
)
PLUS_JUDGE = UpstreamFile(
    PLUS_REPO,
    PLUS_COMMIT,
    "evaluation_framework/task_eval/llm_as_judge.py",
    "9ca4997392b1e97a03635379ca601ec5fadfe09ead471542f10433f9af071a33",
)
#: LoCoMo-Plus's model call (`call_llm`) and the prefix it puts before every prompt.
PLUS_UTILS = UpstreamFile(
    PLUS_REPO,
    PLUS_COMMIT,
    "evaluation_framework/task_eval/utils.py",
    "55fb916e46ac10a521670f96594abd117dfc63b1342ca67e81a2fab6780233a5",
)

#: LoCoMo's file category -> LoCoMo-Plus's category name (its judge template's key).
JUDGE_CATEGORY: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "common-sense",
    4: "single-hop",
    5: "adversarial",
}
#: LoCoMo-Plus's label scores (`LABEL_TO_SCORE`); any other label, or none, scores 0.
JUDGE_SCORES: dict[str, float] = {"correct": 1.0, "partial": 0.5, "wrong": 0.0}
#: LoCoMo-Plus's judge length (its `--max-tokens` default) at temperature 0.
JUDGE_MAX_TOKENS = 512
#: The name of LoCoMo-Plus's label rule in memevals.core.upstream_judge.LABEL_RULES.
JUDGE_RULE = "locomo_plus_label"
#: The names LoCoMo-Plus's call wrapper puts into its start sentence: its parameters' defaults
#: (`llm_as_judge.py` calls `call_model` without them).
JUDGE_WRAPPER_NAMES = ("A", "B")
#: What LoCoMo-Plus's model call returns for an empty reply (and its judge then reads).
EMPTY_REPLY = "(empty)"


#: Every upstream text of the judge, by the name JudgeTexts gives it: the start sentence its
#: model call (`call_llm`) puts before the prompt, the pattern its parser tries first, and its
#: templates by category.
TEMPLATES: dict[str, Template | InlineText] = {
    "judge_start": Template(
        PLUS_UTILS,
        "CONV_START_PROMPT",
        "bfb101603e38a36cfecfb7e989ae51d537907ad7ac0b89020e2b7c01046d3cb7",
    ),
    "judge_pattern": InlineText(
        PLUS_JUDGE,
        "_parse_judge_response",
        4,
        "a52d3cad340081f7b19490a78252f5a235388328a3ffda970947fb98d9ff54db",
    ),
    "judge_multi_hop": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[multi-hop]",
        "6eba7bc55145d57a06c90fb96a9daf7965b68dbb480b975d2b1583b59124741a",
    ),
    "judge_single_hop": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[single-hop]",
        "e0cc6dfb7fb33aeafeed27e6db214eff15278738298384817479f09f5f5997d4",
    ),
    "judge_temporal": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[temporal]",
        "f951d90c7a759c12eff5ceeb963129c2be79b529209b9fb2ddcfbafb2a40aa3d",
    ),
    "judge_common_sense": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[common-sense]",
        "3147a06f69f3229233ecb367249c42afe6485d45c18957c6d2286a2eb28ea904",
    ),
    "judge_adversarial": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[adversarial]",
        "2a73bc69e8051121a6332c3fb14605574bacc3cb58173fdd72b5803f4bd40a69",
    ),
    "judge_cognitive": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[Cognitive]",
        "83875348ab831a4f2932457bc951d37654db9f77ecaf50e7a8aacf5ff566a08b",
    ),
    "judge_default": Template(
        PLUS_PROMPT,
        "PROMPT_TEMPLATES[default]",
        "117bbafb8c4d388e5fe814a098851c361087497b515331b457e144bf1cffe9f9",
    ),
}

#: LoCoMo-Plus category name -> JudgeTexts field of its judge template.
_JUDGE_FIELDS: dict[str, str] = {
    "multi-hop": "judge_multi_hop",
    "single-hop": "judge_single_hop",
    "temporal": "judge_temporal",
    "common-sense": "judge_common_sense",
    "adversarial": "judge_adversarial",
    "Cognitive": "judge_cognitive",
}


@dataclass(frozen=True)
class JudgeTexts:
    """The judge's upstream texts, extracted and digest-verified (one field per TEMPLATES
    entry)."""

    judge_start: str
    judge_pattern: str
    judge_multi_hop: str
    judge_single_hop: str
    judge_temporal: str
    judge_common_sense: str
    judge_adversarial: str
    judge_cognitive: str
    judge_default: str

    def digests(self) -> dict[str, str]:
        """Template name -> its sha256, for the logs."""
        return {f.name: TEMPLATES[f.name].sha256 for f in fields(self)}

    def judge_template(self, category: str) -> str:
        """The judge template of a LoCoMo-Plus category name; the default one for any other
        name (as upstream's `get_judge_prompt`)."""
        text: str = getattr(self, _JUDGE_FIELDS.get(category, "judge_default"))
        return text


def _load(name: str, data_dir: str | None) -> str:
    return pinned_text(TEMPLATES[name], data_dir, f"LoCoMo-Plus judge template {name!r}")


@functools.lru_cache(maxsize=8)
def _load_judge_texts(data_dir: str | None) -> JudgeTexts:
    texts = JudgeTexts(**{f.name: _load(f.name, data_dir) for f in fields(JudgeTexts)})
    # the digest pins the pattern, so the copy of any data dir serves the label rule
    _JUDGE_PATTERN.setdefault("pattern", texts.judge_pattern)
    return texts


def load_judge_texts(data_dir: str | os.PathLike[str] | None = None) -> JudgeTexts:
    """Every upstream text of the judge, digest-verified (cached per data dir).

    Args:
        data_dir: the task's data dir (used when it holds the upstream copies).

    Returns:
        The texts.
    """
    return _load_judge_texts(None if data_dir is None else str(data_dir))


# ---------------------------------------------------------------------------------------------
# What the judge reads of a LoCoMo question


class JudgedTurn(Protocol):
    """A turn as the judge reads it (memevals.benchmarks.locomo.data.Turn)."""

    @property
    def speaker(self) -> str: ...

    @property
    def text(self) -> str: ...


class JudgedSession(Protocol):
    """A session as the judge reads it (memevals.benchmarks.locomo.data.Session)."""

    @property
    def index(self) -> int: ...

    @property
    def turns(self) -> Sequence[JudgedTurn]: ...


class JudgedConversation(Protocol):
    """A conversation as the judge reads it (memevals.benchmarks.locomo.data.Conversation)."""

    @property
    def sessions(self) -> Sequence[JudgedSession]: ...


class JudgedQuestion(Protocol):
    """A question as the judge reads it (memevals.benchmarks.locomo.data.QA)."""

    @property
    def category(self) -> int: ...

    @property
    def answer(self) -> str | int | None: ...

    @property
    def evidence(self) -> Sequence[str]: ...


def _evidence_line(sessions: Mapping[int, JudgedSession], evid: str) -> str:
    pieces = evid.split(":")
    try:
        if len(pieces) != 2:
            raise ValueError(evid)
        session = int(pieces[0].replace("D", ""))
        position = int(pieces[1])
    except ValueError:
        return f"[{evid}] [Parse error]"
    turns = sessions[session].turns if session in sessions else ()
    if 0 <= position - 1 < len(turns):
        turn = turns[position - 1]
        return f"{turn.speaker}：{turn.text}"
    return f"[{evid}] [Missing turn]"


def evidence_text(conv: JudgedConversation, qa: JudgedQuestion) -> str:
    """The judge's evidence as LoCoMo-Plus's unified input writes it: each evidence id (the raw
    strings split at ";") as `<speaker>：<text>` of the turn at that position of its session,
    or a marker for an id that names no turn or cannot be read."""
    sessions = {s.index: s for s in conv.sessions}
    parts = (part.strip() for raw in qa.evidence for part in str(raw).split(";"))
    return "\n".join(_evidence_line(sessions, evid) for evid in parts if evid)


def judge_inputs(conv: JudgedConversation, qa: JudgedQuestion) -> Mapping[str, str]:
    """What LoCoMo-Plus's judge reads of a LoCoMo question besides the prediction."""
    gold = qa.answer
    return {
        "category": JUDGE_CATEGORY[qa.category],
        "evidence": evidence_text(conv, qa),
        "gold": "" if gold is None or gold == "" else str(gold),
    }


# ---------------------------------------------------------------------------------------------
# The request


def judge_prompt(
    texts: JudgeTexts, category: str, evidence: str, prediction: str, gold: str
) -> str:
    """LoCoMo-Plus's judge prompt: its template for `category` (a LoCoMo-Plus category name)
    filled with the reference, the prediction and the evidence (`get_judge_prompt`), before
    its model call's wrapper (`judge_request`)."""
    return texts.judge_template(category).format(gold=gold, pred=prediction, evidence=evidence)


def judge_prefix(texts: JudgeTexts) -> str:
    """The prefix LoCoMo-Plus's model call puts before a judge prompt (`_prepend_conv_prefix`):
    its start sentence with the default names "A" and "B"."""
    return texts.judge_start.format(*JUDGE_WRAPPER_NAMES)


def judge_request(texts: JudgeTexts, category: str, evidence: str, gold: str) -> OfficialJudge:
    """LoCoMo-Plus's judge request as its call site sends it.

    `llm_as_judge.py` fills the category's template (`get_judge_prompt`) and calls
    `call_model` with its default backend `call_llm` and no category, so the prompt leaves as
    `_prepend_conv_prefix` makes it: the start sentence named "A" and "B", then the filled
    prompt stripped, one user message, at the judge's temperature 0 and 512 tokens.

    Args:
        texts: the verified upstream texts.
        category: a LoCoMo-Plus category name (its template's key).
        evidence: the evidence as the unified input writes it.
        gold: the reference ("" for none).

    Returns:
        The request, split around the (stripped) reply it grades.
    """
    before, after = split_around(lambda reply: judge_prompt(texts, category, evidence, reply, gold))
    return OfficialJudge(
        before=before,
        after=after,
        rule=JUDGE_RULE,
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=0.0,
        strip_reply=True,
        prefix=judge_prefix(texts),
        strip_prompt=True,
    )


def locomo_judge(texts: JudgeTexts, conv: JudgedConversation, qa: JudgedQuestion) -> OfficialJudge:
    """The judge request of a LoCoMo question: its category's template, reference and evidence.

    Args:
        texts: the verified upstream texts.
        conv: the question's conversation.
        qa: the question.

    Returns:
        The request.
    """
    inputs = judge_inputs(conv, qa)
    return judge_request(texts, inputs["category"], inputs["evidence"], inputs["gold"])


# ---------------------------------------------------------------------------------------------
# The label rule


def parse_judge_reply(reply: str, pattern: str) -> tuple[str, bool]:
    """The label LoCoMo-Plus reads from a judge reply (`_parse_judge_response`), and whether it
    came from a verdict object rather than the word search.

    The first match of its pattern; else the reply as a JSON object's "label"; when that fails,
    the first of "correct", "wrong", "partial" found in the lower-cased reply (so "incorrect"
    reads as correct, as upstream). An empty label means none was found.
    """
    label = ""
    raw = (reply or "").strip()
    try:
        m = re.search(pattern, raw, re.DOTALL)
        if m:
            return m.group(1).strip(), True
        obj: Any = json.loads(raw)
        label = (obj.get("label") or "").strip()
        # upstream reads the reason next; a reason that is not text fails there and sends
        # the reply to the word search with this label kept
        (obj.get("reason") or "").strip()
        return label, True
    except Exception:
        lowered = raw.lower()
        for word in ("correct", "wrong", "partial"):
            if word in lowered:
                return word, False
    return label, False


def judge_score(label: str) -> float:
    """LoCoMo-Plus's score of a label: correct 1, partial 0.5, anything else 0."""
    return JUDGE_SCORES.get((label or "").strip().lower(), 0.0)


#: The judge pattern once loaded (any verified copy: its digest pins it).
_JUDGE_PATTERN: dict[str, str] = {}


def plus_label(grader_reply: str) -> OfficialLabel:
    """LoCoMo-Plus's label rule: `parse_judge_reply` then `judge_score`. The reply is clear
    when a verdict object gave one of the three labels; the word search never is."""
    if "pattern" not in _JUDGE_PATTERN:
        _JUDGE_PATTERN["pattern"] = _load("judge_pattern", None)
    label, from_object = parse_judge_reply(grader_reply, _JUDGE_PATTERN["pattern"])
    clear = from_object and label.strip().lower() in JUDGE_SCORES
    return OfficialLabel(label, judge_score(label), clear)


LABEL_RULES.setdefault(JUDGE_RULE, plus_label)
