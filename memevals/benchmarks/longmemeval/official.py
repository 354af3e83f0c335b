"""LongMemEval's official protocol (`protocol=official`): upstream's reader, note and judge prompts.

Upstream is xiaowu0162/LongMemEval @ 9e0b455f: `src/generation/run_generation.py` builds the
reader's one user message (`prepare_prompt`) and `src/evaluation/evaluate_qa.py` the judge's
(`get_anscheck_prompt`). Their text is third-party material and never stands in memevals: every
template below is a locator into the pinned file, taken out by parsing it with `ast` (never
running it) and checked against the sha256 recorded here (memevals.core.upstream). What memevals
writes itself is upstream's *logic*, as read from those files:

- the history string: the chunks shown, sorted by their date string (a stable sort), each in
  upstream's session block; its body is `"\\n" + json.dumps(chunk)` for `history_format=json`
  (turns without `has_answer`, ASCII-escaped as `json.dumps` does by default) or upstream's
  `role: content` lines for `text` (upstream's `nl`);
- the chunks per configuration: a session whole (`orig-session`, `oracle-session`,
  `flat-session`), a retrieved user turn with the turn after it (`flat-turn`'s round, each its
  own block), a memory system's notes as facts (upstream's `replace` configuration), nothing
  (`no-retrieval`: the bare question);
- chain-of-note (`con`): one note request per chunk, the chunk as JSON whatever the history
  format, every note (stripped, "empty" ones too) standing in for its chunk as
  `{"session_summary": note}`;
- the answer template by configuration (step-by-step or not) filled with the history, the
  question date and the question;
- the judge prompt by question type, the abstention prompt for any id containing `_abs`,
  filled with the question, the answer and the stripped reply; 10 tokens, temperature 0; the
  label is yes when "yes" occurs anywhere in the lower-cased reply.

Where the files come from: `<data_dir>/upstream/LongMemEval/<path>` when the task's data dir
holds the copy, else MEMEVALS_DATA_DIR, else the verified download cache. A file or template
whose digest differs is an error naming the file, the template and both digests.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from memevals.benchmarks.longmemeval.data import Instance, Session, Turn
from memevals.benchmarks.longmemeval.memory import DEFAULT_ANSWER_TOKENS
from memevals.core.protocol import MEMEVALS, Protocol
from memevals.core.upstream import (
    Template,
    UpstreamError,
    UpstreamFile,
    extract_template,
    template_digest,
    upstream_module,
)
from memevals.core.upstream_judge import OfficialJudge, split_around

__all__ = [
    "EVALUATION",
    "GENERATION",
    "JUDGE_MAX_TOKENS",
    "LABEL_RULE",
    "NOTE_MAX_TOKENS",
    "Chunk",
    "OfficialTexts",
    "Unit",
    "answer_tokens",
    "empty_history_warning",
    "first_content_at",
    "history_string",
    "judge_request",
    "load_texts",
    "note_chunks",
    "note_prompts",
    "reader_prompt",
    "turn_chunks",
    "unit_chunks",
]

REPO = "xiaowu0162/LongMemEval"
COMMIT = "9e0b455f4ef0e2ab8f2e582289761153549043fc"
GENERATION = UpstreamFile(
    REPO,
    COMMIT,
    "src/generation/run_generation.py",
    "4f1eb3c69d7ad40f04065b9c0bc86f6582441018fc6ff751d162d66c95baf672",
)
EVALUATION = UpstreamFile(
    REPO,
    COMMIT,
    "src/evaluation/evaluate_qa.py",
    "ecce9c4c79dc89d99534ac17b383a5cbb5b9f0c69ee98adaf0684742e3d95251",
)

#: Upstream's answer length: 500 tokens, 800 with step-by-step (its `gen_length` default);
#: the memory module's truncation budget reserves the same 500, declared there.
ANSWER_TOKENS = DEFAULT_ANSWER_TOKENS
STEP_BY_STEP_ANSWER_TOKENS = 800
#: Upstream's note length and judge length (both at temperature 0).
NOTE_MAX_TOKENS = 500
JUDGE_MAX_TOKENS = 10
#: The label rule of upstream's judge (memevals.core.criteria_judge.LABEL_RULES).
LABEL_RULE = "yes_in_reply"

#: "func.NAME+=#n": the string appended by the n-th `NAME += ...` of `func` (source order),
#: a constant or the constant of a `"...".format(...)` call. memevals.core.upstream locates
#: assignments only; these few pieces of upstream's layout are augmented assignments.
_APPENDED = re.compile(r"^(?P<scope>[A-Za-z_]\w*)\.(?P<name>[A-Za-z_]\w*)\+=(?:#(?P<nth>\d+))?$")


_P = "prepare_prompt."

#: Every upstream text the official protocol reads, by the name OfficialTexts gives it.
TEMPLATES: dict[str, Template] = {
    # the reader's answer templates (`merge_key_expansion_into_value` none / replace)
    "answer": Template(
        GENERATION,
        _P + "answer_prompt_template#2",
        "e427ff913456e51a132ec865b1b5038d562bdc36890976943ad421cc9b365c9d",
    ),
    "answer_step_by_step": Template(
        GENERATION,
        _P + "answer_prompt_template#1",
        "9e2b3110622929ab896696dd8937231c7436740ec3b9586f653f97346e19ab2c",
    ),
    "facts": Template(
        GENERATION,
        _P + "answer_prompt_template#6",
        "00410c8193a84a2bdb96f86ea1c806ccdc6379f6144060ab03a5fa195f32009e",
    ),
    "facts_step_by_step": Template(
        GENERATION,
        _P + "answer_prompt_template#5",
        "0fd27f00495a2ddfaf661b4e6bdb0550ca3fc72d343513139a268edda06f1e4d",
    ),
    # no-retrieval: the question alone, plus the step-by-step sentence appended to it
    "no_retrieval": Template(
        GENERATION,
        _P + "answer_prompt_template#0",
        "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
    ),
    "no_retrieval_step_by_step": Template(
        GENERATION,
        _P + "answer_prompt_template+=#0",
        "2eac667c5c8ca2b2e0e398605850c80c52a608d9aa972ea753a7c25f9231c3c8",
    ),
    # the history layout: one block per chunk, and a turn in the nl format
    "session_block": Template(
        GENERATION,
        _P + "history_string+=#0",
        "9c4cc6b4baf20116cddea52e080f8c95e4cbc44e50b148282b746bc0ed402740",
    ),
    "nl_turn": Template(
        GENERATION,
        _P + "sess_string+=#1",
        "66811362258bb59fe1afd5c0932937e44eebc6fe1a74755f63fc1b6b7766f21d",
    ),
    # chain-of-note's per-chunk note request
    "note": Template(
        GENERATION,
        _P + "con_prompt",
        "1afab7da2e46782b717d009f6a208516611d691ad0e931e95e2b5c58eb2a23c8",
    ),
    # the judge, by question type; abstention for any `_abs` id
    "judge_standard": Template(
        EVALUATION,
        "get_anscheck_prompt.template#0",
        "fba020ba3d57982efdc9a937c1c01f897b789a608c7f88e60244121f6505e5bc",
    ),
    "judge_temporal": Template(
        EVALUATION,
        "get_anscheck_prompt.template#1",
        "8d33a5fdd83afeeb4592454a965eab43d1fcb2dedc042d1d3892f4254be6c273",
    ),
    "judge_knowledge_update": Template(
        EVALUATION,
        "get_anscheck_prompt.template#2",
        "183a9b3a6197ec620940f610cdc1207201ec98c1113dd633ea685cfc322fafac",
    ),
    "judge_preference": Template(
        EVALUATION,
        "get_anscheck_prompt.template#3",
        "741ee3bcbea7ff5e8ed359acef61d2f8ded3de021bbcff6ee13de455f2e2aa9b",
    ),
    "judge_abstention": Template(
        EVALUATION,
        "get_anscheck_prompt.template#4",
        "5c0b365a1e1d06db36377c735432b56e122ca3c428f89faf61d43a0d5a7e050b",
    ),
}

#: Upstream's judge template by question type (as written in the file).
JUDGE_BY_TYPE: dict[str, str] = {
    "single-session-user": "judge_standard",
    "single-session-assistant": "judge_standard",
    "multi-session": "judge_standard",
    "temporal-reasoning": "judge_temporal",
    "knowledge-update": "judge_knowledge_update",
    "single-session-preference": "judge_preference",
}


@dataclass(frozen=True)
class OfficialTexts:
    """The upstream texts, extracted and digest-verified (one field per TEMPLATES entry)."""

    answer: str
    answer_step_by_step: str
    facts: str
    facts_step_by_step: str
    no_retrieval: str
    no_retrieval_step_by_step: str
    session_block: str
    nl_turn: str
    note: str
    judge_standard: str
    judge_temporal: str
    judge_knowledge_update: str
    judge_preference: str
    judge_abstention: str

    def digests(self) -> dict[str, str]:
        """Template name -> its sha256, for the logs."""
        return {f.name: TEMPLATES[f.name].sha256 for f in fields(self)}


def answer_tokens(protocol: Protocol, step_by_step: bool) -> int:
    """The answer length when none is given: upstream's 800 with step-by-step, else 500.

    Args:
        protocol: the run's protocol.
        step_by_step: upstream's step-by-step answer template asked for.

    Returns:
        The token limit.
    """
    return STEP_BY_STEP_ANSWER_TOKENS if protocol.official and step_by_step else ANSWER_TOKENS


# ---------------------------------------------------------------------------------------------
# Loading


def _source_dir(file: UpstreamFile, data_dir: str | os.PathLike[str] | None) -> str | None:
    """The task's data dir when it holds this file's copy; else None (MEMEVALS_DATA_DIR, then
    the verified cache). Either way the copy's sha256 is checked."""
    if data_dir is not None and (Path(data_dir) / file.relpath).is_file():
        return str(data_dir)
    return None


def _appended(template: Template, data_dir: str | None) -> str:
    """The text of a `func.NAME+=#n` locator (see _APPENDED), digest-verified."""
    match = _APPENDED.match(template.locator)
    if match is None:
        raise UpstreamError(f"bad template locator {template.locator!r}", file=template.file.path)
    module = upstream_module(template.file, data_dir)
    scopes = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == match["scope"]]
    found = sorted(
        (
            n
            for scope in scopes[:1]
            for n in ast.walk(scope)
            if isinstance(n, ast.AugAssign)
            and isinstance(n.op, ast.Add)
            and isinstance(n.target, ast.Name)
            and n.target.id == match["name"]
        ),
        key=lambda n: (n.lineno, n.col_offset),
    )
    nth = int(match["nth"] or 0)
    if nth >= len(found):
        raise UpstreamError(
            f"template {template.locator!r} not found ({len(found)} match(es)) in {template.file}",
            file=template.file.relpath,
        )
    value = found[nth].value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Attribute)
        and value.func.attr == "format"
    ):
        value = value.func.value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        raise UpstreamError(
            f"template {template.locator!r} is a {type(value).__name__}, not a string",
            file=template.file.relpath,
        )
    actual = template_digest(value.value)
    if actual != template.sha256:
        raise UpstreamError(
            f"template {template.locator!r} extracted with sha256 {actual}, expected "
            f"{template.sha256}: the upstream file or the locator changed",
            file=template.file.relpath,
        )
    return value.value


def load_text(name: str, data_dir: str | os.PathLike[str] | None = None) -> str:
    """One upstream text by its TEMPLATES name, digest-verified.

    Args:
        name: a key of TEMPLATES.
        data_dir: the task's data dir (used when it holds `upstream/LongMemEval/...`).

    Returns:
        The template's text.
    """
    template = TEMPLATES[name]
    where = _source_dir(template.file, data_dir)
    try:
        if "+=" in template.locator:
            return _appended(template, where)
        return extract_template(template, where)
    except UpstreamError as exc:
        raise UpstreamError(
            f"LongMemEval official template {name!r} ({template.locator}, sha256 "
            f"{template.sha256}): {exc}"
        ) from exc


def load_texts(data_dir: str | os.PathLike[str] | None = None) -> OfficialTexts:
    """Every upstream text of the official protocol, digest-verified.

    Args:
        data_dir: the task's data dir (used when it holds `upstream/LongMemEval/...`).

    Returns:
        The texts.
    """
    return OfficialTexts(**{f.name: load_text(f.name, data_dir) for f in fields(OfficialTexts)})


# ---------------------------------------------------------------------------------------------
# The reader's message

#: (date, entry) as upstream's `retrieved_chunks` hold them: the entry is a list of turn dicts
#: (a session, or a turn with the turn after it), a note `{"session_summary": ...}`, or a fact.
Chunk = tuple[str, Any]
#: What a context shows, before upstream's layout: a session whole (turn None) or one turn.
Unit = tuple[Session, Turn | None]


def _turn_dict(turn: Turn) -> dict[str, str]:
    # upstream pops `has_answer` from the file's turn dict; role and content stay, in file order
    return {"role": turn.role, "content": turn.content}


def turn_chunks(session: Session, turn: Turn) -> Chunk:
    """A retrieved turn as upstream's flat-turn shows it: with the next turn, if any."""
    shown = [turn]
    if turn.position < len(session.turns):  # positions are 1-based: the next turn's index
        shown.append(session.turns[turn.position])
    return (session.date, [_turn_dict(t) for t in shown])


def unit_chunks(units: Sequence[Unit]) -> list[Chunk]:
    """Upstream's chunks of the units, in the units' order (sessions whole, turns as rounds)."""
    return [
        (s.date, [_turn_dict(t) for t in s.turns]) if turn is None else turn_chunks(s, turn)
        for s, turn in units
    ]


def sorted_chunks(chunks: Sequence[Chunk]) -> list[Chunk]:
    """Upstream's order: by the date string, ties in the given order."""
    return sorted(chunks, key=lambda c: c[0])


def _body(entry: Any, history_format: str, texts: OfficialTexts) -> str:
    if history_format == "json":
        return "\n" + json.dumps(entry)
    if not isinstance(entry, list):
        # upstream's nl format reads role and content of a lone entry: a note or a fact has none
        raise ValueError(
            "history_format=text renders turns only; under protocol=official notes and facts "
            "need history_format=json (upstream's nl format cannot show them): use "
            f"history_format=json, or {MEMEVALS.fix()}"
        )
    return "".join(texts.nl_turn.format(t["role"], t["content"].strip()) for t in entry)


def history_string(chunks: Sequence[Chunk], history_format: str, texts: OfficialTexts) -> str:
    """Upstream's history string of chunks already in upstream's order."""
    return "".join(
        texts.session_block.format(i, date, _body(entry, history_format, texts))
        for i, (date, entry) in enumerate(chunks, start=1)
    )


#: stands for the first turn's content in `first_content_at` (letters only: JSON keeps it as is)
_CONTENT_MARK = "QqMemevalsFirstContentQq"


def first_content_at(chunks: Sequence[Chunk], history_format: str, texts: OfficialTexts) -> int:
    """Where the first turn's content starts in the history string of `chunks` (a cut at or
    before it shows no conversation: headers and layout only); 0 when the first chunk is not
    turns.

    Args:
        chunks: the chunks, in upstream's order.
        history_format: upstream's name of the format (json or nl).
        texts: upstream's texts.

    Returns:
        The offset.
    """
    if not chunks or not isinstance(chunks[0][1], list) or not chunks[0][1]:
        return 0
    date, turns = chunks[0]
    marked = [{**turns[0], "content": _CONTENT_MARK}, *turns[1:]]
    return history_string([(date, marked)], history_format, texts).index(_CONTENT_MARK)


def empty_history_warning(empty: Sequence[str], questions: int, budget: int) -> str:
    """The one-line warning of a run whose history budget keeps no turn for some questions:
    upstream cuts its history string to the budget whatever is left, and sends that prompt, so
    memevals sends it too and says so once.

    Args:
        empty: the ids of those questions.
        questions: the questions built.
        budget: the history's token budget.

    Returns:
        The warning.
    """
    shown = ", ".join(empty[:5]) + (", ..." if len(empty) > 5 else "")
    return (
        f"LongMemEval protocol=official: a history budget of {budget} tokens keeps no turn of "
        f"the history for {len(empty)} of {questions} questions ({shown}); as upstream does, "
        "their prompts carry a history cut before its first turn. Use a larger "
        "max_context_tokens or context_window (protocol=memevals refuses such a budget)"
    )


def reader_prompt(
    inst: Instance,
    history: str | None,
    texts: OfficialTexts,
    *,
    step_by_step: bool,
    facts: bool = False,
) -> str:
    """The reader's one user message: the answer template filled with the history string, the
    question date and the question; `history` None is upstream's no-retrieval (the question
    alone). `facts`: upstream's `replace` template (a memory system's notes)."""
    if history is None:
        template = texts.no_retrieval
        if step_by_step:
            template += texts.no_retrieval_step_by_step
        return template.format(inst.question)
    if not history:
        raise ValueError(
            f"{inst.question_id}: the context shows no session, and upstream's reader has no "
            "prompt for an empty history (use context=none for the question alone)"
        )
    if facts:
        template = texts.facts_step_by_step if step_by_step else texts.facts
    else:
        template = texts.answer_step_by_step if step_by_step else texts.answer
    return template.format(history, inst.question_date, inst.question)


def note_prompts(inst: Instance, chunks: Sequence[Chunk], texts: OfficialTexts) -> list[str]:
    """Chain-of-note's request for each chunk: the chunk as JSON, whatever the history format."""
    return [
        texts.note.format(date, json.dumps(entry), inst.question_date, inst.question)
        for date, entry in chunks
    ]


def note_chunks(chunks: Sequence[Chunk], notes: Sequence[str]) -> list[Chunk]:
    """The chunks with each entry replaced by its (stripped) note, as upstream does."""
    if len(chunks) != len(notes):
        raise ValueError(f"{len(notes)} notes for {len(chunks)} chunks")
    return [
        (date, {"session_summary": n.strip()}) for (date, _), n in zip(chunks, notes, strict=True)
    ]


def cut_history(history: str, budget: int, head: Callable[[str, int], Any]) -> tuple[str, int]:
    """Upstream's truncation of the history string: its first `budget` tokens (`head` is a
    token counter's cut). Returns the kept text and the whole history's token count."""
    kept = head(history, budget)
    return kept.text, kept.total


# ---------------------------------------------------------------------------------------------
# The judge


def judge_template(inst_type: str, question_id: str, texts: OfficialTexts) -> str:
    """Upstream's judge template: abstention for any `_abs` id, else by question type."""
    if "_abs" in question_id:
        return texts.judge_abstention
    try:
        return getattr(texts, JUDGE_BY_TYPE[inst_type])  # type: ignore[no-any-return]
    except KeyError:
        raise ValueError(
            f"{question_id}: upstream's judge has no prompt for question type {inst_type!r}; "
            f"known: {', '.join(JUDGE_BY_TYPE)}"
        ) from None


def judge_request(inst: Instance, texts: OfficialTexts) -> OfficialJudge:
    """The judge prompt of `inst` around the reply it grades, with upstream's limits and rule."""
    template = judge_template(inst.question_type, inst.question_id, texts)
    before, after = split_around(lambda reply: template.format(inst.question, inst.answer, reply))
    return OfficialJudge(
        before=before,
        after=after,
        rule=LABEL_RULE,
        max_tokens=JUDGE_MAX_TOKENS,
        temperature=0.0,
        strip_reply=True,
    )
