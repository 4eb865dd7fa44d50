"""The agent loop's public names: the `Agent`, its loop configuration and run control, the
tool protocol (`AgentTool`, `ToolCallContext`, `ToolError`) and the events a run emits.

Other layers and the front ends import these from here (`from pi_rpc.agent import Agent`); the
modules behind them are the layer's own. Nothing is loaded until a name is first used
(`pi_rpc/lazy_exports.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_rpc.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from pi_rpc.agent.agent import Agent, AgentBusyError, QueueMode, all_agents_idle
    from pi_rpc.agent.control import RunControl
    from pi_rpc.agent.llm_messages import bash_execution_to_text, convert_to_llm
    from pi_rpc.agent.loop import LoopConfig
    from pi_rpc.agent.types import (
        AfterToolCall,
        AgentEnd,
        AgentEvent,
        AgentSettled,
        AgentTool,
        AgentToolResult,
        ApprovalOutcome,
        ApprovalRequest,
        BashExecutionUpdate,
        BeforeToolCall,
        BlockCall,
        CompactionEnd,
        CompactionStart,
        CustomEntries,
        DiffHunk,
        EntryAppended,
        HunkSelection,
        MessageEnd,
        MessageStart,
        MessageUpdate,
        NestedOutcome,
        SummarizationRetryAttemptStart,
        SummarizationRetryFinished,
        SummarizationRetryScheduled,
        ToolApprovalEnd,
        ToolApprovalRequest,
        ToolCallContext,
        ToolError,
        ToolErrorWithResult,
        ToolExecutionEnd,
        ToolExecutionStart,
        ToolExecutionUpdate,
        ToolPreview,
        TurnEnd,
        WaitForRoom,
        text_result,
    )

__all__ = [
    "AfterToolCall",
    "Agent",
    "AgentBusyError",
    "AgentEnd",
    "AgentEvent",
    "AgentSettled",
    "EntryAppended",
    "AgentTool",
    "AgentToolResult",
    "ApprovalOutcome",
    "ApprovalRequest",
    "BashExecutionUpdate",
    "BeforeToolCall",
    "BlockCall",
    "CompactionEnd",
    "SummarizationRetryAttemptStart",
    "SummarizationRetryFinished",
    "SummarizationRetryScheduled",
    "CompactionStart",
    "CustomEntries",
    "LoopConfig",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "NestedOutcome",
    "QueueMode",
    "RunControl",
    "ToolApprovalEnd",
    "ToolApprovalRequest",
    "ToolCallContext",
    "ToolError",
    "ToolErrorWithResult",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "ToolPreview",
    "DiffHunk",
    "HunkSelection",
    "TurnEnd",
    "WaitForRoom",
    "all_agents_idle",
    "bash_execution_to_text",
    "convert_to_llm",
    "text_result",
]

if not TYPE_CHECKING:  # for mypy the imports above are the names, so a misspelt one stays an error
    __getattr__, __dir__ = lazy_exports(__name__, __all__)
