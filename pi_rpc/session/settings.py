"""User settings: `settings.json` in the user config folder, in the shape of Pi's settings file.

Read from `platformdirs.user_config_dir("pi-rpc")/settings.json`, else Pi's own
`~/.pi/agent/settings.json`, so a Pi user's `defaultTools` (spec 5.7) applies here too. Unknown
keys are ignored: a Pi settings file carries much that a daemon has no use for.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import msgspec
import platformdirs
from msgspec import UNSET, UnsetType

from pi_rpc.tools.registry import DEFAULT_ACTIVE_TOOLS

MIXED_MODIFIERS = "tool names cannot be mixed with +name or -name entries"


class SettingsError(ValueError):
    pass


class Settings(msgspec.Struct, rename="camel", kw_only=True):
    default_tools: list[str] | UnsetType = UNSET
    steering_mode: Literal["all", "one-at-a-time"] | UnsetType = UNSET
    follow_up_mode: Literal["all", "one-at-a-time"] | UnsetType = UNSET
    # Opt-in: bash/powershell children inherit the provider key variables (pi_rpc/tools/tool_env.py).
    pass_provider_keys_to_tools: bool = False


def settings_paths() -> list[Path]:
    return [Path(platformdirs.user_config_dir("pi-rpc")) / "settings.json",
            Path.home() / ".pi" / "agent" / "settings.json"]


def load_settings(path: Path | None = None) -> Settings:
    if path is None:
        path = next((p for p in settings_paths() if p.is_file()), None)
    if path is None:
        return Settings()
    try:
        return msgspec.json.decode(path.read_bytes(), type=Settings)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc


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
