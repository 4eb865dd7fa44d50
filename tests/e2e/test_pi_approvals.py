"""Approvals in `--mode pi`: Pi's extension UI `confirm` dialog, over real pipes, opted into with
`--approval-policy` (without it the daemon runs every tool at once, as Pi does)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .test_pi_mode import PiClient

pytestmark = pytest.mark.e2e

Json = dict[str, Any]
ORIGINAL = 'return f"Helo, {name}!"'
FIXED = 'return f"Hello, {name}!"'


@pytest.fixture
def start(workspace: Path, tmp_path: Path) -> Iterator[Callable[..., PiClient]]:
    clients: list[PiClient] = []

    def spawn(*args: str) -> PiClient:
        client = PiClient(workspace, tmp_path, *args, script="approvals.json")
        clients.append(client)
        return client

    yield spawn
    for client in clients:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        for pipe in (client.proc.stdin, client.proc.stdout):
            if pipe is not None and not pipe.closed:
                pipe.close()


def greet(workspace: Path) -> str:
    return (workspace / "src" / "greet.py").read_text()


def dialog(pi: PiClient, start: int = 0) -> Json:
    return pi.wait_for(lambda line: line.get("type") == "extension_ui_request", start)


def run_end(pi: PiClient, start: int = 0) -> Json:
    return pi.wait_for(lambda line: line.get("type") == "agent_end", start)


def tool_ends(pi: PiClient) -> list[Json]:
    return [line for line in pi.lines if line.get("type") == "tool_execution_end"]


def test_confirm_shows_the_patch_and_yes_runs_the_edit(start: Callable[..., PiClient], workspace: Path) -> None:
    pi = start("--approval-policy", "ask")
    assert pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})["success"] is True
    request = dialog(pi)
    assert set(request) == {"type", "id", "method", "title", "message"}
    assert (request["method"], request["title"]) == ("confirm", "Allow this edit call?")
    assert request["message"].startswith("Edit src/greet.py\n\n")
    assert f"-    {ORIGINAL}" in request["message"] and f"+    {FIXED}" in request["message"]
    assert ORIGINAL in greet(workspace)  # nothing is written while the user looks at it

    pi.send({"type": "extension_ui_response", "id": request["id"], "confirmed": True})
    run_end(pi)
    assert FIXED in greet(workspace)
    assert [end["isError"] for end in tool_ends(pi)] == [False]
    # The answer is not a command: no response line for it.
    assert not [line for line in pi.lines if line.get("command") == "extension_ui_response"]
    assert pi.close() == 0


def test_no_and_cancelled_leave_the_file_and_the_model_reads_why(
    start: Callable[..., PiClient], workspace: Path
) -> None:
    pi = start("--approval-policy", "ask")
    pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
    pi.send({"type": "extension_ui_response", "id": dialog(pi)["id"], "confirmed": False})
    run_end(pi)
    seen = len(pi.lines)
    pi.call({"id": "2", "type": "prompt", "message": "run tests"})
    pi.send({"type": "extension_ui_response", "id": dialog(pi, seen)["id"], "cancelled": True})
    run_end(pi, seen)
    ends = tool_ends(pi)
    assert [end["isError"] for end in ends] == [True, True]
    assert [end["result"]["content"][0]["text"] for end in ends] == [
        "The user rejected this edit call",
        "The user rejected this bash call: the confirmation was cancelled",
    ]
    assert ORIGINAL in greet(workspace)
    assert pi.close() == 0


def test_read_only_blocks_changes_without_asking(start: Callable[..., PiClient], workspace: Path) -> None:
    pi = start("--approval-policy", "readOnly")
    for number, text in enumerate(("fix greeting", "run tests")):
        seen = len(pi.lines)
        pi.call({"id": str(number), "type": "prompt", "message": text})
        run_end(pi, seen)
    ends = tool_ends(pi)
    assert [end["isError"] for end in ends] == [True, True]
    assert all("read-only" in end["result"]["content"][0]["text"] for end in ends)
    assert not [line for line in pi.lines if line.get("type") == "extension_ui_request"]
    assert ORIGINAL in greet(workspace)
    assert pi.close() == 0


def test_accept_edits_runs_the_edit_and_asks_for_the_command(start: Callable[..., PiClient], workspace: Path) -> None:
    pi = start("--approval-policy", "acceptEdits")
    pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
    run_end(pi)
    assert FIXED in greet(workspace)
    assert not [line for line in pi.lines if line.get("type") == "extension_ui_request"]
    seen = len(pi.lines)
    pi.call({"id": "2", "type": "prompt", "message": "run tests"})
    request = dialog(pi, seen)
    assert request["message"] == "Run echo tests passed\n\necho tests passed"
    pi.send({"type": "extension_ui_response", "id": request["id"], "confirmed": True})
    run_end(pi, seen)
    assert tool_ends(pi)[-1]["result"]["content"][0]["text"] == "tests passed\n"
    assert pi.close() == 0


def test_abort_while_asking_ends_the_run_once_and_a_late_yes_changes_nothing(
    start: Callable[..., PiClient], workspace: Path
) -> None:
    pi = start("--approval-policy", "ask")
    pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
    request = dialog(pi)
    assert pi.call({"id": "2", "type": "abort"})["success"] is True  # answered once idle
    pi.send({"type": "extension_ui_response", "id": request["id"], "confirmed": True})
    assert pi.call({"id": "3", "type": "get_state"})["data"]["isStreaming"] is False
    assert sum(line.get("type") == "agent_end" for line in pi.lines) == 1
    assert [end["result"]["content"][0]["text"] for end in tool_ends(pi)] == ["Operation aborted"]
    assert ORIGINAL in greet(workspace)
    assert pi.close() == 0
    assert sum(line.get("type") == "agent_end" for line in pi.lines) == 1


def test_without_the_flag_a_pi_client_sees_no_change(start: Callable[..., PiClient], workspace: Path) -> None:
    pi = start()
    pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
    run_end(pi)
    assert FIXED in greet(workspace)
    assert not [
        line
        for line in pi.lines
        if line.get("type") == "extension_ui_request" or str(line.get("type")).startswith("tool_approval")
    ]
    assert pi.close() == 0
