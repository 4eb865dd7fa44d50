"""Pi mode's commands in-process: PiDaemon.run in the test's event loop over pipes, with a real
session, the scripted model and real tools (spec 18.3-18.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.agent.agent import BUSY_TEXT
from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.session.configuration.config import ApprovalConfig

from ..session.helpers import FOREVER, reply, script, session_config, tool_call
from .pi_harness import pi_mode

pytestmark = pytest.mark.anyio

WRITE = reply(
    "^write", [tool_call("write", path="notes.txt", content="hello\n")], [{"text": "All done: wrote the notes."}]
)
STREAM = reply("^stream", FOREVER)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_a_prompt_is_answered_at_once_and_the_run_streams_as_events(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        response = await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        assert response == {
            "type": "response",
            "command": "prompt",
            "success": True,
            "id": "1",
            "data": {"disposition": "started"},
        }
        end = await pi.event("agent_end")
        assert "id" not in end
        types = pi.types()
        assert types.index("response") < types.index("agent_end")
        assert {"tool_execution_start", "tool_execution_end", "message_update", "turn_end"} <= set(types)
        state = await pi.data({"id": "2", "type": "get_state"})
        assert state["isStreaming"] is False and state["isCompacting"] is False
        assert state["model"]["id"] == "scripted" and state["autoCompactionEnabled"] is True
        assert await pi.data({"id": "3", "type": "get_last_assistant_text"}) == {"text": "All done: wrote the notes."}
        stats = await pi.data({"id": "4", "type": "get_session_stats"})
        assert stats["toolCalls"] == 1 and stats["toolResults"] == 1 and stats["userMessages"] == 1
        messages = (await pi.data({"id": "5", "type": "get_messages"}))["messages"]
        assert [m["role"] for m in messages][-4:] == ["user", "assistant", "toolResult", "assistant"]
        assert state["messageCount"] == len(messages)
    assert (workspace / "notes.txt").read_text() == "hello\n"


async def test_errors_are_worded_as_pi_words_them(workspace: Path) -> None:
    """spec 18.4: parse errors and unknown types carry no id; handler failures carry the command's."""
    async with pi_mode(session_config(workspace, script())) as pi:
        pi.peer.send(b"{not json")
        parse = await pi.peer.wait_for(lambda line: line.get("command") == "parse")
        assert parse["success"] is False and parse["error"].startswith("Failed to parse command: ")
        assert "id" not in parse
        pi.peer.send({"id": "7", "type": "teleport"})
        unknown = await pi.peer.wait_for(lambda line: line.get("command") == "teleport")
        assert unknown == {
            "id": "7",
            "type": "response",
            "command": "teleport",
            "success": False,
            "error": "Unknown command: teleport",
        }  # with its id, unlike Pi (its client would wait)
        missing = await pi.call({"id": "8", "type": "set_model", "provider": "nope", "modelId": "x"})
        assert missing["success"] is False and missing["error"].startswith("Model not found: nope/x")
        invalid = await pi.call({"id": "9", "type": "prompt"})
        assert invalid["success"] is False and "message" in invalid["error"]


async def test_a_prompt_while_streaming_needs_a_streaming_behaviour(workspace: Path) -> None:
    """spec 15.13 (session level) and 16.5 abort."""
    async with pi_mode(session_config(workspace, script(STREAM))) as pi:
        assert (await pi.call({"id": "1", "type": "prompt", "message": "stream forever"}))["success"] is True
        await pi.event("message_update")
        busy = await pi.call({"id": "2", "type": "prompt", "message": "again"})
        assert busy["success"] is False and busy["error"] == BUSY_TEXT
        queued = await pi.call({"id": "3", "type": "prompt", "message": "later", "streamingBehavior": "followUp"})
        assert queued["success"] is True
        assert (await pi.call({"id": "4", "type": "steer", "message": "steer me"}))["success"] is True
        assert (await pi.call({"id": "5", "type": "follow_up", "message": "and then"}))["success"] is True
        assert await pi.data({"id": "6", "type": "clear_queue"}) == {
            "steering": ["steer me"],
            "followUp": ["later", "and then"],
        }
        assert (await pi.call({"id": "7", "type": "abort"}))["success"] is True  # answered once idle
        assert (await pi.data({"id": "8", "type": "get_state"}))["isStreaming"] is False
        assert pi.types().count("agent_end") == 1


async def test_settings_commands(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script())) as pi:
        models = (await pi.data({"id": "1", "type": "get_available_models"}))["models"]
        assert [(m["provider"], m["id"]) for m in models] == [("faux", "scripted")]
        assert (await pi.data({"id": "2", "type": "set_model", "provider": "faux", "modelId": "scripted"}))[
            "id"
        ] == "scripted"
        assert await pi.data({"id": "3", "type": "set_thinking_level", "level": "high"}) is None
        assert await pi.data({"id": "4", "type": "get_available_thinking_levels"}) == {"levels": ["off"]}
        await pi.data({"id": "5", "type": "set_steering_mode", "mode": "all"})
        await pi.data({"id": "6", "type": "set_follow_up_mode", "mode": "all"})
        state = await pi.data({"id": "7", "type": "get_state"})
        assert (state["thinkingLevel"], state["steeringMode"], state["followUpMode"]) == ("off", "all", "all")


async def test_new_session_starts_an_empty_transcript(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        await pi.event("agent_end")
        before = (await pi.data({"id": "2", "type": "get_state"}))["sessionId"]
        assert await pi.data({"id": "3", "type": "new_session"}) == {"cancelled": False}
        state = await pi.data({"id": "4", "type": "get_state"})
        assert state["sessionId"] != before and state["messageCount"] == 0
        assert await pi.data({"id": "5", "type": "get_last_assistant_text"}) == {"text": None}


async def test_without_a_model_a_prompt_is_an_error_response(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, None)) as pi:
        failed = await pi.call({"id": "1", "type": "prompt", "message": "hello"})
        assert failed["success"] is False and "model" in failed["error"]
        state = await pi.data({"id": "2", "type": "get_state"})
        assert "model" not in state and state["messageCount"] == 0


async def test_a_configured_policy_asks_through_a_confirm_dialog(workspace: Path) -> None:
    config = session_config(workspace, script(WRITE), approvals=ApprovalConfig(policy="ask", configured=True))
    async with pi_mode(config) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        dialog = await pi.event("extension_ui_request")
        assert dialog["method"] == "confirm" and dialog["title"] == "Allow this write call?"
        assert not (workspace / "notes.txt").exists()
        pi.peer.send({"type": "extension_ui_response", "id": dialog["id"], "confirmed": True})
        await pi.event("agent_end")
    assert (workspace / "notes.txt").read_text() == "hello\n"


async def test_a_compaction_before_a_prompt_comes_before_its_answer_and_pi_clients_see_the_summary(
    workspace: Path,
) -> None:
    """Pi answers `prompt` after the compaction it checks for first; the compacted transcript starts
    with Pi's `compactionSummary` message, which no user-message count includes (spec 16.1, 16.3)."""
    near = CompactionSettings(reserve_tokens=FAUX_MODEL.context_window - 1000, keep_recent_tokens=100)
    replies = [
        reply("^<conversation>", [{"text": "THE SUMMARY"}]),
        reply("^one", [{"text": "r1"}]),
        reply("^two", [{"usage": {"input": 1500, "output": 1}}, {"text": "r2"}]),
        reply("^three", [{"text": "r3"}]),
    ]
    async with pi_mode(session_config(workspace, script(*replies), compaction=near)) as pi:
        await pi.data({"id": "0", "type": "set_auto_compaction", "enabled": False})
        for number, word in enumerate(("one", "two"), start=1):
            before = len(pi.peer.lines)
            await pi.call({"id": str(number), "type": "prompt", "message": f"{word} {'f' * 400}"})
            await pi.peer.wait_for(lambda line: line.get("type") == "agent_settled", before)
        await pi.data({"id": "3", "type": "set_auto_compaction", "enabled": True})
        start = len(pi.peer.lines)
        await pi.call({"id": "4", "type": "prompt", "message": "three"})
        await pi.peer.wait_for(lambda line: line.get("type") == "agent_settled", start)
        order = [
            line["type"] if line["type"] != "response" else f"response {line['command']}"
            for line in pi.peer.lines[start:]
            if line["type"] in ("compaction_start", "compaction_end", "response", "agent_start")
        ]
        assert order == ["compaction_start", "compaction_end", "response prompt", "agent_start"]
        messages = (await pi.data({"id": "5", "type": "get_messages"}))["messages"]
        system, summary = messages[:2]  # the compaction's system message first, as in Pi 1.6.0
        assert system["role"] == "system" and [tool["name"] for tool in system["toolsAdded"]][:1] == ["read"]
        assert summary["role"] == "compactionSummary" and summary["summary"] == "THE SUMMARY"
        assert summary["tokensBefore"] > 1500
        stats = await pi.data({"id": "6", "type": "get_session_stats"})
        users = sum(m["role"] == "user" for m in messages)
        assert stats["userMessages"] == users and stats["totalMessages"] == len(messages)
        state = await pi.data({"id": "7", "type": "get_state"})
        assert state["messageCount"] == len(messages)
