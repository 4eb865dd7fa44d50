"""What newer Pi records on every assistant message beside its content, from each provider against a
real 127.0.0.1 server: the response id, the model that answered when it is not the one asked for,
the provider's own stop reason, reasoning tokens, whether the cost is the provider's bill, and how
long the request took; and `pending` while the message streams."""

from __future__ import annotations

from typing import Any

import pytest
from msgspec import UNSET

from pi_rpc.ai.providers import anthropic, openai_completions, openai_responses
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import Context, Model, ModelCost, ProviderEvent, StartEvent, UserMessage

from .responses_wire import Wire, responses_model
from .sse_server import SSEServer, fixture_events, sse_event, sse_reply

pytestmark = pytest.mark.anyio

OPTIONS = StreamOptions(api_key="sk-test", max_retries=0, idle_timeout=5)
CONTEXT = Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")])


def completions_model(server: SSEServer, **kw: Any) -> Model:
    return Model(id="m", name="m", api="openai-completions", provider="loop", base_url=server.url + "/v1", **kw)


def chunk(choices: list[dict[str, Any]], **extra: Any) -> bytes:
    return sse_event({"id": "chatcmpl-7", "object": "chat.completion.chunk", "choices": choices, **extra})


def completion(model: str, usage: dict[str, Any], finish: str = "stop") -> list[bytes]:
    return [
        chunk([{"index": 0, "delta": {"role": "assistant", "content": "Hi."}, "finish_reason": None}], model=model),
        chunk([{"index": 0, "delta": {}, "finish_reason": finish}], model=model),
        chunk([], model=model, usage=usage),
        b"data: [DONE]\n\n",
    ]


USAGE = {"prompt_tokens": 10, "completion_tokens": 7, "completion_tokens_details": {"reasoning_tokens": 4}}


async def test_openai_completions_response_id_raw_reason_reasoning_and_duration(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(completion("m", USAGE)))
    started: list[str] = []

    def on_event(event: ProviderEvent) -> None:
        if isinstance(event, StartEvent):  # what message_start carries: the message as it begins
            started.append(builder.message.stop_reason)

    builder = AssistantBuilder(completions_model(sse_server), on_event)
    message = await openai_completions.stream(completions_model(sse_server), CONTEXT, OPTIONS, builder)
    assert started == ["pending"]
    assert message.stop_reason == "stop" and message.raw_stop_reason == "stop"
    assert message.response_id == "chatcmpl-7"
    assert message.response_model is UNSET  # the model asked for answered
    assert message.usage.reasoning == 4 and message.usage.output == 7
    assert message.usage.cost.total_from_provider is False
    assert isinstance(message.duration_ms, int) and message.duration_ms >= 0


async def test_openai_completions_another_model_and_a_billed_cost(sse_server: SSEServer) -> None:
    billed = USAGE | {"cost": 0.0125, "is_byok": False}
    sse_server.script(sse_reply(completion("vendor/m-2025", billed, finish="tool_calls")))
    model = completions_model(sse_server, cost=ModelCost(input=1, output=1))
    message = await openai_completions.stream(model, CONTEXT, OPTIONS, AssistantBuilder(model))
    assert message.response_model == "vendor/m-2025"
    assert message.raw_stop_reason == "tool_calls"
    assert message.usage.cost.total == 0.0125 and message.usage.cost.total_from_provider is True


async def test_anthropic_message_id_dated_model_and_stop_reason(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(fixture_events("anthropic_text.sse")))
    model = Model(
        id="claude-sonnet-4-5", name="c", api="anthropic-messages", provider="anthropic", base_url=sse_server.url
    )
    message = await anthropic.stream(model, CONTEXT, OPTIONS, AssistantBuilder(model))
    assert message.response_id == "msg_01XFDUDYJgAACzvnptvVoYEL"
    assert message.model == "claude-sonnet-4-5"  # the configured id stays, for replay
    assert message.response_model == "claude-sonnet-4-5-20250929"
    assert message.raw_stop_reason == "end_turn" and message.usage.reasoning == 0


async def test_openai_responses_id_and_status(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(Wire(response_id="resp_9").message(0, ["Hi"]).completed(incomplete=None).events))
    model = responses_model(sse_server)
    message = await openai_responses.stream(model, CONTEXT, OPTIONS, AssistantBuilder(model))
    assert message.response_id == "resp_9" and message.raw_stop_reason == "completed"

    sse_server.script(
        sse_reply(Wire().message(0, ["Hi"]).completed(status="incomplete", incomplete="max_output_tokens").events)
    )
    message = await openai_responses.stream(model, CONTEXT, OPTIONS, AssistantBuilder(model))
    assert message.stop_reason == "length" and message.raw_stop_reason == "incomplete.max_output_tokens"
