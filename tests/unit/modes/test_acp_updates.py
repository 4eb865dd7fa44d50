"""ACP updates and prompt input from our events and ACP blocks (names and shapes only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import AudioContentBlock, ResourceContentBlock, TextContentBlock

from pi_rpc.agent.types import AgentEvent, AgentToolResult, ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate
from pi_rpc.ai.types import (
    AutoRetryStart,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    TextContent,
)
from pi_rpc.modes.acp.agent import prompt_input
from pi_rpc.modes.acp.updates import UpdateMapper, transcript_updates


def dumped(update: Any) -> dict[str, Any]:
    result: dict[str, Any] = update.model_dump(mode="json", by_alias=True, exclude_none=True)
    return result


def run_call(mapper: UpdateMapper, name: str, args: dict[str, Any], is_error: bool) -> list[dict[str, Any]]:
    result = AgentToolResult(content=[TextContent(text="the result")])
    events: list[AgentEvent] = [
        ToolExecutionStart(tool_call_id="c1", tool_name=name, args=args),
        ToolExecutionEnd(tool_call_id="c1", tool_name=name, result=result, is_error=is_error),
    ]
    return [dumped(update) for event in events for update in mapper.updates(event)]


def test_a_failed_edit_ends_without_a_diff(tmp_path: Path) -> None:
    args = {"path": "a.py", "edits": [{"oldText": "missing", "newText": "new"}]}
    start, end = run_call(UpdateMapper(str(tmp_path)), "edit", args, is_error=True)
    assert [block["type"] for block in start["content"]] == ["diff"]  # proposed while it runs
    assert end["status"] == "failed"
    assert end["content"] == [{"type": "content", "content": {"type": "text", "text": "the result"}}]


def test_a_completed_edit_keeps_its_diff(tmp_path: Path) -> None:
    args = {"path": "a.py", "oldText": "old", "newText": "new"}
    _, end = run_call(UpdateMapper(str(tmp_path)), "edit", args, is_error=False)
    assert end["content"][0] == {"type": "diff", "path": str(tmp_path / "a.py"), "oldText": "old", "newText": "new"}


def test_a_write_over_a_file_shows_the_text_it_replaces(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("old notes\n")
    mapper = UpdateMapper(str(tmp_path))
    start = dumped(
        mapper.updates(
            ToolExecutionStart(
                tool_call_id="c1", tool_name="write", args={"path": "notes.md", "content": "new notes\n"}
            )
        )[0]
    )
    (tmp_path / "notes.md").write_text("new notes\n")  # the write runs
    result = AgentToolResult(content=[TextContent(text="wrote")])
    end = dumped(
        mapper.updates(ToolExecutionEnd(tool_call_id="c1", tool_name="write", result=result, is_error=False))[0]
    )
    expected = {"type": "diff", "path": str(tmp_path / "notes.md"), "oldText": "old notes\n", "newText": "new notes\n"}
    assert start["content"] == [expected]
    assert end["content"][0] == expected


def test_a_write_of_a_new_file_has_no_old_text(tmp_path: Path) -> None:
    _, end = run_call(UpdateMapper(str(tmp_path)), "write", {"path": "new.md", "content": "x"}, is_error=False)
    assert end["content"][0] == {"type": "diff", "path": str(tmp_path / "new.md"), "newText": "x"}


def test_each_retry_is_a_visible_notice() -> None:
    retry = AutoRetryStart(attempt=1, max_attempts=3, delay_ms=2000, error_message="HTTP 500: overloaded")
    (update,) = UpdateMapper("/ws").updates(retry)
    assert dumped(update) == {
        "sessionUpdate": "agent_thought_chunk",
        "content": {
            "type": "text",
            "text": "\n[The model request failed: HTTP 500: overloaded. Retrying in 2 s (attempt 1 of 3).]\n",
        },
    }


def link(uri: str) -> ResourceContentBlock:
    return ResourceContentBlock(type="resource_link", uri=uri, name=uri.rsplit("/", 1)[-1])


def test_adjacent_mentions_stay_apart() -> None:
    text, _ = prompt_input(
        [
            TextContentBlock(type="text", text="compare"),
            link("file:///ws/a.py"),
            link("file:///ws/b.py"),
            TextContentBlock(type="text", text=" please"),
        ]
    )
    assert text == "compare @file:///ws/a.py @file:///ws/b.py please"


def test_an_audio_block_is_refused() -> None:
    with pytest.raises(RequestError) as error:
        prompt_input([AudioContentBlock(type="audio", data="AAAA", mime_type="audio/wav")])
    assert (error.value.code, error.value.data) == (-32602, {"details": "Audio prompts are not supported"})


def progress(partial: AgentToolResult) -> ToolExecutionUpdate:
    return ToolExecutionUpdate(tool_call_id="c1", tool_name="bash", args={}, partial_result=partial)


def test_a_shell_call_is_a_meta_terminal_for_a_client_that_opted_in() -> None:
    mapper = UpdateMapper("/ws", terminal_output=True)
    args = {"command": "make test"}
    out = [dumped(u) for u in mapper.updates(ToolExecutionStart(tool_call_id="c1", tool_name="bash", args=args))]
    for snapshot in ("a\n", "a\nb\n", "a\nb\n"):
        partial = AgentToolResult(content=[TextContent(text=snapshot)])
        out += [dumped(u) for u in mapper.updates(progress(partial))]
    final = AgentToolResult(content=[TextContent(text="a\nb\n\nCommand exited with code 3")])
    out += [
        dumped(u)
        for u in mapper.updates(ToolExecutionEnd(tool_call_id="c1", tool_name="bash", result=final, is_error=True))
    ]
    start, first, second, end = out  # the unchanged third snapshot sends nothing
    assert start["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert start["_meta"] == {"terminal_info": {"terminal_id": "c1", "cwd": "/ws"}}
    assert [first["_meta"], second["_meta"]] == [
        {"terminal_output": {"terminal_id": "c1", "data": "a\n"}},
        {"terminal_output": {"terminal_id": "c1", "data": "b\n"}},
    ]
    assert "content" not in first
    assert end["status"] == "failed" and end["content"] == [{"type": "terminal", "terminalId": "c1"}]
    assert end["_meta"] == {
        "terminal_output": {"terminal_id": "c1", "data": "\nCommand exited with code 3"},
        "terminal_exit": {"terminal_id": "c1", "exit_code": 3, "signal": None},
    }


def test_a_tail_that_moved_on_sends_only_the_new_lines() -> None:
    mapper = UpdateMapper("/ws", terminal_output=True)
    mapper.updates(ToolExecutionStart(tool_call_id="c1", tool_name="bash", args={"command": "seq 9"}))
    for snapshot in ("1\n2\n3\n", "[truncated]\n2\n3\n4\n5\n"):
        partial = AgentToolResult(content=[TextContent(text=snapshot)])
        (update,) = mapper.updates(progress(partial))
    assert dumped(update)["_meta"]["terminal_output"]["data"] == "4\n5\n"


def test_other_clients_keep_text_snapshots() -> None:
    mapper = UpdateMapper("/ws")
    mapper.updates(ToolExecutionStart(tool_call_id="c1", tool_name="bash", args={"command": "ls"}))
    partial = AgentToolResult(content=[TextContent(text="a\n")])
    (update,) = mapper.updates(progress(partial))
    assert dumped(update) == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "c1",
        "content": [{"type": "content", "content": {"type": "text", "text": "a\n"}}],
    }


def test_a_stored_bash_execution_replays_as_the_users_words() -> None:
    ran = BashExecutionMessage(command="ls", output="a", exit_code=0, cancelled=False, truncated=False)
    [update] = [dumped(u) for u in transcript_updates([ran], "/w")]
    assert update["sessionUpdate"] == "user_message_chunk"
    assert update["content"] == {"type": "text", "text": "Ran `ls`\n```\na\n```"}


def test_a_stored_summary_replays_as_what_is_left_of_the_earlier_turns() -> None:
    """A loaded compacted session starts with Pi's summary message: the client shows it as the
    agent's note of the turns it stands for; an extension's message shows only when Pi shows it."""
    messages: list[Message] = [
        CompactionSummaryMessage(summary="## Goal\nfix it", tokens_before=4096),
        BranchSummaryMessage(summary="tried X", from_id="e1"),
        CustomMessage(custom_type="todo", content="remember Y", display=True),
        CustomMessage(custom_type="state", content="hidden", display=False),
    ]
    updates = [dumped(u) for u in transcript_updates(messages, "/w")]
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in updates] == [
        ("agent_message_chunk", "Earlier conversation summarised (4,096 tokens):\n\n## Goal\nfix it"),
        ("agent_message_chunk", "Summary of another branch:\n\ntried X"),
        ("user_message_chunk", "remember Y"),
    ]


MULTI_LINE = "import sys\n\n\ndef greet(name: str) -> str:\n    return f'Helo, {name}!'\n\n\nprint(greet('x'))\n"


def test_an_edit_mid_file_shows_the_whole_file_before_and_after(tmp_path: Path) -> None:
    # A diff viewer (Zed, Emacs agent-shell) diffs oldText against newText itself: a snippet would
    # be drawn at line 1 with "no newline" markers. The patch is the one the edit tool reports.
    from pi_rpc.tools import generate_unified_patch

    (tmp_path / "greet.py").write_text(MULTI_LINE)
    fixed = MULTI_LINE.replace("Helo", "Hello")
    args = {"path": "greet.py", "edits": [{"oldText": "Helo", "newText": "Hello"}]}
    mapper = UpdateMapper(str(tmp_path))
    start = dumped(mapper.updates(ToolExecutionStart(tool_call_id="c1", tool_name="edit", args=args))[0])
    (tmp_path / "greet.py").write_text(fixed)  # the edit runs
    details = {"diff": "", "patch": generate_unified_patch("greet.py", MULTI_LINE, fixed), "firstChangedLine": 5}
    result = AgentToolResult(
        content=[TextContent(text="Successfully replaced 1 block(s) in greet.py.")], details=details
    )
    end = dumped(
        mapper.updates(ToolExecutionEnd(tool_call_id="c1", tool_name="edit", result=result, is_error=False))[0]
    )
    whole = {"type": "diff", "path": str(tmp_path / "greet.py"), "oldText": MULTI_LINE, "newText": fixed}
    assert start["content"] == [whole]
    assert end["content"][0] == whole
    assert end["locations"] == [{"path": str(tmp_path / "greet.py"), "line": 5}]


def test_an_edit_of_text_other_than_the_disk_falls_back_to_the_snippet_at_its_line(tmp_path: Path) -> None:
    # The tool edited an editor buffer with unsaved lines: its patch is not the disk's, so no
    # made-up whole file; the snippet, and the location says where the change is.
    (tmp_path / "greet.py").write_text(MULTI_LINE)
    args = {"path": "greet.py", "edits": [{"oldText": "Helo", "newText": "Hello"}]}
    mapper = UpdateMapper(str(tmp_path))
    mapper.updates(ToolExecutionStart(tool_call_id="c1", tool_name="edit", args=args))
    details = {"diff": "", "patch": "--- greet.py\n+++ greet.py\n@@ -9,1 +9,1 @@\n", "firstChangedLine": 9}
    result = AgentToolResult(content=[TextContent(text="done")], details=details)
    end = dumped(
        mapper.updates(ToolExecutionEnd(tool_call_id="c1", tool_name="edit", result=result, is_error=False))[0]
    )
    assert end["content"][0] == {
        "type": "diff",
        "path": str(tmp_path / "greet.py"),
        "oldText": "Helo",
        "newText": "Hello",
    }
    assert end["locations"] == [{"path": str(tmp_path / "greet.py"), "line": 9}]


def test_a_file_over_the_bound_keeps_the_snippet(tmp_path: Path) -> None:
    from pi_rpc.modes.acp.file_diffs import EDIT_WHOLE_FILE_MAX_BYTES

    (tmp_path / "big.txt").write_text("x" * EDIT_WHOLE_FILE_MAX_BYTES + "\nHelo\n")
    args = {"path": "big.txt", "edits": [{"oldText": "Helo", "newText": "Hello"}]}
    start = dumped(
        UpdateMapper(str(tmp_path)).updates(ToolExecutionStart(tool_call_id="c1", tool_name="edit", args=args))[0]
    )
    assert start["content"] == [
        {"type": "diff", "path": str(tmp_path / "big.txt"), "oldText": "Helo", "newText": "Hello"}
    ]
