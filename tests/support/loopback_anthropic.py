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
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

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


class LoopbackAnthropic:
    """The scripted Messages API (the module docstring)."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

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

    def __enter__(self) -> LoopbackAnthropic:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(body)
                data = json.dumps(outer._message(body)).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
