"""Two session refusals as each front end answers them, in-process: a rewind while a run is going
(the session is busy) and an empty session name (an invalid argument). Each front end maps them in
its one table (pi_rpc/session/refusals.py); these pin what its user sees."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from lsprotocol import types as lsp

from tests.lsp.editor import initialize, sample_workspace, until_process

from ..session.helpers import FOREVER, reply, script, session_config
from .acp_editor import Editor, acp_agent, text
from .jsonrpc_client import jsonrpc_editor
from .lsp_harness import AS_MESSAGES, command, messages, scripted, sleepers
from .lsp_pipes import lsp_in_process
from .pi_harness import pi_mode

pytestmark = pytest.mark.anyio

BUSY_REWIND = "Cannot rewind while a run is in progress: abort it first"
EMPTY_NAME = "Session name cannot be empty"
STREAM = script(reply("^stream", FOREVER))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_jsonrpc_answers_them_busy_and_invalid_params(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, STREAM)) as editor:
        named = await editor.response(editor.request_nowait("session/setName", {"name": "  "}))
        assert named["error"] == {"code": -32602, "message": EMPTY_NAME}
        editor.request_nowait("prompt", {"message": "stream forever"})
        assert (await editor.request("state"))["isStreaming"] is True  # the prompt's handler has started
        rewind = {"entryId": "any", "restore": "files"}
        refused = await editor.response(editor.request_nowait("session/rewind", rewind))
        assert refused["error"] == {"code": -32002, "message": BUSY_REWIND}


async def test_pi_mode_answers_them_with_the_sessions_words(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, STREAM)) as pi:
        named = await pi.call({"id": "1", "type": "set_session_name", "name": "  "})
        assert (named["success"], named["error"]) == (False, EMPTY_NAME)
        assert (await pi.call({"id": "2", "type": "prompt", "message": "stream forever"}))["success"] is True
        await pi.event("message_update")
        refused = await pi.call({"id": "3", "type": "rewind", "entryId": "any", "restore": "files"})
        assert (refused["success"], refused["error"]) == (False, BUSY_REWIND)


async def test_acp_says_a_busy_rewind_in_the_chat(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, STREAM), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(agent.prompt, session.session_id, text("stream forever"))
            await editor.wait_for_update("agent_message_chunk")
            answered = await agent.prompt(session_id=session.session_id, prompt=text("/rewind 1 files"))
            await agent.cancel(session_id=session.session_id)
        assert answered.stop_reason == "end_turn"
        said = [u["content"]["text"] for u in editor.updates() if u["sessionUpdate"] == "agent_message_chunk"]
        assert said[-1] == f"Not rewound: {BUSY_REWIND}"


async def test_lsp_shows_a_busy_rewind_as_a_warning(tmp_path: Path) -> None:
    workspace = sample_workspace(tmp_path)
    async with lsp_in_process(scripted(workspace)) as (client, editor):
        await initialize(client, workspace, AS_MESSAGES)
        await command(client, "pi.prompt", "sleep please")
        await until_process(sleepers)
        assert await command(client, "pi.rewind", 1, "files") is None
        assert messages(client) == [(lsp.MessageType.Warning, f"Pi did not rewind: {BUSY_REWIND}")]
        await command(client, "pi.abort")
