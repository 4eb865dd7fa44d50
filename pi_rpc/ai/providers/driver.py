"""The one shape of an HTTP provider, and the one driver that streams any of them.

An API module describes itself as a `ProviderApi`: where to send (default base URL and path),
whether it needs credentials, and the three pure parts that differ per API (headers, request
body, per-message stream state). `stream_api` does everything else the same way for all of them:
the key check, the request-building failure, then `http.stream_sse` (request, retry, SSE loop,
failure text). An API module's `stream` is `API.stream`, so the registry sees no difference.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pi_rpc.ai import http
from pi_rpc.ai.config import PROVIDER_ENV
from pi_rpc.ai.provider import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.strict_schema import ConstrainedSamplingError
from pi_rpc.ai.types import AssistantMessage, Context, Model


def has_api_key(options: StreamOptions) -> bool:
    return bool(options.api_key)


def has_api_key_or_authorization(options: StreamOptions) -> bool:
    """A caller may authenticate with its own `Authorization` header instead of a key."""
    return bool(options.api_key) or any(name.lower() == "authorization" for name in options.headers)


def no_key_needed(options: StreamOptions) -> bool:
    return True  # local OpenAI-compatible servers take requests without a key


def missing_key_message(model: Model, base_url: str, environ: Mapping[str, str] = os.environ) -> str:
    """Why a request needing a key was not sent. When the provider's variable is set, the key was
    withheld on purpose (a key goes only to its own provider's URL: session/models/choice.py), so say so
    and how to send it, rather than claim there is none."""
    message = f"No API key for provider: {model.provider}"
    names = PROVIDER_ENV.get(model.provider)
    if names is None or not environ.get(names[0]):
        return message
    return (
        f"{message}. {names[0]} is set but was withheld from {base_url}: a provider's key is sent only "
        f"to that provider's own URL. To send it to this server, start pi-rpc with --api-key-env {names[0]}."
    )


def merge_headers(own: dict[str, str], model: Model, options: StreamOptions) -> dict[str, str]:
    """An API's own headers, then the model's configured ones, then the caller's (later wins)."""
    headers = {"content-type": "application/json", "accept": "text/event-stream", **own}
    headers.update(model.headers or {})
    headers.update(options.headers)
    return headers


@dataclass(frozen=True, slots=True)
class ProviderApi:
    """What one API adds to the shared driver."""

    default_base_url: str
    path: str  # appended to the model's base URL
    has_credentials: Callable[[StreamOptions], bool]
    build_headers: Callable[[Model, StreamOptions], dict[str, str]]
    # May raise `ConstrainedSamplingError` (spec 4.3): the message then fails before any request.
    build_request_body: Callable[[Model, Context, StreamOptions], dict[str, Any]]
    new_state: Callable[[Model, Context, AssistantBuilder], http.SseState]

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        return await stream_api(self, model, context, options, builder)


async def stream_api(
    api: ProviderApi, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
) -> AssistantMessage:
    """Stream one assistant message. Never raises, except cancellation (which closes the socket)."""
    if not api.has_credentials(options):
        return builder.fail("error", missing_key_message(model, model.base_url or api.default_base_url))
    try:
        body = api.build_request_body(model, context, options)
    except ConstrainedSamplingError as exc:
        return builder.fail("error", str(exc))
    url = http.join_url(model.base_url or api.default_base_url, api.path)
    state = api.new_state(model, context, builder)
    return await http.stream_sse(url, body, api.build_headers(model, options), options, builder, state)
