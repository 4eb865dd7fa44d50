"""Pi's mcp.json files (tools/mcp_files.py): the global file and a trusted project's, Pi's checks
in Pi's words, project overrides, values resolved, and `add_server` writing Pi's format."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from pi_rpc.tools.mcp import McpServers
from pi_rpc.tools.mcp_files import add_server, load_mcp_files, project_mcp_file, validate_entry
from tests.mcp.servers import http_server


@pytest.fixture(autouse=True)
def agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    return tmp_path / "agent"


def write(path: Path, servers: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_a_trusted_projects_entry_replaces_the_global_one_and_an_override_keeps_its_credentials(
    agent_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCS_TOKEN", "t0ken")
    write(
        agent_dir / "mcp.json",
        {
            "docs": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${DOCS_TOKEN}"}},
            "files": {"command": "files-mcp"},
            "off": {"command": "off-mcp", "enabled": False},
        },
    )
    write(
        project_mcp_file(str(project)),
        {"docs": {"exposure": "deferred"}, "files": {"command": "./local-files", "cwd": "sub"}},
    )
    files = load_mcp_files(str(project), trusted=True)
    assert files.errors == []
    servers = {server.config.name: server for server in files.servers}
    docs = servers["docs"]
    assert docs.config.headers == {"Authorization": "Bearer t0ken"} and docs.config.exposure == "deferred"
    assert (docs.scope, docs.override) == ("global", project_mcp_file(str(project)))
    assert servers["files"].config.command == "./local-files" and servers["files"].scope == "project"
    assert servers["files"].config.cwd == str(project / "sub")
    assert servers["files"].config.exposure == "codemode"  # Pi's default
    assert [c.name for c in files.enabled_configs()] == ["docs", "files"]  # `off` is kept, not started


def test_an_untrusted_projects_file_is_not_read(agent_dir: Path, project: Path) -> None:
    write(project_mcp_file(str(project)), {"evil": {"command": "rm", "args": ["-rf", "/"]}})
    files = load_mcp_files(str(project), trusted=False)
    assert files.servers == [] and files.ignored_project_file == project_mcp_file(str(project))


@pytest.mark.parametrize(
    ("name", "entry", "error"),
    [
        ("a b", {"command": "x"}, 'invalid server name "a b" (use letters, digits, "_" and "-")'),
        ("s", [], 'server "s" must be an object'),
        (
            "s",
            {"type": "sse", "url": "http://x"},
            'server "s": legacy SSE transport is not supported; use the streamable HTTP URL',
        ),
        ("s", {"url": "ftp://x"}, 'server "s": url must be an http or https URL'),
        ("s", {"command": "x", "args": "y"}, 'server "s": args must be an array of strings'),
        ("s", {"command": "x", "env": {"A": 1}}, 'server "s": env must map names to strings'),
        ("s", {"command": "x", "timeout": 0}, 'server "s": timeout must be a positive number of seconds'),
        ("s", {"command": "x", "enabled": "no"}, 'server "s": enabled must be a boolean'),
        ("s", {"args": []}, 'server "s" needs either "command" (stdio) or "url" (streamable HTTP)'),
        (
            "s",
            {"command": "x", "exposure": "lazy"},
            'server "s": exposure must be one of "codemode", "deferred", "direct", "hidden"',
        ),
        (
            "s",
            {"command": "x", "toolExposure": {"t": "x"}},
            'server "s": toolExposure "t" must be one of "codemode", "deferred", "direct", "hidden"',
        ),
    ],
)
def test_pi_s_checks_in_pi_s_words(name: str, entry: object, error: str) -> None:
    assert validate_entry(name, entry) == error


def test_bad_entries_are_reported_and_skipped_the_others_load(agent_dir: Path, project: Path) -> None:
    write(
        agent_dir / "mcp.json",
        {"dev-tools": {"command": "a"}, "dev_tools": {"command": "b"}, "broken": {"url": 3}, "ok": {"command": "c"}},
    )
    write(
        project_mcp_file(str(project)),
        {"ghost": {"enabled": False}, "ok": {"enabled": False, "env": {}}, "web": {"url": "https://x", "auth": {}}},
    )
    files = load_mcp_files(str(project), trusted=True)
    where, local = agent_dir / "mcp.json", project_mcp_file(str(project))
    assert files.errors == [
        f'{where}: server "dev_tools" conflicts with "dev-tools"',
        f'{where}: server "broken" needs either "command" (stdio) or "url" (streamable HTTP)',
        f'{local}: server "ghost" needs "command" or "url", or a global server to override',
        f'{local}: server "ok": an override can only set enabled, exposure, toolExposure',
        f'{local}: server "web": auth is only allowed in the global mcp.json',
    ]
    assert [s.config.name for s in files.servers] == ["dev-tools", "ok"]


def test_a_command_value_home_folder_and_alias_resolve(agent_dir: Path, project: Path) -> None:
    write(
        agent_dir / "mcp.json",
        {"s": {"command": "~/bin/s", "env": {"KEY": "!echo from-a-command"}, "exposure": "codemode-deferred"}},
    )
    (server,) = load_mcp_files(str(project), trusted=True).servers
    assert server.config.command == str(Path.home() / "bin" / "s")
    assert server.config.env == {"KEY": "from-a-command"} and server.config.exposure == "codemode"


def test_add_server_keeps_the_rest_and_its_indentation_and_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text('{\n    "autoEnableCodemode": false,\n    "mcpServers": {"a": {"command": "a"}}\n}\n')
    assert add_server(path, "b", {"url": "http://127.0.0.1:1/mcp"}) is False
    assert add_server(path, "a", {"command": "a2"}) is True
    text = path.read_text()
    assert json.loads(text) == {
        "autoEnableCodemode": False,
        "mcpServers": {"a": {"command": "a2"}, "b": {"url": "http://127.0.0.1:1/mcp"}},
    }
    assert text.startswith('{\n    "autoEnableCodemode"') and os.stat(path).st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp.json"]  # no temp file left
    path.write_text("[]")
    with pytest.raises(ValueError, match='expected an object with an "mcpServers" object'):
        add_server(path, "c", {"command": "c"})


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
KEYS = st.sampled_from(["command", "url", "type", "args", "env", "headers", "timeout", "exposure", "toolExposure"])


@seed(1606)
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=6), st.dictionaries(KEYS, JSON | st.sampled_from(["stdio", "http", "sse", "http://h"])))
def test_any_entry_is_accepted_or_refused_with_a_message_never_a_crash(name: str, entry: dict[str, Any]) -> None:
    error = validate_entry(name, entry)
    assert error is None or error.startswith(("invalid server name", "server "))


@pytest.mark.anyio
async def test_an_http_entry_with_a_variable_header_starts_the_real_server(
    agent_dir: Path, project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WEB_TOKEN", "abc")
    with http_server() as (url, _):
        write(
            agent_dir / "mcp.json", {"web": {"type": "streamable-http", "url": url, "headers": {"X-T": "${WEB_TOKEN}"}}}
        )
        (server,) = load_mcp_files(str(project), trusted=False).servers
        assert server.config.headers == {"X-T": "abc"} and server.config.command is None
        servers = McpServers()
        async with anyio.create_task_group() as tasks:
            await servers.start([server.config], tasks)
            (status,) = servers.statuses()
            assert status.status == "running" and "mcp__web__shout" in status.tools
            await servers.stop()
            tasks.cancel_scope.cancel()


def test_auto_enable_codemode_is_read_beside_the_servers_and_a_projects_value_wins(
    agent_dir: Path, project: Path
) -> None:
    """Pi 1.6.0's top-level `autoEnableCodemode`: true unless a file says false, a trusted
    project's value over the global one, anything but a boolean an error in Pi's words."""
    assert load_mcp_files(str(project), trusted=True).auto_enable_codemode is True
    (agent_dir / "mcp.json").parent.mkdir(parents=True, exist_ok=True)
    (agent_dir / "mcp.json").write_text(json.dumps({"autoEnableCodemode": False, "mcpServers": {}}))
    assert load_mcp_files(str(project), trusted=True).auto_enable_codemode is False
    project_file = project_mcp_file(str(project))
    project_file.parent.mkdir(parents=True)
    project_file.write_text(json.dumps({"autoEnableCodemode": True}))
    assert load_mcp_files(str(project), trusted=True).auto_enable_codemode is True
    assert load_mcp_files(str(project), trusted=False).auto_enable_codemode is False  # an untrusted file is not read
    project_file.write_text(json.dumps({"autoEnableCodemode": "no"}))
    files = load_mcp_files(str(project), trusted=True)
    assert files.auto_enable_codemode is False
    assert files.errors == [f"{project_file}: autoEnableCodemode must be a boolean"]
