"""OpenAI Chat Completions provider against a real 127.0.0.1 server, including the known quirks of
compatible servers (Ollama, llama.cpp server, vLLM, LM Studio, OpenRouter)."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from pi_rpc.ai.compat import ModelCompat
from pi_rpc.ai.providers import openai_completions as oc
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import (
    AssistantMessage,
    AutoRetryEnd,
    AutoRetryStart,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    LlmMessage,
    Model,
    ProviderEvent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolcallDeltaEvent,
    ToolResultMessage,
    UserMessage,
)

from .helpers import (
    READ_SCHEMA,
    STRICT_READ_SCHEMA,
    STRICT_UNSUPPORTED,
    event_types,
    run_provider,
    sampling_tool,
)
from .sse_server import SSEServer, fixture_bytes, fixture_events, json_reply, sse_event, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-proj-SECRET-openai-key"


def _model(base_url: str, **kw: Any) -> Model:
    if isinstance(kw.get("compat"), dict):
        kw["compat"] = msgspec.convert(kw["compat"], ModelCompat)
    return Model(
        id="gpt-4o",
        name="GPT-4o",
        api="openai-completions",
        provider="openai",
        base_url=base_url,
        input=["text", "image"],
        **kw,
    )


def _context(**kw: Any) -> Context:
    return Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")], **kw)


async def _run(
    server: SSEServer,
    options: StreamOptions | None = None,
    model: Model | None = None,
    context: Context | None = None,
) -> tuple[AssistantMessage, list[ProviderEvent]]:
    opts = options or StreamOptions(api_key=KEY, max_retries=0, idle_timeout=5)
    return await run_provider(oc.stream, model or _model(server.url + "/v1"), context or _context(), opts)


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra})


# --- OpenAI itself ------------------------------------------------------------------------------


async def test_text_usage_and_request(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("openai_text.sse")))
    message, events = await _run(sse_server)
    assert message.stop_reason == "stop"
    assert message.content == [TextContent(text="Hi there\u2028!")]
    assert event_types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    u = message.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (20, 9, 100, 0, 129)

    request = sse_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]


async def test_one_byte_chunks(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_bytes("openai_tool_calls.sse", 1)))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "toolUse" and len(message.content) == 2


async def test_several_tool_calls_from_indexed_deltas(sse_server: SSEServer) -> None:
    """Tool calls are assembled by their index; each delta carries the arguments parsed so far."""
    sse_server.script(sse_reply(fixture_events("openai_tool_calls.sse")))
    message, events = await _run(sse_server)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        ToolCall(id="call_aaa", name="read", arguments={"path": "a.py"}),
        ToolCall(id="call_bbb", name="bash", arguments={"command": "ls -la", "timeout": 5}),
    ]
    partial = [e.arguments for e in events if isinstance(e, ToolcallDeltaEvent)]
    assert partial == [{}, {"path": "a.py"}, {"command": "ls -la", "timeout": 5}]
    assert isinstance(events[-1], DoneEvent) and events[-1].reason == "toolUse"
    assert message.usage.input == 300 and message.usage.output == 40


def test_request_body_conversion() -> None:
    """Spec 15.12: system messages only carry tool deltas and are not sent."""
    model = Model(
        id="o4-mini",
        name="o4",
        api="openai-completions",
        provider="openai",
        base_url="https://api.openai.com/v1",
        reasoning=True,
        input=["text", "image"],
    )
    png = ImageContent(data="AAAA", mime_type="image/png")
    tool = Tool(name="read", description="Read", parameters={"type": "object", "properties": {}})
    context = Context(
        system_prompt="Sys",
        tools=[tool],
        messages=[
            SystemMessage(tools_added=[tool]),
            UserMessage(content=[TextContent(text="see"), png]),
            AssistantMessage(
                api="openai-completions",
                provider="openai",
                model="o4-mini",
                content=[
                    ThinkingContent(thinking="plan", thinking_signature="reasoning_content"),
                    TextContent(text="ok"),
                    ToolCall(id="c1", name="read", arguments={"path": "x"}),
                ],
            ),
            ToolResultMessage(
                tool_call_id="c1", tool_name="read", content=[TextContent(text="X"), png], is_error=False
            ),
            AssistantMessage(
                api="openai-completions",
                provider="openai",
                model="o4-mini",
                content=[],
                stop_reason="aborted",
            ),
        ],
    )
    body = oc.build_request_body(model, context, StreamOptions(thinking_level="xhigh", max_tokens=100))
    assert body["messages"] == [
        {"role": "developer", "content": "Sys"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
        {
            "role": "assistant",
            "content": "ok",
            "reasoning_content": "plan",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"x"}'}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "X"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Attached image(s) from tool result:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        },
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["reasoning_effort"] == "high"  # xhigh is clamped unless the model supports it
    assert body["max_completion_tokens"] == 100 and body["store"] is False


def test_compat_by_host_and_override() -> None:
    local = Model(
        id="qwen3",
        name="q",
        api="openai-completions",
        provider="ollama",
        base_url="http://localhost:11434/v1",
        reasoning=True,
    )
    body = oc.build_request_body(local, _context(), StreamOptions(thinking_level="minimal", max_tokens=50))
    assert body["messages"][0]["role"] == "system" and "store" not in body
    assert body["max_tokens"] == 50 and body["reasoning_effort"] == "low"
    router = Model(
        id="x",
        name="x",
        api="openai-completions",
        provider="openrouter",
        base_url="https://openrouter.ai/api/v1",
        reasoning=True,
    )
    assert oc.build_request_body(router, _context(), StreamOptions(thinking_level="medium"))["reasoning"] == {
        "effort": "medium"
    }
    no_usage = Model(
        id="x",
        name="x",
        api="openai-completions",
        provider="p",
        base_url="http://h/v1",
        compat=msgspec.convert(
            {"supportsUsageInStreaming": False, "maxTokensField": "max_completion_tokens"}, ModelCompat
        ),
    )
    body = oc.build_request_body(no_usage, _context(), StreamOptions(max_tokens=9))
    assert "stream_options" not in body and body["max_completion_tokens"] == 9


# --- compatible servers -------------------------------------------------------------------------


async def test_llamacpp_reasoning_content_and_repeated_ids(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("openai_llamacpp.sse")))
    message, _ = await _run(sse_server)
    assert message.content == [
        ThinkingContent(thinking="Need to list files.", thinking_signature="reasoning_content"),
        ToolCall(id="fc_1", name="ls", arguments={"path": "."}),
    ]
    assert message.stop_reason == "toolUse"
    assert (message.usage.input, message.usage.output) == (87, 21)


async def test_ollama_whole_calls_reused_index_and_stop(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("openai_ollama.sse")))
    message, _ = await _run(sse_server)
    assert message.content == [
        ToolCall(id="call_x1", name="read", arguments={"path": "a.txt"}),
        ToolCall(id="call_x2", name="read", arguments={"path": "b.txt"}),
    ]
    assert message.stop_reason == "toolUse"  # the server said "stop"
    assert message.usage.total_tokens == 0  # no usage sent: zeros, not an error


async def test_openrouter_reasoning_comments_and_inline_usage(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("openai_openrouter.sse")))
    message, _ = await _run(sse_server)
    assert message.content == [
        ThinkingContent(thinking="Thinking.", thinking_signature="reasoning"),
        TextContent(text="Done."),
    ]
    assert (message.usage.input, message.usage.cache_read, message.usage.output) == (30, 20, 12)


async def test_missing_ids_missing_index_and_object_arguments(sse_server: SSEServer) -> None:
    """LM Studio / Gemini-compat style: no ids; no index; arguments as an object."""
    sse_server.script(
        sse_reply(
            [
                _chunk({"tool_calls": [{"function": {"name": "read", "arguments": {"path": "a"}}}]}),
                _chunk({"tool_calls": [{"function": {"name": "read", "arguments": '{"path": '}}]}),
                _chunk({"tool_calls": [{"function": {"arguments": '"b"}'}}]}),
                _chunk({}, "tool_calls"),
            ]
        )
    )  # and no [DONE]: the finish reason is enough
    message, _ = await _run(sse_server)
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    assert [(c.name, c.arguments) for c in calls] == [("read", {"path": "a"}), ("read", {"path": "b"})]
    assert all(c.id.startswith("call_") for c in calls) and calls[0].id != calls[1].id
    assert message.stop_reason == "toolUse"


async def test_duplicate_ids_made_unique_and_whole_repeat_ignored(sse_server: SSEServer) -> None:
    sse_server.script(
        sse_reply(
            [
                _chunk({"tool_calls": [{"index": 0, "id": "call_0", "function": {"name": "a", "arguments": '{"x":'}}]}),
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}),
                # vLLM-style: the complete arguments once more after streaming them
                _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"x":1}'}}]}),
                _chunk({"tool_calls": [{"index": 1, "id": "call_0", "function": {"name": "b", "arguments": "{}"}}]}),
                _chunk({}, "tool_calls"),
                b"data: [DONE]\n\n",
            ]
        )
    )
    message, _ = await _run(sse_server)
    assert message.content == [
        ToolCall(id="call_0", name="a", arguments={"x": 1}),
        ToolCall(id="call_0_1", name="b", arguments={}),
    ]


async def test_vllm_duplicate_reasoning_fields_counted_once(sse_server: SSEServer) -> None:
    sse_server.script(
        sse_reply(
            [
                _chunk({"reasoning_content": "abc", "reasoning": "abc"}),
                _chunk({"content": "x"}),
                _chunk({}, "eos"),
                b"data: [DONE]\n\n",
            ]
        )
    )
    message, _ = await _run(sse_server)
    assert message.content == [
        ThinkingContent(thinking="abc", thinking_signature="reasoning_content"),
        TextContent(text="x"),
    ]
    assert message.stop_reason == "stop"


@pytest.mark.parametrize(
    ("finish", "stop", "error"),
    [
        ("length", "length", None),
        ("max_tokens", "length", None),
        ("end_turn", "stop", None),
        ("content_filter", "error", "The model stopped with reason: content_filter"),
    ],
)
async def test_finish_reason_variants(sse_server: SSEServer, finish: str, stop: str, error: str | None) -> None:
    sse_server.script(sse_reply([_chunk({"content": "t"}), _chunk({}, finish), b"data: [DONE]\n\n"]))
    message, _ = await _run(sse_server)
    assert message.stop_reason == stop
    assert (message.error_message or None) == error


async def test_error_chunk_mid_stream(sse_server: SSEServer) -> None:
    sse_server.script(
        sse_reply(
            [
                _chunk({"content": "par"}),
                sse_event(
                    {
                        "error": {"code": 502, "message": "Upstream provider failed"},
                        "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
                    }
                ),
            ]
        )
    )
    message, _ = await _run(sse_server)
    assert message.stop_reason == "error" and message.error_message == "Upstream provider failed"
    assert message.content == [TextContent(text="par")]


async def test_json_error_with_status_200(sse_server: SSEServer) -> None:
    sse_server.script(json_reply(200, {"error": "model 'nope' not found"}))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "error" and message.error_message == "model 'nope' not found"


# --- errors, retry, drops, stalls, abort --------------------------------------------------------


async def test_401_message_and_no_key_leak(sse_server: SSEServer) -> None:
    sse_server.script(
        json_reply(
            401,
            {
                "error": {
                    "message": f"Incorrect API key provided: {KEY}.",
                    "type": "invalid_request_error",
                    "code": "invalid_api_key",
                }
            },
        )
    )
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=2))
    assert message.error_message == "401 Unauthorized: Incorrect API key provided: [redacted]."
    assert len(sse_server.requests) == 1
    assert KEY not in json.dumps([repr(e) for e in events])


async def test_500_without_retry_after_then_success(sse_server: SSEServer) -> None:
    sse_server.script(json_reply(500, {"detail": "boom"}), sse_reply(fixture_events("openai_text.sse")))
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=2))
    assert message.stop_reason == "stop"
    assert [e for e in events if isinstance(e, AutoRetryStart | AutoRetryEnd)] == [
        AutoRetryStart(attempt=1, max_attempts=2, delay_ms=2000, error_message="500 Internal Server Error: boom"),
        AutoRetryEnd(success=True, attempt=1),
    ]
    assert event_types(events)[-1] == "done"


async def test_429_retry_after_ms_and_zero_retries(sse_server: SSEServer) -> None:
    sse_server.script(
        json_reply(429, {"error": {"message": "Rate limit"}}, {"retry-after-ms": "250"}),
        sse_reply(fixture_events("openai_text.sse")),
    )
    _, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=1))
    assert [e.delay_ms for e in events if isinstance(e, AutoRetryStart)] == [250]
    sse_server.script(json_reply(429, {"error": {"message": "Rate limit"}}))
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=0))
    assert message.error_message == "429 Too Many Requests: Rate limit"
    assert not any(isinstance(e, AutoRetryStart | AutoRetryEnd) for e in events)


async def test_dropped_connection_and_clean_close(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("openai_text.sse"), drop_after=2))
    message, events = await _run(sse_server)
    assert message.stop_reason == "error" and message.content == [TextContent(text="Hi")]
    assert str(message.error_message).startswith("Connection closed before the response completed")
    assert isinstance(events[-1], ErrorEvent)
    sse_server.script(sse_reply(fixture_events("openai_text.sse")[:2]))
    message, _ = await _run(sse_server)
    assert message.error_message == "Stream ended before the message was complete"


async def test_keepalives_and_unexpected_chunk_shapes_are_skipped(sse_server: SSEServer) -> None:
    sse_server.script(
        sse_reply(
            [
                b"data: \n\n",
                _chunk({"content": "a"}),
                sse_event({"choices": "not-a-list"}),
                _chunk({"content": "b"}, "stop"),
                b"data: [DONE]\n\n",
            ]
        )
    )
    message, _ = await _run(sse_server)
    assert message.content == [TextContent(text="ab")] and message.stop_reason == "stop"


# --- constrained sampling (spec 4.3/4.4) and cross-provider replay --------------------------------


def _stop_reply() -> Any:
    return sse_reply([_chunk({"content": "ok"}), _chunk({}, "stop"), b"data: [DONE]\n\n"])


async def test_strict_tool_on_a_server_with_strict_mode(sse_server: SSEServer) -> None:
    """spec 4.3/4.4: prefer + `supportsStrictMode` -> `strict: true` and the strict schema; a tool
    that asked for nothing says `strict: false`."""
    sse_server.script(_stop_reply())
    strict_tool = sampling_tool("read", "Read", "prefer")
    plain_tool = Tool(name="ls", description="List", parameters=READ_SCHEMA)
    model = _model(sse_server.url + "/v1", compat={"supportsStrictMode": True})
    message, _ = await _run(sse_server, model=model, context=_context(tools=[strict_tool, plain_tool]))
    assert message.stop_reason == "stop"
    assert sse_server.requests[0].json["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read",
                "description": "Read",
                "parameters": STRICT_READ_SCHEMA,
                "strict": True,
            },
        },
        {
            "type": "function",
            "function": {
                "name": "ls",
                "description": "List",
                "parameters": READ_SCHEMA,
                "strict": False,
            },
        },
    ]


async def test_prefer_on_a_server_without_strict_mode_sends_the_tool_as_declared(
    sse_server: SSEServer,
) -> None:
    """spec 4.3: prefer + no support -> non-strict and no `strict` field (local servers reject it)."""
    sse_server.script(_stop_reply())
    tool = sampling_tool("read", "Read", "prefer")
    await _run(sse_server, context=_context(tools=[tool]))
    assert sse_server.requests[0].json["tools"] == [
        {"type": "function", "function": {"name": "read", "description": "Read", "parameters": READ_SCHEMA}}
    ]


async def test_require_without_strict_mode_fails_before_any_request(sse_server: SSEServer) -> None:
    """spec 4.3: require + no support -> the exact error, as the assistant message, no request."""
    tool = sampling_tool("edit", "Edit", "require")
    message, events = await _run(sse_server, context=_context(tools=[tool]))
    assert message.stop_reason == "error"
    assert message.error_message == STRICT_UNSUPPORTED
    assert isinstance(events[-1], ErrorEvent)
    assert sse_server.requests == []


def test_replay_of_another_providers_turn() -> None:
    """A Responses turn replayed over Chat Completions: `call|item` ids keep their call part (on
    the call and on its result), reasoning becomes text, an unanswered call gets an error result."""
    model = Model(id="llama", name="l", api="openai-completions", provider="local", base_url="http://127.0.0.1:8080/v1")
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        AssistantMessage(
            api="openai-responses",
            provider="openai",
            model="gpt-5",
            stop_reason="toolUse",
            content=[
                ThinkingContent(thinking="Plan it", thinking_signature='{"type":"reasoning"}'),
                ToolCall(id="call_A|fc_+/=long", name="read", arguments={"path": "a"}),
                ToolCall(id="call_B", name="bash", arguments={"command": "ls"}),
            ],
        ),
        ToolResultMessage(
            tool_call_id="call_A|fc_+/=long", tool_name="read", content=[TextContent(text="A")], is_error=False
        ),
        UserMessage(content="continue"),
    ]
    body = oc.build_request_body(model, Context(system_prompt="", messages=messages), StreamOptions())
    assert body["messages"] == [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": "Plan it",
            "tool_calls": [
                {"id": "call_A", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}},
                {"id": "call_B", "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_A", "content": "A"},
        {"role": "tool", "tool_call_id": "call_B", "content": "No result provided"},
        {"role": "user", "content": "continue"},
    ]
