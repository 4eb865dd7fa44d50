"""The pooled HTTP clients (`pi_rpc/ai/clients.py`) through a real provider's request path, with
`httpx.MockTransport`: one client per endpoint reused across turns, closed at shutdown, and a
connection that dies before any response sent once more (and only once). Over a real keep-alive
server on 127.0.0.1: consecutive turns share one TCP connection, two daemons' sessions (each with
the pool its composition root made) never share one, and a request given no pool closes its own."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import httpx
import msgspec
import pytest

from pi_rpc.ai.clients import HttpClients
from pi_rpc.ai.providers import openai_completions
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, AutoRetryStart, Context, Model, ProviderEvent, TextContent, UserMessage
from pi_rpc.cli import build_parser, build_session_config, run_daemon
from pi_rpc.session.session import AgentSession

pytestmark = pytest.mark.anyio

_MODEL = Model(id="m", name="m", api="openai-completions", provider="test", base_url="http://127.0.0.1:9/v1")
_ANSWER = (
    b'data: {"choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
)


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
    message = await openai_completions.stream(
        model, context, StreamOptions(http=pool, max_retries=0), AssistantBuilder(model, events.append)
    )
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


async def test_the_daemons_pool_is_closed_at_the_way_out_whichever_way_it_ends() -> None:
    async def ends() -> None:
        pass

    async def breaks() -> None:
        raise RuntimeError("a front end that failed")

    pool, made = _pool(_answer)
    await _turn(pool)
    await run_daemon(ends, pool)
    assert pool.closed and all(transport.closed for transport in made)
    other = HttpClients()
    with pytest.raises(RuntimeError):
        await run_daemon(breaks, other)
    assert other.closed


async def test_a_request_that_names_no_pool_closes_the_one_it_made(keep_alive_server: KeepAliveServer) -> None:
    model = msgspec.structs.replace(_MODEL, base_url=keep_alive_server.url)
    for _ in range(2):
        events: list[ProviderEvent] = []
        context = Context(system_prompt="", messages=[UserMessage(content="hello")])
        message = await openai_completions.stream(
            model, context, StreamOptions(max_retries=0), AssistantBuilder(model, events.append)
        )
        assert (_text(message), message.stop_reason) == ("hi", "stop")
    assert (keep_alive_server.requests, keep_alive_server.connections) == (2, 2)


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


class KeepAliveServer:
    """An HTTP/1.1 server on 127.0.0.1 that keeps connections open and counts them."""

    def __init__(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                server.connections += 1

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                server.requests += 1
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                self.wfile.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(_ANSWER), _ANSWER))

        self.connections = 0
        self.requests = 0
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def keep_alive_server() -> Iterator[KeepAliveServer]:
    server = KeepAliveServer()
    thread = threading.Thread(target=server.httpd.serve_forever, daemon=True)
    thread.start()
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


async def test_consecutive_turns_share_one_connection(keep_alive_server: KeepAliveServer) -> None:
    """A message ends at `[DONE]`; the body's end is read too, so its connection is reused (before,
    every request opened a connection: a new TCP and TLS handshake per turn with a real provider)."""
    pool = HttpClients()
    model = msgspec.structs.replace(_MODEL, base_url=keep_alive_server.url)
    try:
        for _ in range(3):
            message, _ = await _turn(pool, model)
            assert (_text(message), message.stop_reason) == ("hi", "stop")
    finally:
        await pool.aclose()
    assert (keep_alive_server.requests, keep_alive_server.connections) == (3, 1)


class _ResetAfterAnswer(httpx.AsyncByteStream):
    """The whole answer, then the connection resets (as some proxies do after the last event)."""

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield _ANSWER
        raise httpx.ReadError("Connection reset by peer")


async def test_a_reset_after_the_final_event_keeps_the_message() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, stream=_ResetAfterAnswer())

    pool, _ = _pool(handler)
    message, _ = await _turn(pool)
    assert (_text(message), message.stop_reason, bool(message.error_message)) == ("hi", "stop", False)
    await pool.aclose()


async def test_two_daemons_in_one_process_share_no_connection(
    keep_alive_server: KeepAliveServer, tmp_path: Path
) -> None:
    """Each daemon's sessions reach the model through the pool its composition root made (before,
    one module-wide pool: two daemons in a process shared connections, and closing one closed both)."""
    args = build_parser().parse_args(
        ["--base-url", keep_alive_server.url, "--model", "m", "--no-session", "--cwd", str(tmp_path)]
    )
    first_pool, second_pool = HttpClients(), HttpClients()
    async with anyio.create_task_group() as tasks:
        first = AgentSession(build_session_config(args, first_pool), tasks)
        second = AgentSession(build_session_config(args, second_pool), tasks)
        for session in (first, second, first, second):
            outcome = await session.prompt("hello")
            assert outcome.stop_reason == "stop"
        assert (keep_alive_server.requests, keep_alive_server.connections) == (4, 2)
        assert (len(first_pool), len(second_pool)) == (1, 1)

        await run_daemon(first.close, first_pool)  # the first daemon's way out
        assert first_pool.closed and not second_pool.closed
        assert (await second.prompt("hello")).stop_reason == "stop"
        assert (keep_alive_server.requests, keep_alive_server.connections) == (5, 2)
        await second.close()
    await second_pool.aclose()
