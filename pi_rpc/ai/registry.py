"""API name -> provider stream function, and the options every provider accepts.

A provider is `async def stream(model, context, options, builder) -> AssistantMessage`. It
translates its API's stream into builder calls and returns `builder.finish()` or `builder.fail()`;
it never raises once called (failures travel in the message). Cancellation is structured: the caller runs the call
in a CancelScope, and a cancelled provider simply lets the cancellation propagate (closing its HTTP
stream on the way out); the caller then ends the message with `builder.fail("aborted", ...)`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, Context, Model, ThinkingLevel


class StreamOptions(msgspec.Struct, kw_only=True):
    api_key: str | None = None
    max_tokens: int | UnsetType = UNSET
    temperature: float | UnsetType = UNSET
    thinking_level: ThinkingLevel = "off"
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    session_id: str | None = None
    # The agent run this request belongs to; every request of one run carries the same id.
    run_id: str | None = None
    max_retries: int = 3
    # Seconds without a byte from the server before a stream counts as dead.
    idle_timeout: float = 120.0


StreamFn = Callable[[Model, Context, StreamOptions, AssistantBuilder], Awaitable[AssistantMessage]]

_PROVIDERS: dict[str, StreamFn] = {}


def get_stream_fn(api: str) -> StreamFn:
    if not _PROVIDERS:
        _register_builtins()
    try:
        return _PROVIDERS[api]
    except KeyError:
        raise LookupError(f"No provider for api {api!r}") from None


def _register_builtins() -> None:
    # Imported lazily: providers pull in httpx, which the scripted model does not need.
    from pi_rpc.ai.providers import builtin_providers

    for api, fn in builtin_providers().items():
        _PROVIDERS.setdefault(api, fn)
