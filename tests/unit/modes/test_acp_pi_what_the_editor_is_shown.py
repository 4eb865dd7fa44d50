"""What the Pi and ACP front ends show an editor: where keys go when no model is set, the text
streamed before a cut stream or a failure, each call of a loaded session completed on replay.
In-process: nothing here depends on pipes, signals or a process of its own."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from ..session.helpers import reply, script, session_config, tool_call
from .acp_editor import Editor, acp_agent, text
from .pi_harness import pi_mode

pytestmark = pytest.mark.anyio

# What a no-model error must name, so a user knows where a key goes.
NAMED = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "models.json")
QUESTION = "Can you write a docstring for main()?"
NOTES = "# My notes\n\nDo not lose these.\n"
WRITE = reply("^write", [tool_call("write", path="notes.txt", content="hello\n")], [{"text": "Wrote it."}])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's real project, which a scripted fallback's canned tool calls would overwrite."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "NOTES.md").write_text(NOTES)
    return root


def files_of(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


async def test_pi_mode_without_a_model_answers_a_prompt_with_where_keys_go(project: Path) -> None:
    async with pi_mode(session_config(project, None)) as pi:
        failed = await pi.call({"id": "1", "type": "prompt", "message": QUESTION})
        assert failed["success"] is False and all(name in failed["error"] for name in NAMED), failed
        assert (await pi.call({"id": "2", "type": "get_state"}))["success"] is True
        assert [line for line in pi.peer.lines if line["type"] != "response"] == []  # nothing ran
    assert files_of(project) == {"NOTES.md": NOTES}


async def test_acp_mode_without_a_model_answers_a_prompt_with_where_keys_go(project: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(project, None), editor) as agent:
        session = await agent.new_session(cwd=str(project))
        with pytest.raises(acp.RequestError) as failed:
            await agent.prompt(session_id=session.session_id, prompt=text(QUESTION))
        assert all(name in str(failed.value) for name in NAMED), failed.value
        assert set(editor.kinds()) <= {"available_commands_update"}  # the slash commands at most: nothing ran
    assert files_of(project) == {"NOTES.md": NOTES}


async def test_acp_text_streamed_before_a_cut_or_a_failure_reaches_the_editor(tmp_path: Path) -> None:
    replies = script(
        reply("^cut", [{"text": "half an ans"}, {"stop": "length"}]),
        reply("^fail", [{"text": "partial"}, {"error": "upstream exploded"}]),
    )
    editor = Editor()
    async with acp_agent(session_config(tmp_path, replies), editor) as agent:
        session = await agent.new_session(cwd=str(tmp_path))
        assert (await agent.prompt(session_id=session.session_id, prompt=text("cut"))).stop_reason == "max_tokens"
        with pytest.raises(acp.RequestError):
            await agent.prompt(session_id=session.session_id, prompt=text("fail"))
    said = [u["content"]["text"] for u in editor.updates() if u["sessionUpdate"] == "agent_message_chunk"]
    assert said == ["half an ans", "partial"]


async def test_acp_replay_of_a_loaded_session_shows_each_call_completed(tmp_path: Path) -> None:
    config = session_config(tmp_path, script(WRITE))
    async with acp_agent(config, Editor()) as agent:
        first = await agent.new_session(cwd=str(tmp_path))
        await agent.prompt(session_id=first.session_id, prompt=text("write notes"))
    async with acp_agent(config, editor := Editor()) as agent:
        loaded = await agent.load_session(cwd=str(tmp_path), session_id=first.session_id)
        assert loaded.modes is not None
        replay = editor.updates()
        assert replay[0] == {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "write notes"}}
        calls = [u for u in replay if u["sessionUpdate"] == "tool_call"]
        assert [c["kind"] for c in calls] == ["edit"]
        assert [u["status"] for u in replay if u["sessionUpdate"] == "tool_call_update"] == ["completed"]
        said = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "agent_message_chunk"]
        assert said[-1] == "Wrote it."
        with pytest.raises(acp.RequestError) as missing:
            await agent.load_session(cwd=str(tmp_path), session_id="nope")
        assert missing.value.data == {"details": "Session not found: nope"}
