"""An OpenAI-compatible chat-completions server on 127.0.0.1 for the benchmarks.

Both daemons are pointed at the same instance, so they see byte-identical SSE streams. The reply
is chosen from the request alone (no shared queue), because a daemon may send requests the
benchmark did not plan for: the last message being a tool result gets a short closing answer; a
user prompt holding `[[long]]` gets `long_deltas` tiny text deltas; `[[tool]]` gets one bash tool
call (`seq 1 200000`), `[[echo]]` one that prints a line, `[[sleep]]` one that sleeps (to be
aborted), `[[big]]` one that prints 200 MB, `[[turns]]` one echo call per turn until the request
holds `TURNS` tool results after its last user message; anything else gets a one-line answer.

Connections are kept alive (HTTP/1.1, chunked replies), as a provider's API keeps them.

Each reply body is encoded once and sent in `CHUNK_BYTES` pieces that ignore event boundaries,
so the server costs little next to the daemon under test and the daemons' SSE parsers see split
events, as they would behind a real proxy. It runs on threads (stdlib `http.server`) so the
benchmark's own blocking client code can drive the daemons meanwhile.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_log = logging.getLogger(__name__)

MODEL_ID = "bench-model"
CHUNK_BYTES = 16 * 1024
SHORT_ANSWER = "Hello from the loopback model."
FINAL_ANSWER = "The command printed the numbers from 1 to 200000."
TOOL_COMMAND = "seq 1 200000"
ECHO_COMMAND = "echo one"
# An unusual duration, so the benchmark can find this sleep among the machine's processes.
SLEEP_COMMAND = "sleep 31.7"
# 200 MB in 2,000,000 lines of 100 characters: what truncation and the full-output log cost.
BIG_OUTPUT_COMMAND = "head -c 200000000 /dev/zero | tr '\\0' x | fold -w 100"
TURNS = 20


def _event(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _ending(finish: str, output_tokens: int) -> list[bytes]:
    usage = {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": MODEL_ID,
        "choices": [],
        "usage": {"prompt_tokens": 100, "completion_tokens": output_tokens, "total_tokens": 100 + output_tokens},
    }
    return [_event(_chunk({}, finish)), _event(usage), b"data: [DONE]\n\n"]


def text_body(pieces: list[str]) -> bytes:
    events = [_event(_chunk({"role": "assistant", "content": ""}))]
    events += [_event(_chunk({"content": piece})) for piece in pieces]
    return b"".join(events + _ending("stop", len(pieces)))


def tool_body(command: str) -> bytes:
    arguments = json.dumps({"command": command})
    call = {"index": 0, "id": "call_bench_1", "type": "function", "function": {"name": "bash", "arguments": ""}}
    events = [_event(_chunk({"role": "assistant", "content": None, "tool_calls": [call]}))]
    # Split the arguments the way real models do: a few fragments, not one blob.
    for start in range(0, len(arguments), 8):
        fragment = {"index": 0, "function": {"arguments": arguments[start : start + 8]}}
        events.append(_event(_chunk({"tool_calls": [fragment]})))
    return b"".join(events + _ending("tool_calls", 20))


def long_pieces(count: int) -> list[str]:
    """`count` small deltas (a word and a space, a newline every 16 words)."""
    return [f"w{i % 1000}" + ("\n" if i % 16 == 15 else " ") for i in range(count)]


def _prompt_text(body: dict[str, Any]) -> tuple[str, str]:
    """(role of the last message, text of the last user message) in a chat-completions request."""
    messages = body.get("messages") or []
    last_role = messages[-1].get("role", "") if messages else ""
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            return last_role, content if isinstance(content, str) else json.dumps(content)
    return last_role, ""


def _results_since_prompt(body: dict[str, Any]) -> int:
    """Tool results after the last user message: a `[[turns]]` prompt sent again in the same
    session (the profiler does) gets its `TURNS` turns again."""
    count = 0
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            break
        count += message.get("role") == "tool"
    return count


class LoopbackModel:
    """The server plus a count of what it answered (to check a run did what was planned)."""

    def __init__(self, long_deltas: int = 20_000) -> None:
        self.requests: list[str] = []  # the kind of each reply sent, in order
        # (request read, reply sent) per reply, on the benchmark's perf_counter clock: the server's
        # own cost, and where each daemon's turn starts and ends as the server sees it.
        self.served: list[tuple[float, float]] = []
        self._bodies = {
            "short": text_body([SHORT_ANSWER[:6], SHORT_ANSWER[6:]]),
            "final": text_body([FINAL_ANSWER]),
            "tool": tool_body(TOOL_COMMAND),
            "echo": tool_body(ECHO_COMMAND),
            "sleep": tool_body(SLEEP_COMMAND),
            "big": tool_body(BIG_OUTPUT_COMMAND),
            "long": text_body(long_pieces(long_deltas)),
        }
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-model", daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def body_bytes(self, kind: str) -> int:
        return len(self._bodies[kind])

    def choose(self, body: dict[str, Any]) -> str:
        last_role, prompt = _prompt_text(body)
        if "[[turns]]" in prompt:
            return "echo" if _results_since_prompt(body) < TURNS else "final"
        if last_role == "tool":
            return "final"
        if "[[long]]" in prompt:
            return "long"
        if "[[tool]]" in prompt:
            return "tool"
        if "[[echo]]" in prompt:
            return "echo"
        if "[[sleep]]" in prompt:
            return "sleep"
        if "[[big]]" in prompt:
            return "big"
        return "short"

    def __enter__(self) -> LoopbackModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: on a kept-alive connection, Nagle holds a small write until the client
            # ACKs the one before, and a delayed ACK makes that ~40 ms per reply.
            disable_nagle_algorithm = True

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
                _log.debug(format, *args)

            def do_GET(self) -> None:  # noqa: N802 - stdlib naming
                payload = json.dumps({"object": "list", "data": [{"id": MODEL_ID, "object": "model"}]}).encode()
                self._plain(200, payload)

            def do_POST(self) -> None:  # noqa: N802 - stdlib naming
                arrived = time.perf_counter()
                length = int(self.headers.get("content-length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._plain(400, b'{"error":{"message":"bad json"}}')
                    return
                kind = model.choose(body)
                model.requests.append(kind)
                data = model._bodies[kind]
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                try:
                    for start in range(0, len(data), CHUNK_BYTES):
                        piece = data[start : start + CHUNK_BYTES]
                        last = b"0\r\n\r\n" if start + CHUNK_BYTES >= len(data) else b""
                        self.wfile.write(b"%x\r\n%s\r\n%s" % (len(piece), piece, last))
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True  # the daemon gave up on the stream
                model.served.append((arrived, time.perf_counter()))

            def _plain(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(payload)
                self.close_connection = True

        return Handler
