"""`--mode acp` driven by ACP clients from npm (protocol/PROTOCOL.md, "Agent Client Protocol"): the
official TypeScript SDK's client (`@agentclientprotocol/sdk`) and a ready-made CLI client (`acpx`),
both pinned in tests/acp_clients/package.json and installed there (git-ignored) from its lock file.
Every message the agent sends is validated, closed-world, against the JSON Schema the npm SDK ships.
Installed once by tests/node_packages.py: skipped without Node outside CI, failed in CI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.acp_clients.schema_check import AgentMessages
from tests.mcp.servers import SERVER, server_marker, server_pids
from tests.node_packages import ACP_CLIENTS, ensure_installed

from .conftest import SCRIPTS, daemon_env

pytestmark = [pytest.mark.e2e]

Json = dict[str, Any]


@pytest.fixture(scope="module")
def npm_clients() -> Path:
    return ensure_installed(ACP_CLIENTS)


@pytest.fixture
def script(tmp_path: Path) -> Path:
    """The MCP replies first (they match "shout"), then the e2e script's (the "tour")."""
    replies = [
        *json.loads((SCRIPTS / "mcp.json").read_text())["replies"],
        *json.loads((SCRIPTS / "e2e.json").read_text())["replies"],
    ]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


def client_methods(sent: list[Json]) -> dict[Any, str]:
    return {m["id"]: m["method"] for m in sent if "method" in m and "id" in m}


def assert_valid(received: list[Json], sent: list[Json]) -> None:
    checker = AgentMessages()
    methods = client_methods(sent)
    problems = [(m, checker.problems(m, methods)) for m in received]
    assert [p for p in problems if p[1]] == []


def test_typescript_sdk_client(npm_clients: Path, workspace: Path, tmp_path: Path, script: Path) -> None:
    run = subprocess.run(
        [
            "node",
            str(npm_clients / "sdk_client.mjs"),
            sys.executable,
            str(workspace),
            str(script),
            str(SERVER),
            server_marker("testkit"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=daemon_env(tmp_path),
    )
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout)
    seen, updates = out["seen"], out["updates"]
    assert out["code"] == 0
    assert seen["session"]["_meta"]["piRpc"]["mcpServers"][0]["status"] == "running"
    assert [seen[k]["stopReason"] for k in ("tour", "shout", "command", "rewind")] == ["end_turn"] * 4
    picks = [
        u for u in updates if u["sessionUpdate"].startswith("tool_call") and u["toolCallId"].startswith("pi-rpc-rewind")
    ]
    updates = [u for u in updates if u not in picks]
    # `/rewind`'s two picks: each a row of its own, asked on and completed; then the report
    assert [(u["sessionUpdate"], u.get("title"), u.get("status")) for u in picks] == [
        ("tool_call", "Rewind to before which message?", "pending"),
        ("tool_call_update", None, "completed"),
        ("tool_call", "Rewind to before “shout”: restore what?", "pending"),
        ("tool_call_update", None, "completed"),
    ]
    said = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert said[-1].startswith("Rewound to before “shout” (files).")
    ends = [
        u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    ]
    assert [u["status"] for u in ends] == ["completed"] * 6  # the tour's five calls, then the MCP tool
    assert ends[-1]["content"] == [{"type": "content", "content": {"type": "text", "text": "HELLO"}}]
    assert (workspace / "notes" / "NOTES.md").is_file()  # the tour's write, approved by the client
    assert [s["sessionId"] for s in seen["list"]["sessions"]] == [seen["session"]["sessionId"]]
    assert_valid([json.loads(line) for line in out["lines"]], [json.loads(line) for line in out["sent"]])
    assert server_pids("testkit") == []


def test_acpx_cli_client(npm_clients: Path, workspace: Path, tmp_path: Path, script: Path) -> None:
    """`acpx exec` with the MCP server from its own --mcp-config; --format json prints the wire."""
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": [
                    {
                        "name": "testkit",
                        "command": sys.executable,
                        "args": [str(SERVER), "stdio"],
                        "env": [{"name": "PI_RPC_TEST_MCP", "value": server_marker("testkit")}],
                    }
                ]
            }
        )
    )
    agent = f"{sys.executable} -m pi_rpc --mode acp --cwd {workspace} --script {script}"
    env = {**daemon_env(tmp_path), "HOME": str(tmp_path)}
    run = subprocess.run(
        [
            "node",
            str(npm_clients / "node_modules" / "acpx" / "dist" / "cli.js"),
            "--agent",
            agent,
            "--cwd",
            str(workspace),
            "--approve-all",
            "--format",
            "json",
            "--mcp-config",
            str(config),
            "exec",
            "shout",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=workspace,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    sent, received = split_wire([json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")])
    updates = [m["params"]["update"] for m in received if m.get("method") == "session/update"]
    end = next(u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed")
    assert end["content"] == [{"type": "content", "content": {"type": "text", "text": "HELLO"}}]
    assert any(m.get("result", {}).get("stopReason") == "end_turn" for m in received)
    assert_valid(received, sent)
    assert server_pids("testkit") == []  # the daemon stopped the server it started


# What a client sends (requests and notifications); every other method is the agent's.
_CLIENT_METHODS = {
    "initialize",
    "authenticate",
    "session/new",
    "session/load",
    "session/list",
    "session/prompt",
    "session/cancel",
    "session/set_mode",
    "session/set_config_option",
    "session/resume",
    "session/close",
}


def split_wire(wire: list[Json]) -> tuple[list[Json], list[Json]]:
    """Both directions in wire order, as (client's messages, agent's): a response belongs to the
    side that did not send the pending request with its id."""
    sent: list[Json] = []
    received: list[Json] = []
    client_pending: set[Any] = set()
    agent_pending: set[Any] = set()
    for message in wire:
        if "method" in message:
            mine = message["method"] in _CLIENT_METHODS
            (sent if mine else received).append(message)
            if "id" in message:
                (client_pending if mine else agent_pending).add(message["id"])
        elif message.get("id") in client_pending:
            client_pending.discard(message["id"])
            received.append(message)
        else:
            agent_pending.discard(message.get("id"))
            sent.append(message)
    return sent, received
