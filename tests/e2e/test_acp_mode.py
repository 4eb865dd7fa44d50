"""`--mode acp`: the daemon as an ACP agent, driven by the official SDK's client side (and by
raw JSON lines for what a well-behaved client never sends). The tool behaviour behind each update
is spec 1 (tools), 15.1 (agent events) and 16.5 (abort); ACP only renames it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import acp
import anyio
import pytest

from .acp_daemon import RawAgent, connect
from .conftest import descendants, still_running, watch

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_tour_streams_updates_in_order_and_ends_the_turn(workspace: Path, tmp_path: Path) -> None:
    """spec 15.2 events as ACP updates: thought, message, five tool calls (read, grep, edit,
    write, bash) each pending -> in_progress -> completed, the edit on disk, then end_turn."""
    greet_before = (workspace / "src" / "greet.py").read_text()
    async with connect(workspace, tmp_path) as (conn, editor, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        response = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("tour")])
        assert response.stop_reason == "end_turn"

        # The response is the last thing the turn sends: every update came before it.
        last = editor.received[-1]
        assert last.get("result") == {"stopReason": "end_turn"}
        updates = editor.updates()
        assert all(
            m["params"]["sessionId"] == session.session_id
            for m in editor.received
            if m.get("method") == "session/update"
        )
        kinds = [u["sessionUpdate"] for u in updates]
        assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk") < kinds.index("tool_call")
        thought = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_thought_chunk")
        assert thought == "Read and search first."
        said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
        assert said == "Reading the project.All done: fixed the greeting."

        calls = [u for u in updates if u["sessionUpdate"] == "tool_call"]
        assert [(c["kind"], c["status"]) for c in calls] == [
            ("read", "pending"),
            ("search", "pending"),
            ("edit", "pending"),
            ("edit", "pending"),
            ("execute", "pending"),
        ]
        assert calls[0]["title"] == "read README.md"
        assert calls[0]["locations"] == [{"path": str(workspace / "README.md")}]
        assert calls[1]["title"] == "grep Helo in src"
        assert calls[4]["title"] == "python3 src/greet.py Ada; seq 1 4000"
        for call in calls:
            statuses = [
                u.get("status")
                for u in updates
                if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call["toolCallId"]
            ]
            assert [s for s in statuses if s] == ["in_progress", "completed"]

        finals = {
            u["toolCallId"]: u
            for u in updates
            if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
        }
        edit = finals[calls[2]["toolCallId"]]
        assert edit["content"][0] == {  # the whole file, as a diff viewer needs it
            "type": "diff",
            "path": str(workspace / "src" / "greet.py"),
            "oldText": greet_before,
            "newText": greet_before.replace("Helo", "Hello"),
        }
        assert edit["content"][1]["content"]["text"] == "Successfully replaced 1 block(s) in src/greet.py."
        write = finals[calls[3]["toolCallId"]]
        assert write["content"][0] == {
            "type": "diff",
            "path": str(workspace / "notes" / "NOTES.md"),
            "newText": "fixed\n",
        }
        assert "greet.py:" in finals[calls[1]["toolCallId"]]["content"][0]["content"]["text"]
        bash_text = finals[calls[4]["toolCallId"]]["content"][0]["content"]["text"]
        # spec 1.6: the tail is kept and the truncation notice reaches the editor verbatim
        assert bash_text.startswith("2001\n")
        assert re.search(r"\n4000\n\n\[Showing lines 2002-4001 of 4001\. Full output: /\S+\.log\]$", bash_text)
        assert (workspace / "src" / "greet.py").read_text().count('f"Hello, {name}!"') == 1
        assert (workspace / "notes" / "NOTES.md").read_text() == "fixed\n"
    assert process.returncode == 0


async def test_cancel_during_bash_answers_cancelled_and_kills_the_tool(workspace: Path, tmp_path: Path) -> None:
    """spec 18.5 abort via ACP `session/cancel`: the prompt answers `cancelled`, the bash call
    ends `failed`, and `sleep 987.5` with its shell is gone."""
    async with connect(workspace, tmp_path) as (conn, editor, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        async with anyio.create_task_group() as tasks:
            outcome: list[str] = []

            async def prompt() -> None:
                response = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("slow")])
                outcome.append(response.stop_reason)

            tasks.start_soon(prompt)
            await editor.wait_for(
                lambda m: "started" in json.dumps(m.get("params", {}).get("update", {}).get("content", ""))
            )
            tool_processes = watch(descendants(process.pid))
            assert tool_processes
            await conn.cancel(session_id=session.session_id)
        assert outcome == ["cancelled"]
        assert still_running(tool_processes) == 0
        ends = [u for u in editor.updates() if u["sessionUpdate"] == "tool_call_update" and u.get("status")]
        assert [u["status"] for u in ends] == ["in_progress", "failed"]
    assert process.returncode == 0


def test_bad_input_gets_a_precise_error_and_the_next_request_is_served(workspace: Path, tmp_path: Path) -> None:
    """JSON-RPC 2.0 error objects (-32700, -32600, -32601, -32602); end of stdin exits 0."""
    agent = RawAgent(workspace, tmp_path)
    try:
        parse = agent.send(b"{not json")
        assert parse["id"] is None and parse["error"]["code"] == -32700
        assert parse["error"]["message"] == "Parse error"
        assert agent.send(b"[1, 2]")["error"] == {
            "code": -32600,
            "message": "Invalid request",
            "data": {"details": "expected a JSON-RPC request object"},
        }
        unknown = agent.send(b'{"jsonrpc": "2.0", "id": 7, "method": "session/teleport", "params": {}}')
        assert unknown == {
            "jsonrpc": "2.0",
            "id": 7,
            "error": {"code": -32601, "message": "Method not found", "data": {"method": "session/teleport"}},
        }
        missing = agent.send(b'{"jsonrpc": "2.0", "id": 8, "method": "session/new", "params": {}}')
        assert missing["id"] == 8 and missing["error"]["code"] == -32602
        relative = agent.send(
            b'{"jsonrpc": "2.0", "id": 9, "method": "session/new", "params": {"cwd": "ws", "mcpServers": []}}'
        )
        assert relative["error"]["data"] == {"details": "cwd must be an absolute path to a directory: ws"}
        init = agent.send(b'{"jsonrpc": "2.0", "id": 10, "method": "initialize", "params": {"protocolVersion": 1}}')
        assert init["id"] == 10 and init["result"]["agentCapabilities"]["loadSession"] is True
    finally:
        code = agent.close()
    assert code == 0


def test_end_of_stdin_during_a_run_exits_0_and_kills_the_tool(workspace: Path, tmp_path: Path) -> None:
    """End of input is a clean shutdown (spec 18.4): the run is aborted, its prompt answered
    `cancelled`, the bash call's processes are gone, and the exit status is 0."""
    agent = RawAgent(workspace, tmp_path)
    session = agent.send(
        b'{"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": '
        b'{"cwd": "%s", "mcpServers": []}}' % str(workspace).encode()
    )["result"]["sessionId"]
    prompt = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "session/prompt",
        "params": {"sessionId": session, "prompt": [{"type": "text", "text": "slow"}]},
    }
    message = agent.send(json.dumps(prompt).encode())
    while "started" not in json.dumps(message.get("params", {}).get("update", {}).get("content", "")):
        if message.get("method") == "session/request_permission":  # every ACP client answers it
            assert agent.proc.stdin is not None
            agent.proc.stdin.write(
                json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": "allow"}},
                    }
                ).encode()
                + b"\n"
            )
            agent.proc.stdin.flush()
        message = agent.read()
    tool_processes = watch(descendants(agent.proc.pid))
    assert tool_processes
    assert agent.proc.stdin is not None
    agent.proc.stdin.close()
    while "id" not in message:
        message = agent.read()
    assert message == {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}
    assert agent.proc.wait(30) == 0
    assert still_running(tool_processes) == 0
    assert agent.proc.stdout is not None
    agent.proc.stdout.close()
