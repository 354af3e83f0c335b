"""Upstream LongMemEval's prompt logic, re-implemented for the tests from reading its files.

The reference the official protocol is checked against. The logic below follows
`prepare_prompt` (src/generation/run_generation.py) and `get_anscheck_prompt`
(src/evaluation/evaluate_qa.py) of xiaowu0162/LongMemEval @ 9e0b455f step by step; the texts
are taken from the shared copies by walking their `ast` by upstream's own branch conditions
(`if cot:` inside the `merge_key_expansion_into_value ... 'none'` branch, and so on), never by
the locators memevals uses and never by running upstream code, so a wrong locator in memevals
cannot agree with this by construction. Kept apart from the tests so they import it by name.
"""

from __future__ import annotations

import ast
import copy
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

UPSTREAM = Path(os.environ["MEMEVALS_DATA_DIR"]) / "upstream" / "LongMemEval"
GENERATION = UPSTREAM / "src" / "generation" / "run_generation.py"
EVALUATION = UPSTREAM / "src" / "evaluation" / "evaluate_qa.py"


def _function(path: Path, name: str) -> ast.FunctionDef:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    [fn] = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name]
    return fn


def _if(root: ast.AST, test: str) -> ast.If:
    """The first `if` (or `elif`) under `root`, in source order, whose condition reads `test`."""
    found = [n for n in ast.walk(root) if isinstance(n, ast.If) and ast.unparse(n.test) == test]
    assert found, test
    return min(found, key=lambda n: n.lineno)


def _assigned(stmt: ast.stmt) -> str:
    """The string a plain assignment, an augmented one or a `'...'.format(...)` value holds."""
    assert isinstance(stmt, ast.Assign | ast.AugAssign), ast.dump(stmt)[:80]
    value = stmt.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        value = value.func.value
    assert isinstance(value, ast.Constant) and isinstance(value.value, str)
    return value.value


@dataclass(frozen=True)
class Upstream:
    """Upstream's texts, found by its branch conditions."""

    no_retrieval: str
    step_suffix: str
    answer: str
    answer_cot: str
    facts: str
    facts_cot: str
    con: str
    block: str
    nl_turn: str
    judge: Mapping[str, str]  # question type -> template; "abstention" for `_abs` ids


@cache
def upstream() -> Upstream:
    fn = _function(GENERATION, "prepare_prompt")
    top = _if(fn, "retriever_type == 'no-retrieval'")
    none = _if(
        fn,
        "merge_key_expansion_into_value is None or merge_key_expansion_into_value == 'none'",
    )
    replace = _if(fn, "merge_key_expansion_into_value == 'replace'")
    cot_none, cot_replace = none.body[0], replace.body[0]
    assert isinstance(cot_none, ast.If) and isinstance(cot_replace, ast.If)
    con = _if(fn, "con")
    session = _if(fn, "retriever_type in ['orig-session', 'flat-session', 'oracle-session']")
    nl = _if(fn, "type(chunk_entry) == list")
    loop = nl.body[0]
    assert isinstance(loop, ast.For)
    cot_suffix = top.body[1]
    assert isinstance(cot_suffix, ast.If)

    judge_fn = _function(EVALUATION, "get_anscheck_prompt")
    judge: dict[str, str] = {}
    for test, types in [
        (
            "task in ['single-session-user', 'single-session-assistant', 'multi-session']",
            ("single-session-user", "single-session-assistant", "multi-session"),
        ),
        ("task == 'temporal-reasoning'", ("temporal-reasoning",)),
        ("task == 'knowledge-update'", ("knowledge-update",)),
        ("task == 'single-session-preference'", ("single-session-preference",)),
    ]:
        text = _assigned(_if(judge_fn, test).body[0])
        judge.update(dict.fromkeys(types, text))
    judge["abstention"] = _assigned(_if(judge_fn, "not abstention").orelse[0])
    return Upstream(
        no_retrieval=_assigned(top.body[0]),
        step_suffix=_assigned(cot_suffix.body[0]),
        answer=_assigned(cot_none.orelse[0]),
        answer_cot=_assigned(cot_none.body[0]),
        facts=_assigned(cot_replace.orelse[0]),
        facts_cot=_assigned(cot_replace.body[0]),
        con=_assigned(con.body[0]),
        block=_assigned(session.body[0]),
        nl_turn=_assigned(loop.body[0]),
        judge=judge,
    )


def load_entries(path: Path) -> dict[str, dict[str, Any]]:
    """A LongMemEval file's instances by question id, as upstream's `json.load` reads them."""
    return {e["question_id"]: e for e in json.loads(path.read_text(encoding="utf-8"))}


def _chunks(
    entry: Mapping[str, Any], retriever_type: str, ranked: list[str] | None
) -> list[tuple[str, Any]]:
    """`retrieved_chunks` as prepare_prompt collects them (useronly false, no expansion)."""
    date_of: dict[str, str] = {}
    entry_of: dict[str, Any] = {}
    for date, sid, session in zip(
        entry["haystack_dates"],
        entry["haystack_session_ids"],
        entry["haystack_sessions"],
        strict=True,
    ):
        date_of[sid] = date
        entry_of[sid] = session
    chunks: list[tuple[str, Any]] = []
    if retriever_type in ("orig-session", "oracle-session"):
        chunks = list(zip(entry["haystack_dates"], entry["haystack_sessions"], strict=True))
    elif retriever_type == "flat-session":
        assert ranked is not None
        for cid in ranked:
            sid = cid.replace("noans_", "answer_")
            chunks.append((date_of[sid], entry_of[sid]))
    elif retriever_type == "flat-turn":
        assert ranked is not None
        for cid in ranked:
            converted = cid.replace("noans_", "answer_")
            sid = "_".join(converted.split("_")[:-1])
            turn = int(converted.split("_")[-1]) - 1  # upstream's turn ids count from 1
            shown = [entry_of[sid][turn]]
            if turn + 1 < len(entry_of[sid]):
                shown.append(entry_of[sid][turn + 1])
            chunks.append((date_of[sid], shown))
    else:
        raise AssertionError(retriever_type)
    return chunks


def _clean(chunks: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    for _, session in chunks:
        for turn in session:
            if isinstance(turn, dict) and "has_answer" in turn:
                turn.pop("has_answer")
    return chunks


def _history(chunks: list[tuple[str, Any]], history_format: str) -> str:
    up = upstream()
    history = ""
    for i, (date, chunk) in enumerate(chunks):
        if history_format == "json":
            body = "\n" + json.dumps(chunk)
        else:
            body = ""
            for turn in chunk:
                body += up.nl_turn.format(turn["role"], turn["content"].strip())
        history += up.block.format(i + 1, date, body)
    return history


def note_requests(
    entry: Mapping[str, Any],
    retriever_type: str,
    ranked: list[str] | None = None,
    topk: int = 10**6,
) -> list[str]:
    """Chain-of-note's requests, in upstream's order (before its date sort)."""
    entry = copy.deepcopy(entry)
    chunks = _clean(_top(_chunks(entry, retriever_type, ranked), retriever_type, topk))
    return [
        upstream().con.format(date, json.dumps(chunk), entry["question_date"], entry["question"])
        for date, chunk in chunks
    ]


def _top(chunks: list[tuple[str, Any]], retriever_type: str, topk: int) -> list[tuple[str, Any]]:
    return chunks[-topk:] if retriever_type.startswith("orig-") else chunks[:topk]


def reader_prompt(
    entry: Mapping[str, Any],
    *,
    retriever_type: str,
    history_format: str = "json",
    cot: bool = False,
    ranked: list[str] | None = None,
    topk: int = 10**6,
    notes: Mapping[str, str] | None = None,
    cut: Callable[[str], str] | None = None,
) -> str:
    """prepare_prompt's message: `notes` maps each note request to the model's note (con),
    `cut` truncates the history string (upstream's tokenizer cut)."""
    up = upstream()
    if retriever_type == "no-retrieval":
        template = up.no_retrieval + (up.step_suffix if cot else "")
        return template.format(entry["question"])
    template = up.answer_cot if cot else up.answer
    entry = copy.deepcopy(entry)
    chunks = _clean(_top(_chunks(entry, retriever_type, ranked), retriever_type, topk))
    if notes is not None:
        with_notes = []
        for date, chunk in chunks:
            request = up.con.format(
                date, json.dumps(chunk), entry["question_date"], entry["question"]
            )
            with_notes.append((date, {"session_summary": notes[request].strip()}))
        chunks = with_notes
    chunks.sort(key=lambda x: x[0])
    history = _history(chunks, history_format)
    assert history != ""
    if cut is not None:
        history = cut(history)
    return template.format(history, entry["question_date"], entry["question"])


def facts_prompt(entry: Mapping[str, Any], facts: list[tuple[str, str]], cot: bool) -> str:
    """The `replace` configuration: each chunk is a fact string (json history only)."""
    up = upstream()
    chunks = sorted(facts, key=lambda x: x[0])
    history = "".join(
        up.block.format(i + 1, date, "\n" + json.dumps(fact))
        for i, (date, fact) in enumerate(chunks)
    )
    template = up.facts_cot if cot else up.facts
    return template.format(history, entry["question_date"], entry["question"])


def judge_prompt(entry: Mapping[str, Any], response: str) -> str:
    """get_anscheck_prompt(qtype, question, answer, hypothesis, abstention='_abs' in id)."""
    up = upstream()
    if "_abs" in entry["question_id"]:
        template = up.judge["abstention"]
    else:
        template = up.judge[entry["question_type"]]
    return template.format(entry["question"], entry["answer"], response)


def label(reply: str) -> bool:
    """evaluate_qa's label: "yes" in the stripped, lower-cased grader reply."""
    return "yes" in reply.strip().lower()
