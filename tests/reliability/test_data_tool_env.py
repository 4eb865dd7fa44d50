"""Tool processes do not inherit the daemon's provider keys unless the user opts in (spec 9.7;
protocol/PROTOCOL.md, "Secrets").

`env` in bash used to print every provider key into the transcript (events, prompt result,
session file). The daemon runs as a subprocess with the scripted model calling `bash env`, keys
in its environment for a built-in provider, another known provider and a models.json provider
(an `apiKey` naming a variable and a header reading one).
"""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.conftest import daemon_env

pytestmark = pytest.mark.e2e

SECRETS = {
    "OPENAI_API_KEY": "sk-openai-5a4b3c2d1e",
    "GEMINI_API_KEY": "gm-key-0f9e8d7c6b",
    "LOCAL_LLM_KEY": "local-key-1a2b3c4d5e",
    "TEAM_TOKEN": "team-token-6f7a8b9c0d",
}
SCRIPT = {
    "replies": [
        {
            "match": "^env",
            "turns": [[{"toolCall": {"name": "bash", "arguments": {"command": "env"}}}], [{"text": "done"}]],
        }
    ]
}
MODELS = {
    "providers": {
        "local": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "LOCAL_LLM_KEY",
            "headers": {"X-Team-Token": "${TEAM_TOKEN}"},
            "models": [{"id": "local-model"}],
        }
    }
}


def run_env_tool(tmp_path: Path, *extra_args: str, settings: dict[str, object] | None = None) -> str:
    """Everything the client and the disk saw of a run whose model called `bash env`."""
    home, workspace, sessions = tmp_path / "home", tmp_path / "ws", tmp_path / "sessions"
    config = home / ".config" / "pi-rpc"
    config.mkdir(parents=True)
    workspace.mkdir()
    (config / "models.json").write_text(json.dumps(MODELS))
    if settings is not None:
        (config / "settings.json").write_text(json.dumps(settings))
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    env = daemon_env(home) | SECRETS | {"UNRELATED_SETTING": "visible", "PI_RPC_SESSION_DIR": str(sessions)}
    argv = ["--cwd", str(workspace), "--script", str(script), *extra_args]
    with DaemonClient(argv, env=env) as client:
        result = client.request("prompt", {"message": "env"})
        client.close()
    assert result["stopReason"] == "stop"
    ends = [e for e in client.events() if e["type"] == "tool_execution_end"]
    assert len(ends) == 1 and not ends[0]["isError"]
    assert "UNRELATED_SETTING=visible" in ends[0]["result"]["content"][0]["text"]
    on_disk = "".join(p.read_text() for p in sessions.rglob("*.jsonl"))
    return msgspec.json.encode(client.messages).decode() + on_disk


def test_tools_do_not_see_provider_keys(tmp_path: Path) -> None:
    seen = run_env_tool(tmp_path)
    assert [name for name, value in SECRETS.items() if value in seen] == []


@pytest.mark.parametrize("how", ["flag", "settings"])
def test_opting_in_passes_the_keys(tmp_path: Path, how: str) -> None:
    seen = (
        run_env_tool(tmp_path, "--pass-provider-keys-to-tools")
        if how == "flag"
        else run_env_tool(tmp_path, settings={"passProviderKeysToTools": True})
    )
    assert [name for name, value in SECRETS.items() if f"{name}={value}" in seen] == list(SECRETS)
