"""Requests from the daemon to the client (approvals, the editor's files) and their responses.

Each request gets an id of our own ("pi-rpc-N", a string, so it can never be mistaken for one of
the client's numeric ids in a log) and waits for the response with that id. A wait that is
cancelled (the run was aborted) sends `$/cancelRequest` so the client can close its dialog; a
client that answers with an error, or with a result of the wrong shape, fails the request with a
message that says which request and why. A request about files that gets no answer within its
deadline (modes/editor_requests.py) fails the same way, and so does one whose answer was skipped
as too large (`fail_skipped`): at once, not at the deadline. An approval has no deadline of its
own: an abort ends it, and so does `permissions.timeoutSeconds` when set. A late answer to a
request that gave up is logged and dropped by the daemon.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import msgspec

from pi_rpc.agent import ApprovalRequest
from pi_rpc.ai import encode_json
from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES, ClientRequestError, EditorDeadlines, answered_id, within
from pi_rpc.modes.framing import FrameError
from pi_rpc.modes.jsonrpc.protocol import (
    ReadTextFileParams,
    TextFileContent,
    WriteTextFileParams,
)
from pi_rpc.modes.jsonrpc.rpc import BodySink
from pi_rpc.session import ApprovalDecision

T = TypeVar("T")


class _Waiting(msgspec.Struct):
    method: str
    answered: anyio.Event = msgspec.field(default_factory=anyio.Event)
    response: dict[str, Any] = msgspec.field(default_factory=dict)
    failure: str | None = None  # the answer arrived but could not be read: why


class ClientRequests:
    def __init__(self, sink: BodySink, deadlines: EditorDeadlines = DEFAULT_DEADLINES) -> None:
        self._sink = sink
        self.deadlines = deadlines
        self._ids = itertools.count(1)
        self._waiting: dict[str, _Waiting] = {}

    async def request(self, method: str, params: msgspec.Struct, result_type: type[T]) -> T:
        result = await self.exchange(method, params)
        try:
            return msgspec.convert(result, result_type)
        except msgspec.ValidationError as exc:
            raise ClientRequestError(f"The client answered {method} with an invalid result: {exc}") from exc

    async def exchange(self, method: str, params: msgspec.Struct) -> Any:
        """Send one request and return its raw result."""
        msg_id = f"pi-rpc-{next(self._ids)}"
        waiting = self._waiting[msg_id] = _Waiting(method)
        self._sink.send(encode_json({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        try:
            await waiting.answered.wait()
        except BaseException:
            if not waiting.answered.is_set():  # aborted: the client may drop its prompt
                self._sink.send(encode_json({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}}))
            raise
        finally:
            self._waiting.pop(msg_id, None)
        if waiting.failure is not None:
            raise ClientRequestError(waiting.failure)
        response = waiting.response
        error = response.get("error")
        if error is not None:
            text = error.get("message") if isinstance(error, dict) else None
            raise ClientRequestError(f"The client failed {method}: {text or error}")
        return response.get("result")

    def resolve(self, response: dict[str, Any]) -> bool:
        """Hand a response to the request waiting for it; False when no request has its id."""
        msg_id = response.get("id")
        waiting = self._waiting.get(msg_id) if isinstance(msg_id, str) else None
        if waiting is None or waiting.answered.is_set():
            return False
        waiting.response = response
        waiting.answered.set()
        return True

    def fail_unread(self, error: FrameError, reason: Callable[[str], str]) -> bool:
        """A message that could not be read (too large, not JSON): when what was kept of it shows
        it answered a request of ours, that request fails now with `reason(method)`; False when
        it answered none."""
        msg_id = answered_id(error)
        waiting = self._waiting.get(msg_id) if isinstance(msg_id, str) else None
        if waiting is None or waiting.answered.is_set():
            return False
        waiting.failure = reason(waiting.method)
        waiting.answered.set()
        return True

    def fail_all(self, reason: str) -> None:
        """The client is gone: nobody will answer, so every waiting request fails now."""
        for waiting in list(self._waiting.values()):
            waiting.response = {"error": {"message": reason}}
            waiting.answered.set()

    # --- the requests ----------------------------------------------------------------------------

    async def approve(self, request: ApprovalRequest) -> ApprovalDecision:
        return await self.request("approval/request", request, ApprovalDecision)

    async def read_text_file(self, path: str) -> str:
        method = "fs/readTextFile"
        result = await within(
            self.deadlines.files, method, self.request(method, ReadTextFileParams(path=path), TextFileContent)
        )
        return result.content

    async def write_text_file(self, path: str, content: str) -> None:
        method = "fs/writeTextFile"
        await within(
            self.deadlines.files, method, self.exchange(method, WriteTextFileParams(path=path, content=content))
        )


__all__ = ["ClientRequests"]
