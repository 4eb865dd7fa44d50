"""THE wire surface of the JSON-RPC mode: every params and result Struct, the method tables.

This module is the single input to schema generation (`python -m pi_rpc.modes.jsonrpc.schema`);
the agent events, messages and session reports are declared where they belong and re-exported here.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.agent import AgentEvent, ApprovalRequest
from pi_rpc.ai import ImageContent, Message, Model, ThinkingLevel, Wire
from pi_rpc.session import (
    ApprovalDecision,
    ApprovalPolicy,
    BashResult,
    CheckpointFile,
    CheckpointInfo,
    CompactionResult,
    PromptOutcome,
    RewindConflict,
    RewindDiff,
    RewindResult,
    RewindTarget,
    SessionEntry,
    SessionState,
    SessionStats,
    SessionSummary,
    SlashCommand,
    ToolInfo,
)
from pi_rpc.tools import McpServerConfig, McpServerStatus

PROTOCOL_VERSION = 1

# JSON-RPC error codes beyond the standard ones (-32099..-32000 is the server range).
BUSY = -32002  # a run is in progress and the request cannot be queued
NO_MODEL = -32003  # no model is configured: a prompt cannot run until one is set
NOT_FOUND = -32004  # a named model or session does not exist


class Empty(Wire, forbid_unknown_fields=False):
    """Params of a method that takes none (absent `params` is accepted too)."""


class ClientInfo(Wire, kw_only=True):
    name: str
    version: str | UnsetType = UNSET


class ClientCapabilities(Wire, kw_only=True):
    # The client answers `approval/request`: tool calls can wait for the user (see approvalPolicy).
    approvals: bool = False
    # The client answers `fs/readTextFile` and `fs/writeTextFile`: read, edit and write of text
    # files go through the editor's buffers, unsaved changes included.
    files: bool = False


class InitializeParams(Wire, kw_only=True):
    client_info: ClientInfo | UnsetType = UNSET
    capabilities: ClientCapabilities = msgspec.field(default_factory=ClientCapabilities)
    # The session's approval policy; default: the configured one, else "ask" when the client
    # declares approvals and "auto" when it does not.
    approval_policy: ApprovalPolicy | UnsetType = UNSET
    # MCP tool servers for this session, started before the answer (with settings.json's).
    mcp_servers: list[McpServerConfig] = msgspec.field(default_factory=list)


class ServerInfo(Wire, kw_only=True):
    name: str
    version: str


class InitializeResult(Wire, kw_only=True):
    server_info: ServerInfo
    protocol_version: int
    cwd: str
    model: Model | None  # null: no model is configured (no key, no --base-url, no --script)
    scripted: bool
    tools: list[ToolInfo]
    approval_policy: ApprovalPolicy
    # Every MCP server and how it fared; absent when none is configured.
    mcp_servers: list[McpServerStatus] | UnsetType = UNSET


class ImageInput(Wire, kw_only=True):
    # bytes: msgspec checks the base64 here, at the wire, so a broken image is a -32602 now rather
    # than a provider's 400 on every later request of the session.
    data: bytes
    mime_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]


class PromptParams(Wire, kw_only=True):
    message: str
    images: list[ImageInput] = msgspec.field(default_factory=list)
    streaming_behavior: Literal["steer", "followUp"] | UnsetType = UNSET


class QueueParams(Wire, kw_only=True):
    message: str
    images: list[ImageInput] = msgspec.field(default_factory=list)


class QueueContents(Wire, kw_only=True):
    steering: list[str]
    follow_up: list[str]


class ToolList(Wire, kw_only=True):
    tools: list[ToolInfo]


class BashParams(Wire, kw_only=True):
    command: str
    # Run it, but keep its output out of the conversation (Pi's `!!cmd`).
    exclude_from_context: bool = False


class CompactParams(Wire, kw_only=True):
    custom_instructions: str | UnsetType = UNSET


class CommandList(Wire, kw_only=True):
    commands: list[SlashCommand]


class SetActiveToolsParams(Wire, kw_only=True):
    names: list[str]


class ActiveTools(Wire, kw_only=True):
    active: list[str]


class MessageList(Wire, kw_only=True):
    messages: list[Message]


class ModelList(Wire, kw_only=True):
    models: list[Model]


class SetModelParams(Wire, kw_only=True):
    provider: str
    model_id: str


class NewSession(Wire, kw_only=True):
    session_id: str


class SessionList(Wire, kw_only=True):
    sessions: list[SessionSummary]


class LoadSessionParams(Wire, kw_only=True):
    session_id: str


class LoadedSession(Wire, kw_only=True):
    session_id: str
    message_count: int


class ForkPoint(Wire, kw_only=True):
    entry_id: str
    text: str


class ForkPoints(Wire, kw_only=True):
    fork_points: list[ForkPoint]


class ForkParams(Wire, kw_only=True):
    entry_id: str


class ForkedSession(Wire, kw_only=True):
    session_id: str
    text: str  # the user message forked at, for the client to edit and send again


class EntriesParams(Wire, kw_only=True):
    since: str | UnsetType = UNSET  # the last entry id the client has seen; absent: from the start
    limit: int | UnsetType = UNSET  # at most this many; absent: all


class EntryList(Wire, kw_only=True):
    entries: list[SessionEntry]
    leaf_id: str | None  # the branch's newest entry: the next `since`


class Checkpoints(Wire, kw_only=True):
    checkpoints: list[CheckpointInfo]  # one per user message of the branch, the most recent first


class RewindParams(Wire, kw_only=True):
    entry_id: str  # a user message of the branch (`session/checkpoints`): back to before it
    restore: RewindTarget  # "files", "conversation" (a fork there, as `session/fork`) or "both"
    force: bool = False  # also restore files changed by someone else since the agent's last change
    preview: bool = False  # change nothing: what a files rewind would restore, with diffs


class SetNameParams(Wire, kw_only=True):
    name: str


class SessionName(Wire, kw_only=True):
    name: str


class SetThinkingParams(Wire, kw_only=True):
    level: ThinkingLevel


class ThinkingLevels(Wire, kw_only=True):
    level: ThinkingLevel
    available: list[ThinkingLevel]


class SetApprovalPolicyParams(Wire, kw_only=True):
    policy: ApprovalPolicy


class ApprovalPolicyResult(Wire, kw_only=True):
    policy: ApprovalPolicy


class ReadTextFileParams(Wire, kw_only=True):
    path: str  # absolute


class TextFileContent(Wire, kw_only=True):
    content: str


class WriteTextFileParams(Wire, kw_only=True):
    path: str  # absolute
    content: str


class AgentEventNotification(Wire, kw_only=True):
    """`agent/event` notification: params is the event itself."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: Literal["agent/event"] = "agent/event"
    params: AgentEvent


def to_image(image: ImageInput) -> ImageContent:
    return ImageContent(data=base64.b64encode(image.data).decode("ascii"), mime_type=image.mime_type)


# method -> (params type, result type); result None means the result is JSON null.
METHODS: dict[str, tuple[type[Any], Any]] = {
    "initialize": (InitializeParams, InitializeResult),
    "shutdown": (Empty, None),
    "prompt": (PromptParams, PromptOutcome),
    "abort": (Empty, None),
    "steer": (QueueParams, None),
    "followUp": (QueueParams, None),
    "clearQueue": (Empty, QueueContents),
    "tools/list": (Empty, ToolList),
    "tools/setActive": (SetActiveToolsParams, ActiveTools),
    "commands/list": (Empty, CommandList),
    "bash": (BashParams, BashResult),
    "abortBash": (Empty, None),
    "compact": (CompactParams, CompactionResult),
    "state": (Empty, SessionState),
    "messages": (Empty, MessageList),
    "models/list": (Empty, ModelList),
    "model/set": (SetModelParams, Model),
    "thinking/set": (SetThinkingParams, ThinkingLevels),
    "session/new": (Empty, NewSession),
    "session/list": (Empty, SessionList),
    "session/load": (LoadSessionParams, LoadedSession),
    "session/stats": (Empty, SessionStats),
    "session/forkPoints": (Empty, ForkPoints),
    "session/fork": (ForkParams, ForkedSession),
    "session/clone": (Empty, NewSession),
    "session/entries": (EntriesParams, EntryList),
    "session/setName": (SetNameParams, SessionName),
    "session/checkpoints": (Empty, Checkpoints),
    "session/rewind": (RewindParams, RewindResult),
    "approval/setPolicy": (SetApprovalPolicyParams, ApprovalPolicyResult),
}

# server -> client requests (only to a client that declared the matching capability)
SERVER_REQUESTS: dict[str, tuple[type[Any], Any]] = {
    "approval/request": (ApprovalRequest, ApprovalDecision),
    "fs/readTextFile": (ReadTextFileParams, TextFileContent),
    "fs/writeTextFile": (WriteTextFileParams, None),
}

# client -> server notifications
CLIENT_NOTIFICATIONS: dict[str, type[Any]] = {"exit": Empty}

# server -> client notifications
SERVER_NOTIFICATIONS: dict[str, Any] = {"agent/event": AgentEvent}

__all__ = [
    "PROTOCOL_VERSION",
    "BUSY",
    "NOT_FOUND",
    "METHODS",
    "CLIENT_NOTIFICATIONS",
    "SERVER_NOTIFICATIONS",
    "SERVER_REQUESTS",
    "ClientCapabilities",
    "SetApprovalPolicyParams",
    "ApprovalPolicyResult",
    "ReadTextFileParams",
    "TextFileContent",
    "WriteTextFileParams",
    "ApprovalRequest",
    "ApprovalDecision",
    "AgentEvent",
    "Message",
    "Model",
    "PromptOutcome",
    "SessionState",
    "ToolInfo",
    "Empty",
    "ClientInfo",
    "InitializeParams",
    "ServerInfo",
    "InitializeResult",
    "ImageInput",
    "PromptParams",
    "QueueParams",
    "QueueContents",
    "ToolList",
    "SetActiveToolsParams",
    "ActiveTools",
    "MessageList",
    "ModelList",
    "SetModelParams",
    "NewSession",
    "SessionList",
    "LoadSessionParams",
    "LoadedSession",
    "SessionStats",
    "SessionSummary",
    "SetThinkingParams",
    "ThinkingLevels",
    "AgentEventNotification",
    "to_image",
    "McpServerConfig",
    "McpServerStatus",
    "CommandList",
    "SlashCommand",
    "BashParams",
    "BashResult",
    "CompactParams",
    "CompactionResult",
    "ForkPoint",
    "ForkPoints",
    "ForkParams",
    "ForkedSession",
    "EntriesParams",
    "EntryList",
    "SessionEntry",
    "SetNameParams",
    "SessionName",
    "CheckpointFile",
    "CheckpointInfo",
    "Checkpoints",
    "RewindConflict",
    "RewindDiff",
    "RewindParams",
    "RewindResult",
]
