"""Where compaction cuts, and what it tells the summariser (pi_rpc/session/compaction/planning.py)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.agent.llm_messages import convert_to_llm
from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import (
    AssistantContent,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Context,
    CustomMessage,
    ImageContent,
    Message,
    Model,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    text_of,
)
from pi_rpc.session.compaction.files import FileLists, files_section
from pi_rpc.session.compaction.planning import (
    CompactionSettings,
    context_tokens,
    estimate_tokens,
    find_cut,
    is_context_overflow,
    plan_compaction,
    serialize_conversation,
    split_turn_start,
    summarize,
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
    cut, _ = find_cut(messages, keep)
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
    old = CompactionSummaryMessage(summary="old facts", tokens_before=900)
    messages: list[Message] = [old, user("a" * 400), reply("b"), user("c" * 400), reply("d")]
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
    assert find_cut(messages, keep_recent_tokens=10) == (2, True)
    text = serialize_conversation([ran, hidden])
    assert text == "[User]: Ran `ls`\n```\n" + "x" * 396 + "\n```" and "SECRET" not in text


# --- Pi's message kinds, split turns, file lists (spec 16) ---------------------


def test_a_summary_reaches_the_model_as_pis_user_text_and_is_never_cut_at_or_summarised() -> None:
    summary = CompactionSummaryMessage(summary="old facts", tokens_before=9000, timestamp=5)
    [sent] = convert_to_llm([summary])
    assert sent == UserMessage(
        content=[
            TextContent(
                text="The conversation history before this point was compacted into the following summary:\n\n"
                "<summary>\nold facts\n</summary>"
            )
        ],
        timestamp=5,
    )
    messages: list[Message] = [summary, user("a" * 400), reply("b"), user("c" * 400), reply("d")]
    plan = plan_compaction(messages, CompactionSettings(keep_recent_tokens=1))
    assert plan is not None and plan.previous_summary == "old facts"
    everything = [*plan.to_summarize, *plan.turn_prefix, *plan.kept]
    assert summary not in everything and everything == messages[1:]
    assert estimate_tokens(summary) == 3  # its summary's characters / 4, rounded up, as Pi counts it


def test_a_branch_summary_and_an_extensions_message_are_user_text_for_the_model() -> None:
    branch = BranchSummaryMessage(summary="tried X", from_id="e1", timestamp=1)
    shown = CustomMessage(custom_type="note", content="remember Y", display=True, timestamp=2)
    hidden = CustomMessage(custom_type="state", content=[TextContent(text="Z")], display=False, timestamp=3)
    assert [text_of(m.content) for m in convert_to_llm([branch, shown, hidden])] == [
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\ntried X</summary>",
        "remember Y",
        "Z",  # Pi sends an extension's message whether or not its chat shows it
    ]


def test_a_cut_inside_a_turn_summarises_the_turns_start_on_its_own() -> None:
    big = "r" * 2000  # 500 tokens
    earlier: list[Message] = [user("fix the tests"), reply("on it")]
    turn: list[Message] = [
        user("now the docs"),
        reply(calls=1),
        result(big),
        reply(calls=1),
        result(big),
        reply("done"),
    ]
    plan = plan_compaction([*earlier, *turn], CompactionSettings(keep_recent_tokens=600))
    assert plan is not None
    # The kept part starts at the turn's second call; its request and first call are the prefix.
    assert plan.kept == turn[3:] and plan.turn_prefix == turn[:3] and plan.to_summarize == earlier
    assert split_turn_start(turn, 3) == 0 and split_turn_start(turn, 0) is None


@pytest.mark.anyio
async def test_a_split_turns_summary_has_both_parts_and_each_request_its_own_budget() -> None:
    asked: list[tuple[str, StreamOptions]] = []

    async def summariser(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        prompt = text_of(context.messages[0].content)
        asked.append((prompt, options))
        builder.text_delta(0, "TURN START" if "start of a turn" in prompt else "HISTORY")
        return builder.finish()

    big = "r" * 2000
    messages: list[Message] = [
        user("first"),
        reply("ok"),
        user("second"),
        reply(calls=1),
        result(big),
        reply(calls=1),
        result(big),
    ]
    plan = plan_compaction(messages, CompactionSettings(keep_recent_tokens=600))
    assert plan is not None and plan.turn_prefix
    summary, _ = await summarize(plan, summariser, FAUX_MODEL, StreamOptions(), None, reserve_tokens=1000)
    assert (
        summary == "HISTORY\n\n---\n\n## Earlier in the current turn\n\nTURN START\n\n<read-files>\na.py\n</read-files>"
    )
    budgets = sorted(options.max_tokens for _, options in asked if isinstance(options.max_tokens, int))
    assert budgets == [500, 800]  # Pi's: half the reserve for the turn's start, 0.8 for the history
    [prefix_prompt] = [prompt for prompt, _ in asked if "start of a turn" in prompt]
    assert "[User]: second" in prefix_prompt and "[User]: first" not in prefix_prompt


def test_file_lists_come_from_the_summarised_calls_and_the_previous_compaction() -> None:
    def calls(*named: tuple[str, str]) -> AssistantMessage:
        content: list[AssistantContent] = [
            ToolCall(id=f"c{i}", name=name, arguments={"path": path}) for i, (name, path) in enumerate(named)
        ]
        return AssistantMessage(content=content, api="faux", provider="faux", model="m")

    files = FileLists()
    files.add_details({"readFiles": ["old.md", "both.py"], "modifiedFiles": ["gone.py"], "other": 1})
    files.add_calls(
        [calls(("read", "b.py"), ("read", "both.py"), ("edit", "both.py"), ("write", "new.py"), ("bash", "x"))]
    )
    details = files.details()
    assert msgspec.to_builtins(details) == {
        "readFiles": ["b.py", "old.md"],
        "modifiedFiles": ["both.py", "gone.py", "new.py"],
    }
    assert files_section(details) == (
        "\n\n<read-files>\nb.py\nold.md\n</read-files>\n\n<modified-files>\nboth.py\ngone.py\nnew.py\n</modified-files>"
    )
    assert files_section(FileLists().details()) == ""


def test_a_long_tool_result_is_shortened_for_the_summariser() -> None:
    text = serialize_conversation([result("x" * 2500)])
    assert text == "[Tool result]: " + "x" * 2000 + "\n\n[... 500 more characters truncated]"  # Pi's words


def test_an_image_in_a_tool_result_counts_as_pi_counts_it() -> None:
    image = ToolResultMessage(
        tool_call_id="c0", tool_name="read", content=[ImageContent(data="AA==", mime_type="image/png")], is_error=False
    )
    assert estimate_tokens(image) == 1200
