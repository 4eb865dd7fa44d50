"""Approvals in Pi mode in-process: PiDaemon.run over pipes in the test's event loop, Pi's extension
UI `confirm` dialog, a policy only when one is configured (as `--approval-policy` does). These ran
as daemon subprocesses before (tests/e2e); nothing in them depends on a process of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_rpc.session.approvals.gate import ApprovalPolicy
from pi_rpc.session.configuration.config import ApprovalConfig
from pi_rpc.session.session import SessionConfig

from ..session.helpers import session_config
from .approvals_sample import FIXED, ORIGINAL, SCRIPT, greet, sample_workspace
from .pi_harness import Pi, pi_mode

pytestmark = pytest.mark.anyio

Json = dict[str, Any]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


def configured(workspace: Path, policy: ApprovalPolicy | None) -> SessionConfig:
    if policy is None:
        return session_config(workspace, SCRIPT)
    return session_config(workspace, SCRIPT, approvals=ApprovalConfig(policy=policy, configured=True))


async def dialog(pi: Pi, start: int = 0) -> Json:
    return await pi.peer.wait_for(lambda line: line.get("type") == "extension_ui_request", start)


async def run_end(pi: Pi, start: int = 0) -> Json:
    return await pi.peer.wait_for(lambda line: line.get("type") == "agent_end", start)


def tool_ends(pi: Pi) -> list[Json]:
    return [line for line in pi.peer.lines if line.get("type") == "tool_execution_end"]


def dialogs(pi: Pi) -> list[Json]:
    return [line for line in pi.peer.lines if line.get("type") == "extension_ui_request"]


async def test_confirm_shows_the_patch_and_yes_runs_the_edit(workspace: Path) -> None:
    async with pi_mode(configured(workspace, "ask")) as pi:
        assert (await pi.call({"id": "1", "type": "prompt", "message": "fix greeting"}))["success"] is True
        request = await dialog(pi)
        assert set(request) == {"type", "id", "method", "title", "message"}
        assert (request["method"], request["title"]) == ("confirm", "Allow this edit call?")
        assert request["message"].startswith("Edit src/greet.py\n\n")
        assert f"-    {ORIGINAL}" in request["message"] and f"+    {FIXED}" in request["message"]
        assert ORIGINAL in greet(workspace)  # nothing is written while the user looks at it
        pi.peer.send({"type": "extension_ui_response", "id": request["id"], "confirmed": True})
        await run_end(pi)
        assert FIXED in greet(workspace)
        assert [end["isError"] for end in tool_ends(pi)] == [False]
        # The answer is not a command: no response line for it.
        assert not [line for line in pi.peer.lines if line.get("command") == "extension_ui_response"]


async def test_no_and_cancelled_leave_the_file_and_the_model_reads_why(workspace: Path) -> None:
    async with pi_mode(configured(workspace, "ask")) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
        pi.peer.send({"type": "extension_ui_response", "id": (await dialog(pi))["id"], "confirmed": False})
        await run_end(pi)
        seen = len(pi.peer.lines)
        await pi.call({"id": "2", "type": "prompt", "message": "run tests"})
        pi.peer.send({"type": "extension_ui_response", "id": (await dialog(pi, seen))["id"], "cancelled": True})
        await run_end(pi, seen)
        ends = tool_ends(pi)
        assert [end["isError"] for end in ends] == [True, True]
        assert [end["result"]["content"][0]["text"] for end in ends] == [
            "The user rejected this edit call",
            "The user rejected this bash call: the confirmation was cancelled",
        ]
    assert ORIGINAL in greet(workspace)


async def test_read_only_blocks_changes_without_asking(workspace: Path) -> None:
    async with pi_mode(configured(workspace, "readOnly")) as pi:
        for number, text in enumerate(("fix greeting", "run tests")):
            seen = len(pi.peer.lines)
            await pi.call({"id": str(number), "type": "prompt", "message": text})
            await run_end(pi, seen)
        ends = tool_ends(pi)
        assert [end["isError"] for end in ends] == [True, True]
        assert all("read-only" in end["result"]["content"][0]["text"] for end in ends)
        assert dialogs(pi) == []
    assert ORIGINAL in greet(workspace)


async def test_accept_edits_runs_the_edit_and_asks_for_the_command(workspace: Path) -> None:
    async with pi_mode(configured(workspace, "acceptEdits")) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
        await run_end(pi)
        assert FIXED in greet(workspace) and dialogs(pi) == []
        seen = len(pi.peer.lines)
        await pi.call({"id": "2", "type": "prompt", "message": "run tests"})
        request = await dialog(pi, seen)
        assert request["message"] == "Run echo tests passed\n\necho tests passed"
        pi.peer.send({"type": "extension_ui_response", "id": request["id"], "confirmed": True})
        await run_end(pi, seen)
        assert tool_ends(pi)[-1]["result"]["content"][0]["text"] == "tests passed\n"


async def test_abort_while_asking_ends_the_run_once_and_a_late_yes_changes_nothing(workspace: Path) -> None:
    async with pi_mode(configured(workspace, "ask")) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
        request = await dialog(pi)
        assert (await pi.call({"id": "2", "type": "abort"}))["success"] is True  # answered once idle
        pi.peer.send({"type": "extension_ui_response", "id": request["id"], "confirmed": True})
        assert (await pi.data({"id": "3", "type": "get_state"}))["isStreaming"] is False
        assert pi.types().count("agent_end") == 1
        assert [end["result"]["content"][0]["text"] for end in tool_ends(pi)] == ["Operation aborted"]
        assert ORIGINAL in greet(workspace)
    assert pi.types().count("agent_end") == 1  # and none after the input ends


async def test_without_a_configured_policy_a_pi_client_sees_no_change(workspace: Path) -> None:
    async with pi_mode(configured(workspace, None)) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "fix greeting"})
        await run_end(pi)
        assert FIXED in greet(workspace)
        assert not [
            line
            for line in pi.peer.lines
            if line.get("type") == "extension_ui_request" or str(line.get("type")).startswith("tool_approval")
        ]
