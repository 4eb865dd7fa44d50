"""A scripted user who answers approvals, and the tool calls they are asked about."""

from __future__ import annotations

from typing import Any

from pi_rpc.agent.types import ApprovalRequest, BeforeToolCall
from pi_rpc.ai.types import AssistantMessage, ToolCall
from pi_rpc.ai.validation import validate_tool_arguments
from pi_rpc.session.approvals.gate import (
    ApprovalDecision,
)
from pi_rpc.tools.registry import create_tool_definitions

TOOLS = create_tool_definitions(["read", "bash", "edit", "write"])


def call(tool: str, **args: Any) -> BeforeToolCall:
    """A call as the gate sees it: after validation, with the tool's own argument types."""
    validated = validate_tool_arguments(tool, TOOLS[tool].parameters, args)
    message = AssistantMessage(content=[], api="faux", provider="faux", model="m")
    return BeforeToolCall(message, ToolCall(id="call_1", name=tool, arguments=args), validated)


class FakeUser:
    def __init__(self, *decisions: ApprovalDecision) -> None:
        self.decisions = list(decisions)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        return self.decisions.pop(0)
