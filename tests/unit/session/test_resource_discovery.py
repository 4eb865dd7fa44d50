"""Where skills and prompt templates come from, in Pi's order of precedence
(pi_rpc/session/resources/discovery.py, spec 17.3-17.7): project before user, the `.agents/skills`
folders, settings entries with their filters, command-line paths last, and each one's origin."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from pi_rpc.session.resources.discovery import ResourceOrigin
from pi_rpc.session.resources.loading import ResourceOptions, Resources, load_resources


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def skill(folder: Path, name: str) -> Path:
    return write(folder / name / "SKILL.md", f"---\nname: {name}\ndescription: {folder.name} {name}\n---\n")


def load(cwd: Path, agent: Path, **options: object) -> Resources:
    return load_resources(str(cwd), ResourceOptions(agent_dir=agent, **options))  # type: ignore[arg-type]


def listed(resources: Resources) -> list[tuple[str, str, str]]:
    return [(c.name, c.origin.source, c.origin.scope) for c in resources.commands()]


def test_agents_skill_folders_from_the_workspace_up_to_the_git_root_then_the_home_one(
    tmp_path: Path, home: Path
) -> None:
    repo, agent = tmp_path / "outer" / "repo", tmp_path / "agent"
    cwd = repo / "pkg" / "app"
    (repo / ".git").mkdir(parents=True)
    skill(tmp_path / "outer" / ".agents" / "skills", "above-the-repo")  # past the git root: not searched
    skill(repo / ".agents" / "skills", "repo")
    skill(cwd / ".agents" / "skills", "app")
    write(cwd / ".agents" / "skills" / "loose.md", "---\nname: loose\ndescription: top-level .md\n---\n")
    skill(cwd / ".agents" / "skills", "shared")
    skill(cwd / ".pi" / "skills", "shared")  # .pi/skills comes first
    skill(home / ".agents" / "skills", "mine")
    skill(home / ".agents" / "skills", "app")  # the project's wins
    skill(agent / "skills", "agent-folder")
    resources = load(cwd, agent)
    assert listed(resources) == [
        ("skill:shared", "auto", "project"),
        ("skill:app", "auto", "project"),
        ("skill:repo", "auto", "project"),
        ("skill:agent-folder", "auto", "user"),
        ("skill:mine", "auto", "user"),
    ]
    assert resources.skills[0].path == str(cwd / ".pi" / "skills" / "shared" / "SKILL.md")
    assert resources.skills[1].path == str(cwd / ".agents" / "skills" / "app" / "SKILL.md")
    # Without a repository the search goes on to the top.
    (repo / ".git").rmdir()
    assert "skill:above-the-repo" in [name for name, _, _ in listed(load(cwd, agent))]


def test_an_agents_folders_skills_have_that_folder_as_their_base_as_in_pi_16(tmp_path: Path, home: Path) -> None:
    """Pi 1.6.0 names an `.agents` folder as its skills' `baseDir`, and matches the settings' patterns
    against it (0.73.1 and pi-rpc before: the `.pi` or agent folder)."""
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    skill(cwd / ".agents" / "skills", "app")
    skill(home / ".agents" / "skills", "mine")
    skill(home / ".agents" / "skills", "dropped")
    write(agent / "settings.json", json.dumps({"skills": ["-skills/dropped/SKILL.md"]}))
    resources = load(cwd, agent)
    assert [(c.name, c.origin.base_dir) for c in resources.commands()] == [
        ("skill:app", str(cwd / ".agents")),
        ("skill:mine", str(home / ".agents")),
    ]


def test_settings_entries_are_relative_to_their_settings_folder_and_come_before_its_folders(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    skill(cwd / "team-skills", "deploy")
    skill(cwd / ".pi" / "skills", "deploy")  # the project's settings entry wins over its folder
    write(cwd / "team-prompts" / "review.md", "team review")
    write(cwd / "team-prompts" / "sub" / "deep.md", "a folder entry is searched below its top")
    write(cwd / ".pi" / "settings.json", json.dumps({"skills": ["../team-skills"], "prompts": ["../team-prompts"]}))
    skill(agent / "more", "lint")
    write(tmp_path / "home" / "notes" / "standup.md", "standup notes")
    write(agent / "settings.json", json.dumps({"skills": ["more"], "prompts": ["~/notes/standup.md"]}))
    resources = load(cwd, agent)
    assert listed(resources) == [
        ("review", "local", "project"),
        ("deep", "local", "project"),
        ("standup", "local", "user"),
        ("skill:deploy", "local", "project"),
        ("skill:lint", "local", "user"),
    ]
    assert resources.skills[0].path == str(cwd / "team-skills" / "deploy" / "SKILL.md")
    assert {c.origin.base_dir for c in resources.commands()} == {None}  # Pi gives a settings entry none


def test_settings_patterns_filter_their_entries_and_turn_off_what_the_folders_found(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    for name in ("keep", "old", "legacy", "pinned"):
        skill(agent / "skills", name)
    write(agent / "extra" / "a.md", "a")
    write(agent / "extra" / "b.txt.md", "b")
    settings = {
        "skills": ["!old", "!legacy", "+skills/legacy", "-skills/pinned/SKILL.md"],
        "prompts": ["extra", "extra/*.txt.md"],
    }
    write(agent / "settings.json", json.dumps(settings))
    names = [name for name, _, _ in listed(load(cwd, agent))]
    # `!` drops by name, `+` brings back an exact path, `-` drops one; a plain glob keeps only
    # the matching files of the entries.
    assert names == ["b.txt", "skill:keep", "skill:legacy"]


def test_older_pis_skills_object_is_read_for_its_custom_directories(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    skill(tmp_path / "custom", "old-style")
    write(agent / "settings.json", json.dumps({"skills": {"customDirectories": ["../custom"]}}))
    assert listed(load(cwd, agent)) == [("skill:old-style", "local", "user")]


def test_command_line_paths_come_last_and_are_temporary(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    skill(cwd / ".pi" / "skills", "deploy")
    cli_skills = tmp_path / "cli"
    skill(cli_skills, "deploy")  # loses to the project's, as in Pi
    skill(cli_skills, "extra")
    write(tmp_path / "cli-prompts" / "fix.md", "fix it")
    resources = load(cwd, agent, skill_paths=["../cli"], prompt_template_paths=[str(tmp_path / "cli-prompts")])
    assert listed(resources) == [
        ("fix", "local", "temporary"),
        ("skill:deploy", "auto", "project"),
        ("skill:extra", "local", "temporary"),
    ]
    origins = {c.name: c.origin for c in resources.commands()}
    assert origins["fix"] == ResourceOrigin("local", "temporary", str(tmp_path / "cli-prompts"))
    assert origins["skill:extra"] == ResourceOrigin("local", "temporary", str(cli_skills / "extra"))
    assert origins["skill:deploy"] == ResourceOrigin("auto", "project", str(cwd / ".pi"))
    # --no-skills / --no-prompt-templates: only the command line's, settings entries included.
    write(cwd / ".pi" / "settings.json", json.dumps({"skills": ["skills"]}))
    bare = load(cwd, agent, skills=False, skill_paths=["../cli"], prompt_templates=False)
    assert listed(bare) == [("skill:deploy", "local", "temporary"), ("skill:extra", "local", "temporary")]


def test_a_settings_file_that_does_not_parse_leaves_out_only_its_entries(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    skill(cwd / ".pi" / "skills", "still-here")
    write(cwd / ".pi" / "settings.json", '{"skills": "not a list"}')
    with caplog.at_level(logging.WARNING):
        assert listed(load(cwd, agent)) == [("skill:still-here", "auto", "project")]
    assert "skills and prompt templates of" in caplog.text and "settings.json" in caplog.text


def test_prompt_folders_skip_hidden_and_ignored_files_but_a_command_line_folder_does_not(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    prompts = cwd / ".pi" / "prompts"
    for name in ("kept.md", ".hidden.md", "ignored.md", "sub/nested.md"):
        write(prompts / name, name)
    write(prompts / ".gitignore", "ignored.md\n")
    assert [name for name, _, _ in listed(load(cwd, agent))] == ["kept"]
    given = load(cwd, agent, prompt_templates=False, prompt_template_paths=[".pi/prompts"])
    assert [name for name, _, _ in listed(given)] == [".hidden", "ignored", "kept"]


def test_a_skill_reached_twice_through_a_symlink_counts_once(tmp_path: Path) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    target = skill(cwd / ".agents" / "skills", "linked").parent
    (cwd / ".pi" / "skills").mkdir(parents=True)
    (cwd / ".pi" / "skills" / "alias").symlink_to(target)
    resources = load(cwd, agent)
    assert listed(resources) == [("skill:linked", "auto", "project")]
    assert resources.skills[0].path == str(cwd / ".pi" / "skills" / "alias" / "SKILL.md")


def test_a_workspace_symlink_to_a_skill_of_the_users_is_skipped_and_the_users_place_keeps_it(
    tmp_path: Path,
) -> None:
    cwd, agent = tmp_path / "ws", tmp_path / "agent"
    target = skill(agent / "skills", "linked").parent
    (cwd / ".pi" / "skills").mkdir(parents=True)
    (cwd / ".pi" / "skills" / "alias").symlink_to(target)
    resources = load(cwd, agent)
    assert listed(resources) == [("skill:linked", "auto", "user")]
    assert resources.warnings == [
        f"resources: {cwd / '.pi' / 'skills' / 'alias'} is skipped: it resolves outside {cwd}"
    ]
