"""Pi's `--mode rpc` commands and responses (spec 16.3-16.5), for clients written for Pi.

Commands are JSON lines tagged by `type`; every response is
`{id?, type: "response", command, success, data? | error?}`. Only the commands that map onto this
daemon's session are here; the rest answer `Unknown command: {type}` as Pi does for unknown types.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai.types import ImageContent, Model, ThinkingLevel, Wire


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


AnyCommand = (
    Prompt | Steer | FollowUp | Abort | NewSession | GetState | GetMessages | SetModel | GetAvailableModels
    | SetThinkingLevel | GetAvailableThinkingLevels | SetSteeringMode | SetFollowUpMode | GetSessionStats
    | ClearQueue | GetLastAssistantText
)
COMMAND_TYPES: dict[str, type[Command]] = {
    cls.__struct_config__.tag: cls
    for cls in AnyCommand.__args__
}


class Response(Wire, tag_field="type", tag="response", kw_only=True):
    command: str
    success: bool
    id: str | int | UnsetType = UNSET
    data: Any = UNSET
    error: str | UnsetType = UNSET


class PiState(Wire, kw_only=True):
    """`get_state` data, in Pi's shape (spec 16.5)."""

    model: Model | UnsetType = UNSET  # left out while no model is configured, as Pi's `model?`
    thinking_level: ThinkingLevel
    is_streaming: bool
    is_compacting: bool
    steering_mode: Literal["all", "one-at-a-time"]
    follow_up_mode: Literal["all", "one-at-a-time"]
    session_file: str | None
    session_id: str
    auto_compaction_enabled: bool
    message_count: int
    pending_message_count: int
