"""Where compaction cuts, and what it tells the summariser (pi_rpc/session/compaction.py)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.types import (
    AssistantContent,
    AssistantMessage,
    BashExecutionMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_rpc.session.compaction import (
    CompactionSettings,
    context_tokens,
    estimate_tokens,
    find_cut,
    is_context_overflow,
    plan_compaction,
    serialize_conversation,
    summary_message,
    summary_text,
)


def user(text: str) -> UserMessage:
    return UserMessage(content=[TextContent(text=text)])


def reply(text: str = "", calls: int = 0, tokens: int = 0) -> AssistantMessage:
    content: list[AssistantContent] = [TextContent(text=text)]
    content += [ToolCall(id=f"c{i}", name="read", arguments={"path": "a.py"}) for i in range(calls)]
    return AssistantMessage(content=content, api="faux", provider="faux", model="m", usage=Usage(total_tokens=tokens))


def result(text: str) -> ToolResultMessage:
    return ToolResultMessage(tool_call_id="c0", tool_name="read", content=[TextContent(text=text)], is_error=False)


@st.composite
def conversations(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    for _ in range(draw(st.integers(1, 8))):
        messages.append(user("u" * draw(st.integers(0, 400))))
        for _ in range(draw(st.integers(0, 3))):
            messages.append(reply("a" * draw(st.integers(0, 400)), calls=1))
            messages.append(result("r" * draw(st.integers(0, 400))))
        messages.append(reply("done"))
    return messages


@settings(max_examples=80, derandomize=True)
@given(conversations(), st.integers(1, 400))
def test_the_cut_never_separates_a_tool_result_from_its_call(messages: list[Message], keep: int) -> None:
    cut = find_cut(messages, keep)
    assert 0 <= cut <= len(messages)
    if cut < len(messages):
        assert not isinstance(messages[cut], ToolResultMessage)
    # What is kept is worth at least `keep` (counting the tool results the cut had to step over,
    # as it may not start at one), unless the whole conversation is worth less.
    start = cut
    while start > 0 and isinstance(messages[start - 1], ToolResultMessage):
        start -= 1
    assert sum(estimate_tokens(m) for m in messages[start:]) >= keep or cut == 0


def test_context_tokens_count_reported_usage_then_estimates() -> None:
    messages: list[Message] = [user("x" * 40), reply("ok", tokens=500), user("y" * 40)]
    assert context_tokens(messages) == 510
    assert context_tokens(messages[:1]) == 10


def test_a_previous_summary_is_updated_not_summarised() -> None:
    messages: list[Message] = [summary_message("old facts"), user("a" * 400), reply("b"), user("c" * 400), reply("d")]
    plan = plan_compaction(messages, CompactionSettings(keep_recent_tokens=100))
    assert plan is not None and plan.previous_summary == "old facts"
    assert [summary_text(m) for m in plan.to_summarize] == [None, None]
    assert serialize_conversation(plan.to_summarize) == f"[User]: {'a' * 400}\n\n[Assistant]: b"


def test_overflow_errors_are_recognised() -> None:
    assert is_context_overflow("prompt is too long: 210000 tokens > 200000 maximum")
    assert is_context_overflow("This model's maximum context length is 128000 tokens")
    assert not is_context_overflow("rate limit exceeded")


def test_a_users_command_counts_starts_a_kept_turn_and_is_summarised_as_the_model_read_it() -> None:
    ran = BashExecutionMessage(command="ls", output="x" * 396, exit_code=0, cancelled=False, truncated=False)
    hidden = BashExecutionMessage(
        command="env", output="SECRET", cancelled=False, truncated=False, exclude_from_context=True
    )
    assert estimate_tokens(ran) == 100  # (2 + 396) / 4, rounded up, as Pi estimates it
    answer = AssistantMessage(content=[TextContent(text="y" * 40)], api="faux", provider="faux", model="m")
    # The newest 10 tokens fall in the command: the kept part starts there, as at a user message.
    messages: list[Message] = [UserMessage(content="old " * 50), answer, ran]
    assert find_cut(messages, keep_recent_tokens=10) == 2
    text = serialize_conversation([ran, hidden])
    assert text == "[User]: Ran `ls`\n```\n" + "x" * 396 + "\n```" and "SECRET" not in text
