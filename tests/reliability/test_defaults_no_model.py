"""With no key the daemon serves, but no model answers (docs/CONFIGURATION.md, "Which model a
daemon uses"). The scripted model is for
`pi-rpc demo`, tests and `--script`: a silent fallback ran its canned tool calls in the user's real
project (a question about a docstring overwrote their NOTES.md)."""

from __future__ import annotations

from pathlib import Path

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


def test_jsonrpc_serves_logs_that_no_model_is_configured_and_a_prompt_fails_clearly(project: Path, home: Path) -> None:
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
        client.close()
        assert any("No model is configured" in line for line in client.stderr_lines)  # said at start
    assert snapshot(project) == before
