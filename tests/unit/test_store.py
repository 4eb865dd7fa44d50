"""Session files: append-only lines, a torn last line skipped, listing per workspace."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.ai.types import AssistantMessage, TextContent, UserMessage
from pi_rpc.session.storage.store import (
    SessionFile,
    find_session,
    list_all_sessions,
    list_sessions,
    load_session,
    sessions_root,
)

from .pi_prompt import PI_PROMPT


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


def test_a_session_with_no_prompt_is_not_listed(tmp_path: Path) -> None:
    """A session opened and left before its first prompt (or still open, unprompted) would fill an
    editor's resume picker with empty entries; once it holds a prompt, it is listed."""
    empty = SessionFile.create("/a", "empty", root=tmp_path)
    assert list_sessions("/a", root=tmp_path) == []
    assert list_all_sessions(root=tmp_path) == []
    empty.append(UserMessage(content="now a question"))
    assert [s.session_id for s in list_sessions("/a", root=tmp_path)] == ["empty"]
    assert [(cwd, s.session_id) for cwd, s in list_all_sessions(root=tmp_path)] == [("/a", "empty")]


def test_an_unwritable_file_turns_persistence_off_without_failing(tmp_path: Path) -> None:
    session = SessionFile(path=tmp_path / "missing-dir" / "s.jsonl", session_id="x")
    session.append(UserMessage(content="hi"))
    assert session.mode == "off"


def test_pi_coding_agent_dir_puts_sessions_in_pis_folder_in_pis_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_dir = tmp_path / "agent"
    monkeypatch.delenv("PI_RPC_SESSION_DIR", raising=False)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent_dir))
    assert sessions_root() == agent_dir / "sessions"
    ours = SessionFile.create("/work/my proj", "abc")
    ours.append(UserMessage(content="hi"))
    # Pi's getDefaultSessionDir: the cwd without its leading "/", separators as "-", inside "--".
    assert ours.path.parent == agent_dir / "sessions" / "--work-my proj--"
    # A session Pi wrote there is ours to list and continue.
    pi_file = ours.path.parent / "2026-01-01T00-00-00-000Z_0193-pi.jsonl"
    pi_file.write_text(
        '{"type":"session","version":3,"id":"0193-pi","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/work/my proj"}\n'
        + PI_PROMPT
    )
    assert {s.session_id for s in list_sessions("/work/my proj")} == {"abc", "0193-pi"}
    assert find_session("/work/my proj", "0193-pi") == pi_file


def test_our_session_folder_stays_without_pi_coding_agent_dir_or_with_an_explicit_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("PI_RPC_SESSION_DIR", str(tmp_path / "mine"))
    assert sessions_root() == tmp_path / "mine"
    assert SessionFile.create("/w", "abc").path.parent.parent == tmp_path / "mine"
    monkeypatch.delenv("PI_RPC_SESSION_DIR")
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert sessions_root() == tmp_path / "data" / "pi-rpc" / "sessions"
