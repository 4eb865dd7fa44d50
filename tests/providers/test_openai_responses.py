"""OpenAI Responses provider against a real 127.0.0.1 server speaking the Responses SSE format.

The streams below follow the API's wire format as sent by api.openai.com: `event:` lines naming
the type, JSON data carrying `type`, `sequence_number`, `output_index`, `item_id`, … .
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from pi_rpc.ai.models import get_model
from pi_rpc.ai.providers import openai_responses
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import (
    AssistantMessage,
    AutoRetryEnd,
    AutoRetryStart,
    Context,
    DoneEvent,
    ErrorEvent,
    GrammarSampling,
    GrammarVariants,
    ImageContent,
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
from .responses_wire import Wire, responses_model
from .sse_server import SSEServer, json_reply, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-proj-SECRET-KEY-value-0123"


# --- wire-format helpers ------------------------------------------------------------------------


def _context(**kw: Any) -> Context:
    kw.setdefault("messages", [UserMessage(content="hi")])
    return Context(system_prompt="You are helpful.", **kw)


async def _run(
    server: SSEServer,
    options: StreamOptions | None = None,
    context: Context | None = None,
    model: Model | None = None,
) -> tuple[AssistantMessage, list[ProviderEvent]]:
    opts = options or StreamOptions(api_key=KEY, max_retries=0, idle_timeout=5)
    return await run_provider(openai_responses.stream, model or responses_model(server), context or _context(), opts)


# --- text, reasoning, tool calls ------------------------------------------------------------------


async def test_text_stream_events_usage_and_request(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(Wire().message(0, ["Hello", ", wo\u2028rld!"]).completed(1200, 50, cached=1000).events))
    message, events = await _run(sse_server)
    assert message.stop_reason == "stop"
    assert message.content == [TextContent(text="Hello, wo\u2028rld!", text_signature="msg_1")]
    assert message.model == "gpt-5.1"  # the requested id, which replay compares against
    assert event_types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    usage = message.usage
    assert (usage.input, usage.output, usage.cache_read, usage.total_tokens) == (200, 50, 1000, 1250)
    # gpt-5.1: $1.25 in, $10 out, $0.125 cached, per million tokens
    assert usage.cost.total == pytest.approx((200 * 1.25 + 50 * 10 + 1000 * 0.125) / 1e6)
    assert isinstance(events[-1], DoneEvent) and events[-1].usage == usage

    request = sse_server.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/responses")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.json
    assert body["model"] == "gpt-5.1" and body["stream"] is True and body["store"] is False
    assert body["input"] == [
        {"role": "developer", "content": "You are helpful."},
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
    ]
    assert body["reasoning"] == {"effort": "none"}  # thinking off on a model that can switch it off
    assert body["include"] == ["reasoning.encrypted_content"]
    assert "tools" not in body


async def test_one_byte_chunks_give_the_same_message(sse_server: SSEServer) -> None:
    stream = b"".join(
        e for e in Wire().message(0, ["Hel", "lo \u00e9\u2028"]).completed().events if isinstance(e, bytes)
    )
    sse_server.script(sse_reply([stream[i : i + 1] for i in range(len(stream))]))
    message, _ = await _run(sse_server)
    assert message.content == [TextContent(text="Hello \u00e9\u2028", text_signature="msg_1")]


async def test_reasoning_summary_then_text(sse_server: SSEServer) -> None:
    wire = Wire().reasoning(0, [["Think", "ing"], ["More"]]).message(1, ["Answer"], phase="final_answer")
    sse_server.script(sse_reply(wire.completed().events))
    options = StreamOptions(api_key=KEY, max_retries=0, thinking_level="high")
    message, events = await _run(sse_server, options)
    thinking, text = message.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "Thinking\n\nMore"
    assert isinstance(thinking.thinking_signature, str)
    assert json.loads(thinking.thinking_signature) == {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "gAAAAenc",
        "summary": [{"type": "summary_text", "text": "Thinking"}, {"type": "summary_text", "text": "More"}],
    }
    assert isinstance(text, TextContent) and text.text == "Answer"
    assert json.loads(text.text_signature) == {"v": 1, "id": "msg_1", "phase": "final_answer"}  # type: ignore[arg-type]
    assert event_types(events)[:6] == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_delta",
        "thinking_delta",
    ]
    body = sse_server.requests[0].json
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]


async def test_encrypted_only_reasoning_keeps_an_empty_thinking_block(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(Wire().reasoning(0, []).message(1, ["ok"]).completed().events))
    message, _ = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=0, thinking_level="low"))
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == ""
    assert json.loads(str(thinking.thinking_signature))["encrypted_content"] == "gAAAAenc"


async def test_one_function_call(sse_server: SSEServer) -> None:
    wire = Wire().call(0, "call_abc", "read", ['{"pa', 'th": "a.t', 'xt"}'], item_id="fc_9")
    sse_server.script(sse_reply(wire.completed().events))
    context = _context(tools=[Tool(name="read", description="Read a file", parameters=READ_SCHEMA)])
    message, events = await _run(sse_server, context=context)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        ToolCall(id="call_abc", name="read", arguments={"path": "a.txt"}, thought_signature="fc_9")
    ]
    deltas = [e for e in events if isinstance(e, ToolcallDeltaEvent)]
    assert [d.delta for d in deltas] == ['{"pa', 'th": "a.t', 'xt"}']
    assert deltas[-1].arguments == {"path": "a.txt"}
    assert event_types(events) == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    # gpt-5.1 takes strict tools; the tool did not ask for constrained sampling.
    assert sse_server.requests[0].json["tools"] == [
        {
            "type": "function",
            "name": "read",
            "description": "Read a file",
            "parameters": READ_SCHEMA,
            "strict": False,
        }
    ]


async def test_text_and_several_function_calls(sse_server: SSEServer) -> None:
    wire = (
        Wire()
        .message(0, ["Reading both."])
        .call(1, "call_1", "read", ['{"path":"a"}'], item_id="fc_1")
        .call(2, "call_2", "read", ['{"path":', '"b","limit":3}'], item_id="fc_2")
    )
    sse_server.script(sse_reply(wire.completed().events))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "toolUse"
    assert message.content == [
        TextContent(text="Reading both.", text_signature="msg_1"),
        ToolCall(id="call_1", name="read", arguments={"path": "a"}, thought_signature="fc_1"),
        ToolCall(id="call_2", name="read", arguments={"path": "b", "limit": 3}, thought_signature="fc_2"),
    ]


async def test_arguments_sent_only_in_done_events(sse_server: SSEServer) -> None:
    """Some servers send no argument deltas: the `done` events carry the whole JSON."""
    wire = Wire()
    item = {"id": "fc_1", "type": "function_call", "arguments": "", "call_id": "call_1", "name": "read"}
    wire.emit("response.output_item.added", output_index=0, item=item)
    wire.emit("response.function_call_arguments.done", output_index=0, item_id="fc_1", arguments='{"path":"x"}')
    wire.emit("response.output_item.done", output_index=0, item={**item, "arguments": '{"path":"x"}'})
    sse_server.script(sse_reply(wire.completed().events))
    message, _ = await _run(sse_server)
    assert message.content == [ToolCall(id="call_1", name="read", arguments={"path": "x"}, thought_signature="fc_1")]


async def test_incomplete_for_max_output_tokens_is_length(sse_server: SSEServer) -> None:
    wire = Wire().message(0, ["cut"]).completed(status="incomplete", incomplete="max_output_tokens")
    sse_server.script(sse_reply(wire.events))
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=0, max_tokens=8))
    assert message.stop_reason == "length"
    assert isinstance(events[-1], DoneEvent) and events[-1].reason == "length"
    assert sse_server.requests[0].json["max_output_tokens"] == 16  # the API's minimum


async def test_incomplete_for_content_filter_is_an_error(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(Wire().completed(status="incomplete", incomplete="content_filter").events))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "error"
    assert message.error_message == "Response incomplete: content_filter"


# --- replay ---------------------------------------------------------------------------------------


async def test_replay_of_reasoning_calls_and_results(sse_server: SSEServer) -> None:
    """A first turn's reasoning item, message id and call item ids go back on the next request."""
    first = Wire().reasoning(0, [["Plan"]]).call(1, "call_1", "read", ['{"path":"a"}'], item_id="fc_1")
    sse_server.script(sse_reply(first.completed().events), sse_reply(Wire().message(0, ["Done"]).completed().events))
    model = responses_model(sse_server)
    options = StreamOptions(api_key=KEY, max_retries=0, thinking_level="medium")
    turn1, _ = await _run(sse_server, options, model=model)
    result = ToolResultMessage(
        tool_call_id="call_1", tool_name="read", content=[TextContent(text="file a")], is_error=False
    )
    context = _context(messages=[UserMessage(content="hi"), turn1, result])
    await _run(sse_server, options, context=context, model=model)
    replayed = sse_server.requests[1].json["input"]
    assert replayed[2] == {
        "type": "reasoning",
        "id": "rs_1",
        "encrypted_content": "gAAAAenc",
        "summary": [{"type": "summary_text", "text": "Plan"}],
    }
    assert replayed[3] == {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "read",
        "arguments": '{"path": "a"}',
    }
    assert replayed[4] == {"type": "function_call_output", "call_id": "call_1", "output": "file a"}


async def test_input_conversion_rules(sse_server: SSEServer) -> None:
    """Foreign thinking becomes text, foreign call ids are normalised and lose their item ids,
    failed turns are skipped, unanswered calls get a result, images go as data URLs."""
    model = responses_model(sse_server)
    foreign = AssistantMessage(
        api="anthropic-messages",
        provider="anthropic",
        model="claude-sonnet-4-5",
        content=[
            ThinkingContent(thinking="I should look", thinking_signature="sig"),
            TextContent(text="Looking."),
            ToolCall(id="toolu|01/x", name="read", arguments={"path": "a"}, thought_signature="fc_zz"),
        ],
    )
    aborted = AssistantMessage(
        api=model.api,
        provider="openai",
        model=model.id,
        stop_reason="aborted",
        content=[TextContent(text="partial")],
    )
    image = ImageContent(data="AAAA", mime_type="image/png")
    messages = [
        UserMessage(content=[TextContent(text="see"), image]),
        foreign,
        aborted,
        UserMessage(content="go on"),
        SystemMessage(content="Mode changed."),
    ]
    body = openai_responses.build_request_body(model, _context(messages=messages), StreamOptions())
    assert body["input"][1:] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "detail": "auto", "image_url": "data:image/png;base64,AAAA"},
            ],
        },
        {"role": "assistant", "content": "I should look"},
        {"role": "assistant", "content": "Looking."},
        {"type": "function_call", "call_id": "toolu_01_x", "name": "read", "arguments": '{"path": "a"}'},
        {"type": "function_call_output", "call_id": "toolu_01_x", "output": "No result provided"},
        {"role": "user", "content": [{"type": "input_text", "text": "go on"}]},
        {"role": "developer", "content": "Mode changed."},
    ]
    text_only = responses_model(sse_server, input=["text"])
    body = openai_responses.build_request_body(text_only, _context(messages=messages[:1]), StreamOptions())
    assert body["input"][1]["content"][1] == {
        "type": "input_text",
        "text": "(image omitted: model does not support images)",
    }


def test_thinking_levels_map_to_reasoning_effort() -> None:
    def reasoning(model_id: str, level: Any) -> Any:
        model = get_model("openai", model_id)
        assert model is not None
        return openai_responses.build_request_body(model, _context(), StreamOptions(thinking_level=level)).get(
            "reasoning"
        )

    assert reasoning("gpt-5.2", "xhigh") == {"effort": "xhigh", "summary": "auto"}
    assert reasoning("gpt-5.1", "xhigh") == {"effort": "high", "summary": "auto"}
    assert reasoning("gpt-5.1", "minimal") == {"effort": "low", "summary": "auto"}
    assert reasoning("gpt-5", "off") == {"effort": "minimal"}
    assert reasoning("o3", "off") == {"effort": "low", "summary": "auto"}
    assert reasoning("gpt-4.1", "high") is None


# --- constrained sampling (spec 4.3-4.5) ----------------------------------------------------------


async def test_strict_tool_declared_with_the_strict_schema(sse_server: SSEServer) -> None:
    """spec 4.3/4.4: json_schema prefer on a strict-capable model -> strict: true, rewritten schema."""
    sse_server.script(sse_reply(Wire().message(0, ["ok"]).completed().events))
    tool = sampling_tool("read", "Read", "prefer")
    await _run(sse_server, context=_context(tools=[tool]))
    assert sse_server.requests[0].json["tools"] == [
        {
            "type": "function",
            "name": "read",
            "description": "Read",
            "strict": True,
            "parameters": STRICT_READ_SCHEMA,
        }
    ]


async def test_prefer_falls_back_silently_on_a_server_without_strict(sse_server: SSEServer) -> None:
    """spec 4.3: prefer + no strict support -> the tool goes as declared, without `strict`."""
    sse_server.script(sse_reply(Wire().message(0, ["ok"]).completed().events))
    model = responses_model(sse_server, compat={})
    tool = sampling_tool("read", "Read", "prefer")
    message, _ = await _run(sse_server, context=_context(tools=[tool]), model=model)
    assert message.stop_reason == "stop"
    assert sse_server.requests[0].json["tools"] == [
        {"type": "function", "name": "read", "description": "Read", "parameters": READ_SCHEMA}
    ]


async def test_require_without_strict_support_fails_before_any_request(sse_server: SSEServer) -> None:
    """spec 4.3: require + no strict support -> the exact error, and no request is sent."""
    model = responses_model(sse_server, compat={})
    tool = sampling_tool("edit", "Edit", "require")
    message, events = await _run(sse_server, context=_context(tools=[tool]), model=model)
    assert message.stop_reason == "error"
    assert message.error_message == STRICT_UNSUPPORTED
    assert isinstance(events[-1], ErrorEvent)
    assert sse_server.requests == []


async def test_grammar_tool_streams_raw_input_as_one_argument(sse_server: SSEServer) -> None:
    """spec 4.5: a grammar tool is declared as a custom tool; its raw input becomes the one
    required string argument."""
    schema = {"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]}
    tool = Tool(
        name="apply_patch",
        description="Patch",
        parameters=schema,
        constrained_sampling=GrammarSampling(variants=GrammarVariants(openai_lark="start: /.+/")),
    )
    wire = Wire()
    item = {
        "id": "ctc_1",
        "type": "custom_tool_call",
        "call_id": "call_p",
        "name": "apply_patch",
        "input": "",
    }
    wire.emit("response.output_item.added", output_index=0, item=item)
    for chunk in ['*** Begin "', "Patch\n"]:
        wire.emit("response.custom_tool_call_input.delta", output_index=0, item_id="ctc_1", delta=chunk)
    wire.emit("response.output_item.done", output_index=0, item={**item, "input": '*** Begin "Patch\n'})
    sse_server.script(sse_reply(wire.completed().events))
    message, events = await _run(sse_server, context=_context(tools=[tool]))
    assert message.content == [
        ToolCall(
            id="call_p",
            name="apply_patch",
            arguments={"patch": '*** Begin "Patch\n'},
            thought_signature="ctc_1",
        )
    ]
    deltas = [e for e in events if isinstance(e, ToolcallDeltaEvent)]
    assert "".join(d.delta for d in deltas) == '{"patch":"*** Begin \\"Patch\\n'
    assert deltas[0].arguments == {"patch": '*** Begin "'}
    assert sse_server.requests[0].json["tools"] == [
        {
            "type": "custom",
            "name": "apply_patch",
            "description": "Patch",
            "format": {"type": "grammar", "syntax": "lark", "definition": "start: /.+/"},
        }
    ]


# --- errors, retry, drops, abort --------------------------------------------------------------------


async def test_401_is_an_error_message_without_the_key(sse_server: SSEServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
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
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=3, idle_timeout=5))
    assert message.stop_reason == "error"
    assert message.error_message == "401 Unauthorized: Incorrect API key provided: [redacted]."
    assert len(sse_server.requests) == 1
    assert isinstance(events[-1], ErrorEvent)
    assert not any(isinstance(e, AutoRetryStart) for e in events)
    assert all(KEY not in record.getMessage() for record in caplog.records)
    assert all(KEY not in repr(e) for e in events)


async def test_429_is_retried_then_succeeds(sse_server: SSEServer) -> None:
    error = {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}}
    sse_server.script(json_reply(429, error), sse_reply(Wire().message(0, ["ok"]).completed().events))
    message, events = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=3, idle_timeout=5))
    assert message.stop_reason == "stop"
    assert [e for e in events if isinstance(e, AutoRetryStart | AutoRetryEnd)] == [
        AutoRetryStart(
            attempt=1,
            max_attempts=3,
            delay_ms=2000,
            error_message="429 Too Many Requests: Rate limit reached",
        ),
        AutoRetryEnd(success=True, attempt=1),
    ]


async def test_500_after_retries_is_an_error(sse_server: SSEServer) -> None:
    error = {"error": {"message": "The server had an error", "type": "server_error"}}
    sse_server.script(json_reply(500, error), json_reply(500, error))
    message, _ = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=1, idle_timeout=5))
    assert message.stop_reason == "error"
    assert message.error_message == "500 Internal Server Error: The server had an error"


async def test_response_failed_event(sse_server: SSEServer) -> None:
    wire = Wire().message(0, ["par"])
    wire.emit(
        "response.failed",
        response={**wire.response, "status": "failed", "error": {"code": "server_error", "message": "boom"}},
    )
    sse_server.script(sse_reply(wire.events))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "error"
    assert message.error_message == "server_error: boom"
    assert message.content == [TextContent(text="par", text_signature="msg_1")]


async def test_error_event_mid_stream(sse_server: SSEServer) -> None:
    wire = Wire()
    wire.emit("error", code="rate_limit_exceeded", message="Slow down", param=None)
    sse_server.script(sse_reply(wire.events))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "error"
    assert message.error_message == "Error Code rate_limit_exceeded: Slow down"


async def test_unknown_events_and_items_are_skipped(sse_server: SSEServer) -> None:
    wire = Wire()
    wire.emit("response.output_item.added", output_index=0, item={"id": "ws_1", "type": "web_search_call"})
    wire.emit("response.web_search_call.completed", output_index=0, item_id="ws_1")
    wire.emit("response.output_item.done", output_index=0, item={"id": "ws_1", "type": "web_search_call"})
    sse_server.script(sse_reply(wire.message(1, ["found"]).completed().events))
    message, _ = await _run(sse_server)
    assert message.stop_reason == "stop"
    assert message.content == [TextContent(text="found", text_signature="msg_1")]


async def test_connection_dropped_mid_stream(sse_server: SSEServer) -> None:
    events = Wire().message(0, ["Hello", " world"]).completed().events
    sse_server.script(sse_reply(events, drop_after=6))  # created, in_progress, added, part, 2 deltas
    message, events_seen = await _run(sse_server)
    assert message.stop_reason == "error"
    assert isinstance(message.error_message, str)
    assert message.error_message.startswith("Connection closed before the response completed")
    assert message.content == [TextContent(text="Hello world")]
    assert isinstance(events_seen[-1], ErrorEvent)


async def test_authorization_header_from_config_stands_in_for_a_key(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(Wire().message(0, ["ok"]).completed().events))
    options = StreamOptions(max_retries=0, headers={"Authorization": "Bearer proxy-token"})
    message, _ = await _run(sse_server, options)
    assert message.stop_reason == "stop"
    assert sse_server.requests[0].headers["authorization"] == "Bearer proxy-token"


async def test_encrypted_reasoning_backfilled_from_the_final_response(sse_server: SSEServer) -> None:
    """Some deployments (Azure) put encrypted reasoning only in `response.completed`'s output."""
    wire = Wire().reasoning(0, [["Plan"]], encrypted=None).message(1, ["ok"])
    wire.response["output"] = [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "late"}]
    sse_server.script(sse_reply(wire.completed().events))
    message, _ = await _run(sse_server, StreamOptions(api_key=KEY, max_retries=0, thinking_level="low"))
    thinking = message.content[0]
    assert isinstance(thinking, ThinkingContent)
    assert json.loads(str(thinking.thinking_signature))["encrypted_content"] == "late"
