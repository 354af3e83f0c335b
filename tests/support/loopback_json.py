"""A JSON-over-POST server on a free 127.0.0.1 port, the base of the scripted provider APIs
(loopback_anthropic, loopback_responses): a subclass says what to answer to one request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeVar

_L = TypeVar("_L", bound="JsonLoopback")


class JsonLoopback:
    """Serves every POST with `answer(path, body)` as JSON, between `with` and its end."""

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """The JSON answer to one request (path without its query)."""
        raise NotImplementedError

    def __enter__(self: _L) -> _L:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                data = json.dumps(outer.answer(self.path.split("?")[0], body)).encode()
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
