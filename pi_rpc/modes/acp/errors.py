"""ACP error replies: the JSON-RPC codes this mode answers with and the ones ACP adds, the replies
built from them, and which kind of session refusal is which error.

The SDK's `RequestError` is the error class (a handler raises it and the SDK answers with it);
`SESSION_ERRORS` is the one table of how each kind of session refusal (pi_rpc/session/refusals.py)
reaches an ACP client, and `session_error` builds the reply. Anything a handler raises that is
neither becomes the SDK's `INTERNAL_ERROR`.
"""

from __future__ import annotations

from collections.abc import Callable

from acp import RequestError

from pi_rpc.session import SESSION_REFUSALS as SESSION_REFUSALS  # what a handler catches to answer with the table
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

# JSON-RPC 2.0's codes, as this mode uses them: answering a line the SDK never sees
# (transport.py), telling a client without a method (client_side.py), a run that failed.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INTERNAL_ERROR = -32603
# ACP's own codes (the SDK's RequestError.auth_required / resource_not_found).
AUTH_REQUIRED = -32000
RESOURCE_NOT_FOUND = -32002
# The session's busy text names Pi's `streamingBehavior`, which ACP has no way to send.
BUSY_TEXT = "A prompt is already running in this session: wait for its end, or cancel it (session/cancel)."


def session_not_found(details: str) -> RequestError:
    """ACP's resource-not-found error for a session id that names no session."""
    return RequestError(RESOURCE_NOT_FOUND, "Resource not found", {"details": details})


def run_failed(message: str) -> RequestError:
    """A prompt whose run ended in an error: ACP's stop reasons have none for it, so the prompt
    request fails with the run's own error text."""
    return RequestError(INTERNAL_ERROR, message, {"stopReason": "error"})


def auth_required(details: str) -> RequestError:
    """No model: the editor can offer the keys of `authMethods` (initialize) and start us again."""
    return RequestError(AUTH_REQUIRED, details, {"details": details})


SESSION_ERRORS: dict[type[SessionRefusal], Callable[[Exception], RequestError]] = {
    PromptWhileRunning: lambda exc: RequestError.invalid_request({"details": BUSY_TEXT}),
    # No ACP request meets these two today: `/rewind` and `/compact` answer them in the chat
    # (rewind.py, commands.py); a request that did would say the session's own words.
    SessionBusy: lambda exc: RequestError.invalid_request({"details": str(exc)}),
    CompactionRefused: lambda exc: RequestError.invalid_request({"details": str(exc)}),
    NoModelConfigured: lambda exc: auth_required(str(exc)),
    UnknownSessionOrEntry: lambda exc: session_not_found(str(exc)),
    UnknownModel: lambda exc: RequestError.invalid_params({"details": str(exc)}),
    InvalidArgument: lambda exc: RequestError.invalid_params({"details": str(exc)}),
}


def session_error(exc: Exception) -> RequestError:
    """The ACP reply to a session refusal (one of `SESSION_REFUSALS`: a subclass answers as its kind)."""
    kind = refusal_kind(exc)
    if kind is None:
        raise TypeError(f"{type(exc).__name__} is not a session refusal") from exc
    return SESSION_ERRORS[kind](exc)
