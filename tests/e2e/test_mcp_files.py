"""Pi 1.6.0's MCP configuration through the daemon as a subprocess: `~/.pi/agent/mcp.json` with a
`deferred` server whose tool the scripted model finds with `tool_search` and calls on its next
turn; a project's `.pi/mcp.json` that is ignored (and said so once, and by `pi-rpc doctor`) until
the folder is trusted; `--no-mcp`; and `pi-rpc mcp add` / `pi-rpc mcp list` on those files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.mcp.servers import mcp_json_entry, server_pids

from .conftest import SCRIPTS, daemon_env
from .pi_mode_client import PiClient

pytestmark = [pytest.mark.e2e]

Json = dict[str, Any]


def write_mcp_json(path: Path, servers: Json) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}, indent=2))


def tool_names(client: DaemonClient) -> dict[str, bool]:
    return {tool["name"]: tool["active"] for tool in client.request("tools/list")["tools"]}


def test_a_deferred_servers_tool_is_found_by_tool_search_then_called(workspace: Path, tmp_path: Path) -> None:
    write_mcp_json(tmp_path / ".pi" / "agent" / "mcp.json", {"testkit": mcp_json_entry(exposure="deferred")})
    pi = PiClient(workspace, tmp_path, script="mcp.json")
    try:
        pi.send({"id": "p", "type": "prompt", "message": "find"})
        pi.wait_for(lambda line: line.get("type") == "agent_end")
        search, shout = [line for line in pi.lines if line.get("type") == "tool_execution_end"]
        assert search["toolName"] == "tool_search" and search["isError"] is False
        assert search["result"]["content"][0]["text"] == (
            "Loaded 1 tool. They are available from your next call:\n"
            "- mcp__testkit__shout: Echo the text back, upper-cased"
        )
        assert shout["toolName"] == "mcp__testkit__shout" and shout["isError"] is False
        assert shout["result"]["content"] == [{"type": "text", "text": "FOUND"}]
    finally:
        assert pi.close() == 0
    assert server_pids("testkit") == []


def test_an_untrusted_projects_mcp_json_is_ignored_and_said_once(workspace: Path, tmp_path: Path) -> None:
    write_mcp_json(workspace / ".pi" / "mcp.json", {"testkit": mcp_json_entry(exposure="direct")})
    argv = ["--cwd", str(workspace), "--script", str(SCRIPTS / "mcp.json")]
    client = DaemonClient(argv, env=daemon_env(tmp_path))
    try:
        assert "mcpServers" not in client.request("initialize")
        assert not any(name.startswith("mcp__") for name in tool_names(client))
    finally:
        assert client.close() == 0
    said = [line for line in client.stderr_lines if ".pi/mcp.json" in line]
    assert len(said) == 1 and "not trusted" in said[0] and "pi-rpc trust" in said[0]
    doctor = subprocess.run(
        [sys.executable, "-m", "pi_rpc", "doctor"],
        cwd=workspace,
        env=daemon_env(tmp_path),
        capture_output=True,
        text=True,
    )
    assert ".pi/mcp.json" in doctor.stdout and "not trusted" in doctor.stdout

    trusted = DaemonClient(["--approve", *argv], env=daemon_env(tmp_path))
    try:
        assert [s["name"] for s in trusted.request("initialize")["mcpServers"]] == ["testkit"]
        assert tool_names(trusted)["mcp__testkit__shout"] is True  # direct
    finally:
        assert trusted.close() == 0


def test_no_mcp_starts_none_of_the_files_servers(workspace: Path, tmp_path: Path) -> None:
    write_mcp_json(tmp_path / ".pi" / "agent" / "mcp.json", {"testkit": mcp_json_entry()})
    write_mcp_json(workspace / ".pi" / "mcp.json", {"local": mcp_json_entry("local")})
    argv = ["--cwd", str(workspace), "--approve", "--script", str(SCRIPTS / "mcp.json")]
    client = DaemonClient([*argv, "--no-mcp"], env=daemon_env(tmp_path))
    try:
        assert "mcpServers" not in client.request("initialize")
        assert not any(name.startswith("mcp__") or name == "tool_search" for name in tool_names(client))
    finally:
        assert client.close() == 0
    assert server_pids("testkit") == [] and server_pids("local") == []
    with_mcp = DaemonClient(argv, env=daemon_env(tmp_path))
    try:  # the same files without --no-mcp: Pi's default exposure, codemode, reaches them from scripts
        assert sorted(s["name"] for s in with_mcp.request("initialize")["mcpServers"]) == ["local", "testkit"]
        tools = tool_names(with_mcp)
        assert tools["mcp__testkit__shout"] is False and tools["codemode"] is True
    finally:
        assert with_mcp.close() == 0


def run_mcp(tmp_path: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_rpc", "mcp", *args],
        cwd=cwd,
        env=daemon_env(tmp_path),
        capture_output=True,
        text=True,
    )


def test_mcp_add_writes_pi_s_file_and_list_reports_source_trust_and_exposure(workspace: Path, tmp_path: Path) -> None:
    entry = mcp_json_entry()
    command = [str(entry["command"]), *entry["args"]]  # type: ignore[misc]
    added = run_mcp(tmp_path, workspace, "add", "testkit", "--exposure", "deferred", "--", *command)
    global_file = tmp_path / ".pi" / "agent" / "mcp.json"
    assert added.returncode == 0 and added.stdout.startswith(f'Added global MCP server "testkit" in {global_file}.')
    assert json.loads(global_file.read_text()) == {
        "mcpServers": {"testkit": {"command": command[0], "args": command[1:], "exposure": "deferred"}}
    }
    local = run_mcp(tmp_path, workspace, "add", "-l", "web", "--url", "http://127.0.0.1:9/mcp")
    assert local.returncode == 0 and "is ignored until you trust it" in local.stdout
    assert run_mcp(tmp_path, workspace, "add", "bad", "--url", "http://127.0.0.1:9/mcp", "--env", "A=1").returncode == 1

    listed = run_mcp(tmp_path, workspace, "list")
    lines = listed.stdout.splitlines()
    assert lines[:4] == [
        "testkit: connected, 3 tools (deferred, global)",
        f"  {' '.join(command)}",
        f"  from {global_file}",
        "  tools: shout, pixel, broken",
    ]
    assert lines[-1].startswith(f"{workspace / '.pi' / 'mcp.json'} is ignored because the folder is not trusted")
    assert listed.returncode == 0
    as_json = json.loads(run_mcp(tmp_path, workspace, "list", "--json").stdout)
    assert [(s["name"], s["exposure"], s["state"]) for s in as_json["servers"]] == [
        ("testkit", "deferred", "connected")
    ]

    subprocess.run([sys.executable, "-m", "pi_rpc", "trust", str(workspace)], env=daemon_env(tmp_path), check=True)
    trusted = run_mcp(tmp_path, workspace, "list")
    assert "web: failed" in trusted.stdout and f"  from {workspace / '.pi' / 'mcp.json'}, trusted" in trusted.stdout
    assert trusted.returncode == 1  # an enabled server did not connect
