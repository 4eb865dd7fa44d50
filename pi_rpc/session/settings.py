"""User settings: `settings.json` in the user config folder, in the shape of Pi's settings file.

Read from `platformdirs.user_config_dir("pi-rpc")/settings.json`, else Pi's own
`~/.pi/agent/settings.json`, so a Pi user's `defaultTools` (spec 5.7) applies here too. Unknown
keys are ignored: a Pi settings file carries much that a daemon has no use for.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import agent_config_paths, describe_decode_error, line_of_path
from pi_rpc.session.approvals import ApprovalPolicy
from pi_rpc.session.compaction import CompactionSettings
from pi_rpc.tools import DEFAULT_ACTIVE_TOOLS, McpServerEntry

_log = logging.getLogger(__name__)


MIXED_MODIFIERS = "tool names cannot be mixed with +name or -name entries"


class SettingsError(ValueError):
    pass


class PermissionSettings(msgspec.Struct, rename="camel", kw_only=True):
    """`permissions`: rules applied before any approval is asked (pi_rpc/session/approvals.py)."""

    allow: list[str] = msgspec.field(default_factory=list)
    deny: list[str] = msgspec.field(default_factory=list)
    # The policy of a session whose client does not choose one (user settings only).
    default_policy: ApprovalPolicy | UnsetType = UNSET
    # Seconds an approval request waits before the call is rejected; unset waits as long as it takes.
    timeout_seconds: float | UnsetType = UNSET


class LegacySkillSettings(msgspec.Struct, rename="camel", kw_only=True):
    """`skills` as older Pi releases wrote it: an object whose `customDirectories` Pi still reads."""

    custom_directories: list[str] = msgspec.field(default_factory=list)


class RetrySettings(msgspec.Struct, rename="camel", kw_only=True):
    """`retry`: how a failed model request is retried (Pi's settings)."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000


class Settings(msgspec.Struct, rename="camel", kw_only=True):
    default_tools: list[str] | UnsetType = UNSET
    # Where skills and prompt templates come from besides the default folders: paths and filters,
    # relative to the settings file's folder (pi_rpc/session/resource_discovery.py).
    skills: list[str] | LegacySkillSettings = msgspec.field(default_factory=list)
    prompts: list[str] = msgspec.field(default_factory=list)
    steering_mode: Literal["all", "one-at-a-time"] | UnsetType = UNSET
    follow_up_mode: Literal["all", "one-at-a-time"] | UnsetType = UNSET
    permissions: PermissionSettings = msgspec.field(default_factory=PermissionSettings)
    # Opt-in: bash/powershell children inherit the provider key variables (pi_rpc/tools/tool_env.py).
    pass_provider_keys_to_tools: bool = False
    # MCP tool servers by name, in the shape other agents read (pi_rpc/tools/mcp.py).
    mcp_servers: dict[str, McpServerEntry] = msgspec.field(default_factory=dict)
    compaction: CompactionSettings = msgspec.field(default_factory=CompactionSettings)
    retry: RetrySettings = msgspec.field(default_factory=RetrySettings)
    # The model and level a daemon starts on when the command line names none (Pi's keys).
    default_provider: str | UnsetType = UNSET
    default_model: str | UnsetType = UNSET
    default_thinking_level: str | UnsetType = UNSET  # read as text: newer Pi knows more levels
    # The models `cycle_model` walks when `--models` gives none (patterns, as `--models` takes).
    enabled_models: list[str] | UnsetType = UNSET
    # Pi's folder for session files, when neither `--session-dir` nor a variable names one
    # (pi_rpc/session/store.py, `chosen_session_root`).
    session_dir: str | UnsetType = UNSET


def skill_entries(settings: Settings) -> list[str]:
    skills = settings.skills
    return skills.custom_directories if isinstance(skills, LegacySkillSettings) else skills


def settings_paths() -> list[Path]:
    return agent_config_paths("settings.json")


def load_settings(path: Path | None = None) -> Settings:
    if path is None:
        path = next((p for p in settings_paths() if p.is_file()), None)
    if path is None:
        return Settings()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{path}: {exc.strerror or exc}") from exc
    try:
        return msgspec.json.decode(raw, type=Settings)
    except msgspec.ValidationError as exc:
        # Before DecodeError: ValidationError is its subclass. The message ends with `$.path`.
        line = line_of_path(raw, str(exc).rsplit("`", 2)[-2]) if str(exc).endswith("`") else None
        raise SettingsError(f"{path}{f', line {line}' if line else ''}: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise SettingsError(f"{path}, {describe_decode_error(raw, exc)}") from exc


def with_workspace_settings(settings: Settings, cwd: str) -> Settings:
    """`settings` with the workspace's own default model, level and scope over the user's, as Pi
    merges a project's `.pi/settings.json` (nothing else of that file is taken from it here). Its
    `sessionDir` is ignored, where Pi takes it: a repository must not choose where the user's
    conversations are written (into its own tree, to be committed with it)."""
    path = workspace_settings_path(cwd)
    if not path.is_file():
        return settings
    workspace = load_settings(path)
    merged = msgspec.structs.replace(settings)
    for name in ("default_provider", "default_model", "default_thinking_level", "enabled_models"):
        if getattr(workspace, name) is not UNSET:
            setattr(merged, name, getattr(workspace, name))
    if workspace.session_dir is not UNSET:
        _log.warning("%s: sessionDir is ignored in a workspace's settings (set it in your own settings.json)", path)
    return merged


def workspace_settings_path(cwd: str) -> Path:
    """A workspace's own settings, where Pi keeps a project's: `<workspace>/.pi/settings.json`."""
    return Path(cwd) / ".pi" / "settings.json"


def load_workspace_permissions(cwd: str) -> PermissionSettings:
    """The workspace's `permissions` rules. Its default policy is ignored: a repository must not
    be able to turn approvals off for whoever opens it."""
    path = workspace_settings_path(cwd)
    if not path.is_file():
        return PermissionSettings()
    permissions = load_settings(path).permissions
    permissions.default_policy = UNSET
    permissions.timeout_seconds = UNSET
    return permissions


def save_workspace_allow_rule(cwd: str, rule: str) -> None:
    """Add an allow rule to the workspace settings file, keeping everything else in it."""
    path = workspace_settings_path(cwd)
    try:
        data: dict[str, Any] = msgspec.json.decode(path.read_bytes()) if path.is_file() else {}
    except (OSError, msgspec.DecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a JSON object")
    permissions = data.setdefault("permissions", {})
    allow = permissions.setdefault("allow", [])
    if rule not in allow:
        allow.append(rule)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_bytes(msgspec.json.format(msgspec.json.encode(data), indent=2) + b"\n")
    os.replace(temporary, path)


def resolve_default_tools(entries: Sequence[str]) -> list[str]:
    """Plain names replace the defaults; `+name`/`-name` entries edit them, in order (spec 5.7)."""
    modifiers = [entry for entry in entries if entry[:1] in ("+", "-")]
    if not modifiers:
        return list(entries)
    if len(modifiers) != len(entries):
        raise SettingsError(MIXED_MODIFIERS)
    tools = list(DEFAULT_ACTIVE_TOOLS)
    for entry in entries:
        name = entry[1:]
        if entry[0] == "+" and name not in tools:
            tools.append(name)
        elif entry[0] == "-" and name in tools:
            tools.remove(name)
    return tools
