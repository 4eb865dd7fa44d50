"""Pi's export_html: the conversation as a self-contained page, every text escaped."""

from __future__ import annotations

from pi_rpc.ai.types import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_rpc.session.export_html import session_html


def test_text_is_escaped_and_nothing_is_loaded_from_elsewhere() -> None:
    messages: list[Message] = [
        UserMessage(content=[TextContent(text="<script>alert(1)</script>")]),
        AssistantMessage(
            content=[ToolCall(id="c", name="bash", arguments={"command": "echo '<b>'"})],
            api="faux",
            provider="faux",
            model="m",
            stop_reason="toolUse",
        ),
        ToolResultMessage(tool_call_id="c", tool_name="bash", content=[TextContent(text="<b>")], is_error=False),
    ]
    page = session_html("a & b", messages)
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<title>a &amp; b</title>" in page and "echo &#x27;&lt;b&gt;&#x27;" in page
    assert "src=" not in page and "href=" not in page


def test_a_users_command_shows_with_its_output_and_whether_the_model_saw_it() -> None:
    page = session_html(
        "t",
        [
            BashExecutionMessage(command="cat <a>", output="<b>", exit_code=1, cancelled=False, truncated=False),
            BashExecutionMessage(command="env", output="", cancelled=False, truncated=False, exclude_from_context=True),
        ],
    )
    assert "User ran <code>cat &lt;a&gt;</code>" in page and "<pre>&lt;b&gt;</pre>" in page
    assert "exit code 1" in page
    assert page.count("not sent to the model") == 1


def test_a_summary_shows_under_its_heading_and_an_extensions_message_as_pi_shows_it() -> None:
    page = session_html(
        "t",
        [
            CompactionSummaryMessage(summary="## Goal\n<fix it>", tokens_before=12345),
            BranchSummaryMessage(summary="tried the other way", from_id="e1"),
            CustomMessage(custom_type="todo", content="shown <note>", display=True),
            CustomMessage(custom_type="state", content="hidden note", display=False),
        ],
    )
    assert "<h2>Earlier conversation summarised (12,345 tokens)</h2><pre>## Goal\n&lt;fix it&gt;</pre>" in page
    assert "<h2>Summary of another branch</h2><pre>tried the other way</pre>" in page
    assert "<h2>todo</h2><pre>shown &lt;note&gt;</pre>" in page and "hidden note" not in page
