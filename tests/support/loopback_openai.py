"""A deterministic OpenAI-compatible chat-completions server on 127.0.0.1, for tests.

`LoopbackOpenAI(reply)` serves `POST /v1/chat/completions` on a free loopback port (stdlib
`ThreadingHTTPServer`, nothing else reachable), records every request body it receives and
answers with whatever `reply(body)` returns:

- a `str`: the assistant message's content (usage counts words, 1 token each);
- a `dict`: the assistant message itself (e.g. with `tool_calls`; a `finish_reason` key is the
  choice's, not the message's);
- an `HttpFailure`: that HTTP status and body (for 5xx / 4xx tests).

The endpoint check a memory system makes before ingesting (memevals.memory_systems.endpoint)
is answered by the server itself, as a capable server would, and recorded in `probes`, not in
`requests` (so the counts of a system's own calls stay exact); `answer_probes=False` hands
probes to `reply` like any request (and records them in both).

`mem0_facts` is a `reply` for mem0 2.2.1's extraction call: it reads the "## New Messages"
section of the user prompt and returns one fact per message line, as mem0 parses it:
`{"memory": [{"id": "0", "text": "..."}]}`. `plain(text)` answers every call with `text`, for a
generic chat model.

    with LoopbackOpenAI(mem0_facts) as server:
        client = OpenAI(base_url=server.url, api_key="x")
        ...
        assert server.count == 3
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from memevals.memory_systems.endpoint import PROBE_NAME, is_probe

__all__ = [
    "HttpFailure",
    "LoopbackOpenAI",
    "fact_sentence",
    "free_port",
    "json_mode_only",
    "mem0_facts",
    "new_messages",
    "plain",
    "probe_answer",
]

#: The line memevals' mem0 system writes per turn, as mem0 prefixes it with the role.
_LINE = re.compile(r"^(user|assistant): \[(?P<date>[^\]]*)\] (?P<speaker>[^:]+): (?P<text>.*)$")


@dataclass(frozen=True)
class HttpFailure:
    """Answer a request with this HTTP status and body instead of a completion."""

    status: int
    body: str = "loopback failure"


Reply = Callable[[dict[str, Any]], str | dict[str, Any] | HttpFailure]


def probe_answer(body: dict[str, Any]) -> str | dict[str, Any]:
    """What a capable server answers to an endpoint check: the JSON object it asks for; for a
    tool-calling check the one tool call; for a system's own check call with other tools
    (langmem's manager on its test session) a call of the first tool, each required string
    argument set to a sentence of the session."""
    tools = [t.get("function", {}) for t in body.get("tools") or []]
    if not tools:
        return '{"ok": true}'
    names = [str(t.get("name")) for t in tools]
    arguments: dict[str, Any]
    if PROBE_NAME in names:
        name, arguments = PROBE_NAME, {"ok": True}
    else:
        schema = tools[0].get("parameters") or {}
        name = names[0]
        arguments = {
            str(k): "Alex adopted a beagle named Biscuit." for k in schema.get("required", [])
        }
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_probe",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def free_port() -> int:
    """A loopback port nothing listens on (bound, read and released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def json_mode_only(body: dict[str, Any]) -> str | dict[str, Any] | HttpFailure:
    """A reply as from llama-cpp-python's server 0.3.36, which takes `response_format` `text`
    or `json_object` but answers `json_schema` with HTTP 500; what it does serve is answered as
    a capable server answers an endpoint check (`probe_answer`)."""
    kind = (body.get("response_format") or {}).get("type", "text")
    if kind not in ("text", "json_object"):
        return HttpFailure(500, f"response_format type {kind!r}: only 'text' or 'json_object'")
    return probe_answer(body)


def plain(text: str) -> Reply:
    """A reply that answers every request with `text`."""
    return lambda body: text


def new_messages(body: dict[str, Any]) -> str:
    """The "## New Messages" section of mem0's extraction prompt (the last user message)."""
    user = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not user:
        raise ValueError("the request has no user message")
    prompt = str(user[-1].get("content", ""))
    start = prompt.find("## New Messages\n")
    if start < 0:
        raise ValueError("the user prompt has no '## New Messages' section (not a mem0 call)")
    rest = prompt[start + len("## New Messages\n") :]
    end = rest.find("\n\n## ")
    return rest if end < 0 else rest[:end]


def fact_sentence(date: str, speaker: str, text: str) -> str:
    """The fact `mem0_facts` extracts from one message line."""
    return f"On {date}, {speaker} said: {text.strip()}"


def mem0_facts(body: dict[str, Any]) -> str:
    """mem0's extraction reply: one fact per "[date] speaker: text" line of the new messages;
    a line that does not start so continues the previous message."""
    facts: list[str] = []
    for line in new_messages(body).splitlines():
        match = _LINE.match(line)
        if match:
            facts.append(fact_sentence(match["date"], match["speaker"], match["text"]))
        elif facts and line.strip():
            facts[-1] += " " + line.strip()
    memory = [{"id": str(n), "text": text} for n, text in enumerate(facts)]
    return json.dumps({"memory": memory})


class LoopbackOpenAI:
    """The server; a context manager (start on enter, stop on exit, bounded waits)."""

    def __init__(
        self,
        reply: Reply,
        *,
        api_key: str | None = None,
        start_timeout_s: float = 5.0,
        answer_probes: bool = True,
    ) -> None:
        self.reply = reply
        self.api_key = api_key  # when set, other keys get 401
        self.answer_probes = answer_probes
        self.probes: list[dict[str, Any]] = []  # endpoint checks (all of them)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []  # per request, names lower-cased
        self.lock = threading.Lock()
        self._start_timeout_s = start_timeout_s
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def count(self) -> int:
        """Requests received so far (answered or failed)."""
        with self.lock:
            return len(self.requests)

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the loopback server is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _completion(self, body: dict[str, Any], answer: str | dict[str, Any]) -> dict[str, Any]:
        prompt = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
        message = (
            dict(answer) if isinstance(answer, dict) else {"role": "assistant", "content": answer}
        )
        finish = message.pop("finish_reason", None) or (
            "tool_calls" if message.get("tool_calls") else "stop"
        )
        prompt_tokens = len(prompt.split())
        completion_tokens = len(str(message.get("content") or "").split())
        return {
            "id": f"chatcmpl-loopback-{self.count}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model", "loopback")),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }

    def start(self) -> LoopbackOpenAI:
        backend = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                probe = is_probe(body)
                answered = probe and backend.answer_probes
                with backend.lock:
                    if probe:
                        backend.probes.append(body)
                    if not answered:
                        backend.requests.append(body)
                        backend.headers.append({k.lower(): v for k, v in self.headers.items()})
                if backend.api_key is not None and (
                    self.headers.get("Authorization") != f"Bearer {backend.api_key}"
                ):
                    self._send(401, {"error": {"message": "bad key"}})
                    return
                if answered:
                    self._send(200, backend._completion(body, probe_answer(body)))
                    return
                try:
                    answer = backend.reply(body)
                except Exception as exc:  # a broken test reply is a 500, and visible
                    self._send(500, {"error": {"message": f"{type(exc).__name__}: {exc}"}})
                    return
                if isinstance(answer, HttpFailure):
                    self._send(answer.status, {"error": {"message": answer.body}})
                    return
                self._send(200, backend._completion(body, answer))

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        started = threading.Event()

        def serve() -> None:
            started.set()
            server.serve_forever(poll_interval=0.05)

        thread = threading.Thread(target=serve, name="loopback-openai", daemon=True)
        thread.start()
        if not started.wait(self._start_timeout_s):
            server.server_close()
            raise RuntimeError("the loopback server did not start")
        self._server, self._thread = server, thread
        return self

    def stop(self) -> None:
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> LoopbackOpenAI:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
