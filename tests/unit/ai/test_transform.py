"""Cross-provider message normalisation (`pi_rpc/ai/transform.py`, Pi `transform-messages.ts`).

Spec references: 15.4c / 15.13 (an errored or aborted turn ends the run and may leave calls
unanswered), 15.11 (system messages carry tool declarations, which providers take from
`Context.tools`)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.transform import (
    NO_RESULT_PROVIDED,
    is_same_model,
    sanitize_tool_call_id,
    transform_messages,
)
from pi_rpc.ai.types import (
    AssistantMessage,
    LlmMessage,
    Model,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingContent,
    Tool,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

MODEL = Model(id="claude-sonnet-4-5", name="Claude", api="anthropic-messages", provider="anthropic")


def _assistant(*content: Any, stop_reason: StopReason = "toolUse", same: bool = True) -> AssistantMessage:
    if same:
        return AssistantMessage(
            content=list(content), api=MODEL.api, provider=MODEL.provider, model=MODEL.id, stop_reason=stop_reason
        )
    return AssistantMessage(
        content=list(content), api="openai-responses", provider="openai", model="gpt-5", stop_reason=stop_reason
    )


def _call(call_id: str, name: str = "read", **kw: Any) -> ToolCall:
    return ToolCall(id=call_id, name=name, arguments={"path": "a"}, **kw)


def _result(call_id: str, name: str = "read", text: str = "ok") -> ToolResultMessage:
    return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[TextContent(text=text)], is_error=False)


def _shape(messages: list[LlmMessage]) -> list[tuple[str, ...]]:
    """A readable summary: role plus what identifies the entry."""
    out: list[tuple[str, ...]] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            parts = (b.id if isinstance(b, ToolCall) else type(b).__name__ for b in m.content)
            out.append(("assistant", *parts))
        elif isinstance(m, ToolResultMessage):
            text = m.content[0].text if m.content and isinstance(m.content[0], TextContent) else ""
            out.append(("toolResult", m.tool_call_id, text, "error" if m.is_error else "ok"))
        elif isinstance(m, UserMessage):
            out.append(("user", m.content if isinstance(m.content, str) else "…"))
        else:
            out.append(("system", m.content))
    return out


# --- unfinished turns and unanswered calls ------------------------------------------------------


def test_errored_and_aborted_turns_are_dropped() -> None:
    """spec 15.5c/15.14: a turn that ended in error or abort is not replayed."""
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(TextContent(text="partial"), _call("c1"), stop_reason="aborted"),
        UserMessage(content="again"),
        _assistant(ThinkingContent(thinking="half"), stop_reason="error"),
        UserMessage(content="once more"),
        _assistant(TextContent(text="done"), stop_reason="stop"),
    ]
    assert _shape(transform_messages(messages, MODEL)) == [
        ("user", "go"),
        ("user", "again"),
        ("user", "once more"),
        ("assistant", "TextContent"),
    ]


def test_run_aborted_mid_batch_gets_synthetic_results_in_call_order() -> None:
    """spec 15.14: calls a run never answered get `No result provided` before the next user turn."""
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(_call("c1"), _call("c2", "bash"), _call("c3")),
        _result("c2", "bash"),
        UserMessage(content="next"),
    ]
    out = transform_messages(messages, MODEL)
    assert _shape(out) == [
        ("user", "go"),
        ("assistant", "c1", "c2", "c3"),
        ("toolResult", "c2", "ok", "ok"),
        ("toolResult", "c1", NO_RESULT_PROVIDED, "error"),
        ("toolResult", "c3", NO_RESULT_PROVIDED, "error"),
        ("user", "next"),
    ]
    synthetic = out[3]
    assert isinstance(synthetic, ToolResultMessage)
    assert synthetic.tool_name == "read" and synthetic.content == [TextContent(text="No result provided")]


def test_transcript_ending_in_an_unanswered_call_is_closed() -> None:
    messages: list[LlmMessage] = [UserMessage(content="go"), _assistant(_call("c1", "bash"))]
    out = transform_messages(messages, MODEL)
    assert _shape(out)[-1] == ("toolResult", "c1", "No result provided", "error")
    last = out[-1]
    assert isinstance(last, ToolResultMessage) and last.tool_name == "bash"


def test_unanswered_calls_are_closed_before_the_next_assistant_turn() -> None:
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(_call("c1")),
        _assistant(TextContent(text="moving on"), stop_reason="stop"),
    ]
    assert _shape(transform_messages(messages, MODEL)) == [
        ("user", "go"),
        ("assistant", "c1"),
        ("toolResult", "c1", NO_RESULT_PROVIDED, "error"),
        ("assistant", "TextContent"),
    ]


def test_results_that_answer_no_open_call_are_dropped() -> None:
    """A result of a dropped turn, or a second result for one call, would be refused by the APIs."""
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(_call("gone"), stop_reason="error"),
        _result("gone"),
        _assistant(_call("c1")),
        _result("c1", text="first"),
        _result("c1", text="second"),
    ]
    assert _shape(transform_messages(messages, MODEL)) == [
        ("user", "go"),
        ("assistant", "c1"),
        ("toolResult", "c1", "first", "ok"),
    ]


# --- system messages ------------------------------------------------------------------------------


def test_tool_declaring_system_messages_are_skipped_and_text_ones_kept() -> None:
    """spec 15.12: a system message with only tool deltas is not part of the conversation."""
    tool = Tool(name="read", description="Read", parameters={"type": "object"})
    messages: list[LlmMessage] = [
        SystemMessage(tools_added=[tool]),
        UserMessage(content="go"),
        _assistant(_call("c1")),
        SystemMessage(content="Mode changed."),
        _result("c1"),
    ]
    # The text system message is a boundary: the open call is closed before it, and the late
    # result no longer answers an open call.
    assert _shape(transform_messages(messages, MODEL)) == [
        ("user", "go"),
        ("assistant", "c1"),
        ("toolResult", "c1", NO_RESULT_PROVIDED, "error"),
        ("system", "Mode changed."),
    ]


# --- other models' turns ----------------------------------------------------------------------------


def test_same_model_turns_keep_their_replay_tokens() -> None:
    message = _assistant(
        ThinkingContent(thinking="plan", thinking_signature="SIG"),
        ThinkingContent(thinking="", thinking_signature="ENCRYPTED"),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="OPAQUE", redacted=True),
        TextContent(text="hi", text_signature="msg_1"),
        _call("c1", thought_signature="fc_1"),
    )
    out = transform_messages([UserMessage(content="go"), message, _result("c1")], MODEL)
    assert out[1] is message  # nothing to change: the very same object


def test_other_models_thinking_becomes_text_and_tokens_are_stripped() -> None:
    message = _assistant(
        ThinkingContent(thinking="I should look", thinking_signature="SIG"),
        ThinkingContent(thinking="  ", thinking_signature="ENC"),
        ThinkingContent(thinking="[Reasoning redacted]", thinking_signature="OPAQUE", redacted=True),
        TextContent(text="Looking.", text_signature="msg_1"),
        _call("c1", thought_signature="fc_1"),
        same=False,
    )
    out = transform_messages([UserMessage(content="go"), message, _result("c1")], MODEL)
    replayed = out[1]
    assert isinstance(replayed, AssistantMessage)
    assert replayed.content == [
        TextContent(text="I should look"),
        TextContent(text="Looking."),
        ToolCall(id="c1", name="read", arguments={"path": "a"}),
    ]


def test_empty_unsigned_thinking_is_dropped_even_for_the_same_model() -> None:
    message = _assistant(ThinkingContent(thinking=" \n"), TextContent(text="ok"), stop_reason="stop")
    out = transform_messages([UserMessage(content="go"), message], MODEL)
    assert isinstance(out[1], AssistantMessage) and out[1].content == [TextContent(text="ok")]


def test_is_same_model_compares_provider_api_and_id() -> None:
    assert is_same_model(_assistant(), MODEL)
    assert not is_same_model(_assistant(same=False), MODEL)
    other_provider = msgspec.structs.replace(_assistant(), provider="bedrock")
    assert not is_same_model(other_provider, MODEL)


# --- tool-call ids ----------------------------------------------------------------------------------


def _anthropic_ids(call_id: str, source: AssistantMessage) -> str:
    return sanitize_tool_call_id(call_id, 64, "tool_call")


def test_ids_are_normalised_and_results_follow_their_call() -> None:
    responses_id = "call_abc|fc_" + "x" * 100 + "+/="
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(_call(responses_id), _call("ok_id"), same=False),
        _result(responses_id),
        _result("ok_id"),
    ]
    out = transform_messages(messages, MODEL, _anthropic_ids)
    expected = sanitize_tool_call_id(responses_id)
    assert len(expected) == 64 and "|" not in expected
    assert _shape(out) == [
        ("user", "go"),
        ("assistant", expected, "ok_id"),
        ("toolResult", expected, "ok", "ok"),
        ("toolResult", "ok_id", "ok", "ok"),
    ]


def test_ids_that_normalise_alike_stay_distinct() -> None:
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(_call("a|b"), _call("a/b"), _call("a_b"), same=False),
        _result("a_b", text="3"),
        _result("a/b", text="2"),
        _result("a|b", text="1"),
    ]
    out = transform_messages(messages, MODEL, _anthropic_ids)
    assistant = out[1]
    assert isinstance(assistant, AssistantMessage)
    ids = [b.id for b in assistant.content if isinstance(b, ToolCall)]
    assert ids == ["a_b", "a_b_2", "a_b_3"]
    answered = {m.tool_call_id: m.content[0] for m in out if isinstance(m, ToolResultMessage)}
    assert answered == {"a_b": TextContent(text="1"), "a_b_2": TextContent(text="2"), "a_b_3": TextContent(text="3")}


def test_sanitize_tool_call_id() -> None:
    assert sanitize_tool_call_id("toolu|01/x") == "toolu_01_x"
    assert sanitize_tool_call_id("x" * 70) == "x" * 64
    assert sanitize_tool_call_id("", fallback="tool_call") == "tool_call"
    assert sanitize_tool_call_id("abc|def", 5) == "abc_d"


def test_input_messages_are_not_modified() -> None:
    messages: list[LlmMessage] = [
        UserMessage(content="go"),
        _assistant(
            ThinkingContent(thinking="t", thinking_signature="S"), _call("a|b", thought_signature="fc"), same=False
        ),
        _result("a|b"),
    ]
    before = copy.deepcopy(messages)
    transform_messages(messages, MODEL, _anthropic_ids)
    assert messages == before


# --- property: whatever goes in, what comes out is replayable ---------------------------------------

_IDS = st.sampled_from(["c1", "c2", "c3", "a|b", "a/b"])


@st.composite
def _transcripts(draw: st.DrawFn) -> list[LlmMessage]:
    messages: list[LlmMessage] = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "result", "system", "system_tools"]))
        if kind == "user":
            messages.append(UserMessage(content="u"))
        elif kind == "system":
            messages.append(SystemMessage(content="s"))
        elif kind == "system_tools":
            messages.append(SystemMessage(tools_added=[Tool(name="t", description="", parameters={})]))
        elif kind == "result":
            messages.append(_result(draw(_IDS)))
        else:
            ids = draw(st.lists(_IDS, max_size=3, unique=True))
            content: list[Any] = [
                ThinkingContent(
                    thinking=draw(st.sampled_from(["", "t"])), thinking_signature=draw(st.sampled_from(["S", ""]))
                )
            ]
            content += [_call(i) for i in ids]
            reasons: list[StopReason] = ["stop", "toolUse", "length", "error", "aborted"]
            reason = draw(st.sampled_from(reasons))
            messages.append(_assistant(*content, stop_reason=reason, same=draw(st.booleans())))
    return messages


@settings(max_examples=300, deadline=None)
@given(_transcripts())
def test_output_is_always_replayable(messages: list[LlmMessage]) -> None:
    """Every call is answered exactly once, right after its turn; nothing else is a result; no
    unfinished turn and no tool-only system message survives; normalising twice changes nothing."""
    out = transform_messages(messages, MODEL, _anthropic_ids)
    open_calls: set[str] = set()
    for message in out:
        if isinstance(message, ToolResultMessage):
            assert message.tool_call_id in open_calls
            open_calls.discard(message.tool_call_id)
            continue
        assert not open_calls, "a call was left unanswered before the conversation moved on"
        if isinstance(message, AssistantMessage):
            assert message.stop_reason not in ("error", "aborted")
            open_calls = {b.id for b in message.content if isinstance(b, ToolCall)}
            assert all(sanitize_tool_call_id(i) == i for i in open_calls)
        if isinstance(message, SystemMessage):
            assert message.content
    assert not open_calls
    again = transform_messages(out, MODEL, _anthropic_ids)
    strip = [msgspec.structs.replace(m, timestamp=0) for m in again]
    assert strip == [msgspec.structs.replace(m, timestamp=0) for m in out]
