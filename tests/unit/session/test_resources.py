"""Context files, prompt templates and skills as Pi loads and expands them (protocol/PROTOCOL.md,
"Project context: context files, prompt templates, skills")."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.session.resources.context_files import load_context_files
from pi_rpc.session.resources.frontmatter import parse_frontmatter
from pi_rpc.session.resources.loading import ResourceOptions, load_resources
from pi_rpc.session.resources.prompt_templates import expand_prompt_template, parse_command_args, substitute_args
from pi_rpc.session.resources.skills import expand_skill_command, format_skills


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: `~/.agents/skills` is searched for skills."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_context_files_global_first_then_root_down_to_the_workspace(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    write(agent / "CLAUDE.md", "global")
    write(tmp_path / "a" / "AGENTS.md", "a")
    write(tmp_path / "a" / "b" / "c" / "CLAUDE.md", "c")
    write(tmp_path / "a" / "b" / "c" / "CLAUDE.MD", "c upper")
    files = load_context_files(str(tmp_path / "a" / "b" / "c"), agent)
    assert [f.content for f in files] == ["global", "a", "c"]


def test_the_agent_folder_inside_the_workspace_counts_once(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "once")
    assert [f.content for f in load_context_files(str(tmp_path), tmp_path)] == ["once"]


def test_frontmatter_reads_flat_scalars_and_strips_the_body() -> None:
    keys, body = parse_frontmatter("---\nname: 'x y'\ndescription: \"Do it\"\nflag: true\nlist:\n  - a\n---\n\nBody\n")
    assert keys == {"name": "x y", "description": "Do it", "flag": True} and body == "Body"
    assert parse_frontmatter("no block") == ({}, "no block")


def test_project_templates_come_first_and_win_a_name_and_the_description_falls_back(tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "ws"
    write(agent / "prompts" / "one.md", "---\ndescription: First\n---\nDo $1")
    write(agent / "prompts" / "both.md", "the user's")
    write(cwd / ".pi" / "prompts" / "two.md", "\n" + "x" * 70)
    write(cwd / ".pi" / "prompts" / "both.md", "the project's")
    write(cwd / ".pi" / "prompts" / "notes.txt", "not a template")
    templates = load_resources(str(cwd), ResourceOptions(agent_dir=agent)).prompt_templates
    # As in Pi: the project's folder before the user's, and a name met again is dropped.
    assert [(t.name, t.origin.scope, t.description) for t in templates] == [
        ("both", "project", "the project's"),
        ("two", "project", "x" * 60 + "..."),
        ("one", "user", "First"),
    ]
    assert expand_prompt_template("/both", templates) == "the project's"
    assert expand_prompt_template("/one 'a b' c", templates) == "Do a b"
    assert expand_prompt_template("/three x", templates) == "/three x"
    assert expand_prompt_template("one x", templates) == "one x"


def test_argument_placeholders() -> None:
    assert parse_command_args("a \"b c\"\t'd' ") == ["a", "b c", "d"]
    assert substitute_args("$1|$3|${@:2}|${@:1:2}|$@|$ARGUMENTS", ["x", "y"]) == "x||y|x y|x y|x y"


@settings(max_examples=60, derandomize=True)
@given(
    st.lists(
        st.text(alphabet="ab$@1{}: ", min_size=1, max_size=6).filter(lambda s: s.strip() == s and " " not in s),
        max_size=4,
    )
)
def test_substituted_values_are_never_substituted_again(args: list[str]) -> None:
    assert substitute_args("$1", args) == (args[0] if args else "")
    assert substitute_args("$ARGUMENTS", args) == " ".join(args)


def test_skills_are_loaded_listed_and_expanded(tmp_path: Path) -> None:
    agent, cwd = tmp_path / "agent", tmp_path / "ws"
    write(agent / "skills" / "pdf" / "SKILL.md", "---\ndescription: Read <PDF> files\n---\nUse pdftotext.")
    write(agent / "skills" / "pdf" / "nested" / "SKILL.md", "---\ndescription: never loaded\n---\n")
    write(
        cwd / ".pi" / "skills" / "quick.md",
        "---\nname: quick\ndescription: Quick one\ndisable-model-invocation: true\n---\nBe quick.",
    )
    write(cwd / ".pi" / "skills" / "nodesc" / "SKILL.md", "no front matter")
    write(cwd / ".pi" / "skills" / ".hidden" / "SKILL.md", "---\ndescription: hidden\n---\n")
    skills = load_resources(str(cwd), ResourceOptions(agent_dir=agent)).skills
    assert [(s.name, s.origin.scope) for s in skills] == [("quick", "project"), ("pdf", "user")]
    listed = format_skills(skills)
    assert "<description>Read &lt;PDF&gt; files</description>" in listed and "quick" not in listed
    expanded = expand_skill_command("/skill:pdf report.pdf", skills)
    assert expanded.startswith(f'<skill name="pdf" location="{agent / "skills" / "pdf" / "SKILL.md"}">')
    assert "Use pdftotext.\n</skill>\n\nreport.pdf" in expanded
    assert expand_skill_command("/skill:nope", skills) == "/skill:nope"


def test_switches_turn_each_kind_off(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "ctx")
    write(tmp_path / ".pi" / "prompts" / "t.md", "t")
    write(tmp_path / "extra.md", "explicit")
    options = ResourceOptions(
        agent_dir=tmp_path / "none",
        context_files=False,
        prompt_templates=False,
        prompt_template_paths=["extra.md"],
        skills=False,
    )
    resources = load_resources(str(tmp_path), options)
    assert resources.context_files == [] and [t.name for t in resources.prompt_templates] == ["extra"]
    assert resources.expand("/extra") == "explicit"


def test_skill_discovery_skips_what_ignore_files_in_the_skills_folder_ignore(tmp_path: Path) -> None:
    skills_dir = tmp_path / "ws" / ".pi" / "skills"
    for name in ("kept", "built", "scratch", "vendored", "again"):
        write(skills_dir / name / "SKILL.md", f"---\ndescription: {name}\n---\n")
    write(skills_dir / "vendored" / "inner" / "SKILL.md", "---\ndescription: inner\n---\n")
    write(skills_dir / "draft.md", "---\nname: draft\ndescription: draft\n---\n")
    write(skills_dir / "draft-final.md", "---\nname: final\ndescription: final\n---\n")
    write(skills_dir / ".gitignore", "# build output\nbuilt/\n/scratch\ndraft*.md\n!draft-final.md\n")
    write(skills_dir / ".ignore", "vendored/SKILL.md\n")  # not a skill root: searched below instead
    write(skills_dir / "again" / ".fdignore", "SKILL.md\n")  # relative to its own folder
    found = load_resources(str(tmp_path / "ws"), ResourceOptions(agent_dir=tmp_path / "no-agent")).skills
    assert sorted(s.name for s in found) == ["final", "inner", "kept"]
