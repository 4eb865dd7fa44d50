"""MCP tool servers in every mode (protocol/PROTOCOL.md, "MCP tool servers"): the test server of
tests/mcp, written with the official `mcp` SDK, over stdio and over streamable HTTP on 127.0.0.1;
the scripted model calls its tools; a killed server is a clear tool error, the session goes on, and
exit stops it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import acp
import msgspec
import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.mcp.servers import http_server, server_pids, stdio_config

from .acp_daemon import Editor, spawn_acp
from .conftest import SCRIPTS, daemon_env

pytestmark = [pytest.mark.e2e]

Json = dict[str, Any]


def acp_stdio_server(name: str = "testkit") -> Json:
    config = stdio_config(name)
    return {
        "name": name,
        "command": config.command,
        "args": config.args,
        "env": [{"name": k, "value": v} for k, v in config.env.items()],
    }


def tool_ends(updates: list[Json]) -> list[Json]:
    return [
        u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    ]


def texts(update: Json) -> list[str]:
    return [
        c["content"]["text"]
        for c in update.get("content", [])
        if c["type"] == "content" and c["content"]["type"] == "text"
    ]


@pytest.mark.anyio
async def test_acp_session_tools_from_stdio_and_http_servers_survive_a_killed_server(
    workspace: Path, tmp_path: Path
) -> None:
    editor = Editor()
    argv = ["-m", "pi_rpc", "--mode", "acp", "--cwd", str(workspace), "--script", str(SCRIPTS / "mcp.json")]
    with http_server() as (url, _):
        async with spawn_acp(editor, argv, tmp_path) as (conn, process):
            init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            assert init.agent_capabilities is not None and init.agent_capabilities.mcp_capabilities is not None
            assert init.agent_capabilities.mcp_capabilities.http is True
            servers: list[
                acp.schema.HttpMcpServer | acp.schema.SseMcpServer | acp.schema.AcpMcpServer | acp.schema.McpServerStdio
            ] = [
                acp.schema.McpServerStdio.model_validate(acp_stdio_server()),
                acp.schema.HttpMcpServer(type="http", name="web", url=url, headers=[]),
            ]
            session = await conn.new_session(cwd=str(workspace), mcp_servers=servers)
            assert session.field_meta is not None
            reported = {s["name"]: s["status"] for s in session.field_meta["piRpc"]["mcpServers"]}
            assert reported == {"testkit": "running", "web": "running"}
            sid = session.session_id

            for prompt, answer in (("shout", "HELLO"), ("web", "NET")):
                assert (await conn.prompt(session_id=sid, prompt=[acp.text_block(prompt)])).stop_reason == "end_turn"
                end = tool_ends(editor.updates())[-1]
                assert (end["status"], texts(end)) == ("completed", [answer])

            (pid,) = server_pids("testkit")
            os.kill(pid, signal.SIGKILL)
            killed = await conn.prompt(session_id=sid, prompt=[acp.text_block("shout")])
            assert killed.stop_reason == "end_turn"
            end = tool_ends(editor.updates())[-1]
            assert end["status"] == "failed"
            assert texts(end)[0].startswith('MCP server "testkit" stopped during the call to shout')
            # The other tools, and the server itself (started again), keep working.
            await conn.prompt(session_id=sid, prompt=[acp.text_block("read")])
            assert tool_ends(editor.updates())[-1]["status"] == "completed"
            await conn.prompt(session_id=sid, prompt=[acp.text_block("shout")])
            assert texts(tool_ends(editor.updates())[-1]) == ["HELLO"]
            assert server_pids("testkit")
        assert process.returncode == 0
    assert server_pids("testkit") == []  # killed on exit


def test_jsonrpc_initialize_starts_servers_and_tools_list_shows_their_source(workspace: Path, tmp_path: Path) -> None:
    config = msgspec.to_builtins(stdio_config())
    client = DaemonClient(["--cwd", str(workspace), "--script", str(SCRIPTS / "mcp.json")], env=daemon_env(tmp_path))
    try:
        init = client.request("initialize", {"mcpServers": [config]})
        assert init["mcpServers"] == [
            {
                "name": "testkit",
                "status": "running",
                "tools": ["mcp__testkit__shout", "mcp__testkit__pixel", "mcp__testkit__broken"],
            }
        ]
        tools = {t["name"]: t for t in client.request("tools/list")["tools"]}
        assert tools["mcp__testkit__shout"]["source"] == "mcp:testkit" and "source" not in tools["read"]
        assert tools["mcp__testkit__shout"]["parameters"]["required"] == ["text"]
        assert client.request("prompt", {"message": "pixel"})["stopReason"] == "stop"
        end = next(e for e in client.events() if e["type"] == "tool_execution_end")
        assert [block["type"] for block in end["result"]["content"]] == ["text", "image"]
        assert end["isError"] is False
    finally:
        assert client.close() == 0
    assert server_pids("testkit") == []


def test_pi_mode_starts_the_servers_of_settings_json(workspace: Path, tmp_path: Path) -> None:
    settings = tmp_path / ".config" / "pi-rpc" / "settings.json"
    settings.parent.mkdir(parents=True)
    config = stdio_config()
    settings.write_text(
        json.dumps({"mcpServers": {"testkit": {"command": config.command, "args": config.args, "env": config.env}}})
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pi_rpc",
            "--mode",
            "pi",
            "--cwd",
            str(workspace),
            "--script",
            str(SCRIPTS / "mcp.json"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=daemon_env(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = iter(proc.stdout.readline, b"")

    def until(predicate: Callable[[Json], bool]) -> Json:
        for line in lines:
            message: Json = json.loads(line)
            if predicate(message):
                return message
        raise AssertionError("the daemon exited")

    try:
        proc.stdin.write(b'{"id": "p", "type": "prompt", "message": "shout"}\n')
        proc.stdin.flush()
        end = until(lambda m: m.get("type") == "tool_execution_end")
        assert end["toolName"] == "mcp__testkit__shout" and end["isError"] is False
        assert end["result"]["content"] == [{"type": "text", "text": "HELLO"}]
        until(lambda m: m.get("type") == "agent_end")
    finally:
        proc.stdin.close()
        assert proc.wait(30) == 0
        proc.stdout.close()
    assert server_pids("testkit") == []
