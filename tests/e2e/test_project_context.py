"""What a Pi user's folders bring to a session, end to end against a real loopback model server:
AGENTS.md/CLAUDE.md text reaches the system prompt in Pi's order, skills are listed there, and a
`/template args` prompt reaches the model expanded (protocol/PROTOCOL.md, "Project context: context
files, prompt templates, skills")."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.node_packages import real_pi16

from .conftest import daemon_env
from .loopback_model import Loopback, completions_turn
from .pi_conversations import answer, converse
from .pi_parity import agent_dir_for, loopback_server, turn

pytestmark = pytest.mark.e2e


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_context_files_skills_and_templates_reach_the_model(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    agent_dir = tmp_path / "agent"
    write(agent_dir / "AGENTS.md", "GLOBAL: answer in English.")
    write(
        agent_dir / "prompts" / "review.md",
        "---\ndescription: Review a file\nargument-hint: <path>\n---\nReview $1 for $ARGUMENTS.",
    )
    write(tmp_path / "CLAUDE.md", "PARENT: the monorepo uses tabs.")
    write(workspace / "AGENTS.md", "PROJECT: run make test before committing.")
    write(workspace / "CLAUDE.md", "SHADOWED: AGENTS.md wins in its folder.")
    write(
        workspace / ".pi" / "skills" / "deploy" / "SKILL.md",
        "---\nname: deploy\ndescription: Ship the app to staging\n---\nRun ./deploy.sh staging.",
    )
    # The user's skill of the same name is dropped: the project's wins, as in Pi.
    write(agent_dir / "skills" / "deploy" / "SKILL.md", "---\nname: deploy\ndescription: the user's\n---\n")
    write(tmp_path / "given" / "fix.md", "Fix $1.")
    loopback.script(completions_turn("Reviewed."))
    env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
    argv = [
        "--cwd",
        str(workspace),
        "--api",
        "openai-completions",
        "--base-url",
        f"{loopback.server.url}/v1",
        "--model",
        "test-model",
        "--no-session",
        "--prompt-template",
        str(tmp_path / "given" / "fix.md"),
        "--approve",  # the project's own skill loads only in a trusted workspace (docs/SECURITY.md)
    ]
    with DaemonClient(argv, env=env) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        commands = client.request("commands/list")["commands"]
        assert [(c["name"], c["source"], c["scope"]) for c in commands] == [
            ("review", "prompt", "user"),
            ("fix", "prompt", "path"),
            ("skill:deploy", "skill", "project"),
        ]
        assert commands[0]["description"] == "Review a file" and commands[0]["argumentHint"] == "<path>"
        assert commands[2]["description"] == "Ship the app to staging"
        assert client.request("prompt", {"message": "/review src/greet.py typos"})["stopReason"] == "stop"
        assert client.close() == 0
    [request] = loopback.requests()
    messages = request.json["messages"]
    system = messages[0]["content"]
    order = [system.index(text) for text in ("GLOBAL:", "PARENT:", "PROJECT:", "<name>deploy</name>")]
    assert order == sorted(order) and "SHADOWED" not in system
    assert f'<project_instructions path="{workspace / "AGENTS.md"}">' in system
    user = [m for m in messages if m["role"] == "user"][-1]["content"]
    text = user if isinstance(user, str) else "".join(part.get("text", "") for part in user)
    assert text == "Review src/greet.py for src/greet.py typos."


def test_skills_that_ignore_files_ignore_are_left_out_as_real_pi_leaves_them_out(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    skills = workspace / ".pi" / "skills"
    for name in ("kept", "built", "scratch", "vendored", "again"):
        write(skills / name / "SKILL.md", f"---\nname: {name}\ndescription: {name}\n---\n")
    write(skills / "vendored" / "inner" / "SKILL.md", "---\nname: inner\ndescription: inner\n---\n")
    write(skills / "draft.md", "---\nname: draft\ndescription: draft\n---\n")
    write(skills / "draft-final.md", "---\nname: final\ndescription: final\n---\n")
    write(skills / ".gitignore", "# build output\nbuilt/\n/scratch\ndraft*.md\n!draft-final.md\n")
    write(skills / ".ignore", "vendored/SKILL.md\n")
    write(skills / "again" / ".fdignore", "SKILL.md\n")
    flags = ["--mode", "rpc", "--provider", "loop", "--model", "m", "--no-session"]

    def skills_listed(argv: list[str]) -> list[str]:
        with loopback_server([]) as server:
            env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, {}))}
            lines = converse(argv, [{"id": "1", "type": "get_commands"}], env, workspace)
        return sorted(c["name"] for c in answer(lines, "1")["commands"] if c["source"] == "skill")

    # Trusted: both load a project's skills only in a trusted workspace.
    ours = skills_listed([sys.executable, "-m", "pi_rpc", *flags, "--approve"])
    assert ours == ["skill:final", "skill:inner", "skill:kept"]
    assert skills_listed([*real_pi16(), "--offline", *flags, "--approve"]) == ours


def skill(folder: Path, name: str) -> None:
    write(folder / name / "SKILL.md", f"---\nname: {name}\ndescription: {name} from {folder}\n---\nDo {name}.")


def test_get_commands_lists_what_real_pi_lists_with_clashes_agents_folders_and_settings_paths(
    pi16: list[str], tmp_path: Path
) -> None:
    home, repo = tmp_path / "home", tmp_path / "repo"
    workspace = repo / "ws"
    (repo / ".git").mkdir(parents=True)
    # The project's: its .pi folders, .agents/skills up to the git root, its settings' paths.
    write(workspace / ".pi" / "prompts" / "review.md", "---\ndescription: the project's review\n---\nReview $1.")
    skill(workspace / ".pi" / "skills", "deploy")
    skill(workspace / ".agents" / "skills", "format")
    skill(repo / ".agents" / "skills", "release")
    skill(tmp_path / ".agents" / "skills", "beyond-the-repo")
    # Inside the workspace: pi-rpc ignores a workspace's entries naming a place outside it.
    skill(workspace / "team" / "skills", "triage")
    write(workspace / "team" / "prompts" / "standup.md", "Standup for $@.")
    settings = {"skills": ["../team/skills"], "prompts": ["../team/prompts"]}
    write(workspace / ".pi" / "settings.json", json.dumps(settings))
    # The user's: the agent folder (written below), ~/.agents/skills, the user settings' paths.
    skill(home / ".agents" / "skills", "notes")
    skill(home / ".agents" / "skills", "format")  # the project's wins
    cli = tmp_path / "cli"
    skill(cli / "skills", "deploy")  # given on the command line: loses to the project's
    skill(cli / "skills", "scratch")
    write(cli / "fix.md", "Fix $1.")
    flags = ["--mode", "rpc", "--provider", "loop", "--model", "m", "--no-session"]
    flags += ["--skill", str(cli / "skills"), "--prompt-template", str(cli / "fix.md")]

    def commands(argv: list[str]) -> list[dict[str, Any]]:
        with loopback_server([]) as server:
            agent_dir = agent_dir_for(tmp_path, server, {"skills": ["extra"], "prompts": ["!old.md"]})
            write(agent_dir / "prompts" / "review.md", "the user's review")
            write(agent_dir / "prompts" / "old.md", "turned off by the user's settings")
            write(agent_dir / "prompts" / "commit.md", "Write the commit message.")
            skill(agent_dir / "skills", "deploy")
            skill(agent_dir / "extra", "lint")
            env = daemon_env(home) | {"PI_CODING_AGENT_DIR": str(agent_dir)}
            listed: list[dict[str, Any]] = answer(
                converse(argv, [{"id": "1", "type": "get_commands"}], env, workspace), "1"
            )["commands"]
        return listed

    # (Pi's built-in extensions add commands of their own, `mcp` and `llama`: pi-rpc has no
    # TypeScript extensions.)
    pis = [c for c in commands([*pi16, "--offline", "--approve", *flags]) if c["source"] != "extension"]
    assert [(c["name"], c["sourceInfo"]["source"], c["sourceInfo"]["scope"]) for c in pis] == [
        ("standup", "local", "project"),
        ("review", "auto", "project"),
        ("commit", "auto", "user"),
        ("fix", "local", "temporary"),
        ("skill:triage", "local", "project"),
        ("skill:deploy", "auto", "project"),
        ("skill:format", "auto", "project"),
        ("skill:release", "auto", "project"),
        ("skill:lint", "local", "user"),
        ("skill:notes", "auto", "user"),
        ("skill:scratch", "local", "temporary"),
    ]
    # Trusted: both load the project's settings entries and folders only in a trusted workspace.
    # A skill of an `.agents` folder names that folder as its baseDir, as Pi 1.6.0 names it.
    assert commands([sys.executable, "-m", "pi_rpc", *flags, "--approve"]) == pis


@pytest.mark.parametrize(
    "flags",
    [
        [],
        ["--tools", "read,grep,find"],  # a search tool: no rule to search with the shell
        ["--tools", "bash,write"],  # no read: the skills are loaded with bash
        ["--no-tools"],
        ["--append-system-prompt", "Be kind."],
    ],
    ids=["default tools", "search tools", "bash without read", "no tools", "appended"],
)
def test_the_system_prompt_sections_are_pi_16s_but_for_its_docs(
    pi16: list[str], tmp_path: Path, flags: list[str]
) -> None:
    """The sections of the first system message (spec 15.12), text for text, for the same workspace
    (context files, a skill) and tools; Pi's `docs` section names its installed docs, which pi-rpc
    has none of."""
    workspace = tmp_path / "ws"
    write(workspace / "AGENTS.md", "PROJECT: run make test before committing.\n")
    skill(workspace / ".pi" / "skills", "deploy")
    argv = ["--mode", "rpc", "--provider", "loop", "--model", "m", "--no-session", "--approve", *flags]

    def sections(program: list[str]) -> dict[str, str]:
        with loopback_server([turn("hi")]) as server:
            env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir_for(tmp_path, server, {}))}
            commands = [{"id": "1", "type": "prompt", "message": "hi"}, {"id": "2", "type": "get_messages"}]
            [first, *_] = answer(converse([*program, *argv], commands, env, workspace), "2")["messages"]
        assert first["role"] == "system"
        found: dict[str, str] = first["sections"]
        return found

    pis = sections([*pi16, "--offline"])
    assert "docs" in pis and pis.get("preamble", "").startswith("You are a coding assistant")
    assert sections([sys.executable, "-m", "pi_rpc"]) == {name: text for name, text in pis.items() if name != "docs"}
