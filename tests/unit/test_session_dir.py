"""A folder chosen for sessions, as Pi lets a user choose one (`--session-dir`,
`PI_CODING_AGENT_SESSION_DIR`, settings.json `sessionDir`): the files go directly in it, every
workspace's side by side, and a workspace lists and continues only those whose header records its
cwd (newest Pi; tests/e2e/test_pi_session_dir.py runs real Pi on the same folder)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_rpc.ai.types import TextContent, UserMessage
from pi_rpc.cli import build_parser, build_session_config
from pi_rpc.pi_flags import session_paths
from pi_rpc.session.storage.store import (
    SessionDir,
    SessionFile,
    chosen_session_root,
    find_session,
    find_session_anywhere,
    list_all_sessions,
    list_sessions,
    private_workspace_subfolder,
)
from tests.unit.pi_prompt import PI_PROMPT

HERE, THERE = "/work/here", "/work/there"
LOOPBACK_MODEL = ["--api", "openai-completions", "--base-url", "https://127.0.0.1:9/v1", "--model", "m"]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A home of its own, Pi's agent folder in it, and none of the session variables set."""
    home = tmp_path / "home"
    (home / "agent").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / "agent"))
    for variable in ("PI_RPC_SESSION_DIR", "PI_CODING_AGENT_SESSION_DIR"):
        monkeypatch.delenv(variable, raising=False)
    yield home


def started(cwd: str, session_id: str, root: SessionDir, text: str = "hello") -> SessionFile:
    session = SessionFile.create(cwd, session_id, root)
    session.append(UserMessage(content=[TextContent(text=text)]))
    return session


def test_the_files_go_directly_in_the_folder_and_each_workspace_sees_its_own(tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.mkdir(mode=0o755)
    root = SessionDir(users / "chosen")
    mine = started(HERE, "abc1", root, "mine")
    theirs = started(THERE, "def2", root, "theirs")
    assert mine.path.parent == theirs.path.parent == root.path
    assert [s.first_message for s in list_sessions(HERE, root)] == ["mine"]
    assert [s.first_message for s in list_sessions(THERE, root)] == ["theirs"]
    assert find_session(HERE, "abc1", root) == mine.path and find_session(HERE, "def2", root) is None
    assert find_session_anywhere("def2", root) == theirs.path
    assert sorted(cwd for cwd, _ in list_all_sessions(root)) == [HERE, THERE]
    # The folder is private like ours; the folders above it are the user's and keep their mode.
    assert root.path.stat().st_mode & 0o777 == 0o700 and users.stat().st_mode & 0o777 == 0o755
    answers = private_workspace_subfolder(HERE, "answers", root)
    assert answers == root.path / "answers" and list_sessions(HERE, root)[0].session_id == "abc1"


def test_a_file_pi_wrote_in_the_folder_is_listed_by_the_cwd_of_its_header(tmp_path: Path) -> None:
    folder = tmp_path / "chosen"
    folder.mkdir()
    header = {"type": "session", "version": 3, "id": "0193-pi", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": HERE}
    pi_file = folder / "2026-01-01T00-00-00-000Z_0193-pi.jsonl"
    pi_file.write_text(json.dumps(header) + "\n" + PI_PROMPT)
    assert [s.session_id for s in list_sessions(HERE, SessionDir(folder))] == ["0193-pi"]
    assert list_sessions(THERE, SessionDir(folder)) == []


def test_continue_takes_the_newest_session_of_this_workspace_not_the_folders(tmp_path: Path) -> None:
    root = SessionDir(tmp_path / "chosen")
    mine = started(HERE, "abc1", root)
    theirs = started(THERE, "def2", root)
    os.utime(mine.path, (1_000_000, 1_000_000))  # theirs is the newest file of the folder
    args = build_parser().parse_args(["-c"])
    assert session_paths(args, HERE, root) == (mine.path, None)
    assert session_paths(args, THERE, root) == (theirs.path, None)


def test_the_folder_comes_from_the_flag_then_pis_variable_then_ours_then_the_setting(
    tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = str(tmp_path / "ws")
    assert chosen_session_root(None, None, workspace) is None  # the default root
    assert chosen_session_root(None, "~/pi-sessions", workspace) == SessionDir(home / "pi-sessions")
    assert chosen_session_root(None, "rel", workspace) == SessionDir(tmp_path / "ws" / "rel")
    monkeypatch.setenv("PI_RPC_SESSION_DIR", str(tmp_path / "ours"))
    assert chosen_session_root(None, "~/pi-sessions", workspace) is None  # ours, a root of workspace folders
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", "~/from-variable")
    assert chosen_session_root(None, "~/pi-sessions", workspace) == SessionDir(home / "from-variable")
    assert chosen_session_root("~/from-flag", "~/pi-sessions", workspace) == SessionDir(home / "from-flag")
    assert chosen_session_root("flag", None, workspace) == SessionDir(Path("flag").absolute())


def test_settings_json_session_dir_reaches_the_session_but_a_workspaces_own_does_not(
    tmp_path: Path, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A repository's `.pi/settings.json` cannot send the user's conversations into its own tree
    (Pi lets it): its `sessionDir` is ignored, with a warning."""
    workspace = tmp_path / "ws"
    (workspace / ".pi").mkdir(parents=True)
    (home / "agent" / "settings.json").write_text(json.dumps({"sessionDir": "~/user-sessions"}))
    args = build_parser().parse_args(["--cwd", str(workspace), *LOOPBACK_MODEL])
    assert build_session_config(args).persistence.root == SessionDir(home / "user-sessions")
    (workspace / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": ".pi/sessions"}))
    assert build_session_config(args).persistence.root == SessionDir(home / "user-sessions")
    assert "sessionDir is ignored in a workspace's settings" in caplog.text
    flagged = build_parser().parse_args(["--cwd", str(workspace), "--session-dir", "~/flag", *LOOPBACK_MODEL])
    assert build_session_config(flagged).persistence.root == SessionDir(home / "flag")
