"""API name -> provider: each API's module, as its declaration names it (`pi_rpc/ai/apis.py`),
loaded on its first request.

A provider module pulls in httpx and its own request code (tens of milliseconds), which a daemon
that never calls that API, or has not called it yet, should not pay for at start-up. So choosing a
model costs nothing; the provider is imported when its first message is streamed.

Provider modules import the contract (`pi_rpc/ai/provider.py`), never this module, so the
dependency runs one way (`tests/test_layering.py` counts the declared modules as this module's
imports). The contract's names are re-exported here for the callers that import them from the
registry; new code imports them from `pi_rpc.ai`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from pi_rpc.ai.apis import api_declaration
from pi_rpc.ai.provider import (
    DEFAULT_RETRY_BASE_MS,
    RETRY_BASE_ENV,
    Provider,
    StreamFn,
    StreamOptions,
    retry_base_from_env,
)
from pi_rpc.ai.types import AssistantMessage, Context, Model

if TYPE_CHECKING:
    from pi_rpc.ai.stream import AssistantBuilder

__all__ = [
    "DEFAULT_RETRY_BASE_MS",
    "RETRY_BASE_ENV",
    "Provider",
    "StreamFn",
    "StreamOptions",
    "get_stream_fn",
    "load_provider",
    "retry_base_from_env",
]


def load_provider(api: str) -> Provider:
    """The provider serving `api`, imported now if it was not yet; `LookupError` for an API
    pi-rpc does not speak."""
    provider: Provider = importlib.import_module(api_declaration(api).module).PROVIDER
    return provider


def get_stream_fn(api: str) -> StreamFn:
    """The stream function for `api`. An unknown API fails here, when the model is chosen; the
    provider module itself is imported on the returned function's first call."""
    api_declaration(api)

    async def stream(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        return await load_provider(api).stream(model, context, options, builder)

    return stream
