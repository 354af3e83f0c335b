"""A scripted Anthropic Messages API on 127.0.0.1, for tests of what Inspect's real `anthropic/`
provider sends (imported by name: keep this module name unique).

`LoopbackAnthropic()` serves `POST /v1/messages` (and its beta form) on a free loopback port,
records every request body, and answers as the agent mode's scripted model does with Claude's
memory tool: a write-pass session (`Session <n> of ...`) gets a `tool_use` creating
`/memories/session_<n>.md`, any other user message a `tool_use` viewing `/memories`, and a
tool result the text `ANSWER` (or "Saved." in a session).

    with LoopbackAnthropic() as server:
        ... ANTHROPIC_BASE_URL=server.url ...
        tools = [t for body in server.requests for t in body.get("tools", [])]
"""

from __future__ import annotations

import json
import re
from typing import Any

from loopback_json import JsonLoopback

ANSWER = "pottery"
_SESSION = re.compile(r"Session (\d+) of \d+ ")


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if b.get("type") == "text"]


def _has_tool_result(message: dict[str, Any]) -> bool:
    content = message.get("content")
    return isinstance(content, list) and any(b.get("type") == "tool_result" for b in content)


def reply_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the reply to one request (the module docstring)."""
    messages = body.get("messages", [])
    users = [m for m in messages if m.get("role") == "user" and not _has_tool_result(m)]
    asked = " ".join(_texts(users[-1])) if users else ""
    session = _SESSION.search(asked)
    if messages and _has_tool_result(messages[-1]):
        return [{"type": "text", "text": "Saved." if session else ANSWER}]
    if session:
        path = f"/memories/session_{session.group(1)}.md"
        args = {"command": "create", "path": path, "file_text": asked[-200:]}
    else:
        args = {"command": "view", "path": "/memories"}
    return [{"type": "tool_use", "id": f"toolu_{len(messages)}", "name": "memory", "input": args}]


class LoopbackAnthropic(JsonLoopback):
    """The scripted Messages API (the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """Record the request and answer it (any path: the Messages API and its beta form)."""
        self.requests.append(body)
        return self._message(body)

    def _message(self, body: dict[str, Any]) -> dict[str, Any]:
        content = reply_content(body)
        tool = content[0]["type"] == "tool_use"
        return {
            "id": f"msg_{len(self.requests)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "content": content,
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": len(json.dumps(body).split()), "output_tokens": 5},
        }
