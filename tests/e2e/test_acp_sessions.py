"""`--mode acp` session lifecycle and errors as an ACP client meets them (issue 13's bugs),
driven by the official Python SDK's client over real pipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import cast

import acp
import anyio
import pytest

from tests.reliability.local_server import local_server

from .conftest import daemon_env
from .test_acp_mode import Editor, connect

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_an_unprompted_session_is_listed_and_loaded_here_and_after_a_restart(
    workspace: Path, tmp_path: Path
) -> None:
    async with connect(workspace, tmp_path) as (conn, editor, process):
        made = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        listed = await conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [made.session_id]
        loaded = await conn.load_session(cwd=str(workspace), session_id=made.session_id, mcp_servers=[])
        assert loaded.modes is not None
    async with connect(workspace, tmp_path) as (conn, editor, process):
        await conn.load_session(cwd=str(workspace), session_id=made.session_id, mcp_servers=[])
        answer = await conn.prompt(session_id=made.session_id, prompt=[acp.text_block("list files")])
        assert answer.stop_reason == "end_turn"


async def test_list_without_cwd_shows_every_workspace_and_a_session_loads_in_its_own(
    workspace: Path, tmp_path: Path
) -> None:
    """The daemon runs in `workspace`; a session made in another folder is listed with that
    folder (and only there when filtered) and loads with it."""
    other = tmp_path / "other"
    other.mkdir()
    async with connect(workspace, tmp_path) as (conn, editor, process):
        here = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        there = await conn.new_session(cwd=str(other), mcp_servers=[])
        await conn.prompt(session_id=there.session_id, prompt=[acp.text_block("list files")])
    async with connect(workspace, tmp_path) as (conn, editor, process):
        every = await conn.list_sessions()
        assert sorted((s.session_id, s.cwd) for s in every.sessions) == sorted(
            [(here.session_id, str(workspace)), (there.session_id, str(other))]
        )
        filtered = await conn.list_sessions(cwd=str(other))
        assert [(s.session_id, s.title) for s in filtered.sessions] == [(there.session_id, "list files")]
        await conn.load_session(cwd=str(other), session_id=there.session_id, mcp_servers=[])
        replayed = [u for u in editor.updates() if u["sessionUpdate"] == "user_message_chunk"]
        assert replayed == [{"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "list files"}}]


async def test_an_unknown_session_is_resource_not_found(workspace: Path, tmp_path: Path) -> None:
    async with connect(workspace, tmp_path) as (conn, editor, process):
        for call in (
            conn.load_session(cwd=str(workspace), session_id="nope", mcp_servers=[]),
            conn.prompt(session_id="nope", prompt=[acp.text_block("hi")]),
        ):
            with pytest.raises(acp.RequestError) as error:
                await call
            assert (error.value.code, error.value.data) == (-32002, {"details": "Session not found: nope"})


async def test_a_second_prompt_while_busy_is_refused_in_acp_terms(workspace: Path, tmp_path: Path) -> None:
    async with connect(workspace, tmp_path) as (conn, editor, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lambda: conn.prompt(session_id=session.session_id, prompt=[acp.text_block("slow")]))
            await editor.wait_for(
                lambda m: "started" in json.dumps(m.get("params", {}).get("update", {}).get("content", ""))
            )
            with pytest.raises(acp.RequestError) as error:
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hi")])
            await conn.cancel(session_id=session.session_id)
        assert error.value.code == -32600
        assert "streamingBehavior" not in json.dumps(error.value.data)
        assert "session/cancel" in json.dumps(error.value.data)


async def test_without_a_key_the_client_is_told_which_variables_to_set(workspace: Path, tmp_path: Path) -> None:
    """No key and no --script: `authMethods` name the variables, and a prompt answers ACP's
    auth-required error instead of a scripted demo reply."""
    editor = Editor()
    argv = ["-m", "pi_rpc", "--mode", "acp", "--cwd", str(workspace)]
    async with acp.spawn_agent_process(
        cast(acp.Client, editor),
        sys.executable,
        *argv,
        env=daemon_env(tmp_path),
        transport_kwargs={"stderr": subprocess.DEVNULL},
        observers=[editor.observe],
    ) as (conn, process):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        methods = [(m.id, m.description, m.field_meta) for m in init.auth_methods or []]
        assert methods == [
            (
                "anthropic-api-key",
                "Set ANTHROPIC_API_KEY in the environment pi-rpc is started with",
                {"env": ["ANTHROPIC_API_KEY"]},
            ),
            (
                "openai-api-key",
                "Set OPENAI_API_KEY in the environment pi-rpc is started with",
                {"env": ["OPENAI_API_KEY"]},
            ),
        ]
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        with pytest.raises(acp.RequestError) as error:
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hello")])
        assert error.value.code == -32000
        assert "ANTHROPIC_API_KEY" in str(error.value) and "OPENAI_API_KEY" in str(error.value)
        assert not [u for u in editor.updates() if u["sessionUpdate"] == "agent_message_chunk"]


async def test_each_retry_of_a_failing_provider_is_a_visible_notice(workspace: Path, tmp_path: Path) -> None:
    """A real OpenAI-compatible server on 127.0.0.1 answering 500: every retry is shown as a
    thought chunk before the prompt fails (PI_RPC_RETRY_BASE_MS keeps the waits short)."""
    editor = Editor()
    with local_server(["m"], fail_status=500) as server:
        argv = ["-m", "pi_rpc", "--mode", "acp", "--cwd", str(workspace), "--base-url", server.url, "--model", "m"]
        env = {**daemon_env(tmp_path), "PI_RPC_RETRY_BASE_MS": "1"}
        async with acp.spawn_agent_process(
            cast(acp.Client, editor),
            sys.executable,
            *argv,
            env=env,
            transport_kwargs={"stderr": subprocess.DEVNULL},
            observers=[editor.observe],
        ) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(acp.RequestError):
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hello")])
        notices = [u["content"]["text"] for u in editor.updates() if u["sessionUpdate"] == "agent_thought_chunk"]
        assert len(notices) == len(server.chats()) - 1 >= 1
        assert all(n.startswith("\n[The model request failed: ") and "Retrying in" in n for n in notices)
        assert "(attempt 1 of " in notices[0]
