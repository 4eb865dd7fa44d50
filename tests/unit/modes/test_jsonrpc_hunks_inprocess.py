"""Keeping some hunks of an edit or write through the JSON-RPC front end, in-process: the approval
request numbers the hunks, the editor answers with the ones to keep, the file gets exactly those,
and the model's tool result says which were kept and shows the rejected ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pi_rpc.ai.json_text import encode_json
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification

from ..session.helpers import reply, script, session_config, tool_call
from .jsonrpc_client import Editor, jsonrpc_editor

pytestmark = pytest.mark.anyio

Json = dict[str, Any]

ORIGINAL = "".join(f"line {n}\n" for n in range(1, 31))
BOTH = ORIGINAL.replace("line 2\n", "line two\n").replace("line 28\n", "line twenty-eight\n")
SECOND_ONLY = ORIGINAL.replace("line 28\n", "line twenty-eight\n")
EDITS = [{"oldText": "line 2\n", "newText": "line two\n"}, {"oldText": "line 28\n", "newText": "line twenty-eight\n"}]
SCRIPT = script(
    reply("^edit", [tool_call("edit", path="notes.txt", edits=EDITS)], [{"text": "edited"}]),
    reply("^write", [tool_call("write", path="notes.txt", content=BOTH)], [{"text": "written"}]),
    reply("^create", [tool_call("write", path="new.txt", content="fresh\n")], [{"text": "created"}]),
)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text(ORIGINAL)
    return tmp_path


async def run(editor: Editor, message: str, answer: Json) -> tuple[Json, Json]:
    """Prompt, answer the one approval request; the request's params and the call's end event."""
    editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
    await editor.request("initialize", {"clientInfo": {"name": "test"}, "capabilities": {"approvals": True}})
    prompt = editor.request_nowait("prompt", {"message": message})
    request = await editor.server_request("approval/request")
    editor.answer(request, answer)
    await editor.result(prompt)
    end = await editor.wait_for(
        lambda m: m.get("method") == "agent/event" and m["params"]["type"] == "tool_execution_end"
    )
    return request["params"], end["params"]


def text_of(end: Json) -> str:
    return "".join(part["text"] for part in end["result"]["content"])


@pytest.mark.parametrize("message", ["edit", "write"])
async def test_keeping_one_of_two_hunks_writes_only_it_and_tells_the_model(workspace: Path, message: str) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        params, end = await run(editor, message, {"outcome": "allow", "hunks": [1]})
        hunks = params["preview"]["hunks"]
        assert [(h["index"], h["oldStart"], h["oldLines"], h["newStart"], h["newLines"]) for h in hunks] == [
            (0, 1, 6, 1, 6),
            (1, 24, 7, 24, 7),
        ]
        assert hunks[0]["text"].startswith("@@ -1,6 +1,6 @@\n line 1\n-line 2\n+line two\n")
        assert params["preview"]["patch"].endswith(hunks[0]["text"] + hunks[1]["text"])
        assert (workspace / "notes.txt").read_text() == SECOND_ONLY
        assert not end["isError"]
        assert text_of(end) == (
            "Successfully applied 1 of 2 hunk(s) to notes.txt. The user kept hunk(s) 2 and rejected hunk(s) 1, "
            "which were not applied (the file does not contain them). Do not make the rejected changes again "
            f"unless the user asks for them.\n\nHunk 1:\n{hunks[0]['text']}"
        )
        assert end["result"]["details"]["hunks"] == {"kept": [1], "rejected": [0], "rejectedHunks": [hunks[0]]}


async def test_keeping_every_hunk_is_the_plain_result(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        _, end = await run(editor, "edit", {"outcome": "allow", "hunks": [0, 1]})
        assert (workspace / "notes.txt").read_text() == BOTH
        assert text_of(end) == "Successfully replaced 2 block(s) in notes.txt."
        assert "hunks" not in end["result"]["details"]


async def test_keeping_no_hunk_rejects_the_call_with_the_hunks(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        params, end = await run(editor, "edit", {"outcome": "allow", "hunks": [], "reason": "not now"})
        assert (workspace / "notes.txt").read_text() == ORIGINAL
        assert end["isError"]
        hunks = params["preview"]["hunks"]
        assert text_of(end) == (
            "The user rejected this edit call: not now. They rejected every hunk of the change to notes.txt, "
            "so nothing was written. Do not make these changes again unless the user asks for them.\n\n"
            f"Hunk 1:\n{hunks[0]['text']}\nHunk 2:\n{hunks[1]['text']}"
        )


async def test_a_hunk_the_change_does_not_have_refuses_the_call(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        _, end = await run(editor, "edit", {"outcome": "allow", "hunks": [0, 5]})
        assert (workspace / "notes.txt").read_text() == ORIGINAL
        assert text_of(end) == (
            "Tool edit was not run: the client kept hunk(s) 5, which the change does not have (it has 2)."
        )


async def test_a_new_file_has_no_hunks_and_is_written_whole(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        params, end = await run(editor, "create", {"outcome": "allow"})
        assert "hunks" not in params["preview"]
        assert (workspace / "new.txt").read_text() == "fresh\n"
        assert text_of(end) == "Successfully wrote to new.txt"


async def test_a_file_changed_after_the_choice_is_not_written(workspace: Path) -> None:
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
        await editor.request("initialize", {"clientInfo": {"name": "test"}, "capabilities": {"approvals": True}})
        prompt = editor.request_nowait("prompt", {"message": "write"})
        request = await editor.server_request("approval/request")
        (workspace / "notes.txt").write_text("line 1\n" + ORIGINAL)  # the user typed meanwhile
        editor.answer(request, {"outcome": "allow", "hunks": [0]})
        await editor.result(prompt)
        end = await editor.wait_for(
            lambda m: m.get("method") == "agent/event" and m["params"]["type"] == "tool_execution_end"
        )
        assert end["params"]["isError"]
        assert "the file changed after the approval" in text_of(end["params"])
        assert (workspace / "notes.txt").read_text() == "line 1\n" + ORIGINAL
