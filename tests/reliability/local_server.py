"""A tiny OpenAI-compatible server on 127.0.0.1 in a thread, for tests that start the daemon (or
the demo) as a subprocess: it lists models, streams a recorded chat completion, and records every
request it gets, headers included, so a test can see which model and which key reached it."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

SSE_TEXT = (Path(__file__).parents[1] / "providers" / "fixtures" / "openai_text.sse").read_bytes()


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any] | None


@dataclass
class LocalServer:
    url: str
    models: list[str]
    # When set, every chat request gets this status and an OpenAI-style error body.
    fail_status: int | None = None
    # When set, each listed model says this context window as llama-server does (`meta.n_ctx`).
    n_ctx: int | None = None
    # When set, each chat request's answer (status, body, content type) is this function's of its
    # JSON body, or the recorded stream where it returns None: a server's own refusals, reproduced.
    answer: Callable[[dict[str, Any]], tuple[int, bytes, str] | None] | None = None
    requests: list[Seen] = field(default_factory=list)

    def chats(self) -> list[Seen]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]


@contextmanager
def local_server(
    models: list[str],
    fail_status: int | None = None,
    n_ctx: int | None = None,
    answer: Callable[[dict[str, Any]], tuple[int, bytes, str] | None] | None = None,
) -> Iterator[LocalServer]:
    state = LocalServer(url="", models=models, fail_status=fail_status, n_ctx=n_ctx, answer=answer)

    class Handler(BaseHTTPRequestHandler):
        def _record(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            state.requests.append(
                Seen(
                    self.command,
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    json.loads(raw) if raw else None,
                )
            )

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            self._record()
            if self.path.endswith("/models"):
                meta = {"meta": {"n_ctx": state.n_ctx, "n_ctx_train": 8 * state.n_ctx}} if state.n_ctx else {}
                listing = {"object": "list", "data": [{"id": m, "object": "model", **meta} for m in state.models]}
                self._send(200, json.dumps(listing).encode(), "application/json")
            else:
                self._send(404, b"{}", "application/json")

        def do_POST(self) -> None:
            self._record()
            if state.fail_status is not None:
                # A refused key says so; a failing server says nothing about the request.
                if state.fail_status < 500:
                    error = {"error": {"message": "invalid api key", "type": "invalid_request_error"}}
                else:
                    error = {"error": {"message": "the server had an error", "type": "server_error"}}
                self._send(state.fail_status, json.dumps(error).encode(), "application/json")
            elif state.answer is not None and (own := state.answer(state.requests[-1].body or {})) is not None:
                self._send(*own)
            else:
                self._send(200, SSE_TEXT, "text/event-stream")

        def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
