"""Approvals in ACP terms: the session's approval policies as ACP session modes, and an approval
request as `session/request_permission` (names and shapes only; the gate in
pi_rpc/session/approvals/gate.py decides what asks and what a decision does).

The permission request names the tool call the editor already shows: the same `toolCallId`, and
the same title, made by the same function, so a row keeps its name while it asks (an MCP tool's
row and question both show the tool's name). It carries what the call will do: for edit and
write the diff of the whole file, computed before anything is written; for a shell tool the
command. Its options are allow once, allow always (the session rule the gate suggests, named in
the option) and reject once. ACP's "reject always" has no counterpart in the gate (a deny rule
would outlive the user's intent), so it is not offered.
"""

from __future__ import annotations

from acp.helpers import ToolCallContentVariant, tool_content, tool_diff_content
from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    SessionMode,
    SessionModeState,
    TextContentBlock,
    ToolCallUpdate,
)
from msgspec import UNSET

from pi_rpc.agent import ApprovalRequest, ToolPreview
from pi_rpc.modes.acp.updates import tool_kind, tool_locations, tool_title
from pi_rpc.session import APPROVAL_POLICIES, ApprovalDecision, ApprovalPolicy

# What the editor's mode picker shows for each policy.
MODE_TEXT: dict[ApprovalPolicy, tuple[str, str]] = {
    "ask": ("Ask", "Ask before edits, writes, commands and reads outside the workspace"),
    "acceptEdits": ("Accept edits", "Edits and writes inside the workspace run; commands still ask"),
    "auto": ("Auto", "Everything runs without asking (Pi's behaviour)"),
    "readOnly": ("Read only", "Plan only: nothing that changes files or runs commands may run"),
}
assert set(MODE_TEXT) == set(APPROVAL_POLICIES)

ALLOW_ONCE = "allow"
ALLOW_ALWAYS = "allowAlways"
REJECT_ONCE = "reject"


def session_modes(current: ApprovalPolicy) -> SessionModeState:
    return SessionModeState(
        current_mode_id=current,
        available_modes=[
            SessionMode(id=policy, name=MODE_TEXT[policy][0], description=MODE_TEXT[policy][1])
            for policy in APPROVAL_POLICIES
        ],
    )


def mode_policy(mode_id: str) -> ApprovalPolicy | None:
    """The policy an ACP mode id names; None for an id we never offered."""
    return next((policy for policy in APPROVAL_POLICIES if policy == mode_id), None)


def permission_options(request: ApprovalRequest) -> list[PermissionOption]:
    # No "always" without a rule to add: the gate offers none for a command it cannot read.
    always = [
        PermissionOption(option_id=ALLOW_ALWAYS, name=f"Always allow {request.suggested_rule}", kind="allow_always")
    ]
    return [
        PermissionOption(option_id=ALLOW_ONCE, name="Allow", kind="allow_once"),
        *(always if request.suggested_rule else []),
        PermissionOption(option_id=REJECT_ONCE, name="Reject", kind="reject_once"),
    ]


def preview_content(preview: ToolPreview) -> list[ToolCallContentVariant]:
    """The change as ACP tool-call content: a whole-file diff, or the command as text."""
    if preview.path is not UNSET and preview.new_text is not UNSET:
        # ACP: oldText is absent for a new file; the preview's old text is empty then.
        old_text = preview.old_text if preview.old_text is not UNSET and preview.old_text else None
        return [tool_diff_content(preview.path, preview.new_text, old_text)]
    if preview.command is not UNSET:
        return [tool_content(TextContentBlock(type="text", text=preview.command))]
    return []


def permission_tool_call(request: ApprovalRequest) -> ToolCallUpdate:
    args = request.args if isinstance(request.args, dict) else {}
    return ToolCallUpdate(
        # No status: the call is already in_progress, and the editor shows the wait itself.
        tool_call_id=request.tool_call_id,
        title=tool_title(request.tool_name, args),
        kind=tool_kind(request.tool_name),
        content=preview_content(request.preview) or None,
        locations=tool_locations(request.tool_name, args, request.cwd) or None,
        raw_input=request.args,
    )


def permission_decision(outcome: AllowedOutcome | DeniedOutcome) -> ApprovalDecision:
    """The user's choice as the gate's decision. `cancelled` (the client gave up on the request,
    as ACP has it do for a cancelled turn) refuses the call; the cancel itself ends the turn."""
    if isinstance(outcome, DeniedOutcome):
        return ApprovalDecision(outcome="reject", reason="the permission request was cancelled")
    if outcome.option_id == ALLOW_ONCE:
        return ApprovalDecision(outcome="allow")
    if outcome.option_id == ALLOW_ALWAYS:
        return ApprovalDecision(outcome="allowAlways")
    if outcome.option_id == REJECT_ONCE:
        return ApprovalDecision(outcome="reject")
    return ApprovalDecision(outcome="reject", reason=f"the editor chose an option never offered: {outcome.option_id}")


__all__ = [
    "permission_decision",
    "permission_options",
    "permission_tool_call",
    "session_modes",
    "mode_policy",
]
