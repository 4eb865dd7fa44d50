"""The runtime tool layer (AgentTool), tool results, and the agent events.

Event names and payload fields are Pi's (`packages/agent/src/types.ts`, spec 15.2), so Pi's RPC
documentation describes these events too. `message_update` carries only the assistant-message
event (Pi 1.6.0), never the cumulative message: traffic grows linearly with the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import (
    AssistantMessage,
    AssistantMessageEvent,
    AutoRetryEnd,
    AutoRetryStart,
    ConstrainedSampling,
    Message,
    Model,
    TextContent,
    Tool,
    ToolCall,
    ToolResultContent,
    ToolResultMessage,
    Wire,
)

# --- tool results -------------------------------------------------------------------------------


class AgentToolResult(Wire):
    content: list[ToolResultContent] = msgspec.field(default_factory=list)
    details: Any = UNSET
    # What a program calling the tool gets instead of the model's text (Pi 0.99: read's text or
    # image, bash's output and exit code); on the wire in `tool_execution_end`, never sent to a model.
    structured_content: Any = UNSET
    # A result that is a failure without being an exception (bash's non-zero exit, Pi 1.6.0).
    is_error: bool | UnsetType = UNSET
    # Set by a tool (or after_tool_call) to end the run after this batch (spec 15.9).
    terminate: bool | UnsetType = UNSET


def text_result(text: str, details: Any = UNSET) -> AgentToolResult:
    return AgentToolResult(content=[TextContent(text=text)], details=details)


class ToolError(Exception):
    """Raised by a tool's execute: the message becomes the error result's text, verbatim (spec 2.4)."""


class ToolErrorWithResult(ToolError):
    """A failure that keeps its details (spec 1.6: bash's non-zero exit keeps truncation)."""

    def __init__(self, message: str, details: Any = UNSET) -> None:
        super().__init__(message)
        self.details = details


OnUpdate = Callable[[AgentToolResult], None]


def _no_update(partial: AgentToolResult) -> None:
    """The update callback of a context built outside a run (previews, tests)."""


class CustomEntries(Protocol):
    """The session's `custom` entries of one kind (Pi's extension entries, `customType`), for a tool
    that keeps its own state in the session (codemode's `store()`): the current branch's, root
    first, and a new one at the leaf, kept in the session file as the session keeps its entries.

        for data in ctx.custom_entries.branch_data("codemode-store"): ...
        ctx.custom_entries.append("codemode-store", {"set": {"k": 1}, "delete": []})
    """

    def branch_data(self, custom_type: str) -> list[Any]: ...

    def append(self, custom_type: str, data: Any) -> None: ...


class ToolCallContext(msgspec.Struct, frozen=True, kw_only=True):
    """One tool call as the tool sees it: which call, where it streams, and the session around it.

    There is no abort flag: the loop runs every tool inside a CancelScope that abort cancels, so a
    tool only cleans up on the way out. `cwd` is the session's effective working directory.
    """

    id: str = ""
    cwd: str
    on_update: OnUpdate = _no_update
    model: Model | None = None
    session_id: str | None = None
    session_file: str | None = None
    thinking_level: str | None = None
    # The user approved only some hunks of the previewed change (edit, write): apply just those.
    hunks: HunkSelection | None = None
    # Runs another tool on behalf of this call through the same pipeline as a model-issued call
    # (validation, the approval gate, checkpoints, events with `parentToolCallId`); codemode uses it.
    execute_tool: NestedExecutor | None = None
    custom_entries: CustomEntries | None = None  # None outside a session: nothing is kept


class NestedOutcome(msgspec.Struct, frozen=True):
    """What a tool called from inside another tool returned (`ToolCallContext.execute_tool`)."""

    call_id: str  # `<parent id>/<n>`, as Pi numbers nested calls
    result: AgentToolResult
    is_error: bool


NestedExecutor = Callable[[str, Any], Awaitable[NestedOutcome]]
ExecuteFn = Callable[[Any, ToolCallContext], Awaitable[AgentToolResult]]


class AgentTool(msgspec.Struct, eq=False):
    """Spec 1.4: a declaration plus what the loop needs to run it.

    `parameters` is either a msgspec Struct type (the one declaration that gives the JSON Schema,
    the validator with Pi's lenient conversion, and the type execute receives) or a plain JSON
    Schema dict (extensions, MCP, clients), validated through the JSON-Schema branch.
    """

    name: str
    label: str
    description: str
    parameters: type[msgspec.Struct] | dict[str, Any]
    execute: ExecuteFn
    constrained_sampling: ConstrainedSampling | UnsetType = UNSET
    prepare_arguments: Callable[[Any], Any] | None = None
    execution_mode: Literal["parallel", "sequential"] = "parallel"
    # When abort cancels this tool, its last update is the error result: the tool emits its own
    # aborted text where it catches the cancellation (bash keeps its output, spec 9.13). Otherwise
    # the result is the loop's "Operation aborted".
    final_update_on_abort: bool = False
    # Pi 1.6.0's exposures of a tool: "direct", declared (when active) as usual; "codemode" and
    # "deferred", never declared to the model and called only from codemode scripts, the
    # "codemode" ones listed in codemode's description, the "deferred" ones found by the scripts
    # (`searchTools()`, `ALL_TOOLS`): an MCP server's tools of its default `codemode` exposure.
    exposure: Literal["direct", "codemode", "deferred"] = "direct"
    # A description that depends on the other active tools (codemode lists what scripts can call);
    # given them, it replaces `description` in the declaration.
    describe: Callable[[Sequence[AgentTool]], str] | None = None
    # While this tool is active, it adds to each other declared tool's description (codemode says
    # how scripts call it): (that tool, its description so far) -> its description.
    annotate_peer: Callable[[AgentTool, str], str] | None = None
    _declaration: Tool | None = None  # the last one made: remade when the description changes

    def declaration(self, peers: Sequence[AgentTool] = ()) -> Tool:
        description = self.describe(peers) if self.describe is not None else self.description
        for peer in peers:
            if peer is not self and peer.annotate_peer is not None:
                description = peer.annotate_peer(self, description)
        if self._declaration is None or self._declaration.description != description:
            from pi_rpc.ai import json_schema_of

            self._declaration = Tool(
                name=self.name,
                description=description,
                parameters=json_schema_of(self.parameters),
                constrained_sampling=self.constrained_sampling,
            )
        return self._declaration


class DiffHunk(Wire, kw_only=True):
    """One `@@` hunk of a preview's patch, numbered from 0 in patch order: 1-based first lines and
    line counts of both sides (as the `@@` header, but a start is never 0), and its text (header
    and body, as in the patch)."""

    index: int
    old_start: int
    old_lines: int
    new_start: int
    new_lines: int
    text: str


class HunkSelection(msgspec.Struct, frozen=True):
    """The hunks of an approved change the user kept, and the hunks they were chosen from, so the
    tool applies the same diff the user saw (and refuses when the file has changed since)."""

    kept: frozenset[int]
    hunks: tuple[DiffHunk, ...]


class ToolPreview(Wire, kw_only=True):
    """What a call is about to do, told before it runs, for the user who approves it.

    For edit and write the change is computed from the current file, nothing written: `old_text`
    and `new_text` are the whole file before and after (empty old text for a new file), `patch`
    a unified diff with line numbers. For a shell tool, `command`.
    """

    title: str
    path: str | UnsetType = UNSET  # absolute
    command: str | UnsetType = UNSET
    old_text: str | UnsetType = UNSET
    new_text: str | UnsetType = UNSET
    patch: str | UnsetType = UNSET
    # The patch's hunks, which an approval may keep some of (edit and write of an existing file).
    hunks: list[DiffHunk] | UnsetType = UNSET


# --- hooks --------------------------------------------------------------------------------------


class BlockCall(msgspec.Struct, kw_only=True):
    """Returned by before_tool_call to refuse a call (spec 15.10)."""

    reason: str | None = None
    terminate: bool = False


class ResultOverride(msgspec.Struct, kw_only=True):
    """Returned by after_tool_call: each field given replaces the original wholesale."""

    content: list[ToolResultContent] | UnsetType = UNSET
    details: Any = UNSET
    is_error: bool | UnsetType = UNSET
    terminate: bool | UnsetType = UNSET


class BeforeToolCall(msgspec.Struct):
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any  # the validated arguments; a hook may mutate them (spec 3.8)
    # Set by a hook when the user kept only some hunks: the tool sees it in its context.
    hunks: HunkSelection | None = None


class AfterToolCall(msgspec.Struct):
    assistant_message: AssistantMessage
    tool_call: ToolCall
    args: Any
    result: AgentToolResult
    is_error: bool


BeforeToolCallHook = Callable[[BeforeToolCall], Awaitable[BlockCall | None]]
AfterToolCallHook = Callable[[AfterToolCall], Awaitable[ResultOverride | None]]


# --- events -------------------------------------------------------------------------------------


class AgentStart(Wire, tag_field="type", tag="agent_start"):
    pass


class AgentEnd(Wire, tag_field="type", tag="agent_end"):
    messages: list[Message]
    # Pi mode: whether the run is retried after this (Pi's `willRetry`; `LoopConfig.will_retry`).
    will_retry: bool | UnsetType = UNSET


class TurnStart(Wire, tag_field="type", tag="turn_start"):
    pass


class TurnEnd(Wire, tag_field="type", tag="turn_end"):
    message: AssistantMessage
    tool_results: list[ToolResultMessage]


class MessageStart(Wire, tag_field="type", tag="message_start"):
    message: Message


class MessageUpdate(Wire, tag_field="type", tag="message_update"):
    assistant_message_event: AssistantMessageEvent


class MessageEnd(Wire, tag_field="type", tag="message_end"):
    message: Message


class ToolExecutionStart(Wire, tag_field="type", tag="tool_execution_start"):
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    # Set on a call another tool made (a codemode script's), naming that tool's call.
    parent_tool_call_id: str | UnsetType = UNSET


class ToolExecutionUpdate(Wire, tag_field="type", tag="tool_execution_update"):
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    partial_result: AgentToolResult
    parent_tool_call_id: str | UnsetType = UNSET


class ToolExecutionEnd(Wire, tag_field="type", tag="tool_execution_end"):
    tool_call_id: str
    tool_name: str
    result: AgentToolResult
    is_error: bool
    duration_ms: int | UnsetType = UNSET
    parent_tool_call_id: str | UnsetType = UNSET


class QueueUpdate(Wire, tag_field="type", tag="queue_update"):
    steering: list[str]
    follow_up: list[str]


class ApprovalRequest(Wire, kw_only=True):
    """A tool call waiting for the user's approval: the call, and what it will do."""

    tool_call_id: str
    tool_name: str
    args: Any
    cwd: str
    title: str
    preview: ToolPreview
    # The rule "allow always" adds when the client names none, e.g. `bash(npm test:*)`.
    suggested_rule: str


ApprovalOutcome = Literal["allow", "allowAlways", "reject", "timeout", "cancelled"]


class ToolApprovalRequest(Wire, tag_field="type", tag="tool_approval_request"):
    """The run waits for the user to approve a tool call (between tool_execution_start and end)."""

    request: ApprovalRequest


class ToolApprovalEnd(Wire, tag_field="type", tag="tool_approval_end"):
    tool_call_id: str
    outcome: ApprovalOutcome


class AgentSettled(Wire, tag_field="type", tag="agent_settled"):
    """The session is idle again: after agent_end, and once queued work has drained."""

    aborted: bool = False  # the run was aborted (Pi 1.6.0's `aborted`)


class EntryAppended(Wire, tag_field="type", tag="entry_appended"):
    """A session entry written outside a message's end (Pi 1.6.0's session event): the
    `context_edit` that takes a retried run's failed reply out of the context."""

    entry: dict[str, Any]


class BashExecutionUpdate(Wire, tag_field="type", tag="bash_execution_update"):
    """Output of a command the user runs (`bash`), as it arrives; `id` names the run."""

    id: str
    delta: str


class CompactionStart(Wire, tag_field="type", tag="compaction_start"):
    reason: Literal["manual", "threshold", "overflow"]


class CompactionEnd(Wire, tag_field="type", tag="compaction_end"):
    reason: Literal["manual", "threshold", "overflow"]
    result: Any = UNSET  # the CompactionResult; absent when it failed or was cancelled (Pi's `undefined`)
    aborted: bool = False
    will_retry: bool = False
    error_message: str | UnsetType = UNSET


class SummarizationRetryScheduled(Wire, tag_field="type", tag="summarization_retry_scheduled"):
    """A compaction's summary request failed for a passing reason; it is asked again after `delayMs`
    (Pi 0.81.1: the retry settings, as for a run's auto-retry)."""

    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str


class SummarizationRetryAttemptStart(Wire, tag_field="type", tag="summarization_retry_attempt_start"):
    """The wait is over and the summary is asked for again; `source` is what is summarised."""

    source: Literal["compaction", "branchSummary"]
    reason: Literal["manual", "threshold", "overflow"] | UnsetType = UNSET


class SummarizationRetryFinished(Wire, tag_field="type", tag="summarization_retry_finished"):
    """The retried summary request ended: answered, failed for good, or cancelled."""


AgentEvent = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | AutoRetryStart
    | AutoRetryEnd
    | QueueUpdate
    | ToolApprovalRequest
    | ToolApprovalEnd
    | AgentSettled
    | EntryAppended
    | BashExecutionUpdate
    | CompactionStart
    | CompactionEnd
    | SummarizationRetryScheduled
    | SummarizationRetryAttemptStart
    | SummarizationRetryFinished
)

Emit = Callable[[AgentEvent], None]
# How a listener that writes to a client makes the model's stream wait while that client is far
# behind (modes/writer.py `StdoutSink.wait_for_room`): returns at once while it keeps up.
WaitForRoom = Callable[[], Awaitable[None]]
