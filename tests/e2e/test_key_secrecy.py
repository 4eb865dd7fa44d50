"""No provider key where a tool, a client or the disk can see it (docs/SECURITY.md, "Secrets").

The daemon runs as a subprocess with `OPENAI_API_KEY`/`ANTHROPIC_API_KEY` set to markers and
`--api-key` (or `--api-key-file`) naming the key it really uses, against the loopback model server
of the provider tests. The model has a bash tool print every process's environment and command
line (`/proc/<pid>/environ`, `/proc/<pid>/cmdline`, `ps`): the daemon's, the tool supervisor's,
the keeper's and the rest of the user's. Neither marker may appear there, nor in anything the
client received, in the session files, in the daemon's log, or in what went back to the model;
the key must still reach the server as the `Authorization` header.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.providers.sse_server import json_reply

from .conftest import daemon_env
from .loopback_model import Loopback, completions_turn

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc"),
]

ENV_MARKER = "envmarker-7f3a9c1e"
FLAG_MARKER = "flagmarker-52be0d44"
# Every process the user can read: its environment and argv, then what ps lists.
PROC_SCAN = (
    "cat /proc/$PPID/environ /proc/$PPID/cmdline; ps -eo pid,args; "
    "for p in /proc/[0-9]*; do cat $p/environ; echo; cat $p/cmdline; echo; done 2>/dev/null; "
    "echo scan-done"
)


def _start(workspace: Path, home: Path, loopback: Loopback, *key_args: str, framing: str = "lsp") -> DaemonClient:
    env = daemon_env(home)
    env["OPENAI_API_KEY"] = ENV_MARKER
    env["ANTHROPIC_API_KEY"] = ENV_MARKER
    argv = ["--cwd", str(workspace), "--api", "openai-completions", "--base-url", loopback.server.url + "/v1"]
    return DaemonClient([*argv, "--model", "test-model", "--log-level", "DEBUG", *key_args], env=env, framing=framing)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


@pytest.fixture
def clients() -> Iterator[list[DaemonClient]]:
    started: list[DaemonClient] = []
    yield started
    for client in started:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        client.terminate()


def _run_scan(client: DaemonClient, loopback: Loopback) -> str:
    """One prompt whose bash call scans /proc; the scan's output as the client received it."""
    loopback.script(
        completions_turn(calls=[("call_scan", "bash", {"command": PROC_SCAN})]),
        completions_turn("Scanned."),
    )
    client.request("initialize", {"clientInfo": {"name": "pytest"}})
    result = client.request("prompt", {"message": "scan"})
    assert result["stopReason"] == "stop"
    ends = [e for e in client.events() if e["type"] == "tool_execution_end"]
    assert [e["isError"] for e in ends] == [False]
    return str(ends[0]["result"]["content"][0]["text"])


def _files_under(root: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in root.rglob("*") if p.is_file())


def test_no_key_in_any_process_a_tool_reads(
    workspace: Path, home: Path, loopback: Loopback, clients: list[DaemonClient]
) -> None:
    client = _start(workspace, home, loopback, "--api-key", FLAG_MARKER)
    clients.append(client)
    scanned = _run_scan(client, loopback)
    # The scan did read the daemon's and the supervisor's entries.
    assert "scan-done" in scanned and "pi_rpc" in scanned and "supervisor" in scanned
    assert ENV_MARKER not in scanned and FLAG_MARKER not in scanned

    # The daemon still uses the key it was given.
    requests = loopback.requests()
    assert [r.headers.get("authorization") for r in requests] == [f"Bearer {FLAG_MARKER}"] * 2
    # What went back to the model, to the client, to the disk and to the log holds no key.
    assert FLAG_MARKER not in requests[1].body.decode() and ENV_MARKER not in requests[1].body.decode()
    # A provider that echoes the key it was sent (a proxy quoting the header) reaches the client
    # as an error without it.
    loopback.script(json_reply(401, {"error": {"message": f"bad key Bearer {FLAG_MARKER} for {FLAG_MARKER}"}}))
    failed = client.request("prompt", {"message": "again"})
    assert failed["stopReason"] == "error" and "[redacted]" in failed["errorMessage"]
    # Everything a client can ask about the session and its model.
    for method in ("state", "models/list", "messages", "session/entries", "session/stats", "session/list"):
        client.request(method)
    received = json.dumps(client.messages)
    assert ENV_MARKER not in received and FLAG_MARKER not in received
    client.request("shutdown")
    client.terminate()
    on_disk = _files_under(home) + _files_under(workspace)
    assert "scan-done" in on_disk  # the session file was written, with the tool's output
    assert ENV_MARKER not in on_disk and FLAG_MARKER not in on_disk
    log = "\n".join(client.stderr_lines)
    assert ENV_MARKER not in log and FLAG_MARKER not in log


def test_api_key_file_is_used_and_shown_nowhere(
    workspace: Path, home: Path, tmp_path: Path, loopback: Loopback, clients: list[DaemonClient]
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text(FLAG_MARKER + "\n")
    client = _start(workspace, home, loopback, "--api-key-file", str(key_file))
    clients.append(client)
    scanned = _run_scan(client, loopback)
    assert "scan-done" in scanned
    assert ENV_MARKER not in scanned and FLAG_MARKER not in scanned
    assert [r.headers.get("authorization") for r in loopback.requests()] == [f"Bearer {FLAG_MARKER}"] * 2


def test_pi_mode_shows_no_key(workspace: Path, home: Path, loopback: Loopback, clients: list[DaemonClient]) -> None:
    """Pi's own RPC mode: a command the user runs (`bash`) sees no key in /proc either, and the
    state and model lists hold none."""
    client = _start(workspace, home, loopback, "--mode", "pi", "--api-key", FLAG_MARKER, framing="jsonl")
    clients.append(client)
    assert "scan-done" in _pi_call(client, {"type": "bash", "command": PROC_SCAN})["data"]["output"]
    for command in ("get_state", "get_available_models", "get_messages", "get_session_stats"):
        _pi_call(client, {"type": command})
    received = json.dumps(client.messages)
    assert '"model"' in received
    assert ENV_MARKER not in received and FLAG_MARKER not in received
    client.terminate()
    assert ENV_MARKER not in client_log(client) and FLAG_MARKER not in client_log(client)


def _pi_call(client: DaemonClient, command: dict[str, Any]) -> dict[str, Any]:
    """One Pi-mode command and its response (its id is its type)."""
    client.send({"id": command["type"], **command})
    response: dict[str, Any] = client.wait_for_message(
        lambda m: m.get("id") == command["type"] and m.get("type") == "response"
    )
    return response


def client_log(client: DaemonClient) -> str:
    return "\n".join(client.stderr_lines)
