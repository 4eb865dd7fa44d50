"""`--mode acp` beyond the core: model and thinking as config options, slash
commands, session title and usage updates, session/resume and session/close. Every update the
agent sends is checked closed-world against the SDK's schema models (no unknown field)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import acp
import pytest
from acp.schema import ClientCapabilities, SessionNotification

from tests.acp_clients.schema_check import SCHEMA, AgentMessages

from .acp_daemon import Editor, RawAgent, connect, daemon_argv, spawn_acp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

Json = dict[str, Any]


def assert_schema_exact(editor: Editor) -> None:
    """Each session/update parses as ACP's SessionNotification and dumps back to the same JSON;
    with the npm SDK installed (test_acp_npm_clients.py), every message the agent sent is also
    valid, closed-world, under the JSON Schema it ships."""
    for message in editor.received:
        if message.get("method") == "session/update":
            parsed = SessionNotification.model_validate(message["params"])
            assert parsed.model_dump(mode="json", by_alias=True, exclude_unset=True) == message["params"]
    if SCHEMA.is_file():
        checker = AgentMessages()
        methods = {m["id"]: m["method"] for m in editor.sent if "method" in m and "id" in m}
        assert [(m, p) for m in editor.received if (p := checker.problems(m, methods))] == []


async def test_slash_commands_are_listed_after_the_session_and_answered_without_the_model(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / ".pi" / "prompts").mkdir(parents=True)
    (workspace / ".pi" / "prompts" / "review.md").write_text(
        "---\ndescription: Review the staged changes\nargument-hint: focus\n---\nReview $@\n"
    )
    # Trusted: the project's own templates load only in a trusted workspace (docs/SECURITY.md).
    async with connect(workspace, tmp_path, flags=["--approve"]) as (conn, editor, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await editor.wait_for(
            lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "available_commands_update"
        )
        kinds = [
            m.get("params", {}).get("update", {}).get("sessionUpdate") if "method" in m else "response"
            for m in editor.received
        ]
        assert kinds.index("response", 1) < kinds.index("available_commands_update")  # after session/new's answer
        listed = next(u for u in editor.updates() if u["sessionUpdate"] == "available_commands_update")
        assert [c["name"] for c in listed["availableCommands"]] == [
            "compact",
            "model",
            "thinking",
            "tools",
            "stats",
            "name",
            "rewind",
            "review",
        ]
        review = listed["availableCommands"][-1]
        assert review["description"] == "Review the staged changes" and review["input"] == {"hint": "focus"}
        answer = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/tools")])
        assert answer.stop_reason == "end_turn"
        said = [u["content"]["text"] for u in editor.updates() if u["sessionUpdate"] == "agent_message_chunk"]
        assert said[0].startswith("Tools:\n- read\n- bash\n")
        stats = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/stats")])
        assert stats.stop_reason == "end_turn"
        compact = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("/compact")])
        assert compact.stop_reason == "end_turn"
        said = [u["content"]["text"] for u in editor.updates() if u["sessionUpdate"] == "agent_message_chunk"]
        assert said[-1] == "Not compacted: Nothing to compact (session too small)"  # Pi's words
        listed_sessions = await conn.list_sessions(cwd=str(workspace))
        # Slash commands answered without the model put nothing in the transcript, so the session
        # holds no prompt and a resume picker does not list it.
        assert listed_sessions.sessions == []
        assert_schema_exact(editor)


async def test_a_client_that_opts_in_sees_shell_calls_as_terminals(workspace: Path, tmp_path: Path) -> None:
    editor = Editor()
    argv = daemon_argv(workspace)
    async with spawn_acp(editor, argv, tmp_path) as (conn, process):
        await conn.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(field_meta={"terminal_output": True}),
        )
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("tour")])
        shell = next(u for u in editor.updates() if u["sessionUpdate"] == "tool_call" and u["kind"] == "execute")
        call_id = shell["toolCallId"]
        assert shell["content"] == [{"type": "terminal", "terminalId": call_id}]
        assert shell["_meta"] == {"terminal_info": {"terminal_id": call_id, "cwd": str(workspace)}}
        metas = [
            u["_meta"]
            for u in editor.updates()
            if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call_id and "_meta" in u
        ]
        streamed = "".join(m["terminal_output"]["data"] for m in metas if "terminal_output" in m)
        assert "\n4000\n" in streamed and streamed.count("\n4000\n") == 1
        assert metas[-1]["terminal_exit"] == {"terminal_id": call_id, "exit_code": 0, "signal": None}
        assert_schema_exact(editor)
    assert process.returncode == 0


def test_the_older_set_model_is_the_model_option(workspace: Path, tmp_path: Path) -> None:
    agent = RawAgent(workspace, tmp_path)
    try:
        new = agent.send(
            json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "session/new",
                    "params": {"cwd": str(workspace), "mcpServers": []},
                }
            ).encode()
        )
        session_id = new["result"]["sessionId"]

        def set_model(request_id: int, model_id: str) -> list[Json]:
            lines = [
                agent.send(
                    json.dumps(
                        {
                            "jsonrpc": "2.0",
                            "id": request_id,
                            "method": "session/set_model",
                            "params": {"sessionId": session_id, "modelId": model_id},
                        }
                    ).encode()
                )
            ]
            while lines[-1].get("id") != request_id:
                lines.append(agent.read())
            return lines

        *updates, answer = set_model(2, "faux/scripted")
        assert answer == {"jsonrpc": "2.0", "id": 2, "result": {}}
        assert updates[-1]["params"]["update"]["sessionUpdate"] == "config_option_update"
        *_, refused = set_model(3, "nope/none")
        assert refused["error"]["code"] == -32602
        assert refused["error"]["data"] == {"details": "Model not found: nope/none"}
    finally:
        assert agent.close() == 0
