"""Every example configuration in the docs is loaded by pi-rpc's own loaders.

docs/CONFIGURATION.md marks each JSON block with `<!-- example: KIND -->`: `models.json` and
`settings.json` blocks go through `ModelRegistry.load` / `load_settings` (and the permission
rules through `parse_rules`), `mcp.json` ones through `load_mcp_files` with no error; the Zed
block is started exactly as Zed starts it and driven over ACP; the JSON-RPC block is sent to a
daemon; the VS Code block names only settings the extension declares. The scripted-model example
of PROTOCOL.md is loaded as a script.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import acp
import msgspec
import pytest

from pi_rpc.ai.config import ModelRegistry
from pi_rpc.ai.providers.faux import load_script
from pi_rpc.ai.providers.openai_completions import Compat
from pi_rpc.demo.rpc_client import DaemonClient
from pi_rpc.modes.jsonrpc.protocol import METHODS, InitializeParams
from pi_rpc.session.approvals.gate import parse_rules
from pi_rpc.session.configuration.settings import load_settings, resolve_default_tools
from pi_rpc.tools.mcp_files import load_mcp_files
from tests.e2e.conftest import daemon_env

ROOT = Path(__file__).resolve().parents[2]
CONFIGURATION = ROOT / "docs" / "CONFIGURATION.md"
EXAMPLE = re.compile(r"<!-- example: (\S+) -->\n```json\n(.*?)\n```", re.DOTALL)
KINDS = ("models.json", "settings.json", "mcp.json", "zed", "vscode", "jsonrpc")

Json = dict[str, Any]


def examples(kind: str) -> list[Json]:
    found = [json.loads(block) for k, block in EXAMPLE.findall(CONFIGURATION.read_text(encoding="utf-8")) if k == kind]
    assert found, f"no {kind} example in {CONFIGURATION.name}"
    return found


def test_every_json_block_is_a_marked_example() -> None:
    text = CONFIGURATION.read_text(encoding="utf-8")
    marked = EXAMPLE.findall(text)
    assert len(marked) == text.count("```json")
    assert {kind for kind, _ in marked} == set(KINDS)


@pytest.mark.parametrize("index", range(4))
def test_models_json_examples_load(index: int, tmp_path: Path) -> None:
    document = examples("models.json")[index]
    path = tmp_path / "models.json"
    path.write_text(json.dumps(document))
    variables = {"VLLM_API_KEY": "k1", "GATEWAY_TOKEN": "k2", "GATEWAY_PROJECT": "p", "CLAUDE_PROXY_KEY": "k3"}
    registry = ModelRegistry.load(path, env=variables)
    for name, provider in document["providers"].items():
        for entry in provider.get("models", []):
            model = registry.find(name, entry["id"])
            assert model is not None, f"{name}/{entry['id']} did not load"  # an unsupported api is skipped
            unknown = {re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), key) for key in entry.get("compat", {})}
            assert unknown <= set(Compat.__struct_fields__)
            if "apiKey" in provider:
                assert registry.api_key_for(model) in variables.values()
            for header in {**provider.get("headers", {}), **entry.get("headers", {})}:
                assert header in registry.headers_for(model)
        for model_id, fields in provider.get("modelOverrides", {}).items():
            model = registry.find(name, model_id)
            assert model is not None and model.context_window == fields["contextWindow"]


def test_mcp_json_examples_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path))
    for document in examples("mcp.json"):
        (tmp_path / "mcp.json").write_text(json.dumps(document))
        files = load_mcp_files(str(tmp_path), trusted=False)
        assert files.errors == [] and [s.config.name for s in files.servers] == list(document["mcpServers"])


def test_settings_json_examples_load(tmp_path: Path) -> None:
    for document in examples("settings.json"):
        path = tmp_path / "settings.json"
        path.write_text(json.dumps(document))
        settings = load_settings(path)
        if isinstance(settings.default_tools, list):
            resolve_default_tools(settings.default_tools)
        parse_rules([*settings.permissions.allow, *settings.permissions.deny])
        assert msgspec.to_builtins(settings) | document == msgspec.to_builtins(settings)  # nothing ignored


def test_the_jsonrpc_example_is_what_a_daemon_answers(tmp_path: Path) -> None:
    (message,) = examples("jsonrpc")
    assert message["method"] in METHODS
    msgspec.convert(message["params"], InitializeParams)
    client = DaemonClient(["--cwd", str(tmp_path)], env=daemon_env(tmp_path))
    try:
        result = client.request(message["method"], message["params"])
        assert result["serverInfo"]["name"] == "pi-rpc" and result["model"] is None
    finally:
        client.close()


def test_the_vscode_example_names_settings_the_extension_declares() -> None:
    (settings,) = examples("vscode")
    manifest = ROOT / "editor-clients" / "vscode" / "package.json"
    if manifest.is_file():
        declared = json.loads(manifest.read_text())["contributes"]["configuration"]["properties"]
        assert set(settings) <= set(declared)
    else:
        assert all(key.startswith("pi.") for key in settings)


def test_the_protocol_script_example_loads(tmp_path: Path) -> None:
    text = (ROOT / "protocol" / "PROTOCOL.md").read_text(encoding="utf-8")
    section = text.split("## Scripted model", 1)[1]
    block = re.search(r"```json\n(.*?)\n```", section, re.DOTALL)
    assert block is not None
    path = tmp_path / "script.json"
    path.write_text(block.group(1))
    load_script(str(path))


@pytest.mark.anyio
async def test_the_zed_snippet_starts_an_acp_agent(tmp_path: Path) -> None:
    """Exactly what Zed runs: `command` looked up on PATH (here the project venv's console
    script), `args`, `env` added to Zed's environment; then initialize and a session in a project."""
    (zed,) = examples("zed")
    (server,) = zed["agent_servers"].values()
    assert server["type"] == "custom"
    bin_dir = str(Path(sys.executable).parent)
    command = shutil.which(server["command"], path=bin_dir)
    assert command is not None, "the console script is not installed"
    project = tmp_path / "project"
    project.mkdir()
    env = daemon_env(tmp_path / "home") | server["env"]

    class Editor:
        async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
            pass

    async with acp.spawn_agent_process(
        cast(acp.Client, Editor()),
        command,
        *server["args"],
        env=env,
        cwd=str(tmp_path),
        transport_kwargs={"stderr": subprocess.DEVNULL},
    ) as (conn, _process):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.protocol_version == acp.PROTOCOL_VERSION
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        assert session.session_id
