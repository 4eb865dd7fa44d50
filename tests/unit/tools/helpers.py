"""What the tool test modules share: calling a tool the way the agent loop does, its text, and
the check of a listing (grep, find, ls) cut by the byte limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from pi_rpc.agent.types import AgentToolResult, ToolCallContext
from pi_rpc.ai.types import Model, TextContent
from pi_rpc.ai.validation import validate_tool_arguments
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.truncate import Truncation


async def run_tool(
    tool: ToolDefinition, args: dict[str, Any], cwd: Path | str, *, model: Model | None = None
) -> AgentToolResult:
    """Prepare, validate and execute, as the loop does; `cwd` is the effective (context) cwd."""
    if tool.prepare_arguments is not None:
        args = tool.prepare_arguments(args)
    params = validate_tool_arguments(tool.name, tool.parameters, args)
    return await tool.execute(params, ToolCallContext(id="call-1", cwd=str(cwd), model=model))


def wire_details(result: AgentToolResult) -> Any:
    """`details` as a client receives it: plain JSON values, camelCase keys in field order."""
    return msgspec.to_builtins(result.details)


def text_of(result: AgentToolResult) -> str:
    """The text of a result whose content starts with a text block."""
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


def byte_limited_body(result: AgentToolResult) -> tuple[str, Truncation]:
    """Spec 13.8, 13.13, 13.19: a listing cut by the byte limit alone ends in the one notice
    `[50.0KB limit reached]` and records only `details.truncation`. Returns the text above the
    notice and that record."""
    body, notice = text_of(result).split("\n\n")
    assert notice == "[50.0KB limit reached]"
    assert list(wire_details(result)) == ["truncation"]
    truncation = result.details.truncation
    assert isinstance(truncation, Truncation)
    assert truncation.truncated and truncation.truncated_by == "bytes"
    return body, truncation
