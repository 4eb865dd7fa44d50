"""The ACP SDK's message transport over our stdio plumbing (modes/stdio.py, modes/framing.py).

The SDK's own stdio streams would write to `sys.stdout` and silently drop a line that is not
JSON. Plugging in at its message-level `Transport` seam keeps stdout private (claim_stdout),
writes without blocking (StdoutSink) and lets us answer what the SDK cannot: a line that is not
JSON gets -32700 and a JSON value that is not a request object gets -32600, both with `id: null`
as JSON-RPC 2.0 requires, and the next line is served as usual.

It also keeps the ids of the requests we sent the client (fs/*, session/request_permission) until
they are answered: a line skipped as too large, or one that is not JSON, that shows it answers one
of them becomes an error response to that request (data `{"unread": true}`), so the tool call
fails at once with the reason instead of waiting for its deadline (modes/editor_requests.py).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

import msgspec
from acp import RequestError

from pi_rpc.modes.acp.errors import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from pi_rpc.modes.editor_requests import answered_id, too_large_text, unread, unreadable_text
from pi_rpc.modes.envelope import RequestId, is_request_id
from pi_rpc.modes.framing import DEFAULT_MAX_MESSAGE_BYTES, FrameError, JsonlFrameReader
from pi_rpc.modes.stdio import StdoutSink, read_chunk

_log = logging.getLogger(__name__)

LocalMethod = Callable[[dict[str, Any]], dict[str, Any]]  # params -> result; raises RequestError
# Requests the SDK gave up on (a deadline, a cancel) are never answered: keep this many at most.
_MAX_ASKED = 1024


class StdioTransport:
    """JSON lines in from `stdin_fd`, out through `sink`; `receive` returns None at end of input."""

    def __init__(self, stdin_fd: int, sink: StdoutSink, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        # Requests the SDK does not route (methods older than its schema), answered here.
        self.local_methods: dict[str, LocalMethod] = {}
        self._stdin_fd = stdin_fd
        self._sink = sink
        self._max_message_bytes = max_message_bytes
        self._reader = JsonlFrameReader(max_message_bytes)
        self._asked: dict[RequestId, str] = {}  # id -> method of our requests the client has not answered
        self._frames: deque[bytes | FrameError] = deque()
        self._eof = False

    async def send(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # a request of ours: its answer may be unreadable
            if len(self._asked) >= _MAX_ASKED:
                del self._asked[next(iter(self._asked))]
            self._asked[message["id"]] = message["method"]
        self.send_now(message)

    def send_now(self, message: dict[str, Any]) -> None:
        """Write at once, in call order: session updates then the prompt's response."""
        self._sink.send(msgspec.json.encode(message))

    def send_delta(self, key: Hashable, text: str, message_for: Callable[[str], dict[str, Any]]) -> None:
        """A streamed chunk, in the same order as `send_now`; merged with the previous chunk of
        `key` while the client is behind (modes/writer.py)."""
        self._sink.send_delta(key, text, lambda merged: msgspec.json.encode(message_for(merged)))

    async def receive(self) -> dict[str, Any] | None:
        while True:
            while self._frames:
                message = self._decode(self._frames.popleft())
                if message is not None and not self._answer_locally(message):
                    return message
            if self._eof:
                return None
            chunk = await read_chunk(self._stdin_fd)
            if chunk:
                self._frames.extend(self._reader.feed(chunk))
            else:
                self._frames.extend(self._reader.finish())
                self._eof = True

    async def close(self) -> None:
        self._eof = True

    def _decode(self, frame: bytes | FrameError) -> dict[str, Any] | None:
        if isinstance(frame, FrameError):
            size = frame.size
            if size is not None and (
                failed := self._fail_unread(frame, lambda m: too_large_text(m, size, self._max_message_bytes))
            ):
                return failed
            self._error(PARSE_ERROR, "Parse error", frame.message)
            return None
        try:
            message = json.loads(frame)
        except (ValueError, RecursionError) as exc:
            reason = str(exc)
            if failed := self._fail_unread(unread(frame), lambda method: unreadable_text(method, reason)):
                return failed
            self._error(PARSE_ERROR, "Parse error", reason)
            return None
        if not isinstance(message, dict):
            self._error(INVALID_REQUEST, "Invalid request", "expected a JSON-RPC request object")
            return None
        method = message.get("method")
        if "method" in message and not isinstance(method, str):
            self._error(INVALID_REQUEST, "Invalid request", '"method" must be a string', message.get("id"))
            return None
        if method is None and "result" not in message and "error" not in message:
            self._error(INVALID_REQUEST, "Invalid request", 'missing "method"', message.get("id"))
            return None
        if method is not None and "id" in message and not is_request_id(message["id"]):
            self._error(INVALID_REQUEST, "Invalid request", '"id" must be a string or an integer')
            return None
        if method is None and is_request_id(answered := message.get("id")):
            self._asked.pop(answered, None)
        return message

    def _fail_unread(self, error: FrameError, reason: Callable[[str], str]) -> dict[str, Any] | None:
        """The error response that fails the request an unreadable line answered; None when it
        answered none of ours (then it is the client's malformed request, answered -32700)."""
        msg_id = answered_id(error)
        method = self._asked.pop(msg_id, None) if msg_id is not None else None
        if method is None:
            return None
        text = reason(method)
        _log.warning("%s", text)
        return {
            "jsonrpc": "2.0",
            "id": msg_id,
            "error": {"code": INTERNAL_ERROR, "message": text, "data": {"unread": True}},
        }

    def _answer_locally(self, message: dict[str, Any]) -> bool:
        handler = self.local_methods.get(message.get("method", ""))
        if handler is None or "id" not in message:
            return False
        params = message.get("params")
        try:
            result = handler(params if isinstance(params, dict) else {})
        except RequestError as exc:
            self.send_now({"jsonrpc": "2.0", "id": message["id"], "error": exc.to_error_obj()})
        else:
            self.send_now({"jsonrpc": "2.0", "id": message["id"], "result": result})
        return True

    def _error(self, code: int, text: str, details: str, request_id: object = None) -> None:
        _log.warning("%s: %s", text, details)
        if not is_request_id(request_id):
            request_id = None
        self.send_now(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text, "data": {"details": details}}}
        )
