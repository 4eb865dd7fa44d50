"""A stored session is continued only in its own workspace (the cwd its header records): JSON-RPC's
`session/load` and Pi mode's `switch_session` refuse another workspace's, saying where it is and
that `--fork` copies it, and the session in use is left as it was. (ACP's `session/load` and
`session/list`: test_acp_sessions_inprocess.py; `--session`: tests/unit/test_pi_command_line.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.ai import TextContent, UserMessage
from pi_rpc.session.storage.store import SessionFile

from ..session.helpers import script, session_config
from .jsonrpc_client import RpcError, jsonrpc_editor
from .pi_harness import pi_mode

pytestmark = pytest.mark.anyio


@pytest.fixture
def folders(tmp_path: Path) -> tuple[Path, Path, SessionFile]:
    """(this workspace, another one, a session of the other one holding a message)."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    theirs = SessionFile.create(str(there), "their-session-id", tmp_path / "sessions")
    theirs.append(UserMessage(content=[TextContent(text="their secret plan")]))
    return here, there, theirs


async def test_jsonrpc_session_load_refuses_another_workspaces_session(folders: tuple[Path, Path, SessionFile]) -> None:
    here, there, _ = folders
    async with jsonrpc_editor(session_config(here, script())) as editor:
        before = (await editor.request("state"))["sessionId"]
        with pytest.raises(RpcError) as refused:
            await editor.request("session/load", {"sessionId": "their-session-id"})
        assert refused.value.code == -32004
        assert f"belongs to another workspace ({there})" in refused.value.message
        assert "--fork their-session-id" in refused.value.message
        assert (await editor.request("state"))["sessionId"] == before
        assert "their secret plan" not in str(editor.received)


async def test_pi_switch_session_refuses_another_workspaces_session(folders: tuple[Path, Path, SessionFile]) -> None:
    here, there, theirs = folders
    async with pi_mode(session_config(here, script())) as pi:
        answer = await pi.call({"id": "1", "type": "switch_session", "sessionPath": str(theirs.path)})
        assert answer["success"] is False
        assert f"belongs to another workspace ({there})" in answer["error"] and "--fork" in answer["error"]
        messages = await pi.data({"id": "2", "type": "get_messages"})
        assert messages == {"messages": []}
