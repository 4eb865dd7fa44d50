"""`pi-rpc --mode rpc` started with the command line a Pi client gives `pi`: Pi's flags honoured
(the model by Pi's names, the system prompt, the cycling scope, settings.json's defaults, sessions
by id, `--fork`, `--export`), the ones without a meaning for a daemon warned about by name, and
Pi's print mode refused with the reason. A real daemon on real pipes, its model a loopback server."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from .conftest import daemon_env
from .loopback_model import Loopback, completions_turn

pytestmark = pytest.mark.e2e

Json = dict[str, Any]


def agent_dir(home: Path, loopback: Loopback, settings: Json | None = None) -> Path:
    """Pi's agent folder as a Pi client sets it up: a provider of two models, one that reasons."""
    folder = home / "agent"
    folder.mkdir(parents=True, exist_ok=True)
    models = [{"id": "m", "contextWindow": 100000}, {"id": "r", "reasoning": True, "contextWindow": 100000}]
    provider = {"baseUrl": f"{loopback.server.url}/v1", "api": "openai-completions", "apiKey": "none", "models": models}
    (folder / "models.json").write_text(json.dumps({"providers": {"loop": provider}}))
    (folder / "settings.json").write_text(json.dumps(settings or {}))
    return folder


def pi_rpc(
    argv: list[str], home: Path, folder: Path, cwd: Path, commands: Sequence[Json] = (), wait_for: str = "response"
) -> tuple[list[Json], str, int]:
    """Start `pi-rpc` as a Pi client starts `pi`, send `commands` one at a time (each waits for
    its response, a prompt for its run to settle), close stdin: (what it printed, stderr, status)."""
    env = daemon_env(home) | {"PI_CODING_AGENT_DIR": str(folder)}
    with subprocess.Popen(
        [sys.executable, "-m", "pi_rpc", *argv],
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        printed: list[Json] = []
        for command in commands:
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
            done = "agent_settled" if command["type"] == "prompt" else wait_for
            for raw in proc.stdout:
                printed.append(json.loads(raw))
                line = printed[-1]
                if line["type"] == done and (done != "response" or line.get("id") == command["id"]):
                    break
        proc.stdin.close()
        printed += [json.loads(raw) for raw in proc.stdout]
        status = proc.wait(30)
        return printed, proc.stderr.read(), status


def data(printed: list[Json], command_id: str) -> Any:
    response = next(line for line in printed if line["type"] == "response" and line.get("id") == command_id)
    assert response["success"] is True, response
    return response.get("data")


def test_a_pi_clients_command_line_starts_the_daemon(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    folder = agent_dir(tmp_path / "home", loopback)
    rules = tmp_path / "rules.md"
    rules.write_text("Rule from a file.")
    loopback.script(completions_turn("Done."))
    argv = [
        "--mode", "rpc", "--provider", "loop", "--model", "r:low", "--no-session", "--offline",
        "--system-prompt", "You are the test agent.", "--append-system-prompt", "First addition.",
        "--append-system-prompt", str(rules), "--models", "loop/*", "--plan", "--theme", "dark.json",
        "-e", "ext.ts", "--verbose", "ignored message",
    ]  # fmt: skip
    commands = [
        {"id": "1", "type": "get_state"},
        {"id": "2", "type": "prompt", "message": "hi"},
        {"id": "3", "type": "cycle_model"},
    ]
    printed, stderr, status = pi_rpc(argv, tmp_path / "home", folder, workspace, commands)
    assert status == 0
    state = data(printed, "1")
    assert (state["model"]["provider"], state["model"]["id"], state["thinkingLevel"]) == ("loop", "r", "low")
    system = loopback.requests()[0].json["messages"][0]
    # Pi 1.6.0's sections: the custom prompt as the preamble, the additions as the addendum.
    assert system["role"] == "system"
    assert system["content"].startswith("You are the test agent.\n\n<addendum>\nFirst addition.")
    assert "Rule from a file." in system["content"] and "Available tools" not in system["content"]
    cycled = data(printed, "3")
    assert (cycled["model"]["id"], cycled["isScoped"]) == ("m", True)
    for flag in ("--plan", "--theme dark.json", "--extension ext.ts", "--verbose", "1 message(s)"):
        assert flag in stderr


def test_settings_name_the_model_and_level_when_the_command_line_does_not(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    settings = {"defaultProvider": "loop", "defaultModel": "r", "defaultThinkingLevel": "high"}
    folder = agent_dir(tmp_path / "home", loopback, settings)
    printed, _, status = pi_rpc(["--mode", "rpc", "--no-session"], tmp_path / "home", folder, workspace, [
        {"id": "1", "type": "get_state"}
    ])  # fmt: skip
    state = data(printed, "1")
    assert status == 0 and (state["model"]["id"], state["thinkingLevel"]) == ("r", "high")
    # Pi's own default level is medium, clamped to what the model can do.
    (folder / "settings.json").write_text("{}")
    argv = ["--mode", "rpc", "--no-session", "--provider", "loop", "--model", "r"]
    printed, _, _ = pi_rpc(argv, tmp_path / "home", folder, workspace, [{"id": "1", "type": "get_state"}])
    assert data(printed, "1")["thinkingLevel"] == "medium"


def test_sessions_are_named_by_id_and_forked(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    folder = agent_dir(home, loopback)
    loopback.script(completions_turn("First."), completions_turn("Second."))
    base = ["--mode", "rpc", "--provider", "loop", "--model", "m", "--session-dir", str(tmp_path / "sessions")]
    printed, _, _ = pi_rpc(base, home, folder, workspace, [
        {"id": "1", "type": "prompt", "message": "one"}, {"id": "2", "type": "get_state"}
    ])  # fmt: skip
    first = data(printed, "2")
    # The start of an id is enough, as in Pi.
    printed, _, _ = pi_rpc([*base, "--session", first["sessionId"][:6]], home, folder, workspace, [
        {"id": "1", "type": "get_state"}
    ])  # fmt: skip
    resumed = data(printed, "1")
    assert (resumed["sessionFile"], resumed["messageCount"]) == (first["sessionFile"], first["messageCount"])
    printed, _, _ = pi_rpc([*base, "--fork", first["sessionId"][:6]], home, folder, workspace, [
        {"id": "1", "type": "prompt", "message": "two"}, {"id": "2", "type": "get_state"}
    ])  # fmt: skip
    forked = data(printed, "2")
    assert forked["sessionId"] != first["sessionId"] and forked["messageCount"] > first["messageCount"]
    header = json.loads(Path(forked["sessionFile"]).read_text().splitlines()[0])
    assert header["parentSession"] == first["sessionFile"]
    _, stderr, status = pi_rpc([*base, "--session", "nosuchid"], home, folder, workspace)
    assert status == 2 and "No session found matching 'nosuchid'" in stderr
    # A path that does not exist yet is where the new session is kept.
    chosen = tmp_path / "chosen" / "work.jsonl"
    printed, _, _ = pi_rpc([*base, "--session", str(chosen)], home, folder, workspace, [
        {"id": "1", "type": "prompt", "message": "one"}
    ])  # fmt: skip
    assert json.loads(chosen.read_text().splitlines()[0])["type"] == "session"
    exported = subprocess.run(
        [sys.executable, "-m", "pi_rpc", "--export", str(chosen), str(tmp_path / "out.html")],
        capture_output=True, text=True, env=daemon_env(home), timeout=60, check=False,
    )  # fmt: skip
    assert exported.returncode == 0 and exported.stdout == f"Exported to: {tmp_path / 'out.html'}\n"
    assert "one" in (tmp_path / "out.html").read_text()


@pytest.mark.parametrize(
    ("argv", "status", "reason"),
    [
        (["-p", "hello"], 2, "pi-rpc: -p/--print is Pi's print mode"),
        (["--mode", "text", "hello"], 2, "pi-rpc: --mode text is Pi's print mode"),
        (["-z"], 2, "pi-rpc: Unknown option: -z"),
        # What Pi 1.6.0 refuses, as it refuses it (tests/e2e/test_pi16_flags.py compares with Pi itself).
        (["--mode", "rpc", "@notes.md"], 1, "Error: @file arguments are not supported in RPC mode"),
        (["--mode", "rpc", "-z"], 1, "Error: Unknown option: -z"),
        (["--mode", "rpc", "--plan", "--depth=3"], 1, "Error: Unknown options: --plan, --depth"),
    ],
)
def test_what_a_daemon_cannot_be_is_refused_with_the_reason(
    argv: list[str], status: int, reason: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pi_rpc", *argv],
        capture_output=True,
        text=True,
        env=daemon_env(tmp_path),
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == status and reason in result.stderr.splitlines()[0]


def test_list_models_lists_those_with_a_key_and_exits(loopback: Loopback, tmp_path: Path) -> None:
    folder = agent_dir(tmp_path / "home", loopback)
    env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(folder)}
    listed = subprocess.run(
        [sys.executable, "-m", "pi_rpc", "--mode", "rpc", "--list-models", "lp r"],
        capture_output=True, text=True, env=env, timeout=60, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert listed.returncode == 0 and "loop/r" in listed.stdout and "loop/m " not in listed.stdout
