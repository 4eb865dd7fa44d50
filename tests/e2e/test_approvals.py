"""Approvals and editor-owned files over real pipes: the daemon asks, the client answers."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient

pytestmark = pytest.mark.e2e

Json = dict[str, Any]
ORIGINAL = 'return f"Helo, {name}!"'
FIXED = 'return f"Hello, {name}!"'


def start(spawn: Callable[..., DaemonClient], **capabilities: bool) -> DaemonClient:
    client = spawn(script="approvals.json")
    client.request("initialize", {"clientInfo": {"name": "test"}, "capabilities": capabilities})
    return client


def next_server_request(client: DaemonClient, method: str, start: int = 0) -> Json:
    return client.wait_for_message(lambda m: m.get("method") == method and "id" in m, start=start)


def answer(client: DaemonClient, request: Json, result: Any) -> None:
    client.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def tool_end(client: DaemonClient) -> Json:
    return client.wait_for_type("tool_execution_end")


def greet(workspace: Path) -> str:
    return (workspace / "src" / "greet.py").read_text()


def test_edit_waits_for_approval_with_its_diff_then_runs(spawn: Callable[..., DaemonClient], workspace: Path) -> None:
    client = start(spawn, approvals=True)
    assert client.request("state")["approvalPolicy"] == "ask"
    prompt = client.request_nowait("prompt", {"message": "fix greeting"})
    request = next_server_request(client, "approval/request")
    params = request["params"]
    assert params["toolName"] == "edit" and params["title"] == "Edit src/greet.py"
    preview = params["preview"]
    assert preview["path"] == str(workspace / "src" / "greet.py")
    assert f"-    {ORIGINAL}" in preview["patch"] and f"+    {FIXED}" in preview["patch"]
    assert ORIGINAL in preview["oldText"] and FIXED in preview["newText"]
    # Nothing is written while the user looks at the diff, and the wait is visible.
    assert ORIGINAL in greet(workspace)
    assert client.request("state")["pendingApprovals"] == [params["toolCallId"]]
    waiting = client.wait_for_type("tool_approval_request")
    assert waiting["request"]["toolCallId"] == params["toolCallId"]

    answer(client, request, {"outcome": "allow"})
    assert client.result(prompt)["stopReason"] == "stop"
    assert FIXED in greet(workspace)
    assert client.wait_for_type("tool_approval_end")["outcome"] == "allow"
    assert client.request("state")["pendingApprovals"] == []


def test_reject_leaves_the_file_and_the_model_reads_the_reason(
    spawn: Callable[..., DaemonClient], workspace: Path
) -> None:
    client = start(spawn, approvals=True)
    prompt = client.request_nowait("prompt", {"message": "fix greeting"})
    answer(
        client,
        next_server_request(client, "approval/request"),
        {"outcome": "reject", "reason": "keep the typo, it is a test fixture"},
    )
    client.result(prompt)
    end = tool_end(client)
    assert end["isError"] is True
    assert end["result"]["content"][0]["text"] == (
        "The user rejected this edit call: keep the typo, it is a test fixture"
    )
    assert ORIGINAL in greet(workspace)


def test_allow_always_stops_asking_for_that_command_prefix(spawn: Callable[..., DaemonClient]) -> None:
    client = start(spawn, approvals=True)
    prompt = client.request_nowait("prompt", {"message": "run tests"})
    request = next_server_request(client, "approval/request")
    assert request["params"]["suggestedRule"] == "bash(echo tests:*)"
    assert request["params"]["preview"]["command"] == "echo tests passed"
    answer(client, request, {"outcome": "allowAlways"})
    client.result(prompt)
    seen = len(client.messages)
    assert client.request("prompt", {"message": "run tests"})["stopReason"] == "stop"
    assert not [m for m in client.messages[seen:] if m.get("method") == "approval/request"]
    outputs = [e for e in client.events() if e.get("type") == "tool_execution_end"]
    assert [e["result"]["content"][0]["text"] for e in outputs] == ["tests passed\n"] * 2


def test_read_only_refuses_changes_without_asking(spawn: Callable[..., DaemonClient], workspace: Path) -> None:
    client = start(spawn, approvals=True)
    assert client.request("approval/setPolicy", {"policy": "readOnly"}) == {"policy": "readOnly"}
    seen = len(client.messages)
    client.request("prompt", {"message": "fix greeting"})
    end = tool_end(client)
    assert end["isError"] is True and "read-only" in end["result"]["content"][0]["text"]
    assert ORIGINAL in greet(workspace)
    assert not [m for m in client.messages[seen:] if m.get("method") == "approval/request"]


def test_abort_while_waiting_cancels_the_request_and_ends_the_run_once(
    spawn: Callable[..., DaemonClient], workspace: Path
) -> None:
    client = start(spawn, approvals=True)
    prompt = client.request_nowait("prompt", {"message": "fix greeting"})
    request = next_server_request(client, "approval/request")
    client.request("abort")
    cancel = client.wait_for_message(lambda m: m.get("method") == "$/cancelRequest")
    assert cancel["params"] == {"id": request["id"]}
    assert client.result(prompt)["stopReason"] == "aborted"
    assert client.wait_for_type("tool_approval_end")["outcome"] == "cancelled"
    assert tool_end(client)["result"]["content"][0]["text"] == "Operation aborted"
    assert sum(e.get("type") == "agent_end" for e in client.events()) == 1
    # A late answer to the cancelled request changes nothing.
    answer(client, request, {"outcome": "allow"})
    assert client.request("state")["pendingApprovals"] == []
    assert ORIGINAL in greet(workspace)


def test_accept_edits_runs_edits_and_asks_for_bash(spawn: Callable[..., DaemonClient], workspace: Path) -> None:
    client = spawn(script="approvals.json")
    client.request("initialize", {"capabilities": {"approvals": True}, "approvalPolicy": "acceptEdits"})
    seen = len(client.messages)
    client.request("prompt", {"message": "fix greeting"})
    assert FIXED in greet(workspace)
    assert not [m for m in client.messages[seen:] if m.get("method") == "approval/request"]
    prompt = client.request_nowait("prompt", {"message": "run tests"})
    answer(client, next_server_request(client, "approval/request", start=seen), {"outcome": "allow"})
    assert client.result(prompt)["stopReason"] == "stop"


def test_reads_outside_the_workspace_ask(spawn: Callable[..., DaemonClient]) -> None:
    client = start(spawn, approvals=True)
    prompt = client.request_nowait("prompt", {"message": "read outside"})
    request = next_server_request(client, "approval/request")
    assert request["params"]["toolName"] == "read"
    assert request["params"]["preview"]["path"] == "/etc/hostname"
    answer(client, request, {"outcome": "reject"})
    client.result(prompt)
    assert tool_end(client)["result"]["content"][0]["text"] == "The user rejected this read call"


def test_a_client_without_the_capability_sees_no_change(spawn: Callable[..., DaemonClient], workspace: Path) -> None:
    client = spawn(script="approvals.json")
    assert client.request("initialize", {"clientInfo": {"name": "old"}})["approvalPolicy"] == "auto"
    client.request("prompt", {"message": "fix greeting"})
    assert FIXED in greet(workspace)
    assert not client.server_requests
    assert not [e for e in client.events() if e["type"].startswith("tool_approval")]


def test_reads_and_edits_go_through_the_editors_buffer(spawn: Callable[..., DaemonClient], workspace: Path) -> None:
    client = start(spawn, files=True)
    path = str(workspace / "src" / "greet.py")
    unsaved = greet(workspace).replace("import sys", "import sys  # unsaved in the editor")

    prompt = client.request_nowait("prompt", {"message": "read greet"})
    request = next_server_request(client, "fs/readTextFile")
    assert request["params"] == {"path": path}
    answer(client, request, {"content": unsaved})
    client.result(prompt)
    assert "unsaved in the editor" in tool_end(client)["result"]["content"][0]["text"]

    seen = len(client.messages)
    prompt = client.request_nowait("prompt", {"message": "fix greeting"})
    answer(client, next_server_request(client, "fs/readTextFile", start=seen), {"content": unsaved})
    write = next_server_request(client, "fs/writeTextFile", start=seen)
    assert write["params"]["path"] == path
    assert write["params"]["content"] == unsaved.replace("Helo", "Hello")
    answer(client, write, None)
    assert client.result(prompt)["stopReason"] == "stop"
    # The editor applied it to its buffer; the disk is the editor's business.
    assert ORIGINAL in greet(workspace) and "unsaved" not in greet(workspace)


def test_a_client_error_on_a_file_request_fails_the_call_clearly(spawn: Callable[..., DaemonClient]) -> None:
    client = start(spawn, files=True)
    prompt = client.request_nowait("prompt", {"message": "read greet"})
    request = next_server_request(client, "fs/readTextFile")
    client.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": "buffer is locked"}})
    client.result(prompt)
    end = tool_end(client)
    assert end["isError"] is True
    assert end["result"]["content"][0]["text"] == "The client failed fs/readTextFile: buffer is locked"
