"""What a provider is: the stream function every API implements, the options it takes, and the
small object by which a provider module declares itself to the registry (`pi_rpc/ai/registry.py`).

A provider is `async def stream(model, context, options, builder) -> AssistantMessage`. It
translates its API's stream into builder calls and returns `builder.finish()` or `builder.fail()`;
it never raises once called (failures travel in the message). Cancellation is structured: the caller
runs the call in a CancelScope, and a cancelled provider simply lets the cancellation propagate
(closing its HTTP stream on the way out); the caller then ends the message with
`builder.fail("aborted", ...)`.

This module imports no provider, so provider modules depend on it and the registry depends on
them, never the other way round.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai.apis import KnownApi
from pi_rpc.ai.redact import repr_without_secrets
from pi_rpc.ai.types import AssistantMessage, Context, Model, ThinkingLevel

if TYPE_CHECKING:
    from pi_rpc.ai.clients import HttpClients
    from pi_rpc.ai.stream import AssistantBuilder

_log = logging.getLogger(__name__)

# Retry n waits this * 2**(n-1) ms (2 s, 4 s, 8 s, like Pi's auto-retry).
DEFAULT_RETRY_BASE_MS = 2000
RETRY_BASE_ENV = "PI_RPC_RETRY_BASE_MS"


def retry_base_from_env(env: Mapping[str, str] | None = None) -> int:
    """The base backoff in ms from `PI_RPC_RETRY_BASE_MS` (tests that run the daemon as a subprocess
    set it small); a value that is not a non-negative integer is ignored with a warning."""
    raw = (os.environ if env is None else env).get(RETRY_BASE_ENV, "").strip()
    if not raw:
        return DEFAULT_RETRY_BASE_MS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        _log.warning("%s=%r is not a non-negative integer; using %d ms", RETRY_BASE_ENV, raw, DEFAULT_RETRY_BASE_MS)
        return DEFAULT_RETRY_BASE_MS
    return value


# Said after the error text of a 5xx that blames the request (`ai/http.py`), so the user knows why
# it was not retried, and Pi mode's retry between runs (which reads the text) skips it too.
NOT_RETRIED_NOTE = "the server says the request is invalid: not retried"


def backoff_ms(attempt: int, base_ms: int = DEFAULT_RETRY_BASE_MS) -> int:
    """How long retry `attempt` (from 1) waits: base * 2**(n-1), like Pi's auto-retry."""
    return int(base_ms * 2 ** (attempt - 1))


class StreamOptions(msgspec.Struct, kw_only=True):
    api_key: str | None = None
    max_tokens: int | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    # Pi's `toolChoice` of the Chat Completions API: "auto", "none", "required", or one tool named
    # ({"type": "function", "function": {"name": ...}}); unset sends nothing (the server's "auto").
    tool_choice: Literal["auto", "none", "required"] | dict[str, Any] | UnsetType = UNSET
    thinking_level: ThinkingLevel = "off"
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    session_id: str | None = None
    # The agent run this request belongs to; every request of one run carries the same id.
    run_id: str | None = None
    max_retries: int = 3
    retry_base_ms: int = DEFAULT_RETRY_BASE_MS
    # Seconds without a byte from the server before a stream counts as dead.
    idle_timeout: float = 120.0
    # The HTTP clients to send through (pi_rpc/ai/clients.py); None: the daemon's shared pool.
    http: HttpClients | None = None

    def __repr__(self) -> str:  # no key in a log line or a test failure
        return repr_without_secrets(self, self.__struct_fields__, ("api_key", "headers"))


# The builder by name: a provider needs it only when it streams, and importing it here would load
# the stream machinery with every model choice.
StreamFn = Callable[[Model, Context, StreamOptions, "AssistantBuilder"], Awaitable[AssistantMessage]]


class Provider(msgspec.Struct, frozen=True):
    """One provider module's declaration: the API name it serves (`Model.api`) and its stream
    function. Each module under `pi_rpc/ai/providers/` defines one, named `PROVIDER`, and the
    API's declaration (`pi_rpc/ai/apis.py`) names the module."""

    api: KnownApi
    stream: StreamFn
