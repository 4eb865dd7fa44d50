"""The OpenAI Chat Completions provider against real llama.cpp servers (upstream's llama-server and
llama-cpp-python's), each on 127.0.0.1 with SmolLM2-135M. The tests assert the wire, not what the
model says: text arrives in deltas, usage is reported, the output cap is obeyed by the server,
an abort stops the server's generation, a forced tool call streams and its replay is accepted,
and an overflow or a dead server gives an error a user can read."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec
import pytest

from pi_rpc.ai import validate_tool_arguments
from pi_rpc.ai.providers import openai_completions as oc
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.types import (
    Context,
    LlmMessage,
    Model,
    TextContent,
    TextDeltaEvent,
    Tool,
    ToolCall,
    ToolcallDeltaEvent,
    ToolcallEndEvent,
    ToolcallStartEvent,
    ToolResultMessage,
    UserMessage,
)
from pi_rpc.session import starting_model

from ..helpers import READ_SCHEMA, abort_at_first_text_delta, run_provider
from .servers import CONTEXT_TOKENS, MODEL_ID, LlamaProcess, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.llama]

# Greedy sampling: the same answer each run, so a test never waits on a model's whim.
OPTIONS = StreamOptions(max_retries=0, idle_timeout=60, temperature=0.0)
READ = Tool(name="read", description="Read a file", parameters=READ_SCHEMA)
# Asks for far more text than any test lets through: only the cap or an abort ends it early.
LONG_ANSWER = "Count from 1 to 500, one number a line."


def discovered(server: LlamaProcess, **fields: Any) -> Model:
    """The model as `--base-url` finds it (what a user gets), with `fields` replaced."""
    choice = starting_model(base_url=server.base_url).choice
    assert choice is not None
    return msgspec.structs.replace(choice.model, **fields)


def ask(text: str, *more: LlmMessage, tools: list[Tool] | None = None) -> Context:
    return Context(
        system_prompt="You are a helpful assistant.", messages=[UserMessage(content=text), *more], tools=tools or []
    )


def slot_busy(server: LlamaProcess) -> bool:
    slots: list[dict[str, Any]] = httpx.get(server.root_url + "/slots", timeout=10).json()
    return any(slot["is_processing"] for slot in slots)


def predicted_total(server: LlamaProcess) -> float:
    """llama-server's count of every token it generated (`/metrics`)."""
    for line in httpx.get(server.root_url + "/metrics", timeout=10).text.splitlines():
        if line.startswith("llamacpp:tokens_predicted_total "):
            return float(line.split()[1])
    raise AssertionError("no llamacpp:tokens_predicted_total in /metrics")


def test_discovery_reads_what_the_server_reports(llama: LlamaProcess) -> None:
    model = discovered(llama)
    assert model.id == MODEL_ID
    if llama.kind == "llama-server":
        # /v1/models' meta.n_ctx (the -c it was started with) and /props' modalities (no projector).
        assert model.context_window == CONTEXT_TOKENS
        assert model.input == ["text"]
    else:
        # llama-cpp-python's listing says neither: the defaults stand (docs/CONFIGURATION.md says
        # to set contextWindow and input in models.json for it).
        assert model.context_window == 128_000


async def test_text_streams_in_deltas_and_usage_is_reported(llama: LlamaProcess) -> None:
    model = discovered(llama, max_tokens=24)
    message, events = await run_provider(oc.stream, model, ask(LONG_ANSWER), OPTIONS)
    assert message.stop_reason in ("stop", "length"), message.error_message
    deltas = [e.delta for e in events if isinstance(e, TextDeltaEvent)]
    assert len(deltas) > 1  # streamed, not one block at the end
    assert "".join(deltas) == "".join(b.text for b in message.content if isinstance(b, TextContent))
    if llama.kind == "llama-server":
        assert message.usage.input > 0 and message.usage.output > 0
    else:
        # llama-cpp-python's stream carries no usage (it ignores stream_options): none is made up.
        assert message.usage.input == message.usage.output == 0


async def test_the_server_generates_no_more_than_the_cap(llama: LlamaProcess) -> None:
    model = discovered(llama, max_tokens=5)
    before = predicted_total(llama) if llama.kind == "llama-server" else 0.0
    message, events = await run_provider(oc.stream, model, ask(LONG_ANSWER), OPTIONS)
    assert message.stop_reason == "length", message.error_message  # the server's finish_reason
    if llama.kind == "llama-server":  # what it reported, and its own count
        assert 0 < message.usage.output <= 5
        assert predicted_total(llama) - before <= 5
    else:  # it streams one chunk a token, and reports no usage
        assert 0 < sum(isinstance(e, TextDeltaEvent) for e in events) <= 5


async def test_an_abort_stops_the_servers_generation(llama: LlamaProcess) -> None:
    model = discovered(llama, max_tokens=2000)
    log_start = len(llama.log_text())
    _, events = await abort_at_first_text_delta(oc.stream, model, ask(LONG_ANSWER), OPTIONS)
    assert any(isinstance(e, TextDeltaEvent) for e in events)
    if llama.kind == "llama-server":
        # The server cancels the task and releases its one slot, long before 2,000 tokens.
        after = llama.wait_for_log("cancel task", log_start)
        llama.wait_for_log("stop processing", log_start + after.index("cancel task"))
        assert not slot_busy(llama)
    else:
        llama.wait_for_log("Disconnected from client", log_start)
    # Either way the server is free for the next request at once.
    message, _ = await run_provider(oc.stream, discovered(llama, max_tokens=2), ask("Say hi."), OPTIONS)
    assert message.stop_reason in ("stop", "length"), message.error_message


def _forced(server: LlamaProcess) -> StreamOptions:
    # llama-server takes OpenAI's "required" (not a named tool_choice: "type must be string");
    # llama-cpp-python's chatml-function-calling forces a call only when it is named.
    choice: Any = "required" if server.kind == "llama-server" else {"type": "function", "function": {"name": "read"}}
    return msgspec.structs.replace(OPTIONS, tool_choice=choice)


async def test_a_forced_tool_call_streams_and_its_replay_is_taken(tool_llama: LlamaProcess) -> None:
    # Each server builds a grammar from the tool's schema (llama-server from the tools its chat
    # template renders, chatml-tools.jinja), so a call is one the schema takes: the wire is what
    # is asserted. llama-server's grammar lets text come first; its template shows SmolLM2 a call.
    llama = tool_llama
    model = discovered(llama, max_tokens=64)
    first_context = ask("Read the file notes.txt.", tools=[READ])
    first, events = await run_provider(oc.stream, model, first_context, _forced(llama))
    assert first.stop_reason == "toolUse", (first.error_message, first.content)
    [call] = [block for block in first.content if isinstance(block, ToolCall)]
    assert call.name == "read" and call.id
    # Streamed as a call: its start, argument fragments that join into its arguments, its end.
    [start] = [e for e in events if isinstance(e, ToolcallStartEvent)]
    assert (start.id, start.tool_name) == (call.id, "read")
    fragments = [e.delta for e in events if isinstance(e, ToolcallDeltaEvent)]
    assert fragments and msgspec.json.decode("".join(fragments)) == call.arguments
    assert [e.tool_call for e in events if isinstance(e, ToolcallEndEvent)] == [call]
    # Arguments that the tool's schema takes as they are (the server's grammar came from it).
    assert validate_tool_arguments("read", READ_SCHEMA, call.arguments) == call.arguments
    # The replay: the call as the assistant's turn (content "" beside it) and the tool's result;
    # the server formats both and answers the next turn.
    result = ToolResultMessage(
        tool_call_id=call.id, tool_name="read", content=[TextContent(text="hello world")], is_error=False
    )
    second_context = ask("Read the file notes.txt.", first, result, tools=[READ])
    second, _ = await run_provider(oc.stream, model, second_context, OPTIONS)
    assert second.stop_reason in ("stop", "length", "toolUse"), second.error_message
    if llama.kind == "llama-server":  # the call and its result are in the prompt it read
        prompt_tokens = [m.usage.input + m.usage.cache_read for m in (first, second)]
        assert prompt_tokens[1] > prompt_tokens[0]


async def test_a_context_overflow_is_an_error_that_says_so(llama: LlamaProcess) -> None:
    # Told a large window, so pi-rpc sends what the server's real one cannot hold.
    model = discovered(llama, context_window=128_000, max_tokens=16)
    prompt = "apple " * (CONTEXT_TOKENS + 500)
    message, _ = await run_provider(oc.stream, model, ask(prompt), OPTIONS)
    assert message.stop_reason == "error"
    assert isinstance(message.error_message, str) and "context" in message.error_message.lower()


async def test_a_server_that_is_down_is_an_error_that_says_so() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there now
    model = Model(id=MODEL_ID, name=MODEL_ID, api="openai-completions", provider="local", base_url=url)
    message, _ = await run_provider(oc.stream, model, ask("hi"), OPTIONS)
    assert message.stop_reason == "error"
    assert isinstance(message.error_message, str) and "connect" in message.error_message.lower()
