"""The flags of `pi --help` (Pi 1.6.0) that matter to a daemon, one by one, given to real Pi 1.6.0 and
to `pi-rpc --mode rpc` alike: both start or both refuse, and a run shows the same effect in
`get_state`, `get_commands` and the tool list of the model request. pi-rpc reads these flags in
pi_rpc/pi_flags.py and pi_rpc/pi_args.py.

Both run on the same loopback model, in the same workspace (a project prompt template and skill),
with the same agent folder. Where pi-rpc still does what it did before 1.6.0, the case names the
row of the change list and what differs (tests/e2e/pi16_differences.py): the case fails once the
difference is gone, until its entry is removed. Left out: the flags of Pi's terminal UI (`--theme`,
`--use-theme`, `--tui-mode`, `--resume`), its print and json modes, and the commands that exit at
once (`--help`, `--version`, `--list-models`, `--export`), which are tests/e2e/test_pi_command_line.py's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .conftest import SAMPLE, daemon_env
from .pi16_differences import Differences
from .pi_parity import Json, loopback_server, pi_argv, pi_env, turn

pytestmark = pytest.mark.e2e

SESSION_ID = "019ad2c4-5e6f-7a1b-8c2d-3e4f5a6b7c8d"  # a UUIDv7, as Pi 1.6.0 makes them


@dataclass(frozen=True)
class Flag:
    flags: tuple[str, ...]
    row: str = "flags"  # the change list's row (C1 ... C6, P12), or "flags" for one 0.73.1 had too
    differs: str | None = None  # what pi-rpc does instead of what Pi 1.6.0 does, until the fix lands
    model: str = "m"  # `r` reasons

    @property
    def id(self) -> str:
        return " ".join(self.flags) or "no flags"


FLAGS = [
    Flag(()),
    Flag(("--model", "loop/r:high")),
    Flag(("--thinking", "low"), model="r"),
    Flag(("--thinking", "max"), "P12", model="r"),
    Flag(("--thinking", "xhigh"), model="r"),
    Flag(("--name", "my run"), "C1"),
    Flag(("-n", "my run"), "C1"),
    Flag(("--session-id", SESSION_ID), "C2"),
    Flag(("--no-session",)),
    Flag(("--continue",)),
    Flag(("-c",)),
    Flag(("--no-tools",)),
    Flag(("-nt",)),
    Flag(("--no-builtin-tools",)),
    Flag(("-nbt",)),
    Flag(("--tools", "read,bash")),
    Flag(("-t", "read")),
    Flag(("--tools", "+grep,-write"), "C4"),
    Flag(("--tools", "re*"), "C4"),
    Flag(("--exclude-tools", "bash"), "C3"),
    Flag(("-xt", "bash"), "C3"),
    Flag(("--exclude-tools", "*e*"), "C3"),
    Flag(("--no-mcp",), "C5"),
    Flag(("--approve",), "C6"),
    Flag(("-a",), "C6"),
    Flag(("--no-approve",), "C6"),
    Flag(("-na",), "C6"),
    Flag(("--no-skills",)),
    Flag(("-ns",)),
    Flag(("--no-prompt-templates",)),
    Flag(("-np",)),
    Flag(("--no-context-files",)),
    Flag(("-nc",)),
    Flag(("--no-extensions",)),
    Flag(("-ne",)),
    Flag(("--skill", "extra-skills")),
    Flag(("--prompt-template", "extra-prompts")),
    Flag(("--system-prompt", "You are terse.")),
    Flag(("--append-system-prompt", "Be kind.")),
    Flag(("--models", "loop/*")),
    Flag(("--api-key", "sk-test")),
    Flag(("--offline",)),
    Flag(("--verbose",)),
    # A flag of an extension Pi has not loaded: 0.73.1 kept it for its extensions, 1.6.0 refuses it.
    Flag(("--plan",), "unknown flags"),
    Flag(("--bogus=1",), "unknown flags"),
    Flag(("--bogus", "x", "--plan"), "unknown flags"),
    Flag(("-z",)),
    Flag(("-Z",)),
    Flag(("@notes.md",)),
    Flag(("--tools", "+grep,read")),
]


def workspace_for(folder: Path) -> Path:
    """The sample project with a prompt template and a skill of its own, and extra ones beside it."""
    workspace = folder / "ws"
    shutil.copytree(SAMPLE, workspace)
    (workspace / ".pi" / "prompts").mkdir(parents=True)
    (workspace / ".pi" / "prompts" / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1.")
    (workspace / ".pi" / "skills" / "deploy").mkdir(parents=True)
    skill = "---\nname: deploy\ndescription: Ship to staging\n---\nRun ./deploy.sh."
    (workspace / ".pi" / "skills" / "deploy" / "SKILL.md").write_text(skill)
    (workspace / "extra-prompts").mkdir()
    (workspace / "extra-prompts" / "explain.md").write_text("---\ndescription: Explain\n---\nExplain $1.")
    (workspace / "extra-skills" / "lint").mkdir(parents=True)
    (workspace / "extra-skills" / "lint" / "SKILL.md").write_text("---\nname: lint\ndescription: Lint\n---\nRun it.")
    return workspace


def agent_dir(folder: Path, url: str) -> Path:
    agent = folder / "agent"
    agent.mkdir(parents=True)
    models = [{"id": "m", "contextWindow": 100000}, {"id": "r", "reasoning": True, "contextWindow": 100000}]
    provider = {"baseUrl": f"{url}/v1", "api": "openai-completions", "apiKey": "none", "models": models}
    (agent / "models.json").write_text(json.dumps({"providers": {"loop": provider}}))
    (agent / "settings.json").write_text("{}")
    return agent


def observe(argv: list[str], env: dict[str, str], folder: Path, case: Flag) -> Json:
    """What `argv` plus the case's flags did: whether it started, and what a client sees if it did."""
    workspace = workspace_for(folder)
    with loopback_server([turn("hello")]) as server:
        env = env | {"PI_CODING_AGENT_DIR": str(agent_dir(folder, server.url))}
        model = [] if "--model" in case.flags else ["--provider", "loop", "--model", case.model]
        full = [*argv, *model, "--session-dir", str(folder / "sessions"), *case.flags]
        commands = [
            {"id": "state", "type": "get_state"},
            {"id": "commands", "type": "get_commands"},
            {"id": "prompt", "type": "prompt", "message": "hi"},
            {"id": "after", "type": "get_state"},
        ]
        printed, status, errors = converse(full, commands, env, workspace)
        requests = [request.json for request in server.requests]
    answers = {line["id"]: line for line in printed if line.get("type") == "response" and "id" in line}
    if "state" not in answers:  # refused: Pi's words and status, which a client shows its user
        return {"started": False, "status": status, "errors": errors}
    state, after = answers["state"]["data"], answers["after"]["data"]
    [asked] = [request for request in requests if request.get("stream")] or [{}]
    return {
        "started": True,
        "model": f"{state['model']['provider']}/{state['model']['id']}",
        "thinkingLevel": state["thinkingLevel"],
        "sessionName": state.get("sessionName"),
        "session id given": state["sessionId"] == SESSION_ID,
        "session kept": Path(after["sessionFile"]).is_file() if "sessionFile" in after else False,
        # The project's and the flags' templates and skills (Pi's built-in extensions add commands
        # of their own, `mcp` and `llama`: pi-rpc has no TypeScript extensions).
        "commands": sorted(
            command["name"] for command in answers["commands"]["data"]["commands"] if command["source"] != "extension"
        ),
        "tools": sorted(tool["function"]["name"] for tool in asked.get("tools", [])),
    }


def converse(
    argv: list[str], commands: list[Json], env: dict[str, str], cwd: Path
) -> tuple[list[Json], int, list[str]]:
    """Send each command once the previous one was answered (a prompt: once its run settled):
    (everything printed until the program ended (a refusal) or the last answer, its exit status,
    its `Error:` lines on stderr)."""
    with (
        tempfile.TemporaryFile("w+") as stderr,
        subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env, cwd=cwd, text=True
        ) as proc,
    ):
        assert proc.stdin is not None and proc.stdout is not None
        printed: list[Json] = []
        try:
            for command in commands:
                proc.stdin.write(json.dumps(command) + "\n")
                proc.stdin.flush()
                wanted = "agent_settled" if command["type"] == "prompt" else "response"
                for raw in proc.stdout:
                    printed.append(json.loads(raw))
                    line = printed[-1]
                    if line.get("type") == wanted and (wanted != "response" or line.get("id") == command["id"]):
                        break
                else:
                    break  # it exited
        except BrokenPipeError:  # it refused the command line and exited
            pass
        finally:
            if proc.poll() is None:
                proc.kill()
            status = proc.wait()
        stderr.seek(0)
        errors = [line for line in stderr.read().splitlines() if line.startswith("Error:")]
    return printed, status, errors


def started(value: Any) -> str:
    return "started" if value else "refused"


@pytest.mark.parametrize("case", FLAGS, ids=[case.id for case in FLAGS])
def test_a_flag_of_pi_16_does_here_what_it_does_in_pi(case: Flag, tmp_path: Path) -> None:
    pis = observe(pi_argv(), pi_env(tmp_path / "pi" / "home"), tmp_path / "pi", case)
    ours = observe(
        [sys.executable, "-m", "pi_rpc", "--mode", "rpc"],
        daemon_env(tmp_path / "ours" / "home"),
        tmp_path / "ours",
        case,
    )
    differences = Differences({case.row: case.differs} if case.differs else {})
    if differences.check(case.row, pis["started"] == ours["started"], f"{started(pis['started'])} in Pi"):
        for key in pis.keys() - {"started"}:
            differences.check(case.row, pis[key] == ours[key], f"{key}: {pis[key]!r} in Pi, {ours.get(key)!r} here")
    differences.settle()
