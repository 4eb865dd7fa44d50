"""An edit's ACP diff is the whole file, in-process: AcpAgent over a real session editing the
sample project, from the disk and from an editor buffer with unsaved changes (`fs/read_text_file`).
A diff viewer (Zed, Emacs agent-shell) diffs `oldText` against `newText` itself: the edit's snippet
in their place is drawn at line 1 with false "no newline" markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import acp
import anyio
import pytest
from acp.schema import ClientCapabilities, FileSystemCapabilities, ReadTextFileResponse

from ..session.helpers import session_config
from .acp_editor import acp_agent, text
from .acp_scripted_editor import ScriptedEditor, final_updates
from .approvals_sample import FIXED, ORIGINAL, SCRIPT, greet, sample_workspace

pytestmark = pytest.mark.anyio

Json = dict[str, Any]
UNSAVED = "# a line typed in the editor, not saved yet\n"


class BufferEditor(ScriptedEditor):
    """An editor that serves reads: greet.py's buffer has an unsaved line the disk lacks."""

    def __init__(self) -> None:
        super().__init__(["allow"])
        self.reads: list[str] = []

    async def read_text_file(self, session_id: str, path: str, **_: Any) -> ReadTextFileResponse:
        self.reads.append(path)
        text = await anyio.Path(path).read_text()
        return ReadTextFileResponse(content=UNSAVED + text if path.endswith("greet.py") else text)


def diffs(update: Json) -> list[Json]:
    return [block for block in update["content"] if block["type"] == "diff"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


async def test_an_edit_mid_file_ends_with_the_whole_file_before_and_after(workspace: Path) -> None:
    before = greet(workspace)
    editor = ScriptedEditor(["allow"])
    async with acp_agent(session_config(workspace, SCRIPT), editor, connected=True) as agent:
        session = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=session.session_id, prompt=text("fix greeting"))
    [end] = final_updates(editor)
    path = str(workspace / "src" / "greet.py")
    assert end["status"] == "completed"
    assert diffs(end) == [{"type": "diff", "path": path, "oldText": before, "newText": before.replace(ORIGINAL, FIXED)}]
    assert end["locations"] == [{"path": path, "line": before.splitlines().index(f"    {ORIGINAL}") + 1}]
    [announced] = [u for u in editor.updates() if u["sessionUpdate"] == "tool_call"]
    assert diffs(announced) == diffs(end)  # the forecast, before anything ran


async def test_an_edit_of_an_editor_buffer_shows_the_buffer(workspace: Path) -> None:
    buffer = UNSAVED + greet(workspace)
    editor = BufferEditor()
    async with acp_agent(session_config(workspace, SCRIPT), editor, connected=True) as agent:
        await agent.initialize(
            protocol_version=acp.PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True)),
        )
        session = await agent.new_session(cwd=str(workspace))
        await agent.prompt(session_id=session.session_id, prompt=text("fix greeting"))
    assert editor.reads  # the tool read the buffer
    [end] = final_updates(editor)
    path = str(workspace / "src" / "greet.py")
    assert diffs(end) == [{"type": "diff", "path": path, "oldText": buffer, "newText": buffer.replace(ORIGINAL, FIXED)}]
    assert greet(workspace) == buffer.replace(ORIGINAL, FIXED)  # written to the disk (no writeTextFile)
