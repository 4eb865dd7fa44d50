"""ACP approvals as session logic, in-process: AcpAgent over real sessions with a connection that
answers `session/request_permission` as scripted. These ran through the SDK's client over a daemon
subprocess before; what stays there (tests/e2e/test_acp_approvals.py) is what the SDK's side and
the schema check add: the permission request as sent, a client answering "method not found", and
the fs/* requests."""

from __future__ import annotations

from pathlib import Path

import acp
import anyio
import pytest

from ..session.helpers import session_config
from .acp_editor import acp_agent, text
from .acp_scripted_editor import ScriptedEditor, final_updates
from .approvals_sample import ORIGINAL, SCRIPT, greet, sample_workspace

pytestmark = pytest.mark.anyio


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return sample_workspace(tmp_path)


async def test_reject_leaves_the_file_and_the_model_reads_why(workspace: Path) -> None:
    editor = ScriptedEditor(["reject"])
    async with acp_agent(session_config(workspace, SCRIPT), editor, connected=True) as agent:
        session = await agent.new_session(cwd=str(workspace))
        assert (
            await agent.prompt(session_id=session.session_id, prompt=text("fix greeting"))
        ).stop_reason == "end_turn"
    [end] = final_updates(editor)
    assert end["status"] == "failed"
    assert end["content"][-1]["content"]["text"] == "The user rejected this edit call"
    assert ORIGINAL in greet(workspace)


async def test_allow_always_stops_asking_in_that_session_only(workspace: Path) -> None:
    editor = ScriptedEditor(["allowAlways", "allow"])
    async with acp_agent(session_config(workspace, SCRIPT), editor, connected=True) as agent:
        first = await agent.new_session(cwd=str(workspace))
        for _ in range(2):
            await agent.prompt(session_id=first.session_id, prompt=text("run tests"))
        assert len(editor.asked) == 1
        content = editor.asked[0].model_dump(mode="json", by_alias=True, exclude_none=True)["content"]
        assert content == [{"type": "content", "content": {"type": "text", "text": "echo tests passed"}}]
        assert editor.offered[0][1].name == "Always allow bash(echo tests:*)"
        second = await agent.new_session(cwd=str(workspace))  # its own rules: it asks again
        await agent.prompt(session_id=second.session_id, prompt=text("run tests"))
        assert editor.sessions_asked == [first.session_id, second.session_id]
    outputs = [u["content"][0]["content"]["text"] for u in final_updates(editor)]
    assert outputs == ["tests passed\n"] * 3


async def test_read_only_mode_blocks_changes_without_asking(workspace: Path) -> None:
    editor = ScriptedEditor([])
    async with acp_agent(session_config(workspace, SCRIPT), editor, connected=True) as agent:
        session = await agent.new_session(cwd=str(workspace))
        await agent.set_session_mode(session_id=session.session_id, mode_id="readOnly")
        for message in ("fix greeting", "run tests"):
            assert (await agent.prompt(session_id=session.session_id, prompt=text(message))).stop_reason == "end_turn"
    assert editor.asked == []
    ends = final_updates(editor)
    assert [u["status"] for u in ends] == ["failed", "failed"]
    assert all("read-only" in u["content"][-1]["content"]["text"] for u in ends)
    assert ORIGINAL in greet(workspace)


async def test_cancel_while_asking_ends_the_turn_cancelled_and_leaves_the_file(workspace: Path) -> None:
    editor = ScriptedEditor(["hold"])
    async with acp_agent(session_config(workspace, SCRIPT), editor, connected=True) as agent:
        session = await agent.new_session(cwd=str(workspace))
        stops: list[str] = []

        async def prompt() -> None:
            stops.append((await agent.prompt(session_id=session.session_id, prompt=text("fix greeting"))).stop_reason)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(prompt)
            with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
                await editor.asking.wait()
            await agent.cancel(session_id=session.session_id)
            editor.release.set()
        assert stops == ["cancelled"]
        editor.answers = ["reject"]  # the session takes the next prompt as usual
        again = await agent.prompt(session_id=session.session_id, prompt=text("fix greeting"))
        assert again.stop_reason == "end_turn"
    ends = final_updates(editor)
    assert [u["status"] for u in ends] == ["failed", "failed"]
    assert [u["content"][-1]["content"]["text"] for u in ends] == [
        "Operation aborted",
        "The user rejected this edit call",
    ]
    assert ORIGINAL in greet(workspace)


async def test_an_unknown_mode_is_refused(workspace: Path) -> None:
    async with acp_agent(session_config(workspace, SCRIPT), ScriptedEditor([]), connected=True) as agent:
        session = await agent.new_session(cwd=str(workspace))
        with pytest.raises(acp.RequestError) as error:
            await agent.set_session_mode(session_id=session.session_id, mode_id="yolo")
        assert error.value.data == {"details": "Unknown mode: yolo"}
