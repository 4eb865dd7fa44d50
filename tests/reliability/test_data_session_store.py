"""Session files survive a killed writer, stay private, and never mix two workspaces
(protocol/PROTOCOL.md, "Sessions on disk").

A daemon killed in the middle of an append leaves a torn last line. The next append used to land
on that fragment, so both were lost on reload. Here the torn write is reproduced byte-exactly
(every cut point of the interrupted line, a hypothesis property) and with real daemons killed
with SIGKILL between runs.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_rpc.ai.json_text import encode_json
from pi_rpc.ai.types import AssistantMessage, Message, TextContent, UserMessage
from pi_rpc.demo.rpc_client import DaemonClient
from pi_rpc.session.storage.entry_kinds import SessionMessageEntry, entry_json, entry_timestamp
from pi_rpc.session.storage.store import (
    SessionFile,
    find_session,
    legacy_workspace_folder,
    list_sessions,
    load_session,
    workspace_folder,
)
from tests.e2e.conftest import daemon_env

CWD = "/work/project"


def reply(text: str) -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], api="faux", provider="faux", model="m")


def texts(messages: list[Message] | list[UserMessage | AssistantMessage]) -> list[str]:
    out = []
    for message in messages:
        assert isinstance(message, UserMessage | AssistantMessage)
        content = message.content
        out.append(
            content
            if isinstance(content, str)
            else "".join(block.text for block in content if isinstance(block, TextContent))
        )
    return out


# --- the torn line, byte-exact ----------------------------------------------------------------------


def pi_line(message: Message, entry_id: str, parent_id: str | None) -> bytes:
    """A message entry's line as Pi writes it (without the newline)."""
    return entry_json(
        SessionMessageEntry(id=entry_id, parent_id=parent_id, timestamp=entry_timestamp(), message=message)
    )


INTERRUPTED = UserMessage(content="a long question " * 40 + "ending in ünïcode")


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=1, max_value=len(pi_line(INTERRUPTED, "1" * 8, "0" * 8))))
def test_an_append_after_a_torn_line_keeps_every_whole_message(
    tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    root = tmp_path_factory.mktemp("sessions")
    before = SessionFile.create(CWD, "s1", root=root)
    before.append(UserMessage(content="first"))
    before.append(reply("answer"))
    line = pi_line(INTERRUPTED, "1" * 8, before.pi_leaf)  # new files: Pi's format
    with open(before.path, "ab") as out:  # the daemon was killed after `cut` bytes of this line
        out.write(line[:cut])

    after = SessionFile(path=before.path, session_id="s1")  # the next daemon resumes the session
    after.append(UserMessage(content="next"))
    after.append(reply("next answer"))

    _, messages = load_session(before.path)
    whole = cut == len(line)  # only the newline was lost: the message stays
    interrupted = [text_of_user(INTERRUPTED)] if whole else []
    assert texts(messages) == ["first", "answer", *interrupted, "next", "next answer"]
    assert before.path.read_bytes().endswith(b"\n")


def text_of_user(message: UserMessage) -> str:
    assert isinstance(message.content, str)
    return message.content


def test_a_torn_line_is_reported_on_load_and_when_cut(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    session = SessionFile.create(CWD, "s1", root=tmp_path)
    session.append(UserMessage(content="first"))
    with open(session.path, "ab") as out:
        out.write(b'{"role":"user","content":"half a li')
    with caplog.at_level(logging.WARNING, logger="pi_rpc.session.storage.store"):
        _, messages = load_session(session.path)
        assert texts(messages) == ["first"]
        assert "torn last line" in caplog.text
        session.append(UserMessage(content="second"))
        assert "dropped a torn last line (35 bytes)" in caplog.text
    assert texts(load_session(session.path)[1]) == ["first", "second"]


# --- real daemons, killed -----------------------------------------------------------------------------


SCRIPT = {"replies": [{"match": "^q", "turns": [[{"text": "ok"}]]}]}


def test_killed_daemons_lose_no_message(tmp_path: Path) -> None:
    """Three daemons in turn, each killed with SIGKILL; a torn line sits between the first two."""
    workspace, sessions = tmp_path / "ws", tmp_path / "sessions"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = daemon_env(tmp_path / "home") | {"PI_RPC_SESSION_DIR": str(sessions)}
    argv = ["--cwd", str(workspace), "--script", str(script), "--framing", "jsonl"]
    session_id = None
    counts = []
    for run in range(3):
        with DaemonClient(argv[:-2], framing="jsonl", env=env) as client:
            if session_id is not None:
                counts.append(client.request("session/load", {"sessionId": session_id})["messageCount"])
            if run < 2:
                assert client.request("prompt", {"message": f"q{run}"})["stopReason"] == "stop"
                session_id = client.request("session/stats")["sessionId"]
            os.kill(client.proc.pid, signal.SIGKILL)
            client.proc.wait()
        if run == 0:  # killed in the middle of appending the next message
            (path,) = sessions.rglob("*.jsonl")
            assert len(load_session(path)[1]) >= 2
            with open(path, "ab") as out:
                out.write(encode_json(UserMessage(content="lost in the crash"))[:20])
    assert counts[1] == counts[0] + 2
    (path,) = sessions.rglob("*.jsonl")
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and all(json.loads(line) for line in lines[:-1])  # 0 corrupted lines
    conversation = [m for m in load_session(path)[1] if isinstance(m, UserMessage | AssistantMessage)]
    assert texts(conversation) == ["q0", "ok", "q1", "ok"]


# --- privacy and workspaces -------------------------------------------------------------------------


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_and_folders_are_private(tmp_path: Path) -> None:
    old_umask = os.umask(0o022)
    try:
        session = SessionFile.create(CWD, "s1", root=tmp_path / "sessions")
        session.append(UserMessage(content="secret plans"))
    finally:
        os.umask(old_umask)
    assert (mode_of(session.path), mode_of(session.path.parent), mode_of(tmp_path / "sessions")) == (
        0o600,
        0o700,
        0o700,
    )


def test_existing_sessions_are_made_private_when_opened(tmp_path: Path) -> None:
    session = SessionFile.create(CWD, "s1", root=tmp_path)
    session.append(UserMessage(content="listed once it holds a prompt"))
    os.chmod(session.path, 0o644)
    os.chmod(session.path.parent, 0o755)
    assert [s.session_id for s in list_sessions(CWD, root=tmp_path)] == ["s1"]
    assert (mode_of(session.path), mode_of(session.path.parent)) == (0o600, 0o700)
    os.chmod(session.path, 0o664)
    SessionFile(path=session.path, session_id="s1").append(UserMessage(content="more"))
    assert mode_of(session.path) == 0o600


def test_workspaces_whose_slugs_collide_keep_apart(tmp_path: Path) -> None:
    SessionFile.create("/x/a-b", "dash", root=tmp_path).append(UserMessage(content="in a-b"))
    SessionFile.create("/x/a/b", "nested", root=tmp_path).append(UserMessage(content="in a/b"))
    assert workspace_folder("/x/a-b", tmp_path) != workspace_folder("/x/a/b", tmp_path)
    assert [s.first_message for s in list_sessions("/x/a-b", root=tmp_path)] == ["in a-b"]
    assert [s.first_message for s in list_sessions("/x/a/b", root=tmp_path)] == ["in a/b"]
    assert find_session("/x/a-b", "nested", root=tmp_path) is None
    assert find_session("/x/a/b", "dash", root=tmp_path) is None


def test_sessions_in_the_old_shared_folder_are_still_found(tmp_path: Path) -> None:
    """Earlier versions kept both workspaces in one slug folder; each still finds only its own."""
    legacy = legacy_workspace_folder("/x/a-b", tmp_path)
    assert legacy == legacy_workspace_folder("/x/a/b", tmp_path)
    legacy.mkdir(parents=True)
    for cwd, session_id, text in (("/x/a-b", "old1", "old a-b"), ("/x/a/b", "old2", "old a/b")):
        header = {"type": "session", "version": 1, "id": session_id, "cwd": cwd, "timestamp": "2026-01-01"}
        (legacy / f"2026-01-01T00-00-00_{session_id}.jsonl").write_text(
            json.dumps(header) + "\n" + json.dumps({"role": "user", "content": text}) + "\n"
        )
    assert [s.first_message for s in list_sessions("/x/a-b", root=tmp_path)] == ["old a-b"]
    found = find_session("/x/a-b", "old1", root=tmp_path)
    assert found is not None and found.parent == legacy
    assert find_session("/x/a-b", "old2", root=tmp_path) is None


def test_a_session_opens_its_file_once_for_all_its_appends(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each append used to open, chmod, stat, read back and close the file: now one open per session."""
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: str | Path, flags: int, mode: int = 0o777) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", counting_open)
    session = SessionFile.create(CWD, "s1", root=tmp_path)
    for n in range(20):
        session.append(UserMessage(content=f"question {n}"))
    assert opened.count(os.fspath(session.path)) == 1
    assert texts(load_session(session.path)[1]) == [f"question {n}" for n in range(20)]


def test_lines_another_writer_appends_in_between_are_kept(tmp_path: Path) -> None:
    """Pi and pi-rpc on one session: the other writer's whole lines stay, each line stays whole."""
    ours = SessionFile.create(CWD, "s1", root=tmp_path)
    ours.append(UserMessage(content="first"))
    with open(ours.path, "ab") as other:
        other.write(pi_line(UserMessage(content="from Pi"), "2" * 8, ours.pi_leaf) + b"\n")
    ours.append(UserMessage(content="second"))
    with open(ours.path, "ab") as other:  # a whole record that lost only its newline
        other.write(pi_line(UserMessage(content="torn"), "3" * 8, ours.pi_leaf))
    ours.append(UserMessage(content="third"))
    lines = ours.path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    assert all(json.loads(line) for line in lines[:-1])
    contents = [json.loads(line).get("message", {}).get("content") for line in lines[1:-1]]
    assert contents == ["first", "from Pi", "second", "torn", "third"]
