"""A scripted OpenAI Responses API on 127.0.0.1, for tests of Inspect's real `openai/` provider
with native compaction (imported by name: keep this module name unique).

`LoopbackResponses()` serves, on a free loopback port, and records by path:
- `POST /v1/responses`: a reply "Noted." to a write-pass session, `ANSWER` to anything else;
- `POST /v1/responses/input_tokens`: the request input's words, as its token count;
- `POST /v1/responses/compact`: the whole input replaced by one opaque compaction item.

    with LoopbackResponses() as server:
        ... OPENAI_BASE_URL=server.url ...
        assert server.paths.count("/v1/responses/compact") == ...
"""

from __future__ import annotations

import json
from typing import Any

from loopback_json import JsonLoopback

ANSWER = "pottery"


def _words(body: dict[str, Any]) -> int:
    return len(json.dumps(body.get("input", "")).split())


def _usage(n: int) -> dict[str, Any]:
    return {
        "input_tokens": n,
        "output_tokens": 1,
        "total_tokens": n + 1,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def _reply(body: dict[str, Any], number: int) -> dict[str, Any]:
    items = body.get("input", [])
    last = json.dumps(items[-1]) if isinstance(items, list) and items else json.dumps(items)
    text = "Noted." if "Session " in last and " of " in last else ANSWER
    message = {
        "type": "message",
        "id": f"msg_{number}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": 0,
        "model": body.get("model", "gpt"),
        "status": "completed",
        "output": [message],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": _usage(_words(body)),
    }


def _compacted(body: dict[str, Any], number: int) -> dict[str, Any]:
    item = {"type": "compaction", "id": f"cmp_{number}", "encrypted_content": "opaque"}
    return {
        "id": f"cmp_resp_{number}",
        "object": "response.compaction",
        "created_at": 0,
        "output": [item],
        "usage": _usage(_words(body)),
    }


class LoopbackResponses(JsonLoopback):
    """The scripted Responses API (the module docstring)."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer to one request."""
        self.paths.append(path)
        if path.endswith("/input_tokens"):
            return {"object": "response.input_tokens", "input_tokens": _words(body)}
        if path.endswith("/compact"):
            return _compacted(body, len(self.paths))
        return _reply(body, len(self.paths))
