"""Discovering what pi-rpc can do without reading its source (README.md, "Command line"): every flag
explains itself, a model name that does not exist gets the nearest real ones, and a client's
`model/set` gets them too."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from pi_rpc.cli import build_parser
from pi_rpc.demo.rpc_client import DaemonClient, RpcError
from tests.e2e.conftest import daemon_env

pytestmark = pytest.mark.e2e


def test_every_flag_has_help_text() -> None:
    parser = build_parser()
    undocumented = [
        action.option_strings[0]
        for action in parser._actions
        if action.option_strings and not isinstance(action, argparse._HelpAction) and not (action.help or "").strip()
    ]
    assert undocumented == []


def pi_rpc(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_rpc", *args],
        capture_output=True,
        text=True,
        env=daemon_env(home),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_an_unknown_model_suggests_the_closest_names(tmp_path: Path) -> None:
    result = pi_rpc("--model", "gpt-4o", home=tmp_path)
    assert result.returncode == 2
    assert (
        "Model not found: */gpt-4o. Did you mean openai/gpt-5.4, openai/gpt-4.1, openai/gpt-5? "
        "(`pi-rpc models` lists every model)"
    ) in result.stderr
    typo = pi_rpc("--provider", "anthropic", "--model", "claude-sonet-4-5", home=tmp_path)
    assert "Did you mean anthropic/claude-sonnet-4-5," in typo.stderr


def test_a_custom_model_is_suggested_too(tmp_path: Path) -> None:
    config = tmp_path / ".config" / "pi-rpc"
    config.mkdir(parents=True)
    (config / "models.json").write_text(
        '{"providers": {"ollama": {"baseUrl": "http://127.0.0.1:11434/v1", '
        '"api": "openai-completions", "models": [{"id": "qwen2.5-coder:7b"}]}}}'
    )
    # A part of an id names the model, as in Pi; an id the provider does not list is taken as a
    # custom one (Pi's fallback), with the nearest names in the warning.
    result = pi_rpc("--provider", "ollama", "--model", "qwen2.5-coders", home=tmp_path)
    assert result.returncode == 0 and 'Model "qwen2.5-coders" not found for provider "ollama"' in result.stderr
    assert "Did you mean ollama/qwen2.5-coder:7b?" in result.stderr
    assert pi_rpc("--provider", "ollama", "--model", "coder", home=tmp_path).stderr == ""


def test_model_set_with_a_near_miss_names_the_models_a_client_can_pick(tmp_path: Path) -> None:
    env = daemon_env(tmp_path) | {"OPENAI_API_KEY": "sk-test-never-sent"}
    client = DaemonClient(["--cwd", str(tmp_path)], env=env)
    try:
        with pytest.raises(RpcError) as caught:
            client.request("model/set", {"provider": "openai", "modelId": "gpt-5.3"})
        assert caught.value.message.startswith("Model not found: openai/gpt-5.3. Did you mean openai/gpt-5.")
    finally:
        client.close()
