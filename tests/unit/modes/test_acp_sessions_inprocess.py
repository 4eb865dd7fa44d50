"""ACP sessions as the agent decides them, in-process: listing, loading (in this agent and in the
next one, as after a restart), unknown sessions and a busy session. These ran through the SDK's
client over daemon subprocesses before (tests/e2e/test_acp_sessions.py keeps what needs a real
provider or the CLI's environment)."""

from __future__ import annotations

import json
from pathlib import Path

import acp
import anyio
import pytest

from pi_rpc.session.storage.store import SessionDir

from ..session.helpers import FOREVER, reply, script, session_config
from .acp_editor import Editor, acp_agent, text

pytestmark = pytest.mark.anyio

REPLIES = script(reply("^list files", [{"text": "Two files."}]), reply("^stream", FOREVER))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_an_unprompted_session_is_not_listed_but_loads_here_and_after_a_restart(workspace: Path) -> None:
    """A resume picker shows no empty entries: a session is listed once it holds a prompt, and
    one that holds none still loads by its id."""
    config = session_config(workspace, REPLIES)
    async with acp_agent(config, Editor()) as agent:
        made = await agent.new_session(cwd=str(workspace))
        assert (await agent.list_sessions(cwd=str(workspace))).sessions == []
        assert (await agent.list_sessions()).sessions == []
        loaded = await agent.load_session(cwd=str(workspace), session_id=made.session_id)
        assert loaded is not None and loaded.modes is not None
    async with acp_agent(config, Editor()) as agent:
        await agent.load_session(cwd=str(workspace), session_id=made.session_id)
        answer = await agent.prompt(session_id=made.session_id, prompt=text("list files"))
        assert answer.stop_reason == "end_turn"
        listed = await agent.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [made.session_id]


@pytest.mark.parametrize("chosen_folder", [False, True], ids=["workspace-folders", "session-dir"])
async def test_a_session_stays_with_its_workspace_in_lists_and_loads(
    workspace: Path, tmp_path: Path, chosen_folder: bool
) -> None:
    """In a root of workspace folders and in a folder chosen as Pi's `--session-dir`, where the
    workspaces' files lie side by side: a list without cwd is the daemon's own workspace's, and
    another workspace's session is loaded with its own cwd only (with this one's it is refused,
    its transcript unshown, and the error says where it is and how to fork it)."""
    other = tmp_path / "other"
    other.mkdir()
    chosen = SessionDir(tmp_path / "chosen") if chosen_folder else None
    config = session_config(workspace, REPLIES, session_root=chosen)
    async with acp_agent(config, Editor()) as agent:
        here = await agent.new_session(cwd=str(workspace))
        there = await agent.new_session(cwd=str(other))
        await agent.prompt(session_id=here.session_id, prompt=text("list files"))
        await agent.prompt(session_id=there.session_id, prompt=text("list files"))
    if chosen_folder:
        assert len(list((tmp_path / "chosen").glob("*.jsonl"))) == 2
    async with acp_agent(config, editor := Editor()) as agent:
        unasked = await agent.list_sessions()
        assert [(s.session_id, s.cwd) for s in unasked.sessions] == [(here.session_id, str(workspace))]
        filtered = await agent.list_sessions(cwd=str(other))
        assert [(s.session_id, s.title) for s in filtered.sessions] == [(there.session_id, "list files")]
        with pytest.raises(acp.RequestError) as refused:
            await agent.load_session(cwd=str(workspace), session_id=there.session_id)
        assert refused.value.code == -32002
        details = json.dumps(refused.value.data)
        assert "another workspace" in details and str(other) in details and "--fork" in details
        assert not [u for u in editor.updates() if u["sessionUpdate"] == "user_message_chunk"]
        await agent.load_session(cwd=str(other), session_id=there.session_id)
        replayed = [u for u in editor.updates() if u["sessionUpdate"] == "user_message_chunk"]
        assert replayed == [{"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "list files"}}]


async def test_an_unknown_session_is_resource_not_found(workspace: Path) -> None:
    async with acp_agent(session_config(workspace, REPLIES), Editor()) as agent:
        with pytest.raises(acp.RequestError) as loading:
            await agent.load_session(cwd=str(workspace), session_id="nope")
        with pytest.raises(acp.RequestError) as prompting:
            await agent.prompt(session_id="nope", prompt=text("hi"))
    for error in (loading.value, prompting.value):
        assert (error.code, error.data) == (-32002, {"details": "Session not found: nope"})


async def test_a_second_prompt_while_busy_is_refused_in_acp_terms(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, REPLIES), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: agent.prompt(session_id=session.session_id, prompt=text("stream")))
            await editor.wait_for_update("agent_message_chunk")
            with pytest.raises(acp.RequestError) as error:
                await agent.prompt(session_id=session.session_id, prompt=text("hi"))
            await agent.cancel(session_id=session.session_id)
    assert error.value.code == -32600
    assert "streamingBehavior" not in json.dumps(error.value.data)
    assert "session/cancel" in json.dumps(error.value.data)
