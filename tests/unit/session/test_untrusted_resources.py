"""An untrusted workspace's own resources, as Pi 1.6.0 gates a project's on trust: not loaded, named
in the folder's warning, and a folder holding any of them needs trust (session/resources/loading.py,
session/configuration/trust.py); what is the user's, the command line's or a context file still loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_rpc.session import needs_trust, untrusted_resources
from pi_rpc.session.resources.loading import ResourceOptions, load_resources

from ..modes.workspace_folders import daemon_config


@pytest.fixture(autouse=True)
def own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A home and config folders of the test's own: `~/.agents/skills` and the trust list are read."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def skill(folder: Path, name: str) -> Path:
    return write(folder / name / "SKILL.md", f"---\nname: {name}\ndescription: {name}\n---\nDo {name}.")


def project(tmp_path: Path) -> Path:
    """A git repository's workspace with resources of its own in every place trust gates, the
    user's own beside them (the user's settings, which apply either way, turn one off)."""
    repo, workspace = tmp_path / "repo", tmp_path / "repo" / "ws"
    (repo / ".git").mkdir(parents=True)
    write(workspace / ".pi" / "SYSTEM.md", "the repository's system prompt")
    write(workspace / ".pi" / "APPEND_SYSTEM.md", "the repository's addition")
    write(workspace / ".pi" / "prompts" / "x.md", "Do x.")
    skill(workspace / ".pi" / "skills", "s")
    skill(workspace / ".agents" / "skills", "a")
    skill(repo / ".agents" / "skills", "above")
    write(workspace / "tpl" / "t.md", "Do t.")
    skill(workspace / "more", "entry")
    settings = {"prompts": ["../tpl"], "skills": ["../more"]}
    write(workspace / ".pi" / "settings.json", json.dumps(settings))
    write(workspace / "AGENTS.md", "the project's rules")
    agent = tmp_path / "agent"
    write(agent / "SYSTEM.md", "the user's system prompt")
    write(agent / "prompts" / "mine.md", "Mine.")
    write(agent / "prompts" / "off.md", "Off.")
    write(agent / "settings.json", json.dumps({"prompts": ["!off.md"]}))
    skill(tmp_path / "home" / ".agents" / "skills", "users")
    return workspace


def test_an_untrusted_workspace_loads_its_context_files_and_the_users_own_only(tmp_path: Path) -> None:
    workspace = project(tmp_path)
    given = ResourceOptions(
        agent_dir=tmp_path / "agent", skill_paths=[".pi/skills/s"], workspace_resources=False
    )  # the command line may still name the workspace's files
    loaded = load_resources(str(workspace), given)
    assert [t.name for t in loaded.prompt_templates] == ["mine"]
    assert [s.name for s in loaded.skills] == ["users", "s"]
    assert loaded.system_prompt == "the user's system prompt" and loaded.append_system_prompt is None
    assert [f.content for f in loaded.context_files] == ["the project's rules"]
    trusted = load_resources(str(workspace), ResourceOptions(agent_dir=tmp_path / "agent"))
    assert [t.name for t in trusted.prompt_templates] == ["t", "x", "mine"]
    assert [s.name for s in trusted.skills] == ["entry", "s", "a", "above", "users"]
    assert trusted.system_prompt == "the repository's system prompt"


def test_the_warning_names_what_the_workspace_holds_and_what_is_turned_off_anyway_it_does_not(
    tmp_path: Path,
) -> None:
    workspace = project(tmp_path)
    assert untrusted_resources(str(workspace), ResourceOptions()) == [
        ".pi/skills",
        ".agents/skills",
        str(workspace.parent / ".agents" / "skills"),
        ".pi/prompts",
        ".pi/SYSTEM.md",
        ".pi/APPEND_SYSTEM.md",
        "skills/prompts entries",
    ]
    no_skills = ResourceOptions(skills=False)
    assert untrusted_resources(str(workspace), no_skills) == [
        ".pi/prompts",
        ".pi/SYSTEM.md",
        ".pi/APPEND_SYSTEM.md",
        "prompts entries",
    ]
    assert untrusted_resources(str(tmp_path / "home"), ResourceOptions()) == []  # ~/.agents/skills is the user's


@pytest.mark.parametrize(
    "entry",
    ["settings.json", "mcp.json", "extensions/", "skills/", "prompts/", "themes/", "SYSTEM.md", "APPEND_SYSTEM.md"],
)
def test_a_folder_holding_any_resource_of_its_own_needs_trust(tmp_path: Path, entry: str) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    assert not needs_trust(str(workspace))
    where = workspace / ".pi" / entry.rstrip("/")
    where.mkdir(parents=True) if entry.endswith("/") else write(where, "{}")
    assert needs_trust(str(workspace))


def test_an_agents_skills_folder_above_needs_trust_but_the_users_own_does_not(tmp_path: Path) -> None:
    inner = tmp_path / "home" / "src" / "app"
    inner.mkdir(parents=True)
    (tmp_path / "home" / ".agents" / "skills").mkdir(parents=True)
    assert not needs_trust(str(inner))
    (tmp_path / "home" / "src" / ".agents" / "skills").mkdir(parents=True)
    assert needs_trust(str(inner))


def test_each_folder_a_daemon_opens_loads_its_own_resources_as_far_as_it_is_trusted(tmp_path: Path) -> None:
    workspace = project(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    write(elsewhere / "README.md", "nothing of its own to trust")
    untrusted = daemon_config(tmp_path, workspace)
    assert untrusted.resources.workspace_resources is False
    assert untrusted.open_folder is not None
    assert untrusted.open_folder(str(elsewhere)).resources.workspace_resources is True  # ACP's session/new
    trusted = daemon_config(tmp_path, workspace, "--approve")
    assert trusted.resources.workspace_resources is True


def test_the_folders_warning_names_its_settings_and_resources_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    workspace = project(tmp_path)
    settings = json.loads((workspace / ".pi" / "settings.json").read_text())
    write(workspace / ".pi" / "settings.json", json.dumps({**settings, "permissions": {"allow": ["bash"]}}))
    config = daemon_config(tmp_path, workspace)
    assert config.open_folder is not None
    config.open_folder(str(workspace))  # a second session of the same folder
    [warning] = [r.getMessage() for r in caplog.records if "not trusted" in r.getMessage()]
    assert f"{workspace / '.pi' / 'settings.json'}: permissions.allow ignored; {workspace}: .pi/skills," in warning
    assert ".pi/APPEND_SYSTEM.md, skills/prompts entries not loaded: the folder is not trusted" in warning
