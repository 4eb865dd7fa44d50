"""ToolDefinition (the application layer, spec 1.4) and its adapters to and from AgentTool.

A definition adds what the session needs around a runtime tool: the one-line prompt snippet, the
prompt guidelines, and a fifth `ctx` argument to execute (the effective cwd, the model, session
details), supplied by a factory evaluated at call time (spec 1.6).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.agent.types import AbortSignal, AgentTool, AgentToolResult, OnUpdate, ToolPreview
from pi_rpc.ai.types import ConstrainedSampling, Model


@dataclass
class ToolContext:
    """What a tool may know about the session that runs it (Pi's extension context, trimmed)."""

    cwd: str
    model: Model | None = None
    session_id: str | None = None
    session_file: str | None = None
    thinking_level: str | None = None


DefinitionPreview = Callable[[Any, ToolContext], Awaitable[ToolPreview]]

DefinitionExecute = Callable[[str, Any, AbortSignal, OnUpdate, ToolContext], Awaitable[AgentToolResult]]


@dataclass(eq=False)
class ToolDefinition:
    name: str
    label: str
    description: str
    parameters: type[msgspec.Struct] | dict[str, Any]
    execute: DefinitionExecute
    prompt_snippet: str | None = None
    prompt_guidelines: list[str] = field(default_factory=list)
    constrained_sampling: ConstrainedSampling | UnsetType = UNSET
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: Literal["parallel", "sequential"] = "parallel"
    aborted_text: Callable[[AgentToolResult | None], str] | None = None
    # Changes files or runs programs: approval policies ask before it runs (readOnly refuses it).
    mutating: bool = False
    # Describes the call before it runs (for approval requests); raising means "would fail anyway".
    preview: DefinitionPreview | None = None
    # Where the tool comes from, for `tools/list`: "builtin", or "mcp:<server>" (tools/mcp.py).
    source: str = "builtin"


def wrap_tool_definition(
    definition: ToolDefinition, context_factory: Callable[[], ToolContext]
) -> AgentTool:
    """Definition -> runtime tool; `ctx` is built when the call runs, not when wrapped."""

    async def execute(call_id: str, params: Any, signal: AbortSignal, on_update: OnUpdate) -> AgentToolResult:
        return await definition.execute(call_id, params, signal, on_update, context_factory())

    return AgentTool(
        name=definition.name,
        label=definition.label,
        description=definition.description,
        parameters=definition.parameters,
        execute=execute,
        constrained_sampling=definition.constrained_sampling,
        prepare_arguments=definition.prepare_arguments,
        execution_mode=definition.execution_mode,
        aborted_text=definition.aborted_text,
    )
