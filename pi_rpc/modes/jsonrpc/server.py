"""The JSON-RPC front end: stdin frames in, the envelope checks, dispatch, framed messages out.

The lifecycle (the private stdout, the task group, signals, and every way out: stdin closed,
`exit`, SIGTERM/SIGINT) is `serve`'s, in modes/daemon.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal, NamedTuple

import anyio
import anyio.abc
import msgspec

from pi_rpc.agent import AgentEvent
from pi_rpc.ai import encode_json
from pi_rpc.modes.daemon import daemon_tables, serve
from pi_rpc.modes.editor_requests import (
    DEFAULT_DEADLINES,
    EditorDeadlines,
    too_large_text,
    unread,
    unreadable_text,
)
from pi_rpc.modes.envelope import RequestId, is_request_id
from pi_rpc.modes.event_output import forward_event
from pi_rpc.modes.framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    FrameError,
    JsonlFrameReader,
    LspFrameReader,
    encode_jsonl,
    encode_lsp,
)
from pi_rpc.modes.jsonrpc import handlers
from pi_rpc.modes.jsonrpc.client_requests import ClientRequests
from pi_rpc.modes.jsonrpc.errors import InvalidParams, InvalidRequest, ParseError
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification
from pi_rpc.modes.jsonrpc.rpc import Rpc
from pi_rpc.modes.stdio import StdoutSink, read_frames
from pi_rpc.session import AgentSession, SessionConfig, Step
from pi_rpc.tools import ProcessTables

_log = logging.getLogger(__name__)

Framing = Literal["lsp", "jsonl"]


class Daemon:
    """The JSON-RPC front end (`serve` in modes/daemon.py runs it): LSP or JSON-lines frames, our
    own dispatcher, one session."""

    def __init__(
        self,
        config: SessionConfig,
        framing: Framing = "lsp",
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        stdin_fd: int = 0,
        stdout_fd: int | None = None,
        process_tables: ProcessTables | None = None,
        deadlines: EditorDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self.config = config
        self.deadlines = deadlines
        self.framing: Framing = framing
        self.max_message_bytes = max_message_bytes
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.process_tables = daemon_tables(process_tables, config)
        self._shutting_down = False
        self._hinted_json_lines = False

    async def run(self, warm_up: Sequence[Step] = ()) -> None:
        await serve(self, self.process_tables, self.stdout_fd, warm_up)

    def frame(self, body: bytes) -> bytes:
        return encode_lsp(body) if self.framing == "lsp" else encode_jsonl(body)

    async def start(self, tasks: anyio.abc.TaskGroup, sink: StdoutSink, stop: anyio.Event) -> None:
        self._client = client = ClientRequests(sink, self.deadlines)
        self._rpc = rpc = Rpc(sink, tasks)
        self._session = session = AgentSession(self.config, tasks)
        session.subscribe(_event_forwarder(sink), sink.wait_for_room)
        handlers.register(rpc, session, client, on_shutdown=self._begin_shutdown, on_exit=stop.set)
        tasks.start_soon(session.start_mcp_servers)  # settings.json mcpServers; `initialize` waits for them

    async def read(self) -> None:
        reader = (LspFrameReader if self.framing == "lsp" else JsonlFrameReader)(self.max_message_bytes)
        rpc = self._rpc
        await read_frames(self.stdin_fd, reader, lambda frame: self._dispatch(rpc, frame))
        _log.info("stdin closed; exiting")
        self._client.fail_all("the client closed its end of the pipe")

    async def close(self) -> None:
        await self._session.close()

    async def release(self) -> None:
        pass  # our own writer: nothing stands between the sink and the pipe

    def _begin_shutdown(self) -> None:
        self._shutting_down = True

    def _dispatch(self, rpc: Rpc, frame: bytes | FrameError) -> None:
        try:
            self._dispatch_frame(rpc, frame)
        except Exception:  # one bad message must never end the reader, and with it the daemon
            _log.exception("message dropped: handling it failed")

    def _dispatch_frame(self, rpc: Rpc, frame: bytes | FrameError) -> None:
        if isinstance(frame, FrameError):
            self._report_framing_error(frame)
            return
        message = _decode(frame)
        if isinstance(message, ParseFailure):
            _log.error("unparsable message: %s", message.reason)
            if self._client.fail_unread(unread(frame), lambda method: unreadable_text(method, message.reason)):
                return  # an answer of the client's: the request that waited for it has failed
            rpc.send_error(None, ParseError(f"Parse error: {message.reason}"))
            return
        if _is_response(message):
            # Ours (approval/request, fs/…) go to the request that waits; any other is dropped:
            # JSON-RPC forbids answering one.
            if not self._client.resolve(message):
                _log.warning(
                    "ignored a response from the client (id %r): no request of ours has that id", message.get("id")
                )
            return
        problem = _invalid_request(message)
        if problem is not None:
            rpc.send_error(_reply_id(message), InvalidRequest(problem))
            return
        method = message["method"]
        is_request = "id" in message
        if self._shutting_down and method != "exit":
            if is_request:
                rpc.send_error(message["id"], InvalidRequest("Invalid Request: the server is shutting down"))
            return
        if method == "shutdown" and is_request:
            self._shutting_down = True  # now, not when its handler runs: requests pipelined after it must not
        if method == "$/cancelRequest":
            self._cancel(rpc, message)
            return
        # Only the members JSON-RPC defines go on: an extra one is ignored, not a -32603.
        rpc.handle({key: message[key] for key in _MEMBERS if key in message})

    def _report_framing_error(self, error: FrameError) -> None:
        _log.error("framing error: %s", error.message)
        size = error.size
        if size is not None:
            self._client.fail_unread(error, lambda method: too_large_text(method, size, self.max_message_bytes))
        if error.json_lines and not self._hinted_json_lines:
            self._hinted_json_lines = True
            _log.error(
                "the input looks like JSON lines, but this daemon reads LSP framing (Content-Length "
                "headers); start it with --framing jsonl to send one JSON message per line"
            )

    def _cancel(self, rpc: Rpc, message: dict[str, Any]) -> None:
        """`$/cancelRequest` is a notification; sent as a request (with an id) it is answered too."""
        params = message.get("params")
        target: object = params.get("id") if isinstance(params, dict) else None
        if not is_request_id(target):
            if "id" in message:
                rpc.send_error(message["id"], InvalidParams('Invalid params: no "id" of a request to cancel'))
            else:
                _log.warning("$/cancelRequest without a request id ignored")  # notifications get no reply
            return
        rpc.cancel(target)
        if "id" in message:
            rpc.send_result(message["id"], None)


_MEMBERS = ("jsonrpc", "id", "method", "params")


class ParseFailure(NamedTuple):
    reason: str


def _decode(frame: bytes) -> Any:
    """JSON text -> value. msgspec first (fast, strict UTF-8); the standard library as a second
    opinion for what msgspec refuses but JSON allows (a lone surrogate escape such as "\\ud800"
    from a JavaScript client). Nesting too deep for either is a parse error, not a crash."""
    try:
        return msgspec.json.decode(frame)
    except msgspec.DecodeError as exc:
        first = str(exc)
    except RecursionError:
        return ParseFailure("nesting is too deep")
    try:
        return json.loads(frame)
    except (ValueError, RecursionError):
        return ParseFailure(first)


def _reply_id(message: object) -> RequestId | None:
    msg_id = message.get("id") if isinstance(message, dict) else None
    return msg_id if is_request_id(msg_id) else None


def _is_response(message: object) -> bool:
    return isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message)


def _invalid_request(message: object) -> str | None:
    if isinstance(message, list):
        return "Invalid Request: batch messages are not supported"
    if not isinstance(message, dict):
        return "Invalid Request: a message must be a JSON object"
    if message.get("jsonrpc") != "2.0":
        return 'Invalid Request: "jsonrpc" must be "2.0"'
    if "method" not in message:
        return 'Invalid Request: no "method"'
    if not isinstance(message["method"], str):
        return 'Invalid Request: "method" must be a string'
    if "id" in message and not is_request_id(message["id"]):
        return 'Invalid Request: "id" must be a string or an integer'
    if "params" in message and not isinstance(message["params"], dict | list | None):
        return 'Invalid Request: "params" must be an object or an array'
    return None


def _event_forwarder(sink: StdoutSink) -> Callable[[AgentEvent], None]:
    def encode(event: AgentEvent) -> bytes:
        return encode_json(AgentEventNotification(params=event))

    def forward(event: AgentEvent) -> None:
        forward_event(sink, event, encode)

    return forward
