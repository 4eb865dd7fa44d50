"""What a workspace can make a resource load read, and how much: its files and its settings stay
inside it, the user's own places may point anywhere, and every load is bounded in entries per
source, bytes per file and time (pi_rpc/session/resources/limits.py; docs/SECURITY.md, "Context
files and resources")."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_rpc.session.resources import limits as resource_limits
from pi_rpc.session.resources.loading import ResourceOptions, Resources, load_resources

SECRET = "SECRET-MARKER-of-the-user"


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own, holding a private file and a skill of the user's."""
    home = tmp_path / "home"
    write(home / ".ssh" / "id_rsa", SECRET)
    write(home / "private-skills" / "mine" / "SKILL.md", f"---\nname: mine\ndescription: {SECRET}\n---\n")
    write(home / "private-prompts" / "notes.md", SECRET)
    monkeypatch.setenv("HOME", str(home))
    return home


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def load(cwd: Path, agent: Path) -> Resources:
    return load_resources(str(cwd), ResourceOptions(agent_dir=agent))


def everything_read(resources: Resources) -> str:
    parts = [f.content for f in resources.context_files]
    parts += [t.content for t in resources.prompt_templates] + [s.description for s in resources.skills]
    return "\n".join([*parts, resources.system_prompt or "", resources.append_system_prompt or ""])


def test_a_workspace_context_file_linking_out_is_skipped_and_the_next_name_read(tmp_path: Path, home: Path) -> None:
    cwd = tmp_path / "ws"
    cwd.mkdir()
    (cwd / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")
    write(cwd / "CLAUDE.md", "the project's own rules")
    resources = load(cwd, tmp_path / "agent")
    assert SECRET not in everything_read(resources)
    assert [f.content for f in resources.context_files] == ["the project's own rules"]
    assert resources.warnings == [f"resources: context file {cwd / 'AGENTS.md'} is skipped: it resolves outside {cwd}"]


def test_a_parents_context_file_may_link_inside_that_parent_and_the_users_anywhere(tmp_path: Path, home: Path) -> None:
    parent, agent = tmp_path / "parent", tmp_path / "agent"
    cwd = parent / "ws"
    write(parent / "shared" / "rules.md", "the parent's shared rules")
    cwd.mkdir(parents=True)
    (parent / "AGENTS.md").symlink_to(parent / "shared" / "rules.md")
    (cwd / "AGENTS.md").symlink_to(parent / "shared" / "rules.md")  # out of the workspace: skipped
    agent.mkdir()
    (agent / "AGENTS.md").symlink_to(home / ".ssh" / "id_rsa")  # the user's own choice
    resources = load(cwd, agent)
    assert [f.path for f in resources.context_files] == [str(agent / "AGENTS.md"), str(parent / "AGENTS.md")]
    assert len(resources.warnings) == 1 and str(cwd / "AGENTS.md") in resources.warnings[0]


def test_system_md_and_resource_folders_linking_out_of_the_workspace_are_skipped(tmp_path: Path, home: Path) -> None:
    cwd = tmp_path / "ws"
    (cwd / ".pi").mkdir(parents=True)
    (cwd / ".pi" / "SYSTEM.md").symlink_to(home / ".ssh" / "id_rsa")
    (cwd / ".pi" / "APPEND_SYSTEM.md").symlink_to(home / ".ssh" / "id_rsa")
    (cwd / ".pi" / "skills").symlink_to(home / "private-skills")
    write(cwd / ".pi" / "prompts" / "kept.md", "kept")
    (cwd / ".pi" / "prompts" / "key.md").symlink_to(home / ".ssh" / "id_rsa")
    (cwd / ".agents").mkdir()
    (cwd / ".agents" / "skills").symlink_to(home / "private-skills")
    resources = load(cwd, tmp_path / "agent")
    assert SECRET not in everything_read(resources)
    assert [t.name for t in resources.prompt_templates] == ["kept"] and resources.skills == []
    assert resources.system_prompt is None and resources.append_system_prompt is None
    skipped = sorted(w.split(" is skipped")[0].removeprefix("resources: ") for w in resources.warnings)
    assert skipped == sorted(
        str(cwd / p)
        for p in (".pi/SYSTEM.md", ".pi/APPEND_SYSTEM.md", ".pi/skills", ".pi/prompts/key.md", ".agents/skills")
    )


def test_workspace_settings_naming_places_outside_it_are_ignored_with_a_warning(tmp_path: Path) -> None:
    cwd = tmp_path / "ws"
    write(cwd / "team" / "review.md", "the team's review")
    (cwd / "escape").symlink_to(tmp_path / "home" / "private-prompts")
    settings = {"skills": ["~/private-skills"], "prompts": ["/usr", "../team", "../escape", "~/.ssh/id_rsa"]}
    write(cwd / ".pi" / "settings.json", json.dumps(settings))
    resources = load(cwd, tmp_path / "agent")
    assert SECRET not in everything_read(resources)
    assert [t.name for t in resources.prompt_templates] == ["review"] and resources.skills == []
    ignored = [w for w in resources.warnings if "is ignored" in w]
    assert [w.split(" entry ")[1].split(" is ignored")[0] for w in ignored] == [
        "'/usr'",
        "'../escape'",
        "'~/.ssh/id_rsa'",
        "'~/private-skills'",
    ]
    assert all("a workspace's settings may not name a place outside the workspace" in w for w in ignored)


def test_the_users_own_settings_may_name_anything(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    cwd.mkdir()
    write(agent / "settings.json", json.dumps({"skills": ["~/private-skills"], "prompts": ["~/private-prompts"]}))
    resources = load(cwd, agent)
    assert [s.name for s in resources.skills] == ["mine"]
    assert [t.name for t in resources.prompt_templates] == ["notes"] and resources.warnings == []


def test_a_huge_prompts_tree_is_cut_at_the_entries_per_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource_limits, "MAX_ENTRIES_PER_SOURCE", 50)
    cwd = tmp_path / "ws"
    for n in range(200):
        write(cwd / "docs" / f"{n // 20:02}" / f"t{n:03}.md", f"template {n}")
    write(cwd / ".pi" / "settings.json", json.dumps({"prompts": ["../docs"]}))
    resources = load(cwd, tmp_path / "agent")
    # Fifty entries looked at: the first folder's name and its twenty files, then the next ones'.
    assert 0 < len(resources.prompt_templates) < 50
    assert resources.warnings == [
        f"resources: stopped after 50 entries of {cwd / 'docs'} (the limit per source); the rest is not loaded"
    ]


def test_a_symlink_loop_inside_the_workspace_ends_at_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource_limits, "MAX_ENTRIES_PER_SOURCE", 30)  # before the OS's own 40 links
    cwd = tmp_path / "ws"
    write(cwd / "loop" / "a.md", "a")
    (cwd / "loop" / "again").symlink_to(cwd / "loop")
    write(cwd / ".pi" / "settings.json", json.dumps({"prompts": ["../loop"]}))
    resources = load(cwd, tmp_path / "agent")
    assert [t.name for t in resources.prompt_templates] == ["a"]
    assert any("the limit per source" in w for w in resources.warnings)


def test_a_file_is_read_up_to_the_byte_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resource_limits, "MAX_FILE_BYTES", 100)
    cwd = tmp_path / "ws"
    write(cwd / "AGENTS.md", "r" * 99 + "é and more")  # the cut falls inside the two-byte é
    resources = load(cwd, tmp_path / "agent")
    assert [f.content for f in resources.context_files] == ["r" * 99]
    assert resources.warnings == [
        f"resources: context file {cwd / 'AGENTS.md'} is read up to its first 100 bytes; the rest is left out"
    ]


def test_past_the_deadline_the_rest_is_left_out_with_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resource_limits, "DEADLINE_S", 0)
    cwd = tmp_path / "ws"
    write(cwd / "AGENTS.md", "rules")
    write(cwd / ".pi" / "prompts" / "a.md", "a")
    resources = load(cwd, tmp_path / "agent")
    assert resources.context_files == [] and resources.prompt_templates == []
    assert resources.warnings == ["resources: loading stopped after 0 s of work; the rest is not loaded"]


def test_a_busy_machine_does_not_cut_a_normal_workspaces_resources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both cores busy with other work: the clock runs on (a quarter second here between two looks
    at it) while the load gets little CPU. The load is bounded by its own work, so a few files are
    all read; only the clock's own, longer bound would cut them."""
    clock = iter(n * 0.25 for n in range(10_000))
    monkeypatch.setattr("pi_rpc.session.resources.limits.time.monotonic", lambda: next(clock))
    cwd = tmp_path / "ws"
    write(cwd / "AGENTS.md", "rules")
    for name in ("a", "b", "c"):
        write(cwd / ".pi" / "prompts" / f"{name}.md", name)
    resources = load(cwd, tmp_path / "agent")
    assert [f.content for f in resources.context_files] == ["rules"]
    assert sorted(t.content for t in resources.prompt_templates) == ["a", "b", "c"]
    assert resources.warnings == []


def test_a_file_system_that_keeps_the_load_waiting_is_cut_by_the_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(resource_limits, "WALL_DEADLINE_S", 0)
    cwd = tmp_path / "ws"
    write(cwd / ".pi" / "prompts" / "a.md", "a")
    resources = load(cwd, tmp_path / "agent")
    assert resources.prompt_templates == []
    assert resources.warnings == ["resources: loading stopped after 0 s waiting for files; the rest is not loaded"]


@pytest.mark.timeout(60)
def test_named_pipes_in_the_workspace_do_not_stall_the_load(tmp_path: Path) -> None:
    cwd = tmp_path / "ws"
    skills = cwd / ".pi" / "skills"
    write(skills / "deploy" / "SKILL.md", "---\nname: deploy\ndescription: ship it\n---\n")
    os.mkfifo(skills / ".gitignore")
    os.mkfifo(cwd / "AGENTS.md")
    resources = load(cwd, tmp_path / "agent")
    assert [s.name for s in resources.skills] == ["deploy"] and resources.context_files == []


def test_a_skill_swapped_for_a_symlink_after_the_load_is_not_expanded(tmp_path: Path, home: Path) -> None:
    cwd = tmp_path / "ws"
    skill = write(cwd / ".pi" / "skills" / "deploy" / "SKILL.md", "---\ndescription: ship it\n---\nRun deploy.")
    resources = load(cwd, tmp_path / "agent")
    assert "Run deploy." in resources.expand("/skill:deploy")
    skill.unlink()
    skill.symlink_to(home / ".ssh" / "id_rsa")  # as a command the model ran could leave it
    assert resources.expand("/skill:deploy now") == "/skill:deploy now"
