"""The one shape of an HTTP provider, and the one driver that streams any of them.

An API module describes itself as a `ProviderApi`: which API it is (its declaration in
`pi_rpc/ai/apis.py` holds the default base URL and the key rule), the path it posts to, and the
three pure parts that differ per API (headers, request body, per-message stream state).
`stream_api` does everything else the same way for all of them: the key check, the
request-building failure, then `http.stream_sse` (request, retry, SSE loop, failure text). An API
module's `stream` is `API.stream`, so the registry sees no difference.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from pi_rpc.ai import http
from pi_rpc.ai.apis import ApiDeclaration, KeyRule, KnownApi, api_declaration, known_provider
from pi_rpc.ai.provider import Provider, StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.strict_schema import ConstrainedSamplingError
from pi_rpc.ai.types import AssistantMessage, Context, Model


def has_credentials(rule: KeyRule, options: StreamOptions) -> bool:
    """Whether a request may be sent under the API's key rule (`KeyRule`)."""
    if rule == "optional" or options.api_key:
        return True
    # A caller may authenticate with its own `Authorization` header instead of a key.
    return rule == "required-or-authorization" and any(name.lower() == "authorization" for name in options.headers)


def missing_key_message(model: Model, base_url: str, environ: Mapping[str, str] = os.environ) -> str:
    """Why a request needing a key was not sent. When the provider's variable is set, the key was
    withheld on purpose (a key goes only to its own provider's URL: session/models/choice.py), so say so
    and how to send it, rather than claim there is none."""
    message = f"No API key for provider: {model.provider}"
    known = known_provider(model.provider)
    if known is None or not environ.get(known.key_variable):
        return message
    name = known.key_variable
    return (
        f"{message}. {name} is set but was withheld from {base_url}: a provider's key is sent only "
        f"to that provider's own URL. To send it to this server, start pi-rpc with --api-key-env {name}."
    )


def merge_headers(own: dict[str, str], model: Model, options: StreamOptions) -> dict[str, str]:
    """An API's own headers, then the model's configured ones, then the caller's (later wins)."""
    headers = {"content-type": "application/json", "accept": "text/event-stream", **own}
    headers.update(model.headers or {})
    headers.update(options.headers)
    return headers


class ProviderApi(msgspec.Struct, frozen=True):
    """What one HTTP API adds to the shared driver. The rest (the key check, the URL, retries, the
    SSE loop, the failure text) is `stream_api`'s, the same for every API.

    **Usage** (the module `pi_rpc/ai/providers/openai_completions.py`, whose API `pi_rpc/ai/apis.py`
    declares as `ApiDeclaration("openai-completions", "pi_rpc.ai.providers.openai_completions",
    "optional", OPENAI)`):

    def build_headers(model: Model, options: StreamOptions) -> dict[str, str]:
        own = {"authorization": f"Bearer {options.api_key}"} if options.api_key else {}
        return merge_headers(own, model, options)     # then the model's headers, then the caller's

    API = ProviderApi(
        api="openai-completions",                     # its declaration: default base URL, key rule
        path="/chat/completions",                     # posted to {base URL}/chat/completions
        build_headers=build_headers,
        build_request_body=build_request_body,        # (model, context, options) -> the JSON body
        new_state=lambda model, context, builder: _StreamState(builder),   # an `http.SseState`
    )
    stream = API.stream                               # (model, context, options, builder) -> message
    PROVIDER = API.provider                           # what the registry imports the module for

    **Parameters:**

    * **api** - the API's name (`KnownApi`); its declaration says which base URL a model without
            one is sent to and whether a request without a key is sent.
    * **path** - appended to the model's base URL (`http.join_url`).
    * **build_headers** - the request's headers; `merge_headers` adds the model's configured ones
            and the caller's.
    * **build_request_body** - the JSON body; may raise `ConstrainedSamplingError` (spec 4.3): the
            message then fails before any request.
    * **new_state** - one message's stream state: turns each event's data into builder calls.
    """

    api: KnownApi
    path: str
    build_headers: Callable[[Model, StreamOptions], dict[str, str]]
    build_request_body: Callable[[Model, Context, StreamOptions], dict[str, Any]]
    new_state: Callable[[Model, Context, AssistantBuilder], http.SseState]

    @property
    def declaration(self) -> ApiDeclaration:
        return api_declaration(self.api)

    @property
    def default_base_url(self) -> str:
        return self.declaration.default_base_url

    @property
    def provider(self) -> Provider:
        return Provider(api=self.api, stream=self.stream)

    async def stream(
        self, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        return await stream_api(self, model, context, options, builder)


async def stream_api(
    api: ProviderApi, model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
) -> AssistantMessage:
    """Stream one assistant message. Never raises, except cancellation (which closes the socket)."""
    base_url = model.base_url or api.default_base_url
    if not has_credentials(api.declaration.key, options):
        return builder.fail("error", missing_key_message(model, base_url))
    try:
        body = api.build_request_body(model, context, options)
    except ConstrainedSamplingError as exc:
        return builder.fail("error", str(exc))
    state = api.new_state(model, context, builder)
    return await http.stream_sse(
        http.join_url(base_url, api.path), body, api.build_headers(model, options), options, builder, state
    )
