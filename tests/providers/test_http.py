"""The shared provider HTTP core (`pi_rpc/ai/http.py`) against the loopback server."""

from __future__ import annotations

import email.utils
import time
from collections.abc import AsyncIterator

import anyio
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_rpc.ai import http
from pi_rpc.ai.registry import retry_base_from_env
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AutoRetryEnd, Model, ProviderEvent

from .sse_server import Delay, Reply, SSEServer, json_reply, sse_event, sse_reply

pytestmark = pytest.mark.anyio


def _builder() -> tuple[AssistantBuilder, list[ProviderEvent]]:
    events: list[ProviderEvent] = []
    model = Model(id="m", name="m", api="openai-completions", provider="test")
    return AssistantBuilder(model, events.append), events


async def test_server_streams_and_records(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply([sse_event({"a": 1}), sse_event("[DONE]")]))
    builder, _ = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("POST", sse_server.url + "/v1/x", json={"q": 1}, headers={"x-test": "yes"})
        async with http.open_stream(client, request, builder, max_retries=0) as response:
            data = [sse.data async for sse in http.aiter_sse(response)]
    assert data == ['{"a": 1}', "[DONE]"]
    recorded = sse_server.requests[0]
    assert (recorded.method, recorded.path, recorded.json) == ("POST", "/v1/x", {"q": 1})
    assert recorded.headers["x-test"] == "yes"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b'{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "Overloaded"),
        (b'{"error":{"message":"Invalid model","type":"invalid_request_error"}}', "Invalid model"),
        (b'{"error":"model \\"x\\" not found"}', 'model "x" not found'),
        (b'{"detail":"Not Found"}', "Not Found"),
        (b'{"detail":[{"msg":"field required"}]}', '[{"msg":"field required"}]'),
        (b'[{"error":{"message":"Quota exceeded"}}]', "Quota exceeded"),
        (b'{"message":"Bad gateway"}', "Bad gateway"),
        (b"<html>oops</html>", None),
        (b"{}", None),
    ],
)
def test_error_message_shapes(body: bytes, expected: str | None) -> None:
    assert http.error_message_from_body(body) == expected


def test_http_error_text_falls_back_to_body_and_redacts() -> None:
    response = httpx.Response(502, content=b"upstream sk-secret-123 failed " + b"x" * 1000)
    text = http.http_error_text(response, ["sk-secret-123"])
    assert text.startswith("502 Bad Gateway: upstream [redacted] failed x")
    assert len(text) < 600
    assert http.http_error_text(httpx.Response(503, content=b"")) == "503 Service Unavailable"


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3000),
        ({"retry-after": "0.5"}, 500),
        ({"retry-after-ms": "120", "retry-after": "9"}, 120),
        ({"retry-after": "soon"}, None),
        ({}, None),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0),  # a date in the past: retry now
    ],
)
def test_retry_after(headers: dict[str, str], expected: int | None) -> None:
    assert http.retry_after_ms(httpx.Headers(headers)) == expected


def test_retry_after_future_date() -> None:
    future = httpx.Headers({"retry-after": email.utils.formatdate(time.time() + 30, usegmt=True)})
    delay = http.retry_after_ms(future)
    assert delay is not None and 25_000 <= delay <= 31_000


async def test_long_retry_after_is_not_waited_for(sse_server: SSEServer) -> None:
    sse_server.script(json_reply(429, {"error": {"message": "Quota"}}, {"retry-after": "3600"}))
    builder, events = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("POST", sse_server.url + "/x")
        with pytest.raises(http.ProviderError, match=r"^429 Too Many Requests: Quota$"):
            async with http.open_stream(client, request, builder, max_retries=5):
                pass
    assert events == [] and len(sse_server.requests) == 1


async def test_400_is_not_retried(sse_server: SSEServer) -> None:
    sse_server.script(json_reply(400, {"error": {"message": "bad"}}))
    builder, events = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("POST", sse_server.url + "/x")
        with pytest.raises(http.ProviderError, match="^400 Bad Request: bad$"):
            async with http.open_stream(client, request, builder, max_retries=5):
                pass
    assert events == []


async def test_connect_errors_are_retried_then_reported() -> None:
    builder, events = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("POST", "http://127.0.0.1:9/x")
        with pytest.raises(http.ProviderError, match="^Connection error"):
            async with http.open_stream(client, request, builder, max_retries=2):
                pass
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["AutoRetryStart", "AutoRetryStart", "AutoRetryEnd"]
    end = events[-1]
    assert isinstance(end, AutoRetryEnd) and not end.success and end.attempt == 2


async def test_non_sse_success_body_is_an_error(sse_server: SSEServer) -> None:
    sse_server.script(Reply(body=[b"<html>proxy login</html>"], content_type="text/html", chunked=False))
    builder, _ = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("GET", sse_server.url + "/x")
        async with http.open_stream(client, request, builder, max_retries=0) as response:
            with pytest.raises(http.ProviderError, match="Expected an event stream, got 'text/html'"):
                async for _ in http.aiter_sse(response):
                    pass


async def test_missing_content_type_still_parses(sse_server: SSEServer) -> None:
    sse_server.script(Reply(body=[sse_event({"ok": True}), Delay(0.001)], content_type=None))
    builder, _ = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("GET", sse_server.url + "/x")
        async with http.open_stream(client, request, builder, max_retries=0) as response:
            assert [e.json() async for e in http.aiter_sse(response)] == [{"ok": True}]


# --- SSE parsing through httpx-sse, fed by MockTransport ---------------------------------------

_STREAM = (
    'event: a\ndata: {"t":"x\u2028y"}\n\n'
    ": comment\n\n"
    'data: {"t":"\u00e9\u2029"}\r\n\r\n'
    "data: line1\ndata: line2\n\n"
    "data: [DONE]\n\n"
).encode()
_EXPECTED = ['{"t":"x\u2028y"}', '{"t":"\u00e9\u2029"}', "line1\nline2", "[DONE]"]


async def _parse(chunks: list[bytes]) -> list[str]:
    async def body() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    builder, _ = _builder()
    async with http.create_client(5, transport=httpx.MockTransport(handler)) as client:
        request = client.build_request("POST", "http://test/x")
        async with http.open_stream(client, request, builder, max_retries=0) as response:
            return [e.data async for e in http.aiter_sse(response)]


async def test_sse_one_byte_chunks_keep_u2028() -> None:
    assert await _parse([_STREAM[i : i + 1] for i in range(len(_STREAM))]) == _EXPECTED


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cuts=st.lists(st.integers(min_value=1, max_value=len(_STREAM) - 1), unique=True, max_size=20))
def test_sse_any_chunking_gives_the_same_events(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(_STREAM)]
    chunks = [_STREAM[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
    assert anyio.run(_parse, chunks) == _EXPECTED


@pytest.mark.parametrize(
    ("value", "expected"),
    [(None, 2000), ("", 2000), ("25", 25), ("0", 0), ("-5", 2000), ("fast", 2000)],
)
def test_retry_base_comes_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: int
) -> None:
    """`PI_RPC_RETRY_BASE_MS` sets the base backoff (a daemon subprocess cannot be patched)."""
    if value is None:
        monkeypatch.delenv("PI_RPC_RETRY_BASE_MS", raising=False)
    else:
        monkeypatch.setenv("PI_RPC_RETRY_BASE_MS", value)
    assert retry_base_from_env() == expected
