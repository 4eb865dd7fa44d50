"""What a Pi user's folders bring to a session, end to end against a real loopback model server:
AGENTS.md/CLAUDE.md text reaches the system prompt in Pi's order, skills are listed there, and a
`/template args` prompt reaches the model expanded (issue 15, "Session core")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.node_packages import real_pi

from .conftest import daemon_env
from .pi_parity import agent_dir_for, loopback_server
from .test_daemon_providers import Loopback, completions_turn, loopback  # noqa: F401 - the fixture
from .test_pi_sessions import answer, converse

pytestmark = pytest.mark.e2e


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_context_files_skills_and_templates_reach_the_model(
    loopback: Loopback,  # noqa: F811
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
    ]
    with DaemonClient(argv, env=env) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        commands = client.request("commands/list")["commands"]
        assert [(c["name"], c["source"], c["scope"]) for c in commands] == [
            ("review", "prompt", "user"),
            ("skill:deploy", "skill", "project"),
        ]
        assert commands[0]["description"] == "Review a file" and commands[0]["argumentHint"] == "<path>"
        assert client.request("prompt", {"message": "/review src/greet.py typos"})["stopReason"] == "stop"
        assert client.close() == 0
    [request] = loopback.requests()
    messages = request.json["messages"]
    system = messages[0]["content"]
    order = [system.index(text) for text in ("GLOBAL:", "PARENT:", "PROJECT:", "<name>deploy</name>")]
    assert order == sorted(order) and "SHADOWED" not in system
    assert f"## {workspace / 'AGENTS.md'}" in system
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

    ours = skills_listed([sys.executable, "-m", "pi_rpc", *flags])
    assert ours == ["skill:final", "skill:inner", "skill:kept"]
    assert skills_listed(["node", str(real_pi()), "--offline", *flags]) == ours
