"""`--mode acp` session lifecycle and errors as an ACP client meets them (protocol/PROTOCOL.md,
"Agent Client Protocol"), driven by the official Python SDK's client over real pipes."""

from __future__ import annotations

from pathlib import Path

import acp
import pytest

from tests.reliability.local_server import local_server

from .acp_daemon import Editor, spawn_acp

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


async def test_without_a_key_the_client_is_told_which_variables_to_set(workspace: Path, tmp_path: Path) -> None:
    """No key and no --script: `authMethods` name the variables, and a prompt answers ACP's
    auth-required error instead of a scripted demo reply."""
    editor = Editor()
    argv = ["-m", "pi_rpc", "--mode", "acp", "--cwd", str(workspace)]
    async with spawn_acp(editor, argv, tmp_path) as (conn, process):
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
        async with spawn_acp(editor, argv, tmp_path, {"PI_RPC_RETRY_BASE_MS": "1"}) as (conn, process):
            await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(acp.RequestError):
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("hello")])
        notices = [u["content"]["text"] for u in editor.updates() if u["sessionUpdate"] == "agent_thought_chunk"]
        assert len(notices) == len(server.chats()) - 1 >= 1
        assert all(n.startswith("\n[The model request failed: ") and "Retrying in" in n for n in notices)
        assert "(attempt 1 of " in notices[0]
