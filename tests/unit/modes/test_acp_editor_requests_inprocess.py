"""Requests to the editor that must not hang a turn, in ACP and in the native JSON-RPC protocol:
a file read answered with a line over the message limit, or with a line that is not JSON, or
never answered. The daemons run in-process over pipes (their own transport and reader); the test
is the editor, speaking JSON lines. The limits and the deadline are made small; nothing here
measures time."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.modes.acp.server import AcpDaemon
from pi_rpc.modes.editor_requests import EditorDeadlines
from pi_rpc.modes.jsonrpc.server import Daemon

from ..session.helpers import reply, script, session_config, tool_call
from .pipes import LinePeer, serve_over_pipes

pytestmark = pytest.mark.anyio

Json = dict[str, Any]

LIMIT = 4096  # bytes: the daemon's message limit here
QUICK = EditorDeadlines(files=0.05)
READ = reply("^read", [tool_call("read", path="notes.txt")], [{"text": "Read it."}])


@asynccontextmanager
async def acp_editor(workspace: Path) -> AsyncIterator[tuple[LinePeer, str]]:
    """The daemon, initialized by an editor that serves file reads, and one session."""
    config = session_config(workspace, script(READ))
    async with serve_over_pipes(
        lambda stdin, stdout: AcpDaemon(
            config, stdin_fd=stdin, stdout_fd=stdout, max_message_bytes=LIMIT, deadlines=QUICK
        )
    ) as peer:
        capabilities = {"fs": {"readTextFile": True, "writeTextFile": False}}
        await call(peer, 1, "initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        created = await call(peer, 2, "session/new", {"cwd": str(workspace), "mcpServers": []})
        yield peer, created["result"]["sessionId"]


async def call(peer: LinePeer, msg_id: int, method: str, params: Json) -> Json:
    start = len(peer.lines)
    peer.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return await peer.wait_for(lambda line: line.get("id") == msg_id and "method" not in line, start)


def is_read_request(line: Json) -> bool:
    return line.get("method") == "fs/read_text_file"


def failed_call_text(peer: LinePeer) -> str:
    [failed] = [
        line["params"]["update"]
        for line in peer.lines
        if line.get("method") == "session/update"
        and line["params"]["update"].get("sessionUpdate") == "tool_call_update"
        and line["params"]["update"].get("status") == "failed"
    ]
    text: str = failed["content"][-1]["content"]["text"]
    return text


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("on disk\n")
    return tmp_path


async def prompt_answered_by(peer: LinePeer, session_id: str, answer: bytes | None) -> Json:
    """A turn whose read the editor answers with `answer` (None: never answers); its response."""
    start = len(peer.lines)
    peer.send(
        {
            "jsonrpc": "2.0",
            "id": 10,
            "method": "session/prompt",
            "params": {"sessionId": session_id, "prompt": [{"type": "text", "text": "read notes"}]},
        }
    )
    asked = await peer.wait_for(is_read_request, start)
    if answer is not None:
        peer.send(answer.replace(b"ID", json.dumps(asked["id"]).encode()))
    return await peer.wait_for(lambda line: line.get("id") == 10 and "method" not in line, start)


@pytest.mark.parametrize("id_last", [False, True], ids=["id first", "id last"])
async def test_an_answer_over_the_limit_fails_the_read_at_once_and_says_why(workspace: Path, id_last: bool) -> None:
    content = "x" * (3 * LIMIT)
    answer = (
        b'{"jsonrpc":"2.0","result":{"content":"' + content.encode() + b'"},"id":ID}'
        if id_last
        else b'{"jsonrpc":"2.0","id":ID,"result":{"content":"' + content.encode() + b'"}}'
    )
    async with acp_editor(workspace) as (peer, session_id):
        done = await prompt_answered_by(peer, session_id, answer)
        assert done["result"]["stopReason"] == "end_turn"
        assert failed_call_text(peer) == (
            f"the editor's answer to fs/read_text_file was {len(answer) / 1024:.3g} KiB, over the 4 KiB limit"
        )
        # No parse error went back for an answer (JSON-RPC answers no response), and the daemon serves on.
        assert not [line for line in peer.lines if line.get("error", {}).get("code") == -32700]
        assert "result" in await call(peer, 20, "session/new", {"cwd": str(workspace), "mcpServers": []})


async def test_an_answer_that_is_not_json_fails_the_read_and_says_why(workspace: Path) -> None:
    async with acp_editor(workspace) as (peer, session_id):
        done = await prompt_answered_by(peer, session_id, b'{"jsonrpc":"2.0","id":ID,"result":{"content":"cut')
        assert done["result"]["stopReason"] == "end_turn"
        assert failed_call_text(peer).startswith("the editor's answer to fs/read_text_file is not JSON: ")


async def test_a_read_never_answered_fails_at_its_deadline_and_a_late_answer_is_ignored(workspace: Path) -> None:
    async with acp_editor(workspace) as (peer, session_id):
        done = await prompt_answered_by(peer, session_id, None)
        assert done["result"]["stopReason"] == "end_turn"
        assert failed_call_text(peer) == "the editor did not answer fs/read_text_file within 0.05 s"
        [asked] = [line for line in peer.lines if is_read_request(line)]
        start = len(peer.lines)
        peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": {"content": "too late"}})
        assert "result" in await call(peer, 21, "session/new", {"cwd": str(workspace), "mcpServers": []})
        assert [line for line in peer.lines[start:] if "error" in line] == []


# --- the same over the native JSON-RPC protocol (JSON lines) ---------------------------------------


@asynccontextmanager
async def jsonrpc_editor(workspace: Path) -> AsyncIterator[LinePeer]:
    config = session_config(workspace, script(READ))
    async with serve_over_pipes(
        lambda stdin, stdout: Daemon(
            config, "jsonl", max_message_bytes=LIMIT, stdin_fd=stdin, stdout_fd=stdout, deadlines=QUICK
        )
    ) as peer:
        await call(peer, 1, "initialize", {"capabilities": {"files": True}, "approvalPolicy": "auto"})
        yield peer


def jsonrpc_tool_result(peer: LinePeer) -> str:
    [end] = [
        line["params"]
        for line in peer.lines
        if line.get("method") == "agent/event" and line["params"]["type"] == "tool_execution_end"
    ]
    assert end["isError"]
    text: str = end["result"]["content"][0]["text"]
    return text


TOO_LARGE = b'{"jsonrpc":"2.0","id":ID,"result":{"content":"' + b"x" * (2 * LIMIT) + b'"}}'


@pytest.mark.parametrize("too_large", [True, False], ids=["too large", "never answered"])
async def test_a_jsonrpc_read_answered_too_large_or_never_fails_and_says_why(workspace: Path, too_large: bool) -> None:
    async with jsonrpc_editor(workspace) as peer:
        start = len(peer.lines)
        peer.send({"jsonrpc": "2.0", "id": 10, "method": "prompt", "params": {"message": "read notes"}})
        asked = await peer.wait_for(lambda line: line.get("method") == "fs/readTextFile", start)
        why = "the editor did not answer fs/readTextFile within 0.05 s"
        if too_large:
            answer = TOO_LARGE.replace(b"ID", json.dumps(asked["id"]).encode())
            peer.send(answer)
            why = f"the editor's answer to fs/readTextFile was {len(answer) / 1024:.3g} KiB, over the 4 KiB limit"
        done = await peer.wait_for(lambda line: line.get("id") == 10 and "method" not in line, start)
        assert done["result"]["stopReason"] == "stop"
        assert jsonrpc_tool_result(peer) == why
        assert "result" in await call(peer, 11, "state", {})  # the daemon serves on
