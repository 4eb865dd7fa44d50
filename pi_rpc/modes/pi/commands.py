"""Pi's `--mode rpc` commands and responses (spec 18.3-18.5), for clients written for Pi.

Commands are JSON lines tagged by `type`; every response is
`{id?, type: "response", command, success, data? | error?}`. Every command of Pi's npm release
0.73.1 is here, and newer Pi's `get_entries`, `get_tree`, `get_available_thinking_levels` and
`clear_queue` (protocol/PROTOCOL.md lists them among what this mode sends differently), and two of
pi-rpc's own that no Pi has: `get_checkpoints` and `rewind`.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import ImageContent, Model, ThinkingLevel, Wire
from pi_rpc.session import RewindTarget


class Command(Wire, tag_field="type", kw_only=True):
    id: str | int | UnsetType = UNSET


class Prompt(Command, tag="prompt", kw_only=True):
    message: str
    images: list[ImageContent] = msgspec.field(default_factory=list)
    streaming_behavior: Literal["steer", "followUp"] | UnsetType = UNSET


class Steer(Command, tag="steer", kw_only=True):
    message: str
    images: list[ImageContent] = msgspec.field(default_factory=list)


class FollowUp(Command, tag="follow_up", kw_only=True):
    message: str
    images: list[ImageContent] = msgspec.field(default_factory=list)


class Abort(Command, tag="abort", kw_only=True):
    pass


class NewSession(Command, tag="new_session", kw_only=True):
    parent_session: str | UnsetType = UNSET


class GetState(Command, tag="get_state", kw_only=True):
    pass


class GetMessages(Command, tag="get_messages", kw_only=True):
    pass


class SetModel(Command, tag="set_model", kw_only=True):
    provider: str
    model_id: str


class GetAvailableModels(Command, tag="get_available_models", kw_only=True):
    pass


class SetThinkingLevel(Command, tag="set_thinking_level", kw_only=True):
    level: ThinkingLevel


class GetAvailableThinkingLevels(Command, tag="get_available_thinking_levels", kw_only=True):
    pass


class SetSteeringMode(Command, tag="set_steering_mode", kw_only=True):
    mode: Literal["all", "one-at-a-time"]


class SetFollowUpMode(Command, tag="set_follow_up_mode", kw_only=True):
    mode: Literal["all", "one-at-a-time"]


class GetSessionStats(Command, tag="get_session_stats", kw_only=True):
    pass


class ClearQueue(Command, tag="clear_queue", kw_only=True):
    pass


class GetLastAssistantText(Command, tag="get_last_assistant_text", kw_only=True):
    pass


class CycleModel(Command, tag="cycle_model", kw_only=True):
    pass


class CycleThinkingLevel(Command, tag="cycle_thinking_level", kw_only=True):
    pass


class Compact(Command, tag="compact", kw_only=True):
    custom_instructions: str | UnsetType = UNSET


class SetAutoCompaction(Command, tag="set_auto_compaction", kw_only=True):
    enabled: bool


class SetAutoRetry(Command, tag="set_auto_retry", kw_only=True):
    enabled: bool


class AbortRetry(Command, tag="abort_retry", kw_only=True):
    pass


class Bash(Command, tag="bash", kw_only=True):
    command: str
    exclude_from_context: bool = False


class AbortBash(Command, tag="abort_bash", kw_only=True):
    pass


class ExportHtml(Command, tag="export_html", kw_only=True):
    output_path: str | UnsetType = UNSET


class SwitchSession(Command, tag="switch_session", kw_only=True):
    session_path: str


class Fork(Command, tag="fork", kw_only=True):
    entry_id: str


class Clone(Command, tag="clone", kw_only=True):
    pass


class GetForkMessages(Command, tag="get_fork_messages", kw_only=True):
    pass


class SetSessionName(Command, tag="set_session_name", kw_only=True):
    name: str


class GetCommands(Command, tag="get_commands", kw_only=True):
    pass


class GetEntries(Command, tag="get_entries", kw_only=True):
    since: str | UnsetType = UNSET


class GetTree(Command, tag="get_tree", kw_only=True):
    pass


# pi-rpc's own (not Pi's): the JSON-RPC `session/checkpoints` and `session/rewind`.
class GetCheckpoints(Command, tag="get_checkpoints", kw_only=True):
    pass


class Rewind(Command, tag="rewind", kw_only=True):
    entry_id: str
    restore: RewindTarget
    force: bool = False
    preview: bool = False


AnyCommand = (
    Prompt
    | Steer
    | FollowUp
    | Abort
    | NewSession
    | GetState
    | GetMessages
    | SetModel
    | GetAvailableModels
    | SetThinkingLevel
    | GetAvailableThinkingLevels
    | SetSteeringMode
    | SetFollowUpMode
    | GetSessionStats
    | ClearQueue
    | GetLastAssistantText
    | CycleModel
    | CycleThinkingLevel
    | Compact
    | SetAutoCompaction
    | SetAutoRetry
    | AbortRetry
    | Bash
    | AbortBash
    | ExportHtml
    | SwitchSession
    | Fork
    | Clone
    | GetForkMessages
    | SetSessionName
    | GetCommands
    | GetEntries
    | GetTree
    | GetCheckpoints
    | Rewind
)
COMMAND_TYPES: dict[str, type[Command]] = {cls.__struct_config__.tag: cls for cls in AnyCommand.__args__}


class Response(Wire, tag_field="type", tag="response", kw_only=True):
    command: str
    success: bool
    id: str | int | UnsetType = UNSET
    data: Any = UNSET
    error: str | UnsetType = UNSET


class Disposition(Wire):
    """What became of a `prompt`, `steer` or `follow_up` (Pi 1.6.0's response `data`): a run
    `started`, or the message `queued` into the running one. Pi's third, `handled` (an extension
    consumed the text), cannot happen here: pi-rpc has no extensions."""

    disposition: Literal["started", "queued", "handled"]


class ThinkingLevelChanged(Wire, tag_field="type", tag="thinking_level_changed", kw_only=True):
    """Sent before the response of a command that changed the level (Pi's session event)."""

    level: ThinkingLevel


class SessionInfoChanged(Wire, tag_field="type", tag="session_info_changed", kw_only=True):
    """Sent before the response of `set_session_name` (Pi's session event)."""

    name: str | UnsetType = UNSET


class PiState(Wire, kw_only=True):
    """`get_state` data, in Pi's shape (spec 18.5)."""

    model: Model | UnsetType = UNSET  # left out while no model is configured, as Pi's `model?`
    thinking_level: ThinkingLevel
    is_streaming: bool
    is_compacting: bool
    steering_mode: Literal["all", "one-at-a-time"]
    follow_up_mode: Literal["all", "one-at-a-time"]
    session_file: str | UnsetType = UNSET  # Pi's `sessionFile?`: absent when no file is kept (--no-session)
    session_id: str
    session_name: str | UnsetType = UNSET
    auto_compaction_enabled: bool
    message_count: int
    pending_message_count: int


class CycleModelResult(Wire, kw_only=True):
    model: Model
    thinking_level: ThinkingLevel
    is_scoped: bool = False


class ForkMessage(Wire, kw_only=True):
    """One user message a session can be forked at (`get_fork_messages`)."""

    entry_id: str
    text: str


class ForkResult(Wire, kw_only=True):
    text: str
    cancelled: bool = False


class SourceInfo(Wire, kw_only=True):
    """Where a slash command comes from, in the shape of Pi's `sourceInfo`."""

    path: str
    source: Literal["auto", "local"]  # auto: a folder searched by default; local: a settings or command-line path
    scope: Literal["user", "project", "temporary"]  # temporary: given on the command line
    origin: str = "top-level"
    base_dir: str | UnsetType = UNSET  # the `.pi`, agent or `.agents` folder (auto), the file's (command line)


class SlashCommandInfo(Wire, kw_only=True):
    """One `get_commands` entry (Pi's `RpcSlashCommand`)."""

    name: str
    description: str | UnsetType = UNSET
    source: Literal["extension", "prompt", "skill"]
    source_info: SourceInfo
