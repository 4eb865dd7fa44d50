"""A scriptable HTTP/1.1 server on 127.0.0.1 for provider tests.

Each incoming request takes the next scripted `Reply` (status, headers, body chunks with optional
delays, drop the connection after N chunks, stall forever) and is recorded as a `RecordedRequest`
(method, path, headers, JSON body) whose `disconnected` event fires when the client closes the
connection before the reply was fully sent: that is how a test sees an abort reach the server.

Bodies with `chunked=True` use chunked transfer encoding, so a dropped connection is visible to the
client as an incomplete body rather than a clean end. Every reply carries `Connection: close`, so
one connection carries exactly one request.
"""

from __future__ import annotations

import json
import logging
import socket
import struct
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import SocketStream, TaskGroup

_log = logging.getLogger(__name__)


@dataclass
class Delay:
    """A pause between body chunks (seconds)."""

    seconds: float


@dataclass
class Gate:
    """The body waits here until `opened` is set (an event of the server's own loop)."""

    opened: anyio.Event = field(default_factory=anyio.Event)


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: list[bytes | Delay | Gate] = field(default_factory=list)
    content_type: str | None = "text/event-stream"
    chunked: bool = True
    # Close the connection after sending this many body chunks (no terminating chunk).
    drop_after: int | None = None
    # Reset the connection (TCP RST, as a crashed proxy does) after this many body chunks.
    reset_after: int | None = None
    # After the body (or after `drop_after` chunks if both are set, never) keep the connection open
    # without sending anything until the client goes away.
    stall: bool = False


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    disconnected: anyio.Event = field(default_factory=anyio.Event)
    # Set once the server has written the last byte it intended to write.
    finished: anyio.Event = field(default_factory=anyio.Event)

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    408: "Request Timeout",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


def sse_event(data: Any, event: str | None = None) -> bytes:
    """One SSE event; `data` is JSON-encoded unless it is already a string."""
    payload = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    head = f"event: {event}\n" if event else ""
    return (head + f"data: {payload}\n\n").encode()


def json_reply(status: int, body: Any, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status=status,
        headers=dict(headers or {}),
        body=[json.dumps(body).encode()],
        content_type="application/json",
        chunked=False,
    )


def sse_reply(events: Iterable[bytes | Delay | Gate], **kwargs: Any) -> Reply:
    return Reply(body=list(events), **kwargs)


class SSEServer:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._replies: deque[Reply] = deque()
        self._listener: Any = None
        self.port = 0
        self._request_seen = anyio.Event()
        # Answers each request from what it holds (a server that judges the body), before the script.
        self.responder: Callable[[RecordedRequest], Reply] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def script(self, *replies: Reply) -> None:
        self._replies.extend(replies)

    async def wait_for_request(self, n: int = 1) -> RecordedRequest:
        """The n-th request (1-based), once it has arrived."""
        while len(self.requests) < n:
            await self._request_seen.wait()
        return self.requests[n - 1]

    async def start(self, tg: TaskGroup) -> None:
        self._listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        self.port = self._listener.extra(anyio.abc.SocketAttribute.local_port)
        tg.start_soon(self._listener.serve, self._handle)

    async def aclose(self) -> None:
        if self._listener is not None:
            await self._listener.aclose()

    # --- one connection -------------------------------------------------------------------------

    async def _handle(self, stream: SocketStream) -> None:
        async with stream:
            try:
                parsed = await _read_request(stream)
            except (anyio.EndOfStream, anyio.BrokenResourceError, ValueError):
                return
            if parsed is None:
                return
            request = RecordedRequest(*parsed)
            self.requests.append(request)
            self._request_seen.set()
            self._request_seen = anyio.Event()
            reply = (
                self.responder(request)
                if self.responder is not None
                else self._replies.popleft()
                if self._replies
                else Reply(
                    status=500,
                    body=[b'{"error":{"message":"no scripted reply"}}'],
                    content_type="application/json",
                    chunked=False,
                )
            )
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._watch_close, stream, request, tg.cancel_scope)
                try:
                    await _send_reply(stream, reply)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
                    request.disconnected.set()
                else:
                    request.finished.set()
                tg.cancel_scope.cancel()

    @staticmethod
    async def _watch_close(stream: SocketStream, request: RecordedRequest, scope: anyio.CancelScope) -> None:
        # With one request per connection, any read ending means the client hung up.
        try:
            while await stream.receive():
                pass
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, ConnectionError):
            pass
        if not request.finished.is_set():
            request.disconnected.set()
            scope.cancel()


async def _read_request(stream: SocketStream) -> tuple[str, str, dict[str, str], bytes] | None:
    buffer = b""
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
        if len(buffer) > 1_000_000:
            raise ValueError("header too large")
    head, _, rest = buffer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += await stream.receive()
    return method, path, headers, rest[:length]


async def _send_reply(stream: SocketStream, reply: Reply) -> None:
    reason = _REASONS.get(reply.status, "Status")
    headers = {"connection": "close"}
    if reply.content_type is not None:
        headers["content-type"] = reply.content_type
    chunks = [c for c in reply.body if isinstance(c, bytes)]
    if reply.chunked:
        headers["transfer-encoding"] = "chunked"
    else:
        headers["content-length"] = str(sum(len(c) for c in chunks))
    headers.update({k.lower(): v for k, v in reply.headers.items()})
    head = f"HTTP/1.1 {reply.status} {reason}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    await stream.send((head + "\r\n").encode("latin-1"))
    sent = 0
    for item in reply.body:
        if isinstance(item, Delay):
            await anyio.sleep(item.seconds)
            continue
        if isinstance(item, Gate):
            await item.opened.wait()
            continue
        if not item:
            continue  # an empty chunk would end a chunked body
        if reply.drop_after is not None and sent >= reply.drop_after:
            return  # leaving the handler closes the socket mid-body
        if reply.reset_after is not None and sent >= reply.reset_after:
            _reset(stream)
            return
        await stream.send(f"{len(item):x}\r\n".encode() + item + b"\r\n" if reply.chunked else item)
        sent += 1
    if reply.drop_after is not None:
        return
    if reply.stall:
        await anyio.sleep_forever()
    if reply.chunked:
        await stream.send(b"0\r\n\r\n")


def _reset(stream: SocketStream) -> None:
    # SO_LINGER with a zero timeout makes the handler's close send RST instead of FIN.
    raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
    raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


FIXTURES = Path(__file__).parent / "fixtures"


def fixture_events(name: str) -> list[bytes]:
    """A recorded stream from `fixtures/`, one body chunk per SSE event."""
    text = (FIXTURES / name).read_text(encoding="utf-8")
    return [(block + "\n\n").encode() for block in text.split("\n\n") if block.strip()]


def fixture_bytes(name: str, size: int) -> list[bytes]:
    """A recorded stream cut into `size`-byte chunks, splitting lines and UTF-8 sequences."""
    raw = (FIXTURES / name).read_bytes()
    return [raw[i : i + size] for i in range(0, len(raw), size)]
