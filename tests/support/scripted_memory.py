"""A deterministic stand-in for the `memory` model role, in-process and from the real CLI.

It reads the prompts of the built-in `observations` and `summaries` systems the way a model
would: every turn line `[<turn id>] <speaker>: <text>` of the session becomes one fact citing
that turn; a summary request is answered with the session's turn texts joined. Usage from the
command line: `python tests/support/scripted_memory.py eval memevals/locomo -T memory=observations
--model-role memory=scripted_memory/facts ...`.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from inspect_ai.model import ChatMessage, GenerateConfig
from scripted_api import run_inspect, scripted_provider

_TURN = re.compile(r"^\[([^\]\s]+)\] ([^:]+): (.*)$", re.MULTILINE)


def scripted_facts(user_prompt: str) -> str:
    """One fact per shown turn, citing it (the observations reply format)."""
    facts = [
        {"fact": f"{speaker} said: {text}", "turns": [turn_id]}
        for turn_id, speaker, text in _TURN.findall(user_prompt)
    ]
    return json.dumps(facts)


def scripted_summary(user_prompt: str) -> str:
    """The session's lines joined: a summary that keeps every word (enough for retrieval)."""
    lines = [ln for ln in user_prompt.splitlines() if ": " in ln and not ln.startswith("Session")]
    return " ".join(lines) or "Nothing happened."


def memory_reply(messages: list[ChatMessage], config: GenerateConfig) -> str:
    """Facts for an observations prompt (its system message asks for "fact"s), else a summary."""
    system, user = messages[0].text, messages[-1].text
    return scripted_facts(user) if '"fact"' in system else scripted_summary(user)


scripted_provider("scripted_memory", memory_reply, usage=True)


# --------------------------------------------------------------------------------------------
# A scripted memory system (the subject under test, not its model)

#: `empty_on` entry that makes every question come back empty.
EVERY_QUESTION = "*"


class SparseIndex:
    """Keyword overlap over the turns; nothing for the questions in `empty_on`, an exception for
    those in `fail_on` (question texts, as the benchmark asks them)."""

    def __init__(
        self, rows: list[dict[str, str]], empty_on: frozenset[str], fail_on: frozenset[str]
    ) -> None:
        self.rows = rows
        self.empty_on = empty_on
        self.fail_on = fail_on
        # each row's words once, not once per question (lm-eval fills every document of a task)
        self.words = [set(row["text"].lower().split()) for row in rows]

    def retrieve(self, query: Any) -> list[Any]:
        from memevals.core.memory_system import MemoryItem

        if query.text in self.fail_on:
            raise TimeoutError(f"scripted backend timed out on {query.text!r}")
        if query.text in self.empty_on or EVERY_QUESTION in self.empty_on:
            return []  # found nothing: an answer, not a failure
        words = set(query.text.lower().split())
        ranked = sorted(
            range(len(self.rows)),
            key=lambda n: (-len(words & self.words[n]), n),
        )
        return [
            MemoryItem(text=self.rows[n]["text"], source_ids=(self.rows[n]["id"],), verbatim=True)
            for n in ranked[: query.k]
        ]

    def answer(self, query: Any) -> str:
        """Its own answer (`memory_answers`): the best item's text, or that it found nothing."""
        items = self.retrieve(query)
        return items[0].text if items else "I found nothing about that."


class SparseSystem:
    """A memory system that finds nothing for chosen questions and fails on others."""

    name = "scripted_sparse"
    version = "1"

    def __init__(self, empty_on: Any = (), fail_on: Any = ()) -> None:
        self.empty_on = frozenset(str(q) for q in empty_on)
        self.fail_on = frozenset(str(q) for q in fail_on)

    @property
    def args(self) -> dict[str, Any]:
        return {"empty_on": sorted(self.empty_on), "fail_on": sorted(self.fail_on)}

    def ingest(self, history: Any, store: Path, model: Any) -> Any:
        from memevals.core.memory_system import IngestReport

        rows = [
            {"id": t.turn_id, "text": t.search_text or t.text}
            for s in history.sessions
            for t in s.turns
        ]
        (store / "rows.json").write_text(json.dumps(rows), encoding="utf-8")
        return IngestReport(items_stored=len(rows))

    def open(self, store: Path, history: Any) -> SparseIndex:
        rows = json.loads((store / "rows.json").read_text(encoding="utf-8"))
        return SparseIndex(rows, self.empty_on, self.fail_on)


def sparse_system(empty_on: Any = (), fail_on: Any = ()) -> SparseSystem:
    """Entry point of `scripted_sparse` (memory_args `empty_on`, `fail_on`: question texts)."""
    return SparseSystem(empty_on, fail_on)


def register_sparse_system(folder: Path) -> str:
    """Register `scripted_sparse` in the `memevals.memory_systems` entry-point group without
    installing anything: a distribution's metadata folder under `folder`. Returns the
    PYTHONPATH that makes a subprocess (the real CLIs) find it; in-process, put `folder` on
    sys.path (this module is importable from the tests folder)."""
    info = folder / "memevals_scripted_sparse-1.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: memevals-scripted-sparse\nVersion: 1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[memevals.memory_systems]\nscripted_sparse = scripted_memory:sparse_system\n",
        encoding="utf-8",
    )
    return os.pathsep.join([str(Path(__file__).resolve().parent), str(folder)])


if __name__ == "__main__":
    run_inspect()
