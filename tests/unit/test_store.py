"""Session files: append-only lines, a torn last line skipped, listing per workspace."""

from __future__ import annotations

from pathlib import Path

from pi_rpc.ai.types import AssistantMessage, TextContent, UserMessage
from pi_rpc.session.store import SessionFile, find_session, list_sessions, load_session


def test_messages_round_trip_and_a_torn_line_is_skipped(tmp_path: Path) -> None:
    session = SessionFile.create("/work/project", "abc123", root=tmp_path)
    session.append(UserMessage(content="hi"))
    session.append(AssistantMessage(content=[TextContent(text="hello")], api="faux", provider="faux", model="m"))
    with open(session.path, "ab") as out:
        out.write(b'{"role":"user","content":"half a li')  # a crash mid-write
    header, messages = load_session(session.path)
    assert header.id == "abc123" and header.cwd == "/work/project"
    assert [type(m).__name__ for m in messages] == ["UserMessage", "AssistantMessage"]
    assert find_session("/work/project", "abc123", root=tmp_path) == session.path


def test_listing_is_per_workspace_and_newest_first(tmp_path: Path) -> None:
    first = SessionFile.create("/a", "one", root=tmp_path)
    first.append(UserMessage(content="first question"))
    SessionFile.create("/b", "other", root=tmp_path).append(UserMessage(content="elsewhere"))
    summaries = list_sessions("/a", root=tmp_path)
    assert [(s.session_id, s.message_count, s.first_message) for s in summaries] == [("one", 1, "first question")]
    assert list_sessions("/nowhere", root=tmp_path) == []


def test_an_unwritable_file_turns_persistence_off_without_failing(tmp_path: Path) -> None:
    session = SessionFile(path=tmp_path / "missing-dir" / "s.jsonl", session_id="x")
    session.append(UserMessage(content="hi"))
    assert session.mode == "off"
