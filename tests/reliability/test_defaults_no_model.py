"""Issue 9 item 11: with no key the daemon serves, but no model answers. The scripted model is for
`pi-rpc demo`, tests and `--script`: a silent fallback ran its canned tool calls in the user's real
project (a question about a docstring overwrote their NOTES.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient, RpcError
from tests.e2e.conftest import daemon_env

pytestmark = pytest.mark.e2e

QUESTION = "Can you write a docstring for main()?"
NOTES = "# My notes\n\nDo not lose these.\n"
# What the error must name, so a user knows where a key goes.
NAMED = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "models.json")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's real project: files the scripted model's demo replies would overwrite."""
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "NOTES.md").write_text(NOTES)
    (root / "README.md").write_text("# app\n")
    (root / "src" / "greet.py").write_text("def main():\n    print('hi')\n")
    return root


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_jsonrpc_serves_but_a_prompt_fails_clearly(project: Path, home: Path) -> None:
    before = snapshot(project)
    with DaemonClient(["--cwd", str(project), "--no-session"], env=daemon_env(home)) as client:
        init = client.request("initialize", {"clientInfo": {"name": "t"}})
        assert init["model"] is None and init["scripted"] is False
        assert [t["name"] for t in client.request("tools/list")["tools"] if t["active"]] == [
            "read",
            "bash",
            "edit",
            "write",
        ]
        assert client.request("models/list") == {"models": []}
        assert client.request("state")["model"] is None

        with pytest.raises(RpcError) as failed:
            client.request("prompt", {"message": QUESTION})
        assert failed.value.code == -32003  # PROTOCOL.md: no model is configured
        assert all(name in failed.value.message for name in NAMED), failed.value.message
        assert client.events() == []  # no run started: nothing streamed, no tool ran

        # A client can still pick a model; prompts then go to it.
        model = client.request("model/set", {"provider": "anthropic", "modelId": "claude-sonnet-4-5"})
        assert model["provider"] == "anthropic"
        assert client.request("state")["model"]["id"] == model["id"]
    assert snapshot(project) == before


def test_no_model_is_logged_at_start(project: Path, home: Path) -> None:
    with DaemonClient(["--cwd", str(project), "--no-session"], env=daemon_env(home)) as client:
        client.request("initialize")
        client.close()
        assert any("No model is configured" in line for line in client.stderr_lines)


def jsonl_session(argv: list[str], home: Path, lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send JSON lines, close stdin, read every line back (the daemon exits on EOF)."""
    result = subprocess.run(
        [sys.executable, "-P", "-m", "pi_rpc", *argv],
        input="".join(json.dumps(x) + "\n" for x in lines),
        capture_output=True,
        text=True,
        env=daemon_env(home),
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_pi_mode_prompt_is_an_error_response(project: Path, home: Path) -> None:
    before = snapshot(project)
    out = jsonl_session(
        ["--mode", "pi", "--cwd", str(project), "--no-session"],
        home,
        [
            {"id": "1", "type": "prompt", "message": QUESTION},
            {"id": "2", "type": "get_state"},
        ],
    )
    prompt = next(m for m in out if m.get("id") == "1")
    assert prompt["type"] == "response" and prompt["command"] == "prompt" and prompt["success"] is False
    assert all(name in prompt["error"] for name in NAMED), prompt["error"]
    state = next(m for m in out if m.get("id") == "2")
    assert state["success"] is True and "model" not in state["data"]
    assert [m for m in out if m.get("type") != "response"] == []  # no events: nothing ran
    assert snapshot(project) == before


def test_acp_mode_prompt_is_an_error(project: Path, home: Path) -> None:
    before = snapshot(project)
    out = acp_conversation(project, home)
    error = next(m for m in out if m.get("id") == 3)["error"]
    assert all(name in error["message"] for name in NAMED), error
    updates = [m["params"]["update"]["sessionUpdate"] for m in out if m.get("method") == "session/update"]
    assert updates == ["available_commands_update"]  # the session's slash commands only: nothing ran
    assert snapshot(project) == before


def acp_conversation(project: Path, home: Path) -> list[dict[str, Any]]:
    """initialize, session/new, then a prompt on the session it created, over one process."""
    proc = subprocess.Popen(
        [sys.executable, "-P", "-m", "pi_rpc", "--mode", "acp", "--cwd", str(project), "--no-session"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=daemon_env(home),
    )
    assert proc.stdin is not None and proc.stdout is not None
    received: list[dict[str, Any]] = []

    def send(message: dict[str, Any]) -> dict[str, Any]:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(message) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            received.append(json.loads(line))
            if received[-1].get("id") == message["id"]:
                return received[-1]
        raise AssertionError("the daemon closed its output")

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(project), "mcpServers": []}}
        session_id = send(new)["result"]["sessionId"]
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": QUESTION}]},
            }
        )
    finally:
        proc.stdin.close()
        code = proc.wait(timeout=30)
        proc.stdout.close()
    assert code == 0
    return received
