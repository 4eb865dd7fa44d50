"""Messages, content blocks, usage, models and the assistant-message stream events.

Field names follow Pi's model layer (`packages/ai/src/types.ts`): camelCase on the wire through
msgspec's `rename="camel"`, snake_case in Python. Every tag is written by hand, never derived.
"Absent" is `UNSET` (omitted from JSON); "explicitly empty" is `None`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai.apis import KnownApi
from pi_rpc.ai.compat import NOT_SAID, ModelCompat


class Wire(msgspec.Struct, rename="camel", kw_only=True):
    """Base of every message that crosses a boundary: camelCase on the wire."""


def now_ms() -> int:
    return int(time.time() * 1000)


# --- content blocks -----------------------------------------------------------------------------


class TextContent(Wire, tag_field="type", tag="text"):
    text: str
    text_signature: str | UnsetType = UNSET


class ThinkingContent(Wire, tag_field="type", tag="thinking"):
    thinking: str
    # Opaque provider token that must be sent back verbatim to replay the thinking block.
    thinking_signature: str | UnsetType = UNSET
    redacted: bool | UnsetType = UNSET


class ImageContent(Wire, tag_field="type", tag="image"):
    data: str  # base64
    mime_type: str


class ToolCall(Wire, tag_field="type", tag="toolCall"):
    id: str
    name: str
    arguments: dict[str, Any]
    # Provider-specific replay token (e.g. Responses API item id); never shown to the model.
    thought_signature: str | UnsetType = UNSET


UserContent = TextContent | ImageContent
AssistantContent = TextContent | ThinkingContent | ToolCall
ToolResultContent = TextContent | ImageContent

# How a message ended; `pending` is one still streaming (its `message_start`).
EndedStopReason = Literal["stop", "length", "toolUse", "error", "aborted"]
StopReason = EndedStopReason | Literal["pending"]


# --- usage and cost -----------------------------------------------------------------------------


class Cost(Wire):
    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0
    # Whether `total` is what the provider billed (OpenRouter's `usage.cost`) rather than priced
    # from the model's rates; absent until the provider reported usage (Pi's `totalFromProvider`).
    total_from_provider: bool | UnsetType = UNSET


class Usage(Wire):
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    # Reasoning tokens, counted inside `output`; absent until the provider reported usage.
    reasoning: int | UnsetType = UNSET
    total_tokens: int = 0
    cost: Cost = msgspec.field(default_factory=Cost)


# --- tool declarations (what the model sees) ----------------------------------------------------


class JsonSchemaSampling(Wire, tag_field="type", tag="json_schema"):
    strict: Literal["prefer", "require"] = "prefer"


class GrammarVariants(Wire):
    openai_lark: str | UnsetType = UNSET
    openai_regex: str | UnsetType = UNSET


class GrammarSampling(Wire, tag_field="type", tag="grammar"):
    variants: GrammarVariants


ConstrainedSampling = JsonSchemaSampling | GrammarSampling


class Tool(Wire):
    """The declaration layer (spec 1.2): name, description, JSON Schema parameters."""

    name: str
    description: str
    parameters: dict[str, Any]
    constrained_sampling: ConstrainedSampling | UnsetType = UNSET


class ToolRef(Wire):
    name: str


# --- messages -----------------------------------------------------------------------------------


class UserMessage(Wire, tag_field="role", tag="user"):
    content: str | list[UserContent]
    timestamp: int = msgspec.field(default_factory=now_ms)


class AssistantMessage(Wire, tag_field="role", tag="assistant"):
    content: list[AssistantContent]
    api: str
    provider: str
    model: str
    usage: Usage = msgspec.field(default_factory=Usage)
    stop_reason: StopReason = "stop"
    error_message: str | UnsetType = UNSET
    timestamp: int = msgspec.field(default_factory=now_ms)
    # What the provider said: its response id, the model that answered when it is not the one
    # asked for, and its own stop reason (`finish_reason`, `stop_reason`, `status`) before mapping.
    response_id: str | UnsetType = UNSET
    response_model: str | UnsetType = UNSET
    raw_stop_reason: str | UnsetType = UNSET
    # From the request's start to the message's end, and the thinking level it was asked at.
    duration_ms: int | UnsetType = UNSET
    thinking_level: str | UnsetType = UNSET


class ToolResultMessage(Wire, tag_field="role", tag="toolResult"):
    tool_call_id: str
    tool_name: str
    content: list[ToolResultContent]
    is_error: bool
    # JSON value for editors and logs; the model never sees it (spec 2.1).
    details: Any = UNSET
    duration_ms: int | UnsetType = UNSET  # how long the tool ran (its `tool_execution_end.durationMs`)
    timestamp: int = msgspec.field(default_factory=now_ms)


class SystemMessage(Wire, tag_field="role", tag="system"):
    """A transcript entry that (re)declares the callable tools (spec 15.12)."""

    content: str = ""
    # Pi 1.6.0's system prompt in named sections (`null`: a section removed): the first system
    # message carries them all, a later one those that changed (spec 15.12).
    sections: dict[str, str | None] | UnsetType = UNSET
    tools_added: list[Tool] | UnsetType = UNSET
    tools_removed: list[ToolRef] | UnsetType = UNSET
    timestamp: int = msgspec.field(default_factory=now_ms)


class BashExecutionMessage(Wire, tag_field="role", tag="bashExecution"):
    """A command the user ran (Pi's `bash` command, `!cmd`), kept as Pi keeps it: in the transcript,
    the session file and `get_messages` with its own role. It is no provider message: the model
    reads it as user text, made at the one conversion point (`agent/llm_messages.py`)."""

    command: str
    output: str
    cancelled: bool
    truncated: bool
    exit_code: int | UnsetType = UNSET  # absent when cancelled or killed by a signal, as in Pi
    full_output_path: str | UnsetType = UNSET
    # Pi's `!!cmd`: shown in the transcript, never sent to the model.
    exclude_from_context: bool | UnsetType = UNSET
    timestamp: int = msgspec.field(default_factory=now_ms)


class CompactionSummaryMessage(Wire, tag_field="role", tag="compactionSummary"):
    """Where a compaction replaced the older turns (Pi's `compactionSummary`): the first message of
    a compacted transcript after the system message the compaction kept, made from the session
    file's compaction entry. The model reads it as user text (`agent/llm_messages.py`)."""

    summary: str
    tokens_before: int  # the context's size when it was compacted
    timestamp: int = msgspec.field(default_factory=now_ms)


class BranchSummaryMessage(Wire, tag_field="role", tag="branchSummary"):
    """What a branch the conversation came back from did (Pi's `branchSummary`, from a Pi session
    file's `branch_summary` entry); read by the model as user text."""

    summary: str
    from_id: str  # the entry the abandoned branch ended at
    timestamp: int = msgspec.field(default_factory=now_ms)


class CustomMessage(Wire, tag_field="role", tag="custom"):
    """A message a Pi extension added (Pi's `custom`, from a `custom_message` entry): the model
    reads its content as the user's; `display` says whether Pi shows it in the chat."""

    custom_type: str
    content: str | list[UserContent]
    display: bool
    details: Any = UNSET
    timestamp: int = msgspec.field(default_factory=now_ms)


# What a provider is sent (Pi's `Message`).
LlmMessage = UserMessage | AssistantMessage | ToolResultMessage | SystemMessage
# What a transcript holds (Pi's `AgentMessage`): the provider messages and the session's own kinds.
Message = LlmMessage | BashExecutionMessage | CompactionSummaryMessage | BranchSummaryMessage | CustomMessage


def declared_sections(messages: Sequence[Message]) -> dict[str, str]:
    """Replay every system message's `sections` (Pi 1.6.0): the prompt the model was last told,
    by section name; a `null` section is one removed."""
    sections: dict[str, str] = {}
    for message in messages:
        if isinstance(message, SystemMessage) and message.sections:
            for name, text in message.sections.items():
                if text is None:
                    sections.pop(name, None)
                else:
                    sections[name] = text
    return sections


def sections_text(sections: dict[str, str]) -> str:
    """The prompt the sections make, as Pi renders a system message (`getSystemMessageText`)."""
    return "\n\n".join(text for text in sections.values() if text)


def declared_tools(messages: Sequence[Message]) -> list[Tool]:
    """Replay every system message's tool delta, in order (spec 15.12)."""
    declared: dict[str, Tool] = {}
    for message in messages:
        if not isinstance(message, SystemMessage):
            continue
        for ref in message.tools_removed or ():
            declared.pop(ref.name, None)
        for tool in message.tools_added or ():
            declared.pop(tool.name, None)
            declared[tool.name] = tool
    return list(declared.values())


def current_system_message(messages: Sequence[Message]) -> SystemMessage | None:
    """Every system message replayed into one (Pi 1.6.0's `getCurrentSystemMessage`): the contents
    joined, the sections patched by name, the tools as they stand now, dated by the first; None when
    there is no system message. A compaction keeps it, to start the compacted context with."""
    system = [message for message in messages if isinstance(message, SystemMessage)]
    if not system:
        return None
    replayed = SystemMessage(
        content="\n\n".join(message.content for message in system if message.content), timestamp=system[0].timestamp
    )
    if sections := declared_sections(system):
        replayed.sections = dict(sections)
    if tools := declared_tools(system):
        replayed.tools_added = tools
    return replayed


def text_of(content: str | list[Any]) -> str:
    """The plain text of a message's content (text blocks joined by newlines)."""
    if isinstance(content, str):
        return content
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


# --- models -------------------------------------------------------------------------------------

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
THINKING_LEVELS: tuple[ThinkingLevel, ...] = ("off", "minimal", "low", "medium", "high", "xhigh")


def thinking_level_of(text: str | None) -> ThinkingLevel | None:
    """`text` as a thinking level; None when it names none (a typo, a newer Pi's level)."""
    return next((level for level in THINKING_LEVELS if level == text), None)


class ModelCost(Wire):
    """Dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0


class Model(Wire):
    id: str
    name: str
    api: KnownApi  # the APIs pi-rpc speaks (ai/apis.py); a models.json naming another is skipped there
    provider: str
    base_url: str = ""
    reasoning: bool = False
    input: list[Literal["text", "image"]] = msgspec.field(default_factory=lambda: ["text"])
    cost: ModelCost = msgspec.field(default_factory=ModelCost)
    context_window: int = 128_000
    max_tokens: int = 16_384
    headers: dict[str, str] | UnsetType = UNSET
    # Pi's `thinkingLevelMap`: level -> value sent to the API, `None` = level unsupported.
    thinking_level_map: dict[str, str | None] | UnsetType = UNSET
    # Pi's per-model capability flags, parsed when the model is loaded (`pi_rpc/ai/compat.py`).
    compat: ModelCompat | UnsetType = UNSET


def model_compat(model: Model) -> ModelCompat:
    """The model's compat flags; none said reads as "all absent" (each API's defaults apply)."""
    return model.compat if isinstance(model.compat, ModelCompat) else NOT_SAID


class Context(msgspec.Struct, kw_only=True):
    """What one model request sees. `tools` is the replay of the transcript's declarations."""

    system_prompt: str
    messages: list[LlmMessage]
    tools: list[Tool] = msgspec.field(default_factory=list)


# --- assistant-message stream events (Pi's AssistantMessageEvent, without cumulative partials) ---


class StartEvent(Wire, tag_field="type", tag="start"):
    pass


class TextStartEvent(Wire, tag_field="type", tag="text_start"):
    content_index: int


class TextDeltaEvent(Wire, tag_field="type", tag="text_delta"):
    content_index: int
    delta: str


class TextEndEvent(Wire, tag_field="type", tag="text_end"):
    content_index: int
    content: str


class ThinkingStartEvent(Wire, tag_field="type", tag="thinking_start"):
    content_index: int


class ThinkingDeltaEvent(Wire, tag_field="type", tag="thinking_delta"):
    content_index: int
    delta: str


class ThinkingEndEvent(Wire, tag_field="type", tag="thinking_end"):
    content_index: int
    content: str


class ToolcallStartEvent(Wire, tag_field="type", tag="toolcall_start"):
    content_index: int
    id: str
    tool_name: str  # Pi's `toolName` (the tool call block itself says `name`)


class ToolcallDeltaEvent(Wire, tag_field="type", tag="toolcall_delta"):
    content_index: int
    delta: str
    # The arguments parsed so far from the partial JSON, so editors can show them filling in:
    # on every delta while short, then whenever they have grown by a quarter (ai/stream.py).
    arguments: dict[str, Any] | UnsetType = UNSET


class ToolcallEndEvent(Wire, tag_field="type", tag="toolcall_end"):
    content_index: int
    tool_call: ToolCall


class DoneEvent(Wire, tag_field="type", tag="done"):
    reason: Literal["stop", "length", "toolUse"]
    usage: Usage


class ErrorEvent(Wire, tag_field="type", tag="error"):
    reason: Literal["error", "aborted"]
    error_message: str
    usage: Usage


AssistantMessageEvent = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolcallStartEvent
    | ToolcallDeltaEvent
    | ToolcallEndEvent
    | DoneEvent
    | ErrorEvent
)


# --- retry events (emitted by providers, forwarded unchanged by the agent) ----------------------


class AutoRetryStart(Wire, tag_field="type", tag="auto_retry_start"):
    attempt: int
    max_attempts: int
    delay_ms: int
    error_message: str


class AutoRetryEnd(Wire, tag_field="type", tag="auto_retry_end"):
    success: bool
    attempt: int
    final_error: str | UnsetType = UNSET


ProviderEvent = AssistantMessageEvent | AutoRetryStart | AutoRetryEnd
