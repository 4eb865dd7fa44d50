"""The behaviour every HTTP provider shares through the one driver (`pi_rpc/ai/providers/driver.py`),
as one contract run against each of the three APIs on a real 127.0.0.1 server: what the user sees
for a complete stream, a missing key, an HTTP error, a retry, a malformed, dropped, unfinished or
stalled stream, an abort, and a tool whose constrained sampling cannot be met."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from pi_rpc.ai.providers import anthropic, openai_completions, openai_responses
from pi_rpc.ai.registry import StreamFn, StreamOptions
from pi_rpc.ai.types import (
    AutoRetryEnd,
    AutoRetryStart,
    Context,
    ErrorEvent,
    LlmMessage,
    Model,
    SystemMessage,
    TextContent,
    UserMessage,
)

from .helpers import STRICT_UNSUPPORTED, abort_at_first_text_delta, run_provider, sampling_tool
from .sse_server import SSEServer, json_reply, sse_event, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-contract-SECRET-key-0123456789"


@dataclass(frozen=True)
class Api:
    name: str
    stream: StreamFn
    model: Callable[[str], Model]  # server URL -> model
    path: str
    # The events of a reply saying "Hello" then " world"; `partial` ends right after "Hello".
    partial: list[bytes]
    rest: list[bytes]
    unfinished_error: str
    key_required: bool


def _anthropic_model(url: str) -> Model:
    return Model(
        id="claude-sonnet-4-5", name="c", api="anthropic-messages", provider="anthropic", base_url=url, max_tokens=8_000
    )


def _completions_model(url: str) -> Model:
    return Model(id="gpt-4o", name="g", api="openai-completions", provider="openai", base_url=url + "/v1")


def _responses_model(url: str) -> Model:
    return Model(id="gpt-4o", name="g", api="openai-responses", provider="openai", base_url=url + "/v1")


def _anthropic_delta(text: str) -> bytes:
    return sse_event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})


def _chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def _responses_delta(text: str) -> bytes:
    return sse_event({"type": "response.output_text.delta", "output_index": 0, "delta": text})


_MESSAGE_ITEM = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
_DONE_ITEM = {**_MESSAGE_ITEM, "content": [{"type": "output_text", "text": "Hello world"}]}

APIS = [
    Api(
        name="anthropic-messages",
        stream=anthropic.stream,
        model=_anthropic_model,
        path="/v1/messages",
        partial=[
            sse_event({"type": "message_start", "message": {"usage": {"input_tokens": 3}}}),
            sse_event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            _anthropic_delta("Hello"),
        ],
        rest=[
            _anthropic_delta(" world"),
            sse_event({"type": "content_block_stop", "index": 0}),
            sse_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            sse_event({"type": "message_stop"}),
        ],
        unfinished_error="Stream ended before the message was complete",
        key_required=True,
    ),
    Api(
        name="openai-completions",
        stream=openai_completions.stream,
        model=_completions_model,
        path="/v1/chat/completions",
        partial=[_chat_chunk({"role": "assistant", "content": "Hello"})],
        rest=[_chat_chunk({"content": " world"}), _chat_chunk({}, "stop"), b"data: [DONE]\n\n"],
        unfinished_error="Stream ended before the message was complete",
        key_required=False,
    ),
    Api(
        name="openai-responses",
        stream=openai_responses.stream,
        model=_responses_model,
        path="/v1/responses",
        partial=[
            sse_event({"type": "response.created", "response": {"id": "resp_1"}}),
            sse_event({"type": "response.output_item.added", "output_index": 0, "item": _MESSAGE_ITEM}),
            _responses_delta("Hello"),
        ],
        rest=[
            _responses_delta(" world"),
            sse_event({"type": "response.output_item.done", "output_index": 0, "item": _DONE_ITEM}),
            sse_event({"type": "response.completed", "response": {"id": "resp_1", "status": "completed"}}),
        ],
        unfinished_error="OpenAI Responses stream ended before a terminal response event",
        key_required=True,
    ),
]


@pytest.fixture(params=APIS, ids=[api.name for api in APIS])
def api(request: pytest.FixtureRequest) -> Api:
    value: Api = request.param
    return value


def _context(**kw: Any) -> Context:
    return Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")], **kw)


async def _run(
    api: Api, server: SSEServer, options: StreamOptions | None = None, context: Context | None = None
) -> tuple[Any, list[Any]]:
    options = options or StreamOptions(api_key=KEY, max_retries=0, idle_timeout=5)
    return await run_provider(api.stream, api.model(server.url), context or _context(), options)


def _texts(message: Any) -> list[str]:
    return [block.text for block in message.content if isinstance(block, TextContent)]


async def test_complete_stream_is_one_message(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(api.partial + api.rest))
    message, events = await _run(api, sse_server)
    assert message.stop_reason == "stop"
    assert _texts(message) == ["Hello world"]  # Responses also keeps the item id for replay
    assert [type(e).__name__ for e in events][-1] == "DoneEvent"
    request = sse_server.requests[0]
    assert request.path == api.path
    assert request.json["stream"] is True
    assert KEY in (request.headers.get("x-api-key", "") + request.headers.get("authorization", ""))


async def test_missing_key(api: Api, sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):  # set, the message says it was withheld
        monkeypatch.delenv(name, raising=False)
    sse_server.script(sse_reply(api.partial + api.rest))
    message, _ = await _run(api, sse_server, StreamOptions(max_retries=0, idle_timeout=5))
    if api.key_required:
        assert message.stop_reason == "error"
        assert message.error_message == f"No API key for provider: {api.model('').provider}"
        assert sse_server.requests == []
    else:  # local servers need no key: the request goes without credentials
        assert message.stop_reason == "stop"
        assert "authorization" not in sse_server.requests[0].headers


async def test_http_error_is_not_retried_and_hides_the_key(
    api: Api, sse_server: SSEServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    sse_server.script(json_reply(401, {"error": {"type": "auth", "message": f"bad key {KEY}"}}))
    message, events = await _run(api, sse_server, StreamOptions(api_key=KEY, max_retries=3, idle_timeout=5))
    assert message.stop_reason == "error"
    assert message.error_message == "401 Unauthorized: bad key [redacted]"
    assert len(sse_server.requests) == 1
    assert isinstance(events[-1], ErrorEvent)
    assert all(KEY not in record.getMessage() for record in caplog.records)


async def test_overloaded_server_is_retried_then_answers(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(json_reply(529, {"error": {"message": "Overloaded"}}), sse_reply(api.partial + api.rest))
    options = StreamOptions(api_key=KEY, max_retries=2, idle_timeout=5)
    message, events = await _run(api, sse_server, options)
    assert _texts(message) == ["Hello world"]  # Responses also keeps the item id for replay
    assert [e for e in events if isinstance(e, AutoRetryStart | AutoRetryEnd)] == [
        AutoRetryStart(attempt=1, max_attempts=2, delay_ms=2000, error_message="529 Overloaded: Overloaded"),
        AutoRetryEnd(success=True, attempt=1),
    ]
    assert len(sse_server.requests) == 2


async def test_malformed_event_data_is_an_error(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(sse_reply([*api.partial, b'data: {"type":"con\n\n']))
    message, _ = await _run(api, sse_server)
    assert message.stop_reason == "error"
    assert str(message.error_message).startswith("Malformed event stream")


async def test_dropped_connection_keeps_the_partial_text(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(api.partial + api.rest, drop_after=len(api.partial)))
    message, events = await _run(api, sse_server)
    assert message.stop_reason == "error"
    assert str(message.error_message).startswith("Connection closed before the response completed")
    assert message.content == [TextContent(text="Hello")]
    assert isinstance(events[-1], ErrorEvent)


async def test_clean_close_before_the_end_is_an_error(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(api.partial))
    message, _ = await _run(api, sse_server)
    assert message.stop_reason == "error"
    assert message.error_message == api.unfinished_error


async def test_stalled_server_hits_the_idle_timeout(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(api.partial, stall=True))
    message, _ = await _run(api, sse_server, StreamOptions(api_key=KEY, max_retries=3, idle_timeout=0.3))
    assert str(message.error_message).startswith("Request timed out: no data received from the server")
    assert _texts(message) == ["Hello"]
    assert len(sse_server.requests) == 1


async def test_abort_closes_the_connection(api: Api, sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(api.partial, stall=True))
    options = StreamOptions(api_key=KEY, idle_timeout=30)
    builder, _ = await abort_at_first_text_delta(api.stream, api.model(sse_server.url), _context(), options)
    assert builder.fail("aborted", "Operation aborted").content == [TextContent(text="Hello")]
    with anyio.fail_after(5):
        await sse_server.requests[0].disconnected.wait()


async def test_unmeetable_constrained_sampling_fails_before_any_request(api: Api, sse_server: SSEServer) -> None:
    context = _context(tools=[sampling_tool("edit", "Edit", "require")])
    message, events = await _run(api, sse_server, context=context)
    assert message.stop_reason == "error"
    assert message.error_message == STRICT_UNSUPPORTED
    assert isinstance(events[-1], ErrorEvent)
    assert sse_server.requests == []


async def test_system_message_content_reaches_the_model_where_it_stands(api: Api, sse_server: SSEServer) -> None:
    """One rule for every API: a transcript system message with content is sent at its place (in the
    system prompt's role where the API has one mid-conversation, else on the user side)."""
    sse_server.script(sse_reply(api.partial + api.rest))
    messages: list[LlmMessage] = [
        UserMessage(content="hi"),
        SystemMessage(content="Mode changed."),
        UserMessage(content="go on"),
    ]
    message, _ = await _run(api, sse_server, context=Context(system_prompt="Be brief.", messages=messages))
    assert message.stop_reason == "stop"
    body = sse_server.requests[0].json
    sent = json.dumps(body.get("messages", body.get("input")))
    assert sent.index('"hi"') < sent.index("Mode changed.") < sent.index("go on")
