"""The pooled HTTP clients (`pi_rpc/ai/clients.py`) through a real provider's request path, with
`httpx.MockTransport`: one client per endpoint reused across turns, closed at shutdown, and a
connection that dies before any response sent once more (and only once)."""

from __future__ import annotations

from collections.abc import Callable

import httpx
import msgspec
import pytest

from pi_rpc.ai import clients
from pi_rpc.ai.clients import HttpClients
from pi_rpc.ai.providers import openai_completions
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, AutoRetryStart, Context, Model, ProviderEvent, TextContent, UserMessage

pytestmark = pytest.mark.anyio

_MODEL = Model(id="m", name="m", api="openai-completions", provider="test", base_url="http://127.0.0.1:9/v1")
_ANSWER = (b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
           b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n')


def _answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=_ANSWER)


class ClosingTransport(httpx.MockTransport):
    """A MockTransport that records whether it was closed."""

    def __init__(self, handler: Callable[[httpx.Request], httpx.Response]) -> None:
        super().__init__(handler)
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


def _pool(handler: Callable[[httpx.Request], httpx.Response]) -> tuple[HttpClients, list[ClosingTransport]]:
    made: list[ClosingTransport] = []

    def factory() -> httpx.AsyncBaseTransport:
        made.append(ClosingTransport(handler))
        return made[-1]

    return HttpClients(transport=factory), made


async def _turn(pool: HttpClients, model: Model = _MODEL) -> tuple[AssistantMessage, list[ProviderEvent]]:
    events: list[ProviderEvent] = []
    context = Context(system_prompt="", messages=[UserMessage(content="hello")])
    message = await openai_completions.stream(model, context, StreamOptions(http=pool, max_retries=0),
                                              AssistantBuilder(model, events.append))
    return message, events


def _text(message: AssistantMessage) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


async def test_one_client_per_endpoint_serves_every_turn() -> None:
    pool, made = _pool(_answer)
    first, _ = await _turn(pool)
    client = pool.client_for(_MODEL.base_url or "")
    second, _ = await _turn(pool)
    other = msgspec.structs.replace(_MODEL, base_url="http://127.0.0.1:10/v1")
    third, _ = await _turn(pool, other)
    assert [_text(m) for m in (first, second, third)] == ["hi", "hi", "hi"]
    assert pool.client_for(f"{_MODEL.base_url}/chat/completions") is client
    assert len(made) == 2  # one per endpoint (port 9 and port 10), not one per request
    await pool.aclose()


async def test_closing_the_pool_closes_every_client_and_refuses_new_requests() -> None:
    pool, made = _pool(_answer)
    await _turn(pool)
    client = pool.client_for(_MODEL.base_url or "")
    await pool.aclose()
    assert client.is_closed and all(transport.closed for transport in made)
    message, _ = await _turn(pool)  # a provider still never raises: the message fails
    assert message.stop_reason == "error"
    assert "closed" in (message.error_message or "")


async def test_shared_pool_is_made_once_and_closed_on_the_way_out() -> None:
    pool = clients.shared_clients()
    assert clients.shared_clients() is pool
    await clients.close_shared_clients()
    assert pool.closed
    assert clients.shared_clients() is not pool
    await clients.close_shared_clients()


@pytest.mark.parametrize("failure", [httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError])
async def test_a_dead_pooled_connection_is_retried_once(failure: type[httpx.TransportError]) -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise failure("Server disconnected without sending a response.", request=request)
        return _answer(request)

    pool, _ = _pool(handler)
    message, events = await _turn(pool)
    assert (_text(message), message.stop_reason) == ("hi", "stop")
    assert len(calls) == 2 and calls[0].content == calls[1].content
    assert not [e for e in events if isinstance(e, AutoRetryStart)]  # not a retry the user sees
    await pool.aclose()


async def test_a_connection_that_dies_twice_fails_the_message() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        raise httpx.RemoteProtocolError("Server disconnected without sending a response.", request=request)

    pool, _ = _pool(handler)
    message, _ = await _turn(pool)
    assert message.stop_reason == "error"
    assert "127.0.0.1:9" in (message.error_message or "")
    assert len(calls) == 2
    await pool.aclose()
