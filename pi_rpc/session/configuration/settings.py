"""User settings: `settings.json` in the user config folder, in the shape of Pi's settings file.

Read from `platformdirs.user_config_dir("pi-rpc")/settings.json`, else Pi's own
`~/.pi/agent/settings.json`, so a Pi user's `defaultTools` (spec 5.7) applies here too. Unknown
keys are ignored: a Pi settings file carries much that a daemon has no use for.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import agent_config_paths, describe_decode_error, line_of_path
from pi_rpc.session.approvals.gate import ApprovalPolicy
from pi_rpc.session.checkpoints.snapshots import CheckpointSettings
from pi_rpc.session.compaction.planning import CompactionSettings
from pi_rpc.tools import DEFAULT_ACTIVE_TOOLS, McpServerEntry

_log = logging.getLogger(__name__)


MIXED_MODIFIERS = "tool names cannot be mixed with +name or -name entries"


class SettingsError(ValueError):
    pass


class PermissionSettings(msgspec.Struct, rename="camel", kw_only=True):
    """`permissions`: rules applied before any approval is asked (pi_rpc/session/approvals/gate.py)."""

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
    # relative to the settings file's folder (pi_rpc/session/resources/discovery.py).
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
    # Checkpoints' limits and whether shell commands are snapshotted (user settings only: a
    # repository must not turn off what lets the user undo the agent).
    checkpoints: CheckpointSettings = msgspec.field(default_factory=CheckpointSettings)
    # The model and level a daemon starts on when the command line names none (Pi's keys).
    default_provider: str | UnsetType = UNSET
    default_model: str | UnsetType = UNSET
    default_thinking_level: str | UnsetType = UNSET  # read as text: newer Pi knows more levels
    # The models `cycle_model` walks when `--models` gives none (patterns, as `--models` takes).
    enabled_models: list[str] | UnsetType = UNSET
    # Pi's folder for session files, when neither `--session-dir` nor a variable names one
    # (pi_rpc/session/storage/store.py, `chosen_session_root`).
    session_dir: str | UnsetType = UNSET
    # Whether a workspace nobody decided about is trusted (Pi's key; user settings only):
    # "always", "never", or "ask" (Pi's default), which a daemon without a prompt reads as not
    # trusted (pi_rpc/session/configuration/trust.py).
    default_project_trust: str | UnsetType = UNSET


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


# What a workspace's own settings may set whether or not it is trusted: harmless choices.
_HARMLESS = ("default_provider", "default_model", "default_thinking_level", "enabled_models")


def with_workspace_settings(settings: Settings, cwd: str, *, warn: bool = True) -> Settings:
    """`settings` with the workspace's own default model, level and scope over the user's, as Pi
    merges a project's `.pi/settings.json` (what it may loosen is `workspace_settings`'s). Its
    `sessionDir` is ignored, where Pi takes it: a repository must not choose where the user's
    conversations are written (into its own tree, to be committed with it); `warn` says so in the
    log (False where the folder's session is made next, by session/configuration/factory.py, which says it)."""
    path = workspace_settings_path(cwd)
    if not path.is_file():
        return settings
    workspace = load_settings(path)
    merged = msgspec.structs.replace(settings)
    for name in _HARMLESS:
        if getattr(workspace, name) is not UNSET:
            setattr(merged, name, getattr(workspace, name))
    if workspace.session_dir is not UNSET and warn:
        _log.warning("%s: sessionDir is ignored in a workspace's settings (set it in your own settings.json)", path)
    return merged


class WorkspaceSettings(msgspec.Struct):
    """A folder's settings: the user's with what the workspace's own file may set
    (pi_rpc/session/configuration/trust.py)."""

    settings: Settings  # the merged settings; permissions are the user's own
    allow: list[str]  # the workspace's allow rules that apply (a trusted folder's only)
    deny: list[str]  # the workspace's deny rules: they always apply, they only tighten
    default_policy: ApprovalPolicy | None  # a trusted workspace's defaultPolicy
    ignored: list[str]  # what an untrusted workspace's file says that is not applied, by key


def workspace_settings(user: Settings, cwd: str, trusted: bool) -> WorkspaceSettings:
    """What `cwd`'s `.pi/settings.json` adds to the user's `settings`. Deny rules and the harmless
    defaults always apply; allow rules, `defaultPolicy` and `mcpServers` only once the user
    trusts the folder, else they are listed in `ignored`. Its `timeoutSeconds` never applies: a
    repository must not make approvals lapse into refusals or waits of its choosing."""
    merged = with_workspace_settings(user, cwd)
    path = workspace_settings_path(cwd)
    if not path.is_file():
        return WorkspaceSettings(merged, [], [], None, [])
    workspace = load_settings(path)
    permissions = workspace.permissions
    loosening = {
        "permissions.allow": bool(permissions.allow),
        "permissions.defaultPolicy": permissions.default_policy is not UNSET,
        "mcpServers": bool(workspace.mcp_servers),
    }
    if not trusted:
        ignored = [key for key, present in loosening.items() if present]
        return WorkspaceSettings(merged, [], list(permissions.deny), None, ignored)
    merged.mcp_servers = {**merged.mcp_servers, **workspace.mcp_servers}
    policy = None if permissions.default_policy is UNSET else permissions.default_policy
    return WorkspaceSettings(merged, list(permissions.allow), list(permissions.deny), policy, [])


def workspace_settings_path(cwd: str) -> Path:
    """A workspace's own settings, where Pi keeps a project's: `<workspace>/.pi/settings.json`."""
    return Path(cwd) / ".pi" / "settings.json"


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
