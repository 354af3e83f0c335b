"""Deterministic tool-call answers to langmem 0.0.30's memory manager, served by a loopback
OpenAI-compatible server on 127.0.0.1 (tests/support/loopback_openai.py), answering with tool
calls.

LangMem's manager sends one chat completion per batch of messages: the conversation in a
`<session_...>` section of the user message, the `Memory` tool (insert a memory) and, when
the store already holds related memories, trustcall's `PatchDoc` tool (patch one of the
`<existing>` instances listed in the system message). `langmem_memories` answers as a model
would:

- one `Memory` call per speaker of the batch, `memory_sentence(date, speaker, texts)`: the
  date of their first line and the start of their lines;
- with `patch_marker` set (`LangMemScript(patch_marker=...)`), a batch holding a line with
  that text also patches the first existing memory: `PatchDoc` replacing its content with
  `PATCHED_PREFIX` + the old content, so a test sees an update;
- the endpoint check of memevals.memory_systems.endpoint is answered by the server itself
  (tests/support/loopback_openai.py), not counted in its `requests`.

Any other request (no `Memory` tool) is an error (the server answers 500 with the message),
so a LangMem call this script does not know shows up instead of being answered wrongly.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from loopback_openai import LoopbackOpenAI

__all__ = [
    "MEMORY_WORDS",
    "PATCHED_PREFIX",
    "LangMemScript",
    "LoopbackTools",
    "conversation_lines",
    "langmem_memories",
    "memory_sentence",
    "tool_calls",
]

#: A memory's length in words: short memories keep the embedder's share of ingestion small.
MEMORY_WORDS = 30
PATCHED_PREFIX = "Updated: "

#: One turn as memevals' langmem system writes it.
_LINE = re.compile(r"^\[(?P<date>[^\]]*)\] (?P<speaker>[^:\n]{1,80}): (?P<text>.*)$")
_SESSION = re.compile(r"<session_[^>]*>\n(.*?)\n</session_[^>]*>", re.S)
_EXISTING = re.compile(r"<instance id=(?P<id>\S+) schema_type=")


def tool_calls(calls: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    """The assistant message making these tool calls: (function name, arguments) pairs."""
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for n, (name, args) in enumerate(calls)
        ],
    }


class LoopbackTools(LoopbackOpenAI):
    """The loopback server, whose usage also counts the words of a tool call's arguments as
    completion tokens (the base server counts the content's, which a tool call leaves
    empty)."""

    def _completion(self, body: dict[str, Any], answer: str | dict[str, Any]) -> dict[str, Any]:
        out = super()._completion(body, answer)
        calls = out["choices"][0]["message"].get("tool_calls") or []
        if calls:
            words = sum(len(str(c["function"]["arguments"]).split()) for c in calls)
            usage = out["usage"]
            usage["completion_tokens"] = words
            usage["total_tokens"] = usage["prompt_tokens"] + words
        return out


def _tools(body: dict[str, Any]) -> set[str]:
    return {str(t.get("function", {}).get("name")) for t in body.get("tools") or []}


def conversation_lines(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(date, speaker, text) of each turn in the request's `<session_...>` section; a line
    that does not start so continues the previous turn."""
    user = [str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "user"]
    # the first: trustcall's retry after a failed call adds a user message asking for a fix
    found = [m for m in map(_SESSION.search, user) if m is not None]
    if not found:
        raise ValueError("no user message has a <session_...> section (not a LangMem call)")
    m = found[0]
    lines: list[tuple[str, str, str]] = []
    for line in m.group(1).splitlines():
        match = _LINE.match(line.strip())
        if match:
            lines.append((match["date"], match["speaker"].strip(), match["text"].strip()))
        elif lines and line.strip() and not line.startswith("=" * 8):
            date, speaker, text = lines[-1]
            lines[-1] = (date, speaker, f"{text} {line.strip()}")
    return lines


def memory_sentence(date: str, speaker: str, texts: list[str]) -> str:
    """The memory written for one speaker of a batch: the first `MEMORY_WORDS` words of their
    lines, dated."""
    words = " ".join(texts).split()[:MEMORY_WORDS]
    return f"On {date}, {speaker} said: " + " ".join(words)


def _existing(body: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, content) of each existing memory listed in the system message."""
    system = " ".join(
        str(m.get("content", "")) for m in body.get("messages", []) if m.get("role") == "system"
    )
    found = []
    for m in _EXISTING.finditer(system):
        rest = system[m.end() :]
        content = re.search(r"\{'content': (?P<q>['\"])(?P<c>.*?)(?P=q)\}", rest, re.S)
        found.append((m["id"], content["c"] if content else ""))
    return found


@dataclass
class LangMemScript:
    """The scripted LangMem LLM: counts the requests of each kind and answers them."""

    patch_marker: str | None = None
    kinds: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _count(self, kind: str) -> None:
        with self.lock:
            self.kinds[kind] = self.kinds.get(kind, 0) + 1

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        if "Memory" not in _tools(body):
            raise ValueError(f"loopback_langmem: no scripted answer for tools {_tools(body)}")
        self._count("manager")
        return langmem_memories(body, self.patch_marker)


def langmem_memories(body: dict[str, Any], patch_marker: str | None = None) -> dict[str, Any]:
    """The reply to one manager call: a `Memory` per speaker (and a `PatchDoc`, see the
    module's docstring)."""
    by_speaker: dict[str, tuple[str, list[str]]] = {}
    lines = conversation_lines(body)
    for date, speaker, text in lines:
        by_speaker.setdefault(speaker, (date, []))[1].append(text)
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Memory", {"content": memory_sentence(date, speaker, texts)})
        for speaker, (date, texts) in by_speaker.items()
    ]
    existing = _existing(body)
    if patch_marker and existing and any(patch_marker in text for _, _, text in lines):
        doc_id, old = existing[0]
        patch = {"op": "replace", "path": "/content", "value": PATCHED_PREFIX + old}
        calls.append(
            ("PatchDoc", {"json_doc_id": doc_id, "planned_edits": "mark", "patches": [patch]})
        )
    return tool_calls(calls)
