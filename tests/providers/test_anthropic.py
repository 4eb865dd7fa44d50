"""Anthropic Messages provider against a real 127.0.0.1 server speaking the Messages SSE format."""

from __future__ import annotations

import logging
from typing import Any

import msgspec
import pytest

from pi_rpc.ai.compat import ModelCompat
from pi_rpc.ai.providers import anthropic
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    AutoRetryEnd,
    AutoRetryStart,
    Context,
    DoneEvent,
    ErrorEvent,
    ImageContent,
    JsonSchemaSampling,
    Model,
    ModelCost,
    ProviderEvent,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingDeltaEvent,
    Tool,
    ToolCall,
    ToolcallDeltaEvent,
    ToolcallEndEvent,
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
from .sse_server import (
    SSEServer,
    fixture_bytes,
    fixture_events,
    json_reply,
    sse_event,
    sse_reply,
)

pytestmark = pytest.mark.anyio

KEY = "sk-ant-api03-SECRET-KEY-value"


def _model(server: SSEServer, **kw: Any) -> Model:
    if isinstance(kw.get("compat"), dict):
        kw["compat"] = msgspec.convert(kw["compat"], ModelCompat)
    return Model(
        id="claude-sonnet-4-5",
        name="Claude",
        api="anthropic-messages",
        provider="anthropic",
        base_url=server.url,
        reasoning=True,
        input=["text", "image"],
        max_tokens=64_000,
        cost=ModelCost(input=3, output=15, cache_read=0.3, cache_write=3.75),
        **kw,
    )


def _context(**kw: Any) -> Context:
    return Context(system_prompt="You are helpful.", messages=[UserMessage(content="hi")], **kw)


async def _run(
    server: SSEServer,
    options: StreamOptions | None = None,
    context: Context | None = None,
    model: Model | None = None,
) -> tuple[AssistantMessage, list[ProviderEvent]]:
    opts = options or StreamOptions(api_key=KEY, max_retries=0, idle_timeout=5)
    return await run_provider(anthropic.stream, model or _model(server), context or _context(), opts)


# --- happy paths --------------------------------------------------------------------------------


async def test_text_stream_events_usage_and_request(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("anthropic_text.sse")))
    message, events = await _run(sse_server)
    assert message.stop_reason == "stop"
    assert message.content == [TextContent(text="Hello, wo\u2028rld!")]  # U+2028 is not a line break
    assert message.model == "claude-sonnet-4-5"  # the configured id, which replay compares against
    assert event_types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write) == (25, 15, 100, 10)
    assert usage.total_tokens == 150
    assert usage.cost.total == pytest.approx((25 * 3 + 15 * 15 + 100 * 0.3 + 10 * 3.75) / 1e6)

    request = sse_server.requests[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == KEY
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "fine-grained-tool-streaming-2025-05-14" in request.headers["anthropic-beta"]
    body = request.json
    assert body["stream"] is True and body["model"] == "claude-sonnet-4-5"
    assert body["system"] == [{"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
    ]
    assert "thinking" not in body


async def test_one_byte_chunks_give_the_same_message(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_bytes("anthropic_thinking_tools.sse", 1)))
    sliced, _ = await _run(sse_server)
    sse_server.script(sse_reply(fixture_events("anthropic_thinking_tools.sse")))
    whole, _ = await _run(sse_server)
    assert sliced.content == whole.content and sliced.stop_reason == whole.stop_reason == "toolUse"


async def test_thinking_signature_and_two_tool_calls(sse_server: SSEServer) -> None:
    """Thinking signatures are kept, and each toolcall_delta carries the arguments parsed so far."""
    sse_server.script(sse_reply(fixture_events("anthropic_thinking_tools.sse")))
    message, events = await _run(sse_server)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        ThinkingContent(
            thinking="The user wants two files. I will read both.",
            thinking_signature="EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        ),
        TextContent(text="Reading both files."),
        ToolCall(id="toolu_01A", name="read", arguments={"path": "src/main.py", "limit": 20}),
        ToolCall(id="toolu_01B", name="read", arguments={"path": "README.md"}),
    ]
    thinking = [e.delta for e in events if isinstance(e, ThinkingDeltaEvent)]
    assert thinking == ["The user wants two files. ", "I will read both."]
    partial = [e.arguments for e in events if isinstance(e, ToolcallDeltaEvent) and e.content_index == 2]
    assert partial == [
        {"path": "src/ma"},
        {"path": "src/main.py", "limit": 2},
        {"path": "src/main.py", "limit": 20},
    ]
    ends = [e.tool_call.id for e in events if isinstance(e, ToolcallEndEvent)]
    assert ends == ["toolu_01A", "toolu_01B"]
    assert isinstance(events[-1], DoneEvent) and events[-1].reason == "toolUse"
    assert message.usage.input == 472 and message.usage.output == 89


async def test_tool_input_sent_whole_in_block_start(sse_server: SSEServer) -> None:
    sse_server.script(
        sse_reply(
            [
                sse_event({"type": "message_start", "message": {"model": "m", "usage": {"input_tokens": 3}}}),
                sse_event(
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "ls",
                            "input": {"path": "."},
                        },
                    }
                ),
                sse_event({"type": "content_block_stop", "index": 0}),
                sse_event(
                    {
                        "type": "message_delta",
                        "delta": {"stop_reason": "tool_use"},
                        "usage": {"output_tokens": 4},
                    }
                ),
                sse_event({"type": "message_stop"}),
            ]
        )
    )
    message, _ = await _run(sse_server)
    assert message.content == [ToolCall(id="t1", name="ls", arguments={"path": "."})]


async def test_redacted_thinking_kept_for_replay(sse_server: SSEServer) -> None:
    sse_server.script(
        sse_reply(
            [
                sse_event({"type": "message_start", "message": {"model": "m", "usage": {}}}),
                sse_event(
                    {
                        "type": "content_block_start",
                        "index": 0,
                        "content_block": {"type": "redacted_thinking", "data": "OPAQUE"},
                    }
                ),
                sse_event({"type": "content_block_stop", "index": 0}),
                sse_event({"type": "message_delta", "delta": {"stop_reason": "max_tokens"}}),
                sse_event({"type": "message_stop"}),
            ]
        )
    )
    message, _ = await _run(sse_server)
    assert message.stop_reason == "length"
    assert message.content == [
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="OPAQUE", redacted=True)
    ]
    replay = anthropic.convert_messages([message], _model(sse_server))
    assert replay == [{"role": "assistant", "content": [{"type": "redacted_thinking", "data": "OPAQUE"}]}]


# --- request body -------------------------------------------------------------------------------


def test_convert_messages_full_transcript() -> None:
    """Spec 1.3 (input_schema), 15.11 (system messages carry only tool deltas, not sent)."""
    model = Model(
        id="claude-sonnet-4-5",
        name="c",
        api="anthropic-messages",
        provider="anthropic",
        input=["text", "image"],
    )
    png = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
    messages = [
        SystemMessage(tools_added=[Tool(name="read", description="Read", parameters={})]),
        UserMessage(content=[TextContent(text="look"), png]),
        AssistantMessage(
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",  # same model: its signed thinking replays as thinking
            content=[
                ThinkingContent(thinking="hmm", thinking_signature="SIG"),
                ThinkingContent(thinking="unsigned"),
                TextContent(text=" "),
                ToolCall(id="call|1", name="read", arguments={"path": "a"}),
                ToolCall(id="t2", name="bash", arguments={"command": "ls"}),
            ],
        ),
        ToolResultMessage(
            tool_call_id="call|1", tool_name="read", content=[TextContent(text="A"), png], is_error=False
        ),
        ToolResultMessage(tool_call_id="t2", tool_name="bash", content=[TextContent(text="boom")], is_error=True),
    ]
    out = anthropic.convert_messages(messages, model)
    assert out == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "SIG"},
                {"type": "text", "text": "unsigned"},
                {"type": "tool_use", "id": "call_1", "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "t2", "name": "bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "call_1",
                    "is_error": False,
                    "content": [
                        {"type": "text", "text": "A"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                        },
                    ],
                },
                {
                    "type": "tool_result",
                    "tool_use_id": "t2",
                    "content": "boom",
                    "is_error": True,
                    "cache_control": {"type": "ephemeral"},
                },
            ],
        },
    ]


def test_tools_and_thinking_budget_in_body() -> None:
    model = Model(
        id="claude-sonnet-4-5",
        name="c",
        api="anthropic-messages",
        provider="anthropic",
        reasoning=True,
        max_tokens=64_000,
    )
    tool = Tool(
        name="read",
        description="Read a file",
        parameters={
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
            "additionalProperties": False,
        },
    )
    options = StreamOptions(api_key=KEY, thinking_level="medium", temperature=0.5)
    body = anthropic.build_request_body(model, Context(system_prompt="", messages=[], tools=[tool]), options)
    assert body["tools"] == [
        {
            "name": "read",
            "description": "Read a file",
            "input_schema": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        }
    ]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8192}
    # Pi 1.6.0: the model's whole ceiling (older Pi sent a third of it plus the budget).
    assert body["max_tokens"] == 64_000
    assert "temperature" not in body and "system" not in body
    off = anthropic.build_request_body(model, _context(), StreamOptions(temperature=0.5))
    assert "thinking" not in off and off["temperature"] == 0.5
    adaptive = Model(id="claude-opus-4-6", name="o", api="anthropic-messages", provider="anthropic", reasoning=True)
    body = anthropic.build_request_body(adaptive, _context(), StreamOptions(thinking_level="xhigh"))
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "max"}


async def test_configured_adaptive_model_gets_effort_not_budget(sse_server: SSEServer) -> None:
    """One thinking policy: a model that says `forceAdaptiveThinking` (a newer Claude configured in
    models.json) is sent an effort from its level map, and no interleaved-thinking beta."""
    sse_server.script(sse_reply(fixture_events("anthropic_text.sse")))
    model = _model(sse_server, compat={"forceAdaptiveThinking": True}, thinking_level_map={"xhigh": "max"})
    model.id = "claude-opus-5"
    builder = AssistantBuilder(model)
    options = StreamOptions(api_key=KEY, thinking_level="minimal", max_retries=0)
    message = await anthropic.stream(model, _context(), options, builder)
    assert message.stop_reason == "stop"
    request = sse_server.requests[0]
    assert request.json["thinking"] == {"type": "adaptive"}
    assert request.json["output_config"] == {"effort": "low"}
    assert "interleaved" not in request.headers["anthropic-beta"]
    body = anthropic.build_request_body(model, _context(), StreamOptions(thinking_level="xhigh"))
    assert body["output_config"] == {"effort": "max"}


def test_the_cap_is_the_models_fitted_into_the_context_window() -> None:
    """Pi 1.6.0 sends the model's `maxTokens` (not a third of it), lowered to what the window leaves
    after the input and a 4,096-token margin, and the thinking budget keeps 1,024 for the answer."""
    model = Model(
        id="claude-local",
        name="l",
        api="anthropic-messages",
        provider="p",
        reasoning=True,
        context_window=16_384,
        max_tokens=64_000,
    )
    context = Context(system_prompt="", messages=[UserMessage(content="x" * 3500)])
    assert anthropic.build_request_body(model, context, StreamOptions())["max_tokens"] == 16_384 - 1000 - 4096
    body = anthropic.build_request_body(model, context, StreamOptions(thinking_level="high"))
    assert body["max_tokens"] == 16_384 - 1000 - 4096
    assert body["thinking"]["budget_tokens"] == 16_384 - 1000 - 4096 - 1024


def test_small_ceiling_keeps_answer_room_like_pi() -> None:
    """Pi adjustMaxTokensForThinking: when the budget does not fit under the model's ceiling, the
    budget shrinks so that 1024 tokens stay for the answer (it is not raised back to 1024)."""
    model = Model(
        id="claude-haiku-x", name="h", api="anthropic-messages", provider="anthropic", reasoning=True, max_tokens=1_500
    )
    body = anthropic.build_request_body(model, _context(), StreamOptions(thinking_level="high"))
    assert body["max_tokens"] == 1_500
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1_500 - 1_024}


# --- errors and retry ---------------------------------------------------------------------------


async def test_401_is_an_error_message_without_the_key(sse_server: SSEServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    sse_server.script(
        json_reply(
            401,
            {
                "type": "error",
                "error": {"type": "authentication_error", "message": f"invalid x-api-key {KEY}"},
            },
        )
    )
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=3, idle_timeout=5))
    assert message.stop_reason == "error"
    assert message.error_message == "401 Unauthorized: invalid x-api-key [redacted]"
    assert len(sse_server.requests) == 1  # not retried
    assert isinstance(events[-1], ErrorEvent) and events[-1].error_message == message.error_message
    assert not any(isinstance(e, AutoRetryStart) for e in events)
    assert all(KEY not in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("status", [429, 500, 529])
async def test_retryable_status_then_success(sse_server: SSEServer, status: int) -> None:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    sse_server.script(
        json_reply(status, error), json_reply(status, error), sse_reply(fixture_events("anthropic_text.sse"))
    )
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=3, idle_timeout=5))
    assert message.stop_reason == "stop" and message.content == [TextContent(text="Hello, wo\u2028rld!")]
    retries = [e for e in events if isinstance(e, AutoRetryStart | AutoRetryEnd)]
    reason = {429: "Too Many Requests", 500: "Internal Server Error", 529: "Overloaded"}[status]
    assert retries == [
        AutoRetryStart(attempt=1, max_attempts=3, delay_ms=2000, error_message=f"{status} {reason}: Overloaded"),
        AutoRetryStart(attempt=2, max_attempts=3, delay_ms=4000, error_message=f"{status} {reason}: Overloaded"),
        AutoRetryEnd(success=True, attempt=2),
    ]
    assert len(sse_server.requests) == 3


async def test_retry_after_is_honoured_and_retries_run_out(sse_server: SSEServer) -> None:
    error = {"type": "error", "error": {"type": "rate_limit_error", "message": "Slow down"}}
    sse_server.script(json_reply(429, error, {"retry-after": "7"}), json_reply(429, error))
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=1, idle_timeout=5))
    assert message.stop_reason == "error"
    assert message.error_message == "429 Too Many Requests: Slow down"
    assert [e for e in events if isinstance(e, AutoRetryStart | AutoRetryEnd)] == [
        AutoRetryStart(attempt=1, max_attempts=1, delay_ms=7000, error_message="429 Too Many Requests: Slow down"),
        AutoRetryEnd(success=False, attempt=1, final_error="429 Too Many Requests: Slow down"),
    ]


async def test_error_event_mid_stream(sse_server: SSEServer) -> None:
    events = fixture_events("anthropic_text.sse")[:4]
    events.append(sse_event({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "error"))
    sse_server.script(sse_reply(events))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "error"
    assert message.error_message == "overloaded_error: Overloaded"
    assert message.content == [TextContent(text="Hello")]


async def test_connection_dropped_mid_stream(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("anthropic_text.sse"), drop_after=4))
    message, events = await _run(sse_server)
    assert message.stop_reason == "error"
    assert str(message.error_message).startswith("Connection closed before the response completed")
    assert message.content == [TextContent(text="Hello")]
    assert isinstance(events[-1], ErrorEvent)


async def test_connect_refused_is_an_error() -> None:
    model = Model(id="c", name="c", api="anthropic-messages", provider="anthropic", base_url="http://127.0.0.1:9")
    builder = AssistantBuilder(model)
    message = await anthropic.stream(model, _context(), StreamOptions(api_key=KEY, max_retries=0), builder)
    assert message.stop_reason == "error"
    assert str(message.error_message).startswith("Connection error")


# --- constrained sampling (spec 4.3/4.4) and cross-provider replay --------------------------------


def _text_reply() -> Any:
    return sse_reply(
        [
            sse_event({"type": "message_start", "message": {"usage": {"input_tokens": 1}}}),
            sse_event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": "ok"}}),
            sse_event({"type": "content_block_stop", "index": 0}),
            sse_event({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
            sse_event({"type": "message_stop"}),
        ]
    )


async def test_strict_tool_on_a_model_with_strict_tools(sse_server: SSEServer) -> None:
    """spec 4.3/4.4: prefer + `supportsStrictTools` -> `strict: true` and the strict schema."""
    sse_server.script(_text_reply())
    strict_tool = sampling_tool("read", "Read", "prefer")
    plain_tool = Tool(name="ls", description="List", parameters=READ_SCHEMA)
    model = _model(sse_server, compat={"supportsStrictTools": True})
    message, _ = await _run(sse_server, context=_context(tools=[strict_tool, plain_tool]), model=model)
    assert message.stop_reason == "stop"
    assert sse_server.requests[0].json["tools"] == [
        {
            "name": "read",
            "description": "Read",
            "strict": True,
            "input_schema": STRICT_READ_SCHEMA,
        },
        {"name": "ls", "description": "List", "input_schema": READ_SCHEMA},
    ]


async def test_prefer_without_strict_tools_sends_the_tool_as_declared(sse_server: SSEServer) -> None:
    """spec 4.3: prefer + no support -> non-strict, no `strict` field."""
    sse_server.script(_text_reply())
    tool = sampling_tool("read", "Read", "prefer")
    await _run(sse_server, context=_context(tools=[tool]))
    assert sse_server.requests[0].json["tools"] == [
        {"name": "read", "description": "Read", "input_schema": READ_SCHEMA}
    ]


async def test_require_that_cannot_be_met_fails_before_any_request(sse_server: SSEServer) -> None:
    """spec 4.3: the exact error texts, for no support and for a schema that cannot be strict."""
    tool = sampling_tool("edit", "Edit", "require")
    message, events = await _run(sse_server, context=_context(tools=[tool]))
    assert message.stop_reason == "error"
    assert message.error_message == STRICT_UNSUPPORTED
    assert isinstance(events[-1], ErrorEvent)

    loose = Tool(
        name="bash",
        description="Run",
        constrained_sampling=JsonSchemaSampling(strict="require"),
        parameters={"type": "object", "properties": {"x": {"type": "string"}}, "additionalProperties": True},
    )
    model = _model(sse_server, compat={"supportsStrictTools": True})
    message, _ = await _run(sse_server, context=_context(tools=[loose]), model=model)
    assert message.error_message == (
        'Tool "bash" requires JSON-schema constrained sampling, but '
        "schema-valued or true additionalProperties is unsupported."
    )
    assert sse_server.requests == []


def test_replay_of_another_providers_turn() -> None:
    """A Responses turn replayed to Claude: its reasoning becomes text, its `call|item` ids are
    made valid for the Messages API on both the call and the result, an unanswered call gets an
    error result, and an aborted turn is left out."""
    model = Model(id="claude-sonnet-4-5", name="c", api="anthropic-messages", provider="anthropic")
    long_id = "call_A|fc_" + "Z" * 80 + "+/="
    messages = [
        UserMessage(content="go"),
        AssistantMessage(
            api="openai-responses",
            provider="openai",
            model="gpt-5",
            stop_reason="toolUse",
            content=[
                ThinkingContent(thinking="Plan it", thinking_signature='{"type":"reasoning"}'),
                ToolCall(id=long_id, name="read", arguments={"path": "a"}, thought_signature="fc_1"),
                ToolCall(id="call_B", name="bash", arguments={"command": "ls"}),
            ],
        ),
        ToolResultMessage(tool_call_id=long_id, tool_name="read", content=[TextContent(text="A")], is_error=False),
        AssistantMessage(
            api="anthropic-messages",
            provider="anthropic",
            model="claude-sonnet-4-5",
            stop_reason="aborted",
            content=[TextContent(text="half")],
        ),
        UserMessage(content="continue"),
    ]
    out = anthropic.convert_messages(messages, model)
    call_id = ("call_A_fc_" + "Z" * 80)[:64]
    assert out == [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Plan it"},
                {"type": "tool_use", "id": call_id, "name": "read", "input": {"path": "a"}},
                {"type": "tool_use", "id": "call_B", "name": "bash", "input": {"command": "ls"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": "A", "is_error": False},
                {"type": "tool_result", "tool_use_id": "call_B", "content": "No result provided", "is_error": True},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "continue", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]
