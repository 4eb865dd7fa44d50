"""ACP features the agent decides, in-process: model and thinking as config options, the session
title and usage after a turn, session/close and session/resume. These ran through the SDK's
client over daemon subprocesses before; each update is still checked against the SDK's schema
model. tests/e2e/test_acp_features.py keeps what the wire shows: slash commands listed after
session/new's answer, terminals for a client that opts in, the older session/set_model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import SessionNotification

from pi_rpc.session.compaction.planning import CompactionSettings, estimated_tokens

from ..session.compaction_sizes import FILLER, NEAR, SUMMARY, used
from ..session.helpers import reply, script, session_config
from .acp_editor import Editor, acp_agent, text

pytestmark = pytest.mark.anyio

REPLIES = script(reply("^list files", [{"text": "Two files."}]))


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def assert_schema_exact(editor: Editor) -> None:
    """Each session/update parses as ACP's SessionNotification and dumps back to the same JSON."""
    for message in editor.sent:
        parsed = SessionNotification.model_validate(message["params"])
        assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == message["params"]


def option_id(option: Any) -> str:
    return str(option.root.id if hasattr(option, "root") else option.id)


async def test_model_and_thinking_are_config_options(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, REPLIES), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        options = {option_id(o): o for o in session.config_options or []}
        assert options["model"].current_value == "faux/scripted"
        assert [o.value for o in options["model"].options] == ["faux/scripted"]
        assert options["thought_level"].current_value == "off"
        answer = await agent.set_config_option(config_id="thought_level", session_id=session.session_id, value="off")
        assert [option_id(o) for o in answer.config_options] == ["model", "thought_level"]
        for config_id, value, details in (
            ("thought_level", "high", "Unknown thinking level: high"),
            ("model", "nope/none", "Model not found: nope/none"),
            ("colour", "red", "Unknown config option: colour"),
        ):
            with pytest.raises(acp.RequestError) as error:
                await agent.set_config_option(config_id=config_id, session_id=session.session_id, value=value)
            assert (error.value.code, error.value.data) == (-32602, {"details": details})
    assert_schema_exact(editor)


async def test_a_turn_ends_with_the_session_title_and_its_usage(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, REPLIES), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=session.session_id, prompt=text("list files"))
    updates = editor.updates()
    info = next(u for u in updates if u["sessionUpdate"] == "session_info_update")
    usage = next(u for u in updates if u["sessionUpdate"] == "usage_update")
    assert info["title"] == "list files" and info["updatedAt"]
    assert usage["size"] == 200000 and usage["used"] > 0
    assert usage["cost"] == {"amount": 0.0, "currency": "USD"}
    assert_schema_exact(editor)


def used_tokens(editor: Editor) -> list[int]:
    return [u["used"] for u in editor.updates() if u["sessionUpdate"] == "usage_update"]


COMPACTABLE = script(
    SUMMARY,
    reply("^one", [used(400), {"text": "r1"}]),
    reply("^two", [used(1500), {"text": "r2"}]),
    reply("^three", [used(300), {"text": "r3"}]),
)


async def test_after_slash_compact_the_usage_is_the_compacted_contexts_estimate(workspace: Path) -> None:
    """The session's stats know no size right after a compaction; ACP's `used` cannot be null, so
    it is the estimate of the compacted context, not the last reply's size from before it."""
    editor = Editor()
    config = session_config(workspace, COMPACTABLE, compaction=CompactionSettings(keep_recent_tokens=100))
    async with acp_agent(config, editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        for prompt in (f"one {FILLER}", f"two {FILLER}", "/compact"):
            await agent.prompt(session_id=session.session_id, prompt=text(prompt))
        compacted = agent.sessions[session.session_id]
        estimate = estimated_tokens(compacted.messages)
        await agent.prompt(session_id=session.session_id, prompt=text("three"))
    assert used_tokens(editor) == [401, 1501, estimate, 301]
    assert 0 < estimate < 1501
    assert_schema_exact(editor)


async def test_after_an_automatic_compaction_the_usage_is_the_compacted_contexts_estimate(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, COMPACTABLE, compaction=NEAR), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        for prompt in (f"one {FILLER}", f"two {FILLER}"):  # the second passes the threshold
            await agent.prompt(session_id=session.session_id, prompt=text(prompt))
        compacted = agent.sessions[session.session_id]
        context = compacted.compaction.context_usage()
        assert context is not None and context.tokens is None  # what the stats say right after it
        estimate = estimated_tokens(compacted.messages)
    assert used_tokens(editor) == [401, estimate] and estimate < 1501
    assert_schema_exact(editor)


async def test_slash_name_retitles_the_session_here_and_in_the_list(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, REPLIES), editor) as agent:
        session = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=session.session_id, prompt=text("list files"))
        answer = await agent.prompt(session_id=session.session_id, prompt=text("/name  Tidy the docs "))
        assert answer.stop_reason == "end_turn"
        listed = await agent.list_sessions(cwd=str(workspace))
    updates = editor.updates()
    said = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert said[-1] == "Session name: Tidy the docs"
    titles = [u["title"] for u in updates if u["sessionUpdate"] == "session_info_update"]
    assert titles == ["list files", "Tidy the docs"]
    assert [(s.session_id, s.title) for s in listed.sessions] == [(session.session_id, "Tidy the docs")]
    assert_schema_exact(editor)


async def test_close_forgets_a_session_and_resume_brings_it_back_without_a_replay(workspace: Path) -> None:
    editor = Editor()
    async with acp_agent(session_config(workspace, REPLIES), editor) as agent:
        init = await agent.initialize(protocol_version=acp.PROTOCOL_VERSION)
        capabilities = init.agent_capabilities
        assert capabilities is not None and capabilities.session_capabilities is not None
        assert capabilities.session_capabilities.resume is not None
        assert capabilities.session_capabilities.close is not None
        session = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=session.session_id, prompt=text("list files"))
        await agent.close_session(session_id=session.session_id)
        with pytest.raises(acp.RequestError) as error:
            await agent.prompt(session_id=session.session_id, prompt=text("list files"))
        assert error.value.code == -32002
        before = len(editor.updates())
        await agent.resume_session(session_id=session.session_id, cwd=str(workspace))
        assert not [u for u in editor.updates()[before:] if u["sessionUpdate"] == "user_message_chunk"]
        again = await agent.prompt(session_id=session.session_id, prompt=text("list files"))
        assert again.stop_reason == "end_turn"
    assert_schema_exact(editor)
