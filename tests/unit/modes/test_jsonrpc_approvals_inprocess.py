"""Approvals and editor-owned files through the JSON-RPC front end, in-process: the daemon asks,
the test answers as the editor. These ran as daemon subprocesses before (tests/e2e), though
nothing in them depends on pipes or a process; the events are the `agent/event` notifications
the daemon would write, encoded as it encodes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.ai.json_text import encode_json
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification

from ..session.helpers import session_config
from .approvals_sample import FIXED, ORIGINAL, SCRIPT, greet, sample_workspace
from .jsonrpc_client import jsonrpc_editor
from .jsonrpc_harness import asked, event, events, start

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


async def test_edit_waits_for_approval_with_its_diff_then_runs(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True})
        assert (await editor.request("state"))["approvalPolicy"] == "ask"
        prompt = editor.request_nowait("prompt", {"message": "fix greeting"})
        request = await editor.server_request("approval/request")
        params = request["params"]
        assert params["toolName"] == "edit" and params["title"] == "Edit src/greet.py"
        preview = params["preview"]
        assert preview["path"] == str(workspace / "src" / "greet.py")
        assert f"-    {ORIGINAL}" in preview["patch"] and f"+    {FIXED}" in preview["patch"]
        assert ORIGINAL in preview["oldText"] and FIXED in preview["newText"]
        # Nothing is written while the user looks at the diff, and the wait is visible.
        assert ORIGINAL in greet(workspace)
        assert (await editor.request("state"))["pendingApprovals"] == [params["toolCallId"]]
        assert (await event(editor, "tool_approval_request"))["request"]["toolCallId"] == params["toolCallId"]
        editor.answer(request, {"outcome": "allow"})
        assert (await editor.result(prompt))["stopReason"] == "stop"
        assert FIXED in greet(workspace)
        assert (await event(editor, "tool_approval_end"))["outcome"] == "allow"
        assert (await editor.request("state"))["pendingApprovals"] == []


async def test_reject_leaves_the_file_and_the_model_reads_the_reason(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True})
        prompt = editor.request_nowait("prompt", {"message": "fix greeting"})
        request = await editor.server_request("approval/request")
        editor.answer(request, {"outcome": "reject", "reason": "keep the typo, it is a test fixture"})
        await editor.result(prompt)
        end = await event(editor, "tool_execution_end")
        assert end["isError"] is True
        assert end["result"]["content"][0]["text"] == (
            "The user rejected this edit call: keep the typo, it is a test fixture"
        )
        assert ORIGINAL in greet(workspace)


async def test_allow_always_stops_asking_for_that_command_prefix(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True})
        prompt = editor.request_nowait("prompt", {"message": "run tests"})
        request = await editor.server_request("approval/request")
        assert request["params"]["suggestedRule"] == "bash(echo tests:*)"
        assert request["params"]["preview"]["command"] == "echo tests passed"
        editor.answer(request, {"outcome": "allowAlways"})
        await editor.result(prompt)
        seen = len(editor.received)
        assert (await editor.request("prompt", {"message": "run tests"}))["stopReason"] == "stop"
        assert asked(editor, seen) == []
        outputs = [e for e in events(editor) if e["type"] == "tool_execution_end"]
        assert [e["result"]["content"][0]["text"] for e in outputs] == ["tests passed\n"] * 2


async def test_read_only_refuses_changes_without_asking(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True})
        assert await editor.request("approval/setPolicy", {"policy": "readOnly"}) == {"policy": "readOnly"}
        seen = len(editor.received)
        await editor.request("prompt", {"message": "fix greeting"})
        end = await event(editor, "tool_execution_end")
        assert end["isError"] is True and "read-only" in end["result"]["content"][0]["text"]
        assert ORIGINAL in greet(workspace) and asked(editor, seen) == []


async def test_abort_while_waiting_cancels_the_request_and_ends_the_run_once(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True})
        prompt = editor.request_nowait("prompt", {"message": "fix greeting"})
        request = await editor.server_request("approval/request")
        await editor.request("abort")
        cancel = await editor.wait_for(lambda m: m.get("method") == "$/cancelRequest")
        assert cancel["params"] == {"id": request["id"]}
        assert (await editor.result(prompt))["stopReason"] == "aborted"
        assert (await event(editor, "tool_approval_end"))["outcome"] == "cancelled"
        assert (await event(editor, "tool_execution_end"))["result"]["content"][0]["text"] == "Operation aborted"
        assert [e["type"] for e in events(editor)].count("agent_end") == 1
        # A late answer to the cancelled request changes nothing.
        editor.answer(request, {"outcome": "allow"})
        assert (await editor.request("state"))["pendingApprovals"] == []
        assert ORIGINAL in greet(workspace)


async def test_accept_edits_runs_edits_and_asks_for_bash(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True}, approvalPolicy="acceptEdits")
        await editor.request("prompt", {"message": "fix greeting"})
        assert FIXED in greet(workspace) and asked(editor) == []
        prompt = editor.request_nowait("prompt", {"message": "run tests"})
        editor.answer(await editor.server_request("approval/request"), {"outcome": "allow"})
        assert (await editor.result(prompt))["stopReason"] == "stop"


async def test_reads_outside_the_workspace_ask(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"approvals": True})
        prompt = editor.request_nowait("prompt", {"message": "read outside"})
        request = await editor.server_request("approval/request")
        assert request["params"]["toolName"] == "read"
        assert request["params"]["preview"]["path"] == "/etc/hostname"
        editor.answer(request, {"outcome": "reject"})
        await editor.result(prompt)
        end = await event(editor, "tool_execution_end")
        assert end["result"]["content"][0]["text"] == "The user rejected this read call"


async def test_a_client_without_the_capability_sees_no_change(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
        assert (await editor.request("initialize", {"clientInfo": {"name": "old"}}))["approvalPolicy"] == "auto"
        await editor.request("prompt", {"message": "fix greeting"})
        assert FIXED in greet(workspace)
        assert [m for m in editor.received if "method" in m and "id" in m] == []  # no request of the daemon's
        assert not [e for e in events(editor) if e["type"].startswith("tool_approval")]


async def test_reads_and_edits_go_through_the_editors_buffer(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"files": True})
        path = str(workspace / "src" / "greet.py")
        unsaved = greet(workspace).replace("import sys", "import sys  # unsaved in the editor")

        prompt = editor.request_nowait("prompt", {"message": "read greet"})
        request = await editor.server_request("fs/readTextFile")
        assert request["params"] == {"path": path}
        editor.answer(request, {"content": unsaved})
        await editor.result(prompt)
        assert "unsaved in the editor" in (await event(editor, "tool_execution_end"))["result"]["content"][0]["text"]

        editor.received.clear()
        prompt = editor.request_nowait("prompt", {"message": "fix greeting"})
        # The buffer is read for the run's checkpoint (what a rewind restores), then by the edit.
        for _ in range(2):
            read = await editor.server_request("fs/readTextFile")
            editor.received.remove(read)
            editor.answer(read, {"content": unsaved})
        write = await editor.server_request("fs/writeTextFile")
        assert write["params"]["path"] == path
        assert write["params"]["content"] == unsaved.replace("Helo", "Hello")
        editor.answer(write, None)
        assert (await editor.result(prompt))["stopReason"] == "stop"
        # The editor applied it to its buffer; the disk is the editor's business.
        assert ORIGINAL in greet(workspace) and "unsaved" not in greet(workspace)


async def test_a_client_error_on_a_file_request_fails_the_call_clearly(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor, capabilities={"files": True})
        prompt = editor.request_nowait("prompt", {"message": "read greet"})
        request = await editor.server_request("fs/readTextFile")
        editor.client.resolve(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": "buffer is locked"}}
        )
        await editor.result(prompt)
        end = await event(editor, "tool_execution_end")
        assert end["isError"] is True
        assert end["result"]["content"][0]["text"] == "The client failed fs/readTextFile: buffer is locked"
