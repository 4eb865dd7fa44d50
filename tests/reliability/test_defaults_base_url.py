"""`--base-url` without `--model` asks the server which model it serves (docs/CONFIGURATION.md, "A
local OpenAI-compatible server"), instead of
sending `"model": "default"` that real local servers reject; and a key goes only to the provider it
belongs to (`OPENAI_API_KEY` used to reach any `--base-url` host)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.conftest import daemon_env
from tests.reliability.local_server import local_server

pytestmark = pytest.mark.e2e

SECRET = "sk-real-openai-key-do-not-leak"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def start(tmp_path: Path, home: Path, *args: str, env: dict[str, str] | None = None) -> DaemonClient:
    merged = daemon_env(home)
    merged.update(env or {})
    return DaemonClient(["--cwd", str(tmp_path), "--no-session", *args], env=merged)


def test_the_single_listed_model_is_used_and_no_stray_key_is_sent(tmp_path: Path, home: Path) -> None:
    with (
        local_server(["qwen2.5-coder-7b"]) as server,
        start(tmp_path, home, "--base-url", server.url, env={"OPENAI_API_KEY": SECRET}) as client,
    ):
        init = client.request("initialize")
        assert init["model"]["id"] == "qwen2.5-coder-7b" and init["model"]["baseUrl"] == server.url
        outcome = client.request("prompt", {"message": "hi"})
        assert outcome["stopReason"] == "stop"
        [chat] = server.chats()
        assert chat.body is not None and chat.body["model"] == "qwen2.5-coder-7b"
        assert all("authorization" not in seen.headers for seen in server.requests)
        assert all(SECRET not in json.dumps(seen.headers) for seen in server.requests)


def test_the_context_window_llama_server_reports_is_the_models(tmp_path: Path, home: Path) -> None:
    """llama-server lists its model with `meta.n_ctx`: that is the model's context window (not a
    128k guess), and the output cap sent is fitted into it."""
    with (
        local_server(["SmolLM2-135M-Instruct"], n_ctx=8192) as server,
        start(tmp_path, home, "--base-url", server.url) as client,
    ):
        init = client.request("initialize")
        assert init["model"]["contextWindow"] == 8192
        assert client.request("prompt", {"message": "hi"})["stopReason"] == "stop"
        [chat] = server.chats()
        assert chat.body is not None and 0 < chat.body["max_tokens"] <= 8192 - 4096


def test_api_key_env_names_the_key_for_that_url(tmp_path: Path, home: Path) -> None:
    with (
        local_server(["m"]) as server,
        start(
            tmp_path,
            home,
            "--base-url",
            server.url,
            "--model",
            "m",
            "--api-key-env",
            "LOCAL_KEY",
            env={"LOCAL_KEY": "local-secret", "OPENAI_API_KEY": SECRET},
        ) as client,
    ):
        assert client.request("prompt", {"message": "hi"})["stopReason"] == "stop"
        [chat] = server.chats()
        assert chat.headers["authorization"] == "Bearer local-secret"


def test_several_models_and_none_chosen_fails_listing_them(tmp_path: Path, home: Path) -> None:
    with local_server(["llama-3.1-8b", "qwen2.5-coder-7b"]) as server:
        client = start(tmp_path, home, "--base-url", server.url)
        code = client.close()
        assert code == 2
        message = "\n".join(client.stderr_lines)
        assert "--model" in message and "llama-3.1-8b" in message and "qwen2.5-coder-7b" in message


def test_an_unreachable_server_without_model_fails_clearly(tmp_path: Path, home: Path) -> None:
    with local_server([]) as server:
        url = server.url
    client = start(tmp_path, home, "--base-url", url)  # the port is closed now
    assert client.close() == 2
    message = "\n".join(client.stderr_lines)
    assert f"{url}/models" in message and "--model" in message


def test_a_named_but_unset_key_variable_is_an_error(tmp_path: Path, home: Path) -> None:
    client = start(tmp_path, home, "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--api-key-env", "NOPE")
    assert client.close() == 2
    assert any("--api-key-env NOPE: that environment variable is not set" in line for line in client.stderr_lines)


def test_models_json_api_key_goes_to_its_provider_only(tmp_path: Path, home: Path) -> None:
    """Pi's models.json `apiKey`: the provider's own key reaches its own URL, and OPENAI_API_KEY does
    not; the same URL given by --base-url gets that provider's key too."""
    with local_server(["m"]) as server:
        config = home / ".config" / "pi-rpc"
        config.mkdir(parents=True)
        (config / "models.json").write_text(
            json.dumps(
                {
                    "providers": {
                        "local": {
                            "baseUrl": server.url,
                            "api": "openai-completions",
                            "apiKey": "$LOCAL_KEY",
                            "models": [{"id": "m"}],
                        }
                    }
                }
            )
        )
        env = {"LOCAL_KEY": "local-secret", "OPENAI_API_KEY": SECRET}
        with start(tmp_path, home, env=env) as client:
            assert client.request("initialize")["model"]["provider"] == "local"
            assert client.request("prompt", {"message": "hi"})["stopReason"] == "stop"
        with start(tmp_path, home, "--base-url", server.url, "--model", "m", env=env) as client:
            assert client.request("prompt", {"message": "hi"})["stopReason"] == "stop"
        assert [chat.headers["authorization"] for chat in server.chats()] == ["Bearer local-secret"] * 2
