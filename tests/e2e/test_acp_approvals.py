"""Approvals and the editor's files in `--mode acp`, driven by the ACP SDK's own client side:
`session/request_permission` with the diff, the policies as session modes, `fs/read_text_file`
and `fs/write_text_file`. Every message the agent sends is checked against the SDK's schema
models (which are generated from the ACP JSON Schema)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp.client.connection import ClientSideConnection
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    FileSystemCapabilities,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SessionNotification,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from pydantic import BaseModel

from .acp_daemon import Editor, daemon_argv, spawn_acp
from .conftest import SCRIPTS

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]

Json = dict[str, Any]
ORIGINAL = 'return f"Helo, {name}!"'
FIXED = 'return f"Hello, {name}!"'
SCRIPT = SCRIPTS / "approvals.json"
# What the agent may send to the client, and the schema model each one must satisfy.
CLIENT_METHOD_MODELS: dict[str, type[BaseModel]] = {
    "session/update": SessionNotification,
    "session/request_permission": RequestPermissionRequest,
    "fs/read_text_file": ReadTextFileRequest,
    "fs/write_text_file": WriteTextFileRequest,
}


def assert_valid_acp(messages: list[Json]) -> None:
    """Each request and notification validates against its schema model, and survives the round
    trip unchanged (no field the schema does not know, none coerced)."""
    for message in messages:
        method = message.get("method")
        if method is None:
            continue
        model = CLIENT_METHOD_MODELS[method]
        params = message["params"]
        assert model.model_validate(params).model_dump(mode="json", by_alias=True, exclude_unset=True) == params


class ApprovingEditor(Editor):
    """An ACP client that can ask the user (answers scripted per request) and serves files from
    its buffers (unsaved text included)."""

    def __init__(self, answers: list[str] | None = None, buffers: dict[str, str] | None = None) -> None:
        super().__init__()
        self.answers = list(answers or [])
        self.buffers = buffers if buffers is not None else {}
        self.asked = anyio.Event()
        self.release = anyio.Event()  # for "hold": set to answer `cancelled`

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kwargs: Any
    ) -> RequestPermissionResponse:
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else "allow"
        if answer == "hold":  # like an editor whose dialog is open until the turn is cancelled
            await self.release.wait()
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=answer))

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        if path not in self.buffers:  # a file not open in the editor: its text on disk
            self.buffers[path] = await anyio.Path(path).read_text()
        return ReadTextFileResponse(content=self.buffers[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any) -> WriteTextFileResponse:
        self.buffers[path] = content
        return WriteTextFileResponse()

    def requests(self, method: str) -> list[Json]:
        return [m for m in self.received if m.get("method") == method]


@asynccontextmanager
async def connect(
    workspace: Path, home: Path, editor: Editor, *, files: bool = False, extra: tuple[str, ...] = ()
) -> AsyncIterator[tuple[ClientSideConnection, Any]]:
    capabilities = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=files, write_text_file=files))
    async with spawn_acp(editor, [*daemon_argv(workspace, SCRIPT), *extra], home) as (conn, process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION, client_capabilities=capabilities)
        yield conn, process
    assert process.returncode == 0
    assert_valid_acp(editor.received)


def greet(workspace: Path) -> str:
    return (workspace / "src" / "greet.py").read_text()


def final_updates(editor: Editor) -> list[Json]:
    return [
        u
        for u in editor.updates()
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    ]


async def test_permission_shows_the_diff_and_allow_runs_the_edit(workspace: Path, tmp_path: Path) -> None:
    editor = ApprovingEditor(["allow"])
    original = greet(workspace)
    async with connect(workspace, tmp_path, editor) as (conn, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        assert session.modes is not None and session.modes.current_mode_id == "ask"
        assert [m.id for m in session.modes.available_modes] == ["ask", "acceptEdits", "auto", "readOnly"]
        response = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix greeting")])
        assert response.stop_reason == "end_turn"

    [request] = editor.requests("session/request_permission")
    params = request["params"]
    [announced] = [u for u in editor.updates() if u["sessionUpdate"] == "tool_call"]
    call = params["toolCall"]
    assert call["toolCallId"] == announced["toolCallId"]
    assert (call["title"], call["kind"]) == ("edit src/greet.py", "edit")  # the title of the tool call's row
    assert "status" not in call  # it stays in_progress in the editor while it waits
    path = str(workspace / "src" / "greet.py")
    assert call["content"] == [
        {"type": "diff", "path": path, "oldText": original, "newText": original.replace("Helo", "Hello")}
    ]
    assert [(o["optionId"], o["kind"]) for o in params["options"]] == [
        ("allow", "allow_once"),
        ("allowAlways", "allow_always"),
        ("reject", "reject_once"),
    ]
    assert params["options"][1]["name"] == "Always allow edit"
    assert FIXED in greet(workspace)
    assert [u["status"] for u in final_updates(editor)] == ["completed"]


async def test_a_client_without_permissions_or_files_sees_no_change(workspace: Path, tmp_path: Path) -> None:
    """An ACP client must answer `session/request_permission`; one that answers "method not
    found" gets what a client that cannot ask gets (auto), and no fs requests."""
    editor = Editor()
    async with connect(workspace, tmp_path, editor) as (conn, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        for text in ("fix greeting", "run tests"):
            response = await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(text)])
            assert response.stop_reason == "end_turn"
    assert FIXED in greet(workspace)
    assert [u["status"] for u in final_updates(editor)] == ["completed", "completed"]
    asked = [m["method"] for m in editor.received if "method" in m and m["method"] != "session/update"]
    assert asked == ["session/request_permission"]  # once, answered -32601; never again
    assert [u for u in editor.updates() if u["sessionUpdate"] == "current_mode_update"] == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "auto"}
    ]


async def test_reads_and_edits_go_through_the_editors_buffers(workspace: Path, tmp_path: Path) -> None:
    path = str(workspace / "src" / "greet.py")
    unsaved = greet(workspace).replace("import sys", "import sys  # unsaved in the editor")
    editor = ApprovingEditor(["allow"], buffers={path: unsaved})
    async with connect(workspace, tmp_path, editor, files=True) as (conn, process):
        session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("read greet")])
        [read] = final_updates(editor)
        assert "unsaved in the editor" in read["content"][0]["content"]["text"]
        await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("fix greeting")])
    reads = editor.requests("fs/read_text_file")
    assert reads[0]["params"] == {"sessionId": session.session_id, "path": path}
    [permission] = editor.requests("session/request_permission")
    assert permission["params"]["toolCall"]["content"][0]["oldText"] == unsaved  # the diff is of the buffer
    [write] = editor.requests("fs/write_text_file")
    assert write["params"] == {
        "sessionId": session.session_id,
        "path": path,
        "content": unsaved.replace("Helo", "Hello"),
    }
    assert editor.buffers[path] == unsaved.replace("Helo", "Hello")
    # The editor applied it to its buffer; the disk is the editor's business.
    assert ORIGINAL in greet(workspace) and "unsaved" not in greet(workspace)
