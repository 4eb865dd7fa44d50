"""JSON-RPC error replies as exceptions: each class carries its wire code.

A handler raises one of these to answer with that error; a session refusal it lets through is
answered by `SESSION_ERRORS`, the one table of which kind of refusal (pi_rpc/session/refusals.py)
is which wire error; anything else becomes `InternalError` (-32603). The codes of JSON-RPC 2.0 and
LSP's -32800 are fixed here; the daemon's own codes (-32099..-32000) are in `protocol.py` and get a
class each.
"""

from __future__ import annotations

import traceback
from typing import Any, ClassVar

from pi_rpc.modes.jsonrpc.protocol import BUSY, NO_MODEL, NOT_FOUND
from pi_rpc.session import (
    CompactionRefused,
    InvalidArgument,
    NoModelConfigured,
    PromptWhileRunning,
    SessionBusy,
    SessionRefusal,
    UnknownModel,
    UnknownSessionOrEntry,
    refusal_kind,
)


class RpcError(Exception):
    code: ClassVar[int] = -32603

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def to_wire(self) -> dict[str, Any]:
        error: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class ParseError(RpcError):
    code = -32700


class InvalidRequest(RpcError):
    code = -32600


class MethodNotFound(RpcError):
    code = -32601


class InvalidParams(RpcError):
    code = -32602


class InternalError(RpcError):
    code = -32603

    @classmethod
    def of(cls, exc: BaseException) -> InternalError:
        """`RuntimeError: text`, with the frames for whoever reads the client's log."""
        text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return cls(text, {"traceback": traceback.format_tb(exc.__traceback__)})


class RequestCancelled(RpcError):
    code = -32800


class Busy(RpcError):
    code = BUSY


class NoModel(RpcError):
    code = NO_MODEL


class NotFound(RpcError):
    code = NOT_FOUND


# What the session refuses, as the client hears it (the refusal's text is the error's message).
SESSION_ERRORS: dict[type[SessionRefusal], type[RpcError]] = {
    PromptWhileRunning: Busy,  # a run is going and the prompt names no streamingBehavior
    SessionBusy: Busy,  # another user bash command is running; a rewind while a run is going
    CompactionRefused: Busy,  # compaction running, nothing to compact, or the summary failed
    NoModelConfigured: NoModel,
    UnknownModel: NotFound,
    UnknownSessionOrEntry: NotFound,  # an unknown session id, fork entry or `session/entries` cursor
    InvalidArgument: InvalidParams,  # an empty session name
}


def session_error(exc: BaseException) -> RpcError | None:
    """The wire error for a session refusal (a subclass answers as its kind does); None: not one."""
    kind = refusal_kind(exc)
    return None if kind is None else SESSION_ERRORS[kind](str(exc))
