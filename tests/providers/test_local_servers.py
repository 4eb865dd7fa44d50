"""Local OpenAI-compatible servers (llama.cpp's `llama-server`, llama-cpp-python, Ollama, vLLM) as
they behave, reproduced on 127.0.0.1: the output cap every request carries, the message shapes
llama-cpp-python's server accepts, and which of their 500s are worth a retry."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from pi_rpc.ai import NOT_RETRIED_NOTE, http
from pi_rpc.ai.compat import ModelCompat
from pi_rpc.ai.providers import openai_completions as oc
from pi_rpc.ai.providers import openai_responses as responses
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantMessage,
    Context,
    LlmMessage,
    Model,
    ProviderEvent,
    TextContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_rpc.session.auto_retry import is_passing_failure

from .helpers import READ_SCHEMA, run_provider
from .sse_server import RecordedRequest, Reply, SSEServer, json_reply, sse_event, sse_reply

pytestmark = pytest.mark.anyio

OPTIONS = StreamOptions(max_retries=0, idle_timeout=5)
READ = Tool(name="read", description="Read a file", parameters=READ_SCHEMA)


def _local(base_url: str, **kw: Any) -> Model:
    if isinstance(kw.get("compat"), dict):
        kw["compat"] = msgspec.convert(kw["compat"], ModelCompat)
    fields: dict[str, Any] = {"context_window": 128_000, "max_tokens": 512, **kw}
    return Model(
        id="SmolLM2-135M-Instruct",
        name="SmolLM2",
        api="openai-completions",
        provider="local",
        base_url=base_url,
        **fields,
    )


def _context(messages: list[LlmMessage]) -> Context:
    return Context(system_prompt="Be brief.", messages=messages, tools=[READ])


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


# --- the output cap -----------------------------------------------------------------------------


async def test_the_models_max_tokens_is_sent_as_max_tokens(sse_server: SSEServer) -> None:
    """models.json's `maxTokens: 512` reaches a local server as `max_tokens`, the field it reads
    (without it a looping model generated 7,014 tokens for 234 s)."""
    sse_server.script(sse_reply([_chunk({"content": "ok"}, "stop"), b"data: [DONE]\n\n"]))
    message, _ = await run_provider(
        oc.stream, _local(sse_server.url + "/v1"), _context([UserMessage(content="hi")]), OPTIONS
    )
    assert message.stop_reason == "stop"
    body = sse_server.requests[0].json
    assert body["max_tokens"] == 512
    assert "max_completion_tokens" not in body


async def test_the_cap_leaves_the_input_room_in_a_small_window(sse_server: SSEServer) -> None:
    """An 8k window with a 16k `maxTokens`: the cap is what the window leaves after the input
    (about 1,000 tokens here) and Pi's 4,096-token margin."""
    sse_server.script(sse_reply([_chunk({"content": "ok"}, "stop"), b"data: [DONE]\n\n"]))
    model = _local(sse_server.url + "/v1", context_window=8192, max_tokens=16_384)
    prompt = "x" * 3500  # 1,000 tokens at Pi's 3.5 characters a token
    await run_provider(oc.stream, model, _context([UserMessage(content=prompt)]), OPTIONS)
    assert sse_server.requests[0].json["max_tokens"] == 8192 - 1000 - 4096


def test_openai_hosts_get_max_completion_tokens_and_compat_can_say_otherwise() -> None:
    context = _context([UserMessage(content="hi")])
    official = _local("https://api.openai.com/v1", max_tokens=4096)
    body = oc.build_request_body(official, context, StreamOptions())
    assert body["max_completion_tokens"] == 4096 and "max_tokens" not in body
    said = _local("http://127.0.0.1:9/v1", compat={"maxTokensField": "max_completion_tokens"})
    assert oc.build_request_body(said, context, StreamOptions())["max_completion_tokens"] == 512


def test_the_responses_api_sends_the_models_cap_as_max_output_tokens() -> None:
    model = msgspec.structs.replace(_local("http://127.0.0.1:9/v1"), api="openai-responses")
    body = responses.build_request_body(model, _context([UserMessage(content="hi")]), StreamOptions())
    assert body["max_output_tokens"] == 512


# --- message shapes llama-cpp-python's server takes ---------------------------------------------


def _llama_cpp_python(request: RecordedRequest) -> Reply:
    """llama-cpp-python's server as it fails: a list of text parts as user content crashes its chat
    template (status 200, an empty stream), and `"content": null` beside tool calls is a 500."""
    messages: list[dict[str, Any]] = request.json["messages"]
    if any(m["role"] == "user" and isinstance(m["content"], list) for m in messages):
        return sse_reply([])
    if any(m["role"] == "assistant" and m.get("content") is None for m in messages):
        return Reply(status=500, body=[b"Internal Server Error"], content_type="text/plain", chunked=False)
    if messages[-1]["role"] == "tool":
        return sse_reply([_chunk({"content": "It says hello."}, "stop"), b"data: [DONE]\n\n"])
    call = {"index": 0, "id": "call_1", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}
    return sse_reply([_chunk({"tool_calls": [call]}, "tool_calls"), b"data: [DONE]\n\n"])


async def test_a_tool_call_conversation_with_llama_cpp_python(sse_server: SSEServer) -> None:
    """Text-only user content goes as a string, and the replayed tool-call turn carries `""`."""
    sse_server.responder = _llama_cpp_python
    model = _local(sse_server.url + "/v1")
    user = UserMessage(content=[TextContent(text="Read a.txt"), TextContent(text="please")])
    first, _ = await run_provider(oc.stream, model, _context([user]), OPTIONS)
    assert first.stop_reason == "toolUse", first.error_message
    assert first.content == [ToolCall(id="call_1", name="read", arguments={"path": "a.txt"})]
    result = ToolResultMessage(
        tool_call_id="call_1", tool_name="read", content=[TextContent(text="hello")], is_error=False
    )
    second, _ = await run_provider(oc.stream, model, _context([user, first, result]), OPTIONS)
    assert second.stop_reason == "stop", second.error_message
    assert second.content == [TextContent(text="It says hello.")]
    sent = sse_server.requests[1].json["messages"]
    assert sent[1] == {"role": "user", "content": "Read a.txt\nplease"}
    assert sent[2]["content"] == "" and sent[2]["tool_calls"][0]["id"] == "call_1"
    assert sent[3] == {"role": "tool", "tool_call_id": "call_1", "content": "hello"}


def test_compat_flags_from_models_json_shape_the_messages() -> None:
    call = AssistantMessage(
        content=[ToolCall(id="c1", name="read", arguments={})], api="openai-completions", provider="p", model="m"
    )
    result = ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="x")], is_error=False)
    history: list[LlmMessage] = [UserMessage(content="a"), call, result, UserMessage(content="b")]
    null_ok = _local("http://127.0.0.1:9/v1", compat={"requiresNonNullAssistantContent": False})
    assert oc.convert_messages(history, null_ok)[1]["content"] is None
    bridged = _local("http://127.0.0.1:9/v1", compat={"requiresAssistantAfterToolResult": True})
    roles = [m["role"] for m in oc.convert_messages(history, bridged)]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    no_tools = Context(system_prompt="", messages=history)
    wants_tools = _local("http://127.0.0.1:9/v1", compat={"requiresToolsWithToolHistory": True})
    assert oc.build_request_body(wants_tools, no_tools, StreamOptions())["tools"] == []
    assert "tools" not in oc.build_request_body(null_ok, no_tools, StreamOptions())


# --- which 500s are retried ---------------------------------------------------------------------


def _builder() -> tuple[AssistantBuilder, list[ProviderEvent]]:
    events: list[ProviderEvent] = []
    return AssistantBuilder(_local("http://127.0.0.1:9/v1"), events.append), events


INVALID_500_BODIES = [
    # llama.cpp's server
    {"error": {"code": 500, "message": "Failed to parse messages", "type": "invalid_request_error"}},
    {"error": {"code": 400, "message": "the tools are not understood", "type": "server_error"}},
    # llama-cpp-python and vLLM (FastAPI)
    {"detail": "1 validation error for CreateChatCompletionRequest"},
    {"error": {"message": "messages: content must be a string"}},
]


@pytest.mark.parametrize("body", INVALID_500_BODIES)
async def test_a_500_that_blames_the_request_is_final(sse_server: SSEServer, body: dict[str, Any]) -> None:
    sse_server.script(*(json_reply(500, body) for _ in range(4)))
    builder, events = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("POST", sse_server.url + "/v1/chat/completions")
        with pytest.raises(http.ProviderError, match="^500 Internal Server Error: ") as failure:
            async with http.open_stream(client, request, builder, max_retries=3):
                pass
    assert len(sse_server.requests) == 1 and events == []
    # The user reads why, and Pi mode's retry between runs (which reads the text) skips it too.
    assert str(failure.value).endswith(f"({NOT_RETRIED_NOTE})")
    failed = AssistantMessage(content=[], api="openai-completions", provider="local", model="m", stop_reason="error")
    failed.error_message = str(failure.value)
    assert not is_passing_failure(failed)
    failed.error_message = "500 Internal Server Error: CUDA out of memory"
    assert is_passing_failure(failed)


@pytest.mark.parametrize(
    "status, body",
    [
        (500, {"error": {"message": "CUDA out of memory"}}),
        # 502-504 come from a proxy that could not reach the server: nothing about the request.
        (502, {"error": {"message": "invalid response from the upstream server"}}),
    ],
)
async def test_a_failure_that_does_not_blame_the_request_is_retried(
    sse_server: SSEServer, status: int, body: dict[str, Any]
) -> None:
    sse_server.script(json_reply(status, body), sse_reply([_chunk({"content": "ok"}, "stop")]))
    builder, _ = _builder()
    async with http.create_client(5) as client:
        request = client.build_request("POST", sse_server.url + "/v1/chat/completions")
        async with http.open_stream(client, request, builder, max_retries=3) as response:
            assert response.status_code == 200
    assert len(sse_server.requests) == 2


# --- a forced tool call -------------------------------------------------------------------------


def test_tool_choice_goes_with_the_tools_and_only_with_them() -> None:
    """`tool_choice` (Pi's toolChoice) is how a caller forces a call; a request without tools
    never carries one, which servers refuse."""
    named = {"type": "function", "function": {"name": "read"}}
    options = StreamOptions(tool_choice=named)
    model = _local("http://127.0.0.1:9/v1")
    assert oc.build_request_body(model, _context([UserMessage(content="hi")]), options)["tool_choice"] == named
    no_tools = Context(system_prompt="", messages=[UserMessage(content="hi")])
    assert "tool_choice" not in oc.build_request_body(model, no_tools, options)
    assert "tool_choice" not in oc.build_request_body(model, _context([UserMessage(content="hi")]), StreamOptions())


async def test_a_200_with_an_empty_stream_says_the_server_failed_on_the_request(sse_server: SSEServer) -> None:
    """llama-cpp-python's answer to a prompt over its context window (or content its template
    cannot format): 200, then the stream closes with no event; its reason is only in its log."""
    sse_server.script(sse_reply([]))
    message, _ = await run_provider(
        oc.stream, _local(sse_server.url + "/v1"), _context([UserMessage(content="hi")]), OPTIONS
    )
    assert message.stop_reason == "error"
    assert message.error_message == oc.EMPTY_STREAM_ERROR
    assert "see the server's log" in oc.EMPTY_STREAM_ERROR and "context window" in oc.EMPTY_STREAM_ERROR
