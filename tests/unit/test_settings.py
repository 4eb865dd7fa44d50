"""settings.json: defaultTools with plain names or +/- modifiers (spec 5.6, 5.7)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pi_rpc.session.configuration.settings import MIXED_MODIFIERS, SettingsError, load_settings, resolve_default_tools
from pi_rpc.tools.registry import ToolSelection


def test_plain_names_replace_the_defaults() -> None:
    assert resolve_default_tools(["read", "powershell", "edit", "write"]) == ["read", "powershell", "edit", "write"]


def test_modifiers_edit_the_defaults_in_order() -> None:
    assert resolve_default_tools(["+grep", "-bash"]) == ["read", "edit", "write", "grep"]


def test_mixing_names_and_modifiers_is_an_error() -> None:
    with pytest.raises(SettingsError, match=re.escape(MIXED_MODIFIERS)):
        resolve_default_tools(["read", "+grep"])


def test_selection_uses_default_tools_unless_an_allowlist_is_given() -> None:
    """spec 5.6: allowlist wins, then defaultTools, then the exclude list is removed."""
    assert ToolSelection(default_tools=["read", "grep"], exclude=["grep"]).initial_active() == ["read"]
    assert ToolSelection(tools=["ls"], default_tools=["read"]).initial_active() == ["ls"]
    assert ToolSelection(no_tools="all").initial_active() == []


def test_a_pi_settings_file_loads_and_unknown_keys_are_ignored(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"defaultTools": ["+ls"], "theme": "dark", "steeringMode": "all"}')
    settings = load_settings(path)
    assert settings.default_tools == ["+ls"] and settings.steering_mode == "all"


def test_a_broken_settings_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text('{"defaultTools": "read"}')
    with pytest.raises(SettingsError, match="settings.json"):
        load_settings(path)
