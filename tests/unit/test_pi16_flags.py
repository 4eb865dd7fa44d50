"""Pi 1.6.0's flags that Pi 0.73.1 (the oracle of test_pi_command_line.py) lacks: `--name/-n`,
`--session-id`, `--exclude-tools/-xt`, `--no-mcp`, `--thinking max` and `--tools`' `+name`/`-name`
edits and `*` patterns. The expectations are Pi 1.6.0's, read in its sources
(@earendil-works/pi-coding-agent 1.6.0, dist/): cli/args.js `parseArgs`; core/settings-manager.js
`getToolListError`, `applyToolModifiers`; core/sdk.js `createAgentSession` (which tools are
selected and allowed); core/agent-session.js `_isAllowedTool`, `_refreshToolRegistry` (what an
allowlist keeps and activates, MCP tools included); core/mcp-servers.js `createToolNameMatcher`;
main.js `createSessionManager`, `validateSessionIdFlags`; core/session-manager.js
`assertValidSessionId`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_rpc.ai.types import TextContent, UserMessage
from pi_rpc.cli import build_parser, build_session_config
from pi_rpc.pi_args import PiExtras
from pi_rpc.pi_flags import command_line_notices, parse_command_line
from pi_rpc.session.session import AgentSession
from pi_rpc.session.storage.store import SessionDir, SessionFile
from pi_rpc.tools import ToolSelection, tool_list_error, unknown_tool_names

LOOPBACK_MODEL = ["--api", "openai-completions", "--base-url", "https://127.0.0.1:9/v1", "--model", "m"]


def parse(*argv: str) -> tuple[Any, PiExtras]:
    return parse_command_line(build_parser(), list(argv))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = tmp_path / "home"
    (home / "agent").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    yield home


# --- the parse ----------------------------------------------------------------------------------


def test_pi16s_new_flags_are_read_neither_refused_nor_warned_about() -> None:
    args, extras = parse(
        "--mode", "rpc", "-n", "Refactor auth", "--session-id", "abc-1", "-xt", "bash,w*", "--no-mcp",
        "--thinking", "max", "-t", "+grep,-write",
    )  # fmt: skip
    assert (args.name, args.session_id, args.exclude_tools) == ("Refactor auth", "abc-1", ["bash", "w*"])
    assert (args.no_mcp, args.thinking, args.tools) == (True, "max", ["+grep", "-write"])
    assert extras.unknown_flags == {} and extras.unknown_short == []
    assert command_line_notices(args, extras).errors == []
    assert command_line_notices(args, extras).warnings == []
    assert parse("--name", "x", "--exclude-tools", "ls")[0].name == "x"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["--tools", "read,+grep"], "--tools: tool names cannot be mixed with +name or -name entries"),
        (["--tools", "+gr*"], "--tools: +name and -name entries take exact tool names, not patterns: +gr*"),
        (["--name", "  "], "--name requires a non-empty value"),
        (["--session-id", "x", "--continue"], "--session-id cannot be combined with --continue"),
        (["--session-id", "x", "--session", "a", "-r"], "--session-id cannot be combined with --session, --resume"),
        (["--session-id", "-bad"], "Session id must be non-empty, contain only alphanumeric characters, '-', '_', "
         "and '.', and start and end with an alphanumeric character"),
    ],
)  # fmt: skip
def test_what_pi16_refuses_is_refused_in_its_words(argv: list[str], error: str) -> None:
    args, extras = parse("--mode", "rpc", *argv)
    assert command_line_notices(args, extras).errors == [error]


def test_tool_list_errors_are_pis() -> None:
    assert tool_list_error(["read", "g*"]) is None and tool_list_error(["+a", "-b"]) is None
    assert tool_list_error([]) is None


# --- the tool selection -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "registered", "active"),
    [
        ({"tools": ["+grep", "-write"]}, 9, ["read", "bash", "edit", "grep"]),
        ({"tools": ["re*"]}, 1, ["read"]),
        ({"tools": ["grep", "read"]}, 2, ["grep", "read"]),
        ({"tools": ["*"], "exclude": ["*sh*", "ls"]}, 6, ["read", "edit", "write", "grep", "find", "codemode"]),
        ({"tools": ["-bash"], "default_tools": ["read", "bash", "ls"]}, 9, ["read", "ls"]),
        ({"tools": ["+grep"], "no_tools": "all"}, 1, ["grep"]),
        ({"tools": ["+grep"], "no_tools": "builtin"}, 9, ["grep"]),
        ({"no_tools": "all"}, 0, []),
        ({"exclude": ["e*", "bash"]}, 7, ["read", "write"]),
    ],
)
def test_tools_resolve_as_in_pi16(kwargs: dict[str, Any], registered: int, active: list[str]) -> None:
    selection = ToolSelection(**kwargs)
    assert len(selection.registered()) == registered and selection.initial_active() == active


def test_mcp_tools_stay_unless_an_entry_names_mcp_and_exclusion_reaches_them() -> None:
    mcp = "mcp__srv__look"
    assert ToolSelection().mcp_tool_state(mcp) is True
    assert ToolSelection(tools=["read"]).mcp_tool_state(mcp) is False  # kept, inactive
    assert ToolSelection(tools=["read", "mcp__srv__*"]).mcp_tool_state(mcp) is True
    assert ToolSelection(tools=["read", "mcp__other__*"]).mcp_tool_state(mcp) is None
    assert ToolSelection(tools=["+grep"]).mcp_tool_state(mcp) is True
    assert ToolSelection(exclude=["mcp__*"]).mcp_tool_state(mcp) is None
    assert ToolSelection(no_tools="all").mcp_tool_state(mcp) is None
    assert ToolSelection(no_tools="builtin").mcp_tool_state(mcp) is True


def test_entries_that_can_name_no_tool_are_the_ones_warned_about() -> None:
    # codemode is no built-in but is registered (inactive), as Pi 1.6.0 registers its extension
    assert unknown_tool_names(["read", "+grep", "-nope", "re*", "zz*", "mcp__a__b", "+codemode"]) == ["-nope", "zz*"]


# --- through a session --------------------------------------------------------------------------


def _session(tmp_path: Path, *argv: str) -> tuple[AgentSession, Any]:
    args, extras = parse("--cwd", str(tmp_path), "--mode", "rpc", *LOOPBACK_MODEL, *argv)
    assert command_line_notices(args, extras).errors == []
    config = build_session_config(args)
    holder: list[AgentSession] = []

    async def make() -> None:
        async with anyio.create_task_group() as tasks:
            holder.append(AgentSession(config, tasks))

    anyio.run(make)
    return holder[0], config


def test_a_session_starts_with_the_tools_pi16_resolves(tmp_path: Path, home: Path) -> None:
    session, _ = _session(tmp_path, "--tools", "+grep,-write")
    assert session.active_tools == ["read", "bash", "edit", "grep"]
    session, _ = _session(tmp_path, "--tools", "re*")
    assert session.active_tools == ["read"]
    session, config = _session(tmp_path, "-xt", "bash", "--no-mcp")
    assert session.active_tools == ["read", "edit", "write"] and config.tools.mcp_enabled is False


def test_name_and_session_id_name_the_new_session(tmp_path: Path, home: Path, caplog: pytest.LogCaptureFixture) -> None:
    session, _ = _session(tmp_path, "--name", "  Refactor auth ", "--session-id", "my-id.1")
    assert (session.history.session_id, session.history.session_name) == ("my-id.1", "Refactor auth")
    assert "No project session found with id 'my-id.1'; creating a new session with that id." in caplog.text
    session, _ = _session(tmp_path, "--no-session", "--session-id", "mem-1")
    assert session.history.session_id == "mem-1" and session.history.session_name is None


def test_session_id_continues_that_session_when_it_exists(tmp_path: Path, home: Path) -> None:
    stored = SessionFile.create(str(tmp_path), "kept-1", SessionDir(home / "sessions"))
    stored.append(UserMessage(content=[TextContent(text="hello")]))
    again, config = _session(tmp_path, "--session-dir", str(home / "sessions"), "--session-id", "kept-1")
    assert config.persistence.resume_from is not None and config.persistence.resume_from.name.endswith("_kept-1.jsonl")
    assert again.history.session_id == "kept-1" and len(again.history.entries.context()) == 1


def test_thinking_max_is_the_highest_level_the_model_has(tmp_path: Path, home: Path) -> None:
    session, config = _session(tmp_path, "--thinking", "max")
    assert config.models.thinking_level == "xhigh" and config.models.thinking_pinned
    assert session.current_model.thinking_level == session.current_model.thinking_levels()[-1]
