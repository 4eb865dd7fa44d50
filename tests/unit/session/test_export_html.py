"""Pi's export_html: the conversation as a self-contained page, every text escaped."""

from __future__ import annotations

from pi_rpc.ai.types import AssistantMessage, Message, TextContent, ToolCall, ToolResultMessage, UserMessage
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
