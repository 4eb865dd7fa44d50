"""Pi's export_html: the session as a self-contained page, every text escaped, every entry of the
branch shown, what a compaction summarised included (tests/e2e/test_pi_export.py compares the
entries shown with real Pi's page)."""

from __future__ import annotations

import html
import re
from pathlib import Path

import anyio
import pytest

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
    Usage,
    UserMessage,
)
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.session.storage.entries import SessionEntries
from pi_rpc.session.storage.export_html import session_html

from .helpers import open_session, reply, script, session_config

FILLER = "f" * 400  # about 100 tokens: the compaction below keeps only the last turn


def page_of(messages: list[Message], title: str = "t") -> str:
    return session_html(title, SessionEntries.numbered(messages), session_id="s1")


def sections(page: str) -> list[tuple[str, str]]:
    """(kind, text) of each section of the conversation, in order, its markup dropped."""
    found = re.findall(r'<section id="entry-[^"]+" class="([^"]+)">(.*?)</section>', page, re.DOTALL)
    return [(kind, html.unescape(re.sub(r"<[^>]+>", " ", body)).split()[-1]) for kind, body in found]


def answer(text: str, usage: Usage) -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)], api="faux", provider="faux", model="m", stop_reason="stop", usage=usage
    )


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
    page = page_of(messages, "a & b")
    assert "<script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<title>a &amp; b</title>" in page and "echo &#x27;&lt;b&gt;&#x27;" in page
    assert "src=" not in page and "href=" not in page


def test_a_users_command_shows_with_its_output_and_whether_the_model_saw_it() -> None:
    page = page_of(
        [
            BashExecutionMessage(command="cat <a>", output="<b>", exit_code=1, cancelled=False, truncated=False),
            BashExecutionMessage(command="env", output="", cancelled=False, truncated=False, exclude_from_context=True),
        ]
    )
    assert "User ran <code>cat &lt;a&gt;</code>" in page and "<pre>&lt;b&gt;</pre>" in page
    assert "exit code 1" in page
    assert page.count("not sent to the model") == 1


def test_a_summary_shows_under_pis_heading_and_an_extensions_message_as_pi_shows_it() -> None:
    page = page_of(
        [
            CompactionSummaryMessage(summary="## Goal\n<fix it>", tokens_before=12345),
            BranchSummaryMessage(summary="tried the other way", from_id="e1"),
            CustomMessage(custom_type="todo", content="shown <note>", display=True),
            CustomMessage(custom_type="state", content="hidden note", display=False),
        ]
    )
    assert "<h2>Compacted from 12,345 tokens</h2><pre>## Goal\n&lt;fix it&gt;</pre>" in page
    assert "<h2>Branch summary</h2><pre>tried the other way</pre>" in page
    assert "<h2>todo</h2><pre>shown &lt;note&gt;</pre>" in page and "hidden note" not in page


def test_the_header_counts_every_branch_while_the_page_shows_the_current_one() -> None:
    entries = SessionEntries()
    entries.add_message(UserMessage(content=[TextContent(text="abandoned")]))
    entries.add_message(answer("old", usage=Usage(input=100, output=10)))
    entries.leaf = None  # a new branch from the start, as `/tree` makes one
    entries.add_model_change("other", "m2")
    entries.add_message(UserMessage(content=[TextContent(text="current")]))
    entries.add_message(answer("new", usage=Usage(input=200, output=20)))
    page = session_html("t", entries, session_id="s1", started="2026-09-21T10:00:00Z")
    assert sections(page) == [("modelChange", "other/m2"), ("user", "current"), ("assistant", "new")]
    assert "Switched to model: <code>other/m2</code>" in page
    assert "<dt>Session</dt><dd>s1</dd><dt>Date</dt><dd>2026-09-21T10:00:00Z</dd>" in page
    assert "<dt>Messages</dt><dd>2 user, 2 assistant</dd>" in page
    assert "<dt>Tokens</dt><dd>300 in, 30 out, 0 cache read, 0 cache write</dd>" in page


@pytest.mark.anyio
async def test_a_compacted_session_shows_the_turns_the_compaction_summarised(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    replies = script(
        reply("^<conversation>", [{"text": "THE SUMMARY"}]),
        reply("one$", [{"text": "r1"}]),
        reply("two$", [{"text": "r2"}]),
        reply("three$", [{"text": "r3"}]),
    )
    config = session_config(workspace, replies, compaction=CompactionSettings(keep_recent_tokens=100))
    async with open_session(config) as (session, _):
        session.toggles.compaction = False
        await session.prompt(f"{FILLER} one")
        await session.prompt(f"{FILLER} two")
        result = await session.compaction.compact()
        await session.prompt("three")
        assert not any(isinstance(m, UserMessage) and "one" in str(m.content) for m in session.messages)
        page = await anyio.Path(session.export_html("page.html")).read_text()
    assert sections(page) == [
        ("modelChange", "faux/scripted"),  # the model the session started on, as Pi records and shows it
        ("user", "one"),
        ("assistant", "r1"),
        ("user", "two"),
        ("assistant", "r2"),
        ("compactionSummary", "SUMMARY"),
        ("user", "three"),
        ("assistant", "r3"),
    ]
    assert f"Compacted from {result.tokens_before:,} tokens" in page
    assert "<dt>Messages</dt><dd>3 user, 3 assistant, 1 compactions</dd>" in page
    # A live session's page shows what the model was given besides the conversation, as Pi's does.
    assert "<h2>System prompt</h2>" in page and "<li><code>read</code>" in page
