"""The ACP agent's methods in-process: AcpAgent over real sessions, updates collected from its
`send`, and a fake connection for the requests it makes of the editor (no SDK router, no pipes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from pi_rpc.ai.types import ImageContent
from pi_rpc.modes.acp.agent import prompt_input
from pi_rpc.modes.acp.permissions import ALLOW_ONCE
from pi_rpc.session.session import SessionConfig

from ..session.helpers import FOREVER, reply, script, session_config, tool_call
from .acp_editor import Editor, acp_agent, text

pytestmark = pytest.mark.anyio

WRITE = reply("^write", [tool_call("write", path="notes.txt", content="hello\n")], [{"text": "Wrote it."}])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_initialize_echoes_a_version_it_speaks_and_advertises_what_it_serves(workspace: Path) -> None:
    async with acp_agent(session_config(workspace, script()), Editor()) as agent:
        init = await agent.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.protocol_version == acp.PROTOCOL_VERSION
        assert (await agent.initialize(protocol_version=999)).protocol_version == acp.PROTOCOL_VERSION
        capabilities = init.agent_capabilities
        assert capabilities is not None and capabilities.load_session is True
        assert capabilities.prompt_capabilities is not None and capabilities.prompt_capabilities.image is True


async def test_a_turn_streams_updates_in_order_then_ends(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, script(WRITE)), editor) as agent:
        session = await agent.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "auto"
        response = await agent.prompt(session_id=session.session_id, prompt=text("write notes"))
        assert response.stop_reason == "end_turn"
        updates = editor.updates(session.session_id)
        (call,) = [u for u in updates if u["sessionUpdate"] == "tool_call"]
        assert (call["kind"], call["status"]) == ("edit", "pending")
        statuses = [
            u.get("status")
            for u in updates
            if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call["toolCallId"]
        ]
        assert [s for s in statuses if s] == ["in_progress", "completed"]
        said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        assert said == "Wrote it."
        assert editor.kinds().index("tool_call") < editor.kinds().index("agent_message_chunk")
    assert (workspace / "notes.txt").read_text() == "hello\n"


async def test_run_outcomes_map_to_stop_reasons_and_errors(workspace: Path) -> None:
    replies = script(
        reply("^cut", [{"text": "half an ans"}, {"stop": "length"}]),
        reply("^fail", [{"text": "partial"}, {"error": "upstream exploded"}]),
    )
    async with acp_agent(session_config(workspace, replies), Editor()) as agent:
        session = await agent.new_session(cwd=str(workspace))
        assert (await agent.prompt(session_id=session.session_id, prompt=text("cut"))).stop_reason == "max_tokens"
        with pytest.raises(acp.RequestError) as error:
            await agent.prompt(session_id=session.session_id, prompt=text("fail"))
        assert (error.value.code, str(error.value), error.value.data) == (
            -32603,
            "upstream exploded",
            {"stopReason": "error"},
        )


async def test_cancel_ends_the_turn_cancelled(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, script(reply("^stream", FOREVER))), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        stops: list[str] = []

        async def prompt() -> None:
            stops.append((await agent.prompt(session_id=session.session_id, prompt=text("stream"))).stop_reason)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(prompt)
            await editor.wait_for_update("agent_message_chunk")
            await agent.cancel(session_id=session.session_id)
        assert stops == ["cancelled"]
        await agent.cancel(session_id="no such session")  # a notification: nothing to answer


async def test_bad_requests_are_invalid_params(workspace: Path) -> None:
    async with acp_agent(session_config(workspace, script()), Editor()) as agent:
        with pytest.raises(acp.RequestError) as relative:
            await agent.new_session(cwd="ws")
        assert relative.value.code == -32602
        assert relative.value.data == {"details": "cwd must be an absolute path to a directory: ws"}
        with pytest.raises(acp.RequestError) as unknown:
            await agent.prompt(session_id="nope", prompt=text("hello"))
        assert unknown.value.data == {"details": "Session not found: nope"}
        session = await agent.new_session(cwd=str(workspace))
        with pytest.raises(acp.RequestError) as mode:
            await agent.set_session_mode(mode_id="yolo", session_id=session.session_id)
        assert mode.value.data == {"details": "Unknown mode: yolo"}


async def test_without_a_model_a_prompt_asks_for_authentication(workspace: Path) -> None:
    async with acp_agent(session_config(workspace, None), Editor()) as agent:
        session = await agent.new_session(cwd=str(workspace))
        with pytest.raises(acp.RequestError) as failed:
            await agent.prompt(session_id=session.session_id, prompt=text("hello"))
        assert failed.value.code == -32000 and "model" in str(failed.value)  # ACP auth_required


async def test_a_stored_session_is_listed_and_loaded_with_its_history_replayed(workspace: Path) -> None:
    config = session_config(workspace, script(WRITE, reply("^again", [{"text": "Yes."}])))
    editor = Editor()
    async with acp_agent(config, editor) as agent:
        first = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=first.session_id, prompt=text("write notes"))
    async with acp_agent(config, editor := Editor()) as agent:
        listed = (await agent.list_sessions(cwd=str(workspace))).sessions
        assert [(s.session_id, s.title) for s in listed] == [(first.session_id, "write notes")]
        await agent.load_session(cwd=str(workspace), session_id=first.session_id)
        replayed = editor.kinds()
        assert replayed[0] == "user_message_chunk" and "tool_call" in replayed and "agent_message_chunk" in replayed
        assert (await agent.prompt(session_id=first.session_id, prompt=text("again"))).stop_reason == "end_turn"
        with pytest.raises(acp.RequestError) as missing:
            await agent.load_session(cwd=str(workspace), session_id="nope")
        assert missing.value.code == -32002  # ACP resource_not_found


async def test_a_mode_is_the_approval_policy_and_the_editor_is_asked(workspace: Path) -> None:
    editor = Editor(choice=ALLOW_ONCE)
    async with acp_agent(session_config(workspace, script(WRITE, WRITE)), editor, connected=True) as agent:
        session = await agent.new_session(cwd=str(workspace))
        assert session.modes is not None and session.modes.current_mode_id == "ask"  # a connected editor can ask
        await agent.set_session_mode(mode_id="readOnly", session_id=session.session_id)
        assert editor.updates()[-1] == {"sessionUpdate": "current_mode_update", "currentModeId": "readOnly"}
        await agent.prompt(session_id=session.session_id, prompt=text("write notes"))
        assert editor.asked == [] and not (workspace / "notes.txt").exists()
        await agent.set_session_mode(mode_id="ask", session_id=session.session_id)
        await agent.prompt(session_id=session.session_id, prompt=text("write notes"))
        assert [call.title for call in editor.asked] == ["write notes.txt"]  # the title of its tool call row
    assert (workspace / "notes.txt").read_text() == "hello\n"


def test_prompt_blocks_become_text_context_and_images() -> None:
    blocks: list[Any] = [
        TextContentBlock(type="text", text="explain "),
        ResourceContentBlock(type="resource_link", uri="file:///ws/a.py", name="a.py"),
        EmbeddedResourceContentBlock(
            type="resource", resource=TextResourceContents(uri="file:///ws/b.py", text="print(1)")
        ),
        ImageContentBlock(type="image", data="aGk=", mime_type="image/png"),
    ]
    prompt, images = prompt_input(blocks)
    assert (
        prompt == 'explain @file:///ws/a.py @file:///ws/b.py\n\n<context ref="file:///ws/b.py">\nprint(1)\n</context>'
    )
    assert images == [ImageContent(data="aGk=", mime_type="image/png")]


ENV_SCRIPT = script(reply("^env", [tool_call("bash", command="env")], [{"text": "done"}]))


async def tool_output_of_env(workspace: Path, config: SessionConfig) -> str:
    editor = Editor()
    async with acp_agent(config, editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=session.session_id, prompt=text("env"))
    return json.dumps(editor.updates(session.session_id))


@pytest.mark.parametrize("passed", [False, True])
async def test_an_acp_sessions_tools_get_the_daemons_choice_of_withheld_keys(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, passed: bool
) -> None:
    """Each ACP session makes its tools anew: they must withhold what the daemon withholds (a
    models.json provider's key variable too) and pass what the user opted to pass (spec 9.7). They
    used to fall back to the built-in providers' list, leaking the one and withholding the other."""
    monkeypatch.setenv("LOCAL_LLM_KEY", "local-key-1a2b3c4d5e")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-5a4b3c2d1e")
    monkeypatch.setenv("UNRELATED_SETTING", "visible")
    withheld = frozenset() if passed else frozenset({"LOCAL_LLM_KEY", "OPENAI_API_KEY"})
    seen = await tool_output_of_env(workspace, session_config(workspace, ENV_SCRIPT, withheld_env=withheld))
    assert "UNRELATED_SETTING=visible" in seen
    shown = [name for name in ("LOCAL_LLM_KEY", "OPENAI_API_KEY") if f"{name}=" in seen]
    assert shown == (["LOCAL_LLM_KEY", "OPENAI_API_KEY"] if passed else [])
