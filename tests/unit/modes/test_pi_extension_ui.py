"""Pi mode's confirm dialogs: what the client is sent and how each of Pi's answers decides."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from pi_rpc.agent.types import ApprovalRequest, ToolPreview
from pi_rpc.modes.pi.extension_ui import PiDialogs
from pi_rpc.session.approvals.gate import ApprovalDecision

pytestmark = pytest.mark.anyio

PATCH = "--- a.py\n+++ a.py\n@@ -1 +1 @@\n-x\n+y"
EDIT = ApprovalRequest(
    tool_call_id="call_1",
    tool_name="edit",
    args={"path": "a.py"},
    cwd="/ws",
    title="Edit a.py",
    preview=ToolPreview(title="Edit a.py", path="/ws/a.py", old_text="x\n", new_text="y\n", patch=PATCH),
    suggested_rule="edit",
)


async def ask(
    answer: dict[str, Any] | None, gate_timeout: float | None = None
) -> tuple[dict[str, Any], ApprovalDecision]:
    sent: list[dict[str, Any]] = []
    dialogs = PiDialogs(lambda line: sent.append(json.loads(line)), lambda: gate_timeout)
    decisions: list[ApprovalDecision] = []

    async def approve() -> None:
        decisions.append(await dialogs.approve(EDIT))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(approve)
        await anyio.wait_all_tasks_blocked()
        assert not dialogs.resolve({"type": "extension_ui_response", "id": "someone else's", "confirmed": True})
        assert not dialogs.resolve({"type": "extension_ui_response"})  # malformed: no id
        assert dialogs.resolve({"type": "extension_ui_response", "id": sent[0]["id"], **(answer or {})})
    assert not dialogs.resolve({"type": "extension_ui_response", "id": sent[0]["id"], "confirmed": True})
    return sent[0], decisions[0]


async def test_the_dialog_is_a_confirm_with_the_patch_and_the_timeout_in_ms() -> None:
    request, decision = await ask({"confirmed": True}, gate_timeout=90)
    assert request == {
        "type": "extension_ui_request",
        "id": request["id"],
        "method": "confirm",
        "title": "Allow this edit call?",
        "message": "Edit a.py\n\n" + PATCH,
        "timeout": 90000,
    }
    assert decision == ApprovalDecision(outcome="allow")


@pytest.mark.parametrize(
    ("answer", "decision"),
    [
        ({"confirmed": False}, ApprovalDecision(outcome="reject")),
        ({"cancelled": True}, ApprovalDecision(outcome="reject", reason="the confirmation was cancelled")),
        ({"value": "yes"}, ApprovalDecision(outcome="reject")),
        (None, ApprovalDecision(outcome="reject")),
    ],
)
async def test_anything_but_yes_refuses(answer: dict[str, Any] | None, decision: ApprovalDecision) -> None:
    request, got = await ask(answer)
    assert "timeout" not in request
    assert got == decision
