"""API name -> provider: the built-in providers, each module loaded on its first request.

The table below lists every provider with an ordinary import, inside a function: a provider module
pulls in httpx and its own request code (tens of milliseconds), which a daemon that never calls
that API, or has not called it yet, should not pay for at start-up. So choosing a model costs
nothing; the provider is imported when its first message is streamed.

Provider modules import the contract (`pi_rpc/ai/provider.py`), never this module, so the
dependency runs one way. The contract's names are re-exported here for the callers that import
them from the registry; new code imports them from `pi_rpc.ai`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from pi_rpc.ai.provider import (
    DEFAULT_RETRY_BASE_MS,
    RETRY_BASE_ENV,
    Provider,
    StreamFn,
    StreamOptions,
    retry_base_from_env,
)
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, Context, Model

__all__ = [
    "BUILTIN_APIS",
    "DEFAULT_RETRY_BASE_MS",
    "RETRY_BASE_ENV",
    "Provider",
    "StreamFn",
    "StreamOptions",
    "get_stream_fn",
    "load_provider",
    "retry_base_from_env",
]


def _faux() -> Provider:
    from pi_rpc.ai.providers.faux import PROVIDER

    return PROVIDER


def _anthropic_messages() -> Provider:
    from pi_rpc.ai.providers.anthropic import PROVIDER

    return PROVIDER


def _openai_completions() -> Provider:
    from pi_rpc.ai.providers.openai_completions import PROVIDER

    return PROVIDER


def _openai_responses() -> Provider:
    from pi_rpc.ai.providers.openai_responses import PROVIDER

    return PROVIDER


# API name -> how to load its provider. Read-only: the built-in set is fixed at import.
BUILTIN_APIS: Mapping[str, Callable[[], Provider]] = MappingProxyType(
    {
        "faux": _faux,
        "anthropic-messages": _anthropic_messages,
        "openai-completions": _openai_completions,
        "openai-responses": _openai_responses,
    }
)


def load_provider(api: str) -> Provider:
    """The provider serving `api`, imported now if it was not yet."""
    try:
        load = BUILTIN_APIS[api]
    except KeyError:
        raise LookupError(f"No provider for api {api!r}") from None
    return load()


def get_stream_fn(api: str) -> StreamFn:
    """The stream function for `api`. An unknown API fails here, when the model is chosen; the
    provider module itself is imported on the returned function's first call."""
    if api not in BUILTIN_APIS:
        raise LookupError(f"No provider for api {api!r}")

    async def stream(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        return await load_provider(api).stream(model, context, options, builder)

    return stream
