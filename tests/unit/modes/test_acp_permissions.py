"""ACP permission requests and modes built from the gate's requests (names and shapes only)."""

from __future__ import annotations

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionRequest
from msgspec.structs import replace

from pi_rpc.agent.types import ApprovalRequest, ToolPreview
from pi_rpc.modes.acp.permissions import (
    mode_policy,
    permission_decision,
    permission_options,
    permission_tool_call,
    session_modes,
)
from pi_rpc.modes.acp.updates import tool_title
from pi_rpc.session.approvals.gate import APPROVAL_POLICIES, ApprovalDecision


def request(tool: str, preview: ToolPreview, args: dict[str, str]) -> ApprovalRequest:
    return ApprovalRequest(
        tool_call_id="call_1",
        tool_name=tool,
        args=args,
        cwd="/ws",
        title=preview.title,
        preview=preview,
        suggested_rule=tool,
    )


def wire(call_request: ApprovalRequest) -> dict[str, object]:
    built = RequestPermissionRequest(
        session_id="s", tool_call=permission_tool_call(call_request), options=permission_options(call_request)
    )
    dumped: dict[str, object] = built.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


def test_a_new_file_is_a_diff_without_old_text() -> None:
    preview = ToolPreview(
        title="Write NOTES.md", path="/ws/NOTES.md", old_text="", new_text="# Notes\n", patch="+# Notes"
    )
    call = wire(request("write", preview, {"path": "NOTES.md", "content": "# Notes\n"}))["toolCall"]
    assert isinstance(call, dict)
    assert call["content"] == [{"type": "diff", "path": "/ws/NOTES.md", "newText": "# Notes\n"}]
    assert call["locations"] == [{"path": "/ws/NOTES.md"}]
    assert call["rawInput"] == {"path": "NOTES.md", "content": "# Notes\n"}


def test_a_call_with_neither_diff_nor_command_has_no_content() -> None:
    call = wire(
        request("read", ToolPreview(title="Read /etc/hostname", path="/etc/hostname"), {"path": "/etc/hostname"})
    )["toolCall"]
    assert isinstance(call, dict)
    assert "content" not in call and call["title"] == "read /etc/hostname" and call["kind"] == "read"


def test_an_mcp_tools_permission_request_has_the_title_of_its_tool_call_row() -> None:
    args = {"query": "greet"}
    preview = ToolPreview(title="Search the docs")  # the MCP tool's own title, as the gate names it
    call = wire(request("docs_search", preview, args))["toolCall"]
    assert isinstance(call, dict)
    assert call["title"] == tool_title("docs_search", args) == "docs_search"


def test_every_offered_option_and_cancel_map_to_a_decision() -> None:
    options = permission_options(request("bash", ToolPreview(title="Run ls", command="ls"), {"command": "ls"}))
    decisions = [permission_decision(AllowedOutcome(outcome="selected", option_id=o.option_id)) for o in options]
    assert decisions == [
        ApprovalDecision(outcome="allow"),
        ApprovalDecision(outcome="allowAlways"),
        ApprovalDecision(outcome="reject"),
    ]
    assert permission_decision(DeniedOutcome(outcome="cancelled")) == ApprovalDecision(
        outcome="reject", reason="the permission request was cancelled"
    )
    unknown = permission_decision(AllowedOutcome(outcome="selected", option_id="yolo"))
    assert unknown.outcome == "reject"


def test_no_always_option_without_a_rule_to_add() -> None:
    call = request("bash", ToolPreview(title="Run ls", command="ls | head"), {"command": "ls | head"})
    options = permission_options(replace(call, suggested_rule=""))
    assert [option.kind for option in options] == ["allow_once", "reject_once"]


def test_modes_are_the_policies() -> None:
    modes = session_modes("acceptEdits")
    assert modes.current_mode_id == "acceptEdits"
    assert [mode.id for mode in modes.available_modes] == list(APPROVAL_POLICIES)
    assert [mode_policy(policy) for policy in APPROVAL_POLICIES] == list(APPROVAL_POLICIES)
    assert mode_policy("default") is None
