"""The OpenAI-compatible path for real: the `inspect` CLI runs memevals/locomo against a local
chat-completions server (stdlib HTTP on 127.0.0.1, loopback only) through `openai-api/...`.

The server answers like a model that knows the gold answers and reports cached prompt tokens
the way OpenAI does (`usage.prompt_tokens_details.cached_tokens`, here: the longest prefix
shared with an earlier request, 4 characters a token), so the log's cache accounting and
`memevals-compare`'s token columns are exercised end to end.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_support import run_inspect_cli
from inspect_ai.log import read_eval_log

from memevals.benchmarks.locomo.data import load_locomo
from memevals.benchmarks.locomo.prompts import NOT_MENTIONED
from memevals.tools.compare import load_rows

pytest.importorskip("openai", reason="the openai-api provider needs the openai package")

MODEL = "tiny-chat"


class _Farm:
    """Scripted chat-completions backend: gold answers by question text, prefix cache."""

    def __init__(self) -> None:
        self.answers: dict[str, str] = {}
        for conv in load_locomo():
            for qa in conv.qa:
                gold = NOT_MENTIONED if qa.answer is None else str(qa.answer)
                self.answers.setdefault(qa.question.strip(), gold)
        self.requests: list[dict[str, Any]] = []
        self.seen: list[str] = []
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body["messages"]
        prompt = "".join(f"<{m['role']}>{m['content']}" for m in messages)
        user = messages[-1]["content"]
        # the question is wherever the protocol's layout puts it: the longest known one asked
        question = max((q for q in self.answers if q in user), key=len)
        answer = self.answers[question]
        if "(a) " in user:  # two-option question: reply with the refusal option's letter
            answer = "a" if f"(a) {NOT_MENTIONED}" in user else "b"
        with self.lock:
            self.requests.append(body)
            cached = max((_common(prompt, p) for p in self.seen), default=0) // 4
            self.seen.append(prompt)
        prompt_tokens = max(1, len(prompt) // 4)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": answer},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": len(answer.split()),
                "total_tokens": prompt_tokens + len(answer.split()),
                "prompt_tokens_details": {"cached_tokens": min(cached, prompt_tokens)},
            },
        }


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


@pytest.fixture
def farm() -> Iterator[tuple[str, _Farm]]:
    backend = _Farm()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.send_error(404, f"no route {self.path}")
                return
            if self.headers.get("Authorization") != "Bearer local-test-key":
                self.send_error(401, "bad key")
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            data = json.dumps(backend.reply(body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", backend
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.server
def test_inspect_cli_against_a_local_openai_compatible_server(
    farm: tuple[str, _Farm], tmp_path: Path, data_dir: Path
) -> None:
    base_url, backend = farm
    res = run_inspect_cli(
        [
            "eval",
            "memevals/locomo",
            "--model",
            f"openai-api/farm/{MODEL}",
            "--limit",
            "6",
            "--max-connections",
            "1",
            "--temperature",
            "0",
            "--log-dir",
            "logs",
            "--display",
            "none",
        ],
        cwd=tmp_path,
        env={
            "FARM_BASE_URL": base_url,
            "FARM_API_KEY": "local-test-key",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        },
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-3000:]

    # what the server received: six chat requests, one user message each (conversation, then
    # the question), as upstream's protocol sends them
    assert len(backend.requests) == 6
    for body in backend.requests:
        assert body["model"] == MODEL
        assert body["temperature"] == 0
        assert 32 in (body.get("max_tokens"), body.get("max_completion_tokens"))
        assert [m["role"] for m in body["messages"]] == ["user"]
    users = [body["messages"][0]["content"] for body in backend.requests]
    shared = os.path.commonprefix(users)  # noqa: RUF071 (characters are meant)
    # one conversation, byte-identical before the question: cacheable
    assert len(shared) >= 0.95 * min(len(u) for u in users)

    [log_path] = (tmp_path / "logs").glob("*.eval")
    log = read_eval_log(str(log_path))
    assert log.status == "success" and log.samples is not None and len(log.samples) == 6
    for s in log.samples:
        md = s.metadata
        gold = backend.answers[md["question"].strip()]
        if md["choices"]:
            gold = "ab"[md["choices"].index(NOT_MENTIONED)]
        assert s.output.completion == gold  # the server's reply reached the scorer unchanged
    assert log.results is not None
    f1 = next(sc for sc in log.results.scores if sc.name == "locomo_f1_scorer")
    assert f1.metrics["mean"].value == pytest.approx(1.0)  # the server knows every answer

    # the provider's cache report reaches the log: requests 2..6 reuse the conversation
    usage = log.stats.model_usage[f"openai-api/farm/{MODEL}"]
    first = len("<user>" + shared) // 4
    assert usage.input_tokens_cache_read is not None
    assert usage.input_tokens_cache_read >= 5 * first * 0.99

    [row] = load_rows([str(log_path)])
    assert row.model == f"openai-api/farm/{MODEL}" and row.context == "full"
    assert row.usage["cache_read_tokens"] == usage.input_tokens_cache_read
    assert row.kinds["f1"].overall == pytest.approx(1.0)
