"""What the session reports to any mode: run outcomes, tool listings, state. Wire Structs, so the
JSON-RPC mode returns them as they are (protocol.py re-exports them)."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, UnsetType

from pi_rpc.ai import EndedStopReason, Model, ThinkingLevel, Usage, Wire
from pi_rpc.session.approvals.gate import ApprovalPolicy


class PromptOutcome(Wire, kw_only=True):
    """How the run that a prompt started ended."""

    stop_reason: EndedStopReason | UnsetType = UNSET
    usage: Usage | UnsetType = UNSET
    error_message: str | UnsetType = UNSET
    # Set instead of the above when the prompt was queued into a running run.
    queued: Literal["steer", "followUp"] | UnsetType = UNSET


class ToolInfo(Wire, kw_only=True):
    name: str
    label: str
    description: str
    parameters: dict[str, Any]
    active: bool
    # Absent for a built-in tool; "mcp:<server>" for a tool of an MCP server.
    source: str | UnsetType = UNSET


class SlashCommand(Wire, kw_only=True):
    """A `/name` a user can start a prompt with: a prompt template or a skill (`skill:name`)."""

    name: str
    description: str
    source: Literal["prompt", "skill"]
    path: str
    scope: str  # "user" (the agent folder), "project" (the workspace's .pi/), "path" (given on the command line)
    argument_hint: str | UnsetType = UNSET


class SessionState(Wire, kw_only=True):
    model: Model | None  # null: no model configured yet
    thinking_level: ThinkingLevel
    is_streaming: bool
    steering_mode: Literal["all", "one-at-a-time"]
    follow_up_mode: Literal["all", "one-at-a-time"]
    session_id: str
    message_count: int
    pending_message_count: int
    cwd: str
    active_tools: list[str]
    scripted: bool
    session_file: str | None
    session_name: str | None  # `session/setName`'s, kept in the file; null until named
    approval_policy: ApprovalPolicy
    # Tool calls waiting for the user's approval.
    pending_approvals: list[str]


class TokenTotals(Wire, kw_only=True):
    input: int
    output: int
    cache_read: int
    cache_write: int
    total: int


class ContextUsage(Wire, kw_only=True):
    """How full the model's context window is: the last request's reported size plus estimates.
    `tokens` and `percent` are null right after a compaction, until the next reply reports them."""

    tokens: int | None
    context_window: int
    percent: float | None


class SessionStats(Wire, kw_only=True):
    """Pi's `get_session_stats`: counts, tokens and dollars of the current transcript."""

    session_id: str
    session_file: str | None
    user_messages: int
    assistant_messages: int
    tool_calls: int
    tool_results: int
    total_messages: int
    tokens: TokenTotals
    cost: float
    context_usage: ContextUsage | UnsetType = UNSET  # absent while no model is configured
