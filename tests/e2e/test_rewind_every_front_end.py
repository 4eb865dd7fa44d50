"""Checkpoints and rewind, the acceptance scenario (tests/e2e/rewind_scenario.py) in every front
end: JSON-RPC, Pi mode, ACP (`/rewind`, picked through `session/request_permission`) and LSP
(`pi.rewind`, picked through `window/showMessageRequest`), each daemon a subprocess over real
pipes with the scripted model.

Rewinding the files to before the second run gives the first run's result; a file the user
changed since is reported with its diff and left alone; forced, the rewind to before the first
run gives the original tree exactly (bytes and modes), and the user's `git status`, refs and index
file are as they were."""

from __future__ import annotations

import hashlib
from pathlib import Path

import acp
import anyio
import pytest

from pi_rpc.modes.rewind_choices import RESTORE_CHOICES

from .rewind_scenario import (
    FIRST,
    FIRST_RUN,
    SECOND,
    SECOND_RUN,
    acp_front,
    git_view,
    lsp_front,
    make_workspace,
    open_front,
    tree,
    write_script,
)

pytestmark = [pytest.mark.e2e, pytest.mark.anyio]


@pytest.mark.parametrize("front_end", ["jsonrpc", "pi", "acp", "lsp"])
async def test_rewind_gives_the_first_runs_result_then_the_original_tree(tmp_path: Path, front_end: str) -> None:
    workspace = make_workspace(tmp_path)
    script = write_script(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    original = tree(workspace)
    index_before, status_before, refs_before = git_view(workspace)
    async with open_front(front_end, workspace, home, script) as front:
        await front.prompt(FIRST)
        after_first = tree(workspace)
        assert (workspace / "made.txt").exists() and not (workspace / "gone.txt").exists()
        await front.prompt(SECOND)
        assert (workspace / "a.txt").read_text() == "OMEGA\n"

        listed = await front.checkpoints()
        assert [text for text, _ in listed] == [SECOND, FIRST]  # the most recent first
        for (_, files), expected in zip(listed, [SECOND_RUN, FIRST_RUN], strict=True):
            assert files == expected if front.complete else files.items() <= expected.items()

        second = await front.rewind(1)
        assert second.conflicts == {} and second.restored == set(SECOND_RUN)
        assert tree(workspace) == after_first

        (workspace / "a.txt").write_text("ALPHA\nthe user's line\n")  # the user's edit in between
        kept = await front.rewind(2)
        assert set(kept.conflicts) == {"a.txt"}
        assert "-the user's line" in kept.conflicts["a.txt"] and "+alpha" in kept.conflicts["a.txt"]
        assert (workspace / "a.txt").read_text() == "ALPHA\nthe user's line\n"  # left alone
        assert kept.restored == (set(FIRST_RUN) | set(SECOND_RUN)) - {"a.txt"}  # every later checkpoint's file

        forced = await front.rewind(2, force=True)
        assert forced.conflicts == {} and "a.txt" in forced.restored

    assert tree(workspace) == original
    index_after, status_after, refs_after = git_view(workspace)
    assert hashlib.sha256(index_after).hexdigest() == hashlib.sha256(index_before).hexdigest()
    assert (status_after, refs_after) == (status_before, refs_before)


async def test_acp_asks_through_permission_requests_and_restores_through_the_clients_files(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    script = write_script(tmp_path)
    original = tree(workspace)
    async with acp_front(workspace, tmp_path, script) as front:
        await front.prompt(FIRST)
        await front.prompt(SECOND)
        [announced] = [
            u["availableCommands"]
            for m in front.editor.received
            if m.get("method") == "session/update"
            and (u := m["params"]["update"])["sessionUpdate"] == "available_commands_update"
        ]
        [rewind] = [c for c in announced if c["name"] == "rewind"]
        assert rewind["input"] == {"hint": "[n] [files|conversation|both] [force]"}

        outcome = await front.rewind(2)
        pick, target = front.editor.questions  # no conflict: no third question
        assert pick["title"] == "Rewind to before which message?"
        assert pick["options"] == [
            "1. “second run”: a.txt (modified), b.txt (modified)",
            "2. “first run”: a.txt (modified), gone.txt (deleted), made.txt (created), +2 more",
            "Cancel",
        ]
        assert target["options"] == [label for _, label in RESTORE_CHOICES] + ["Cancel"]
        # before choosing, the row shows what a files rewind would change, each file's diff
        assert target["detail"].startswith("Rewinding the files would change:\n- a.txt\n- b.txt\n")
        assert "a.txt:\n```diff\n" in target["detail"] and "-OMEGA\n+alpha" in target["detail"]
        assert outcome.conflicts == {} and tree(workspace) == original
        assert "Not captured by this checkpoint:" in outcome.text and "empty folders" in outcome.text
        # what the edit tool read through the client is written back through it (fs/write_text_file)
        assert str(workspace / "a.txt") in front.editor.writes and str(workspace / "b.txt") in front.editor.writes

        # the argument form, for clients that cannot pick: nothing asked
        front.editor.questions.clear()
        answer = await front.say("/rewind 1 conversation")
        assert answer.startswith("Rewound to before “second run” (conversation).")
        assert "The conversation now continues from before that message" in answer
        assert front.editor.questions == []
        assert [text for text, _ in await front.checkpoints()] == [FIRST]  # the fork holds the first only


async def test_acp_cancel_ends_a_pick_and_nothing_changes(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    script = write_script(tmp_path)
    async with acp_front(workspace, tmp_path, script) as front:
        await front.prompt(FIRST)
        after_first = tree(workspace)
        front.editor.answers = ["hold"]
        front.editor.messages_text()
        answered: list[str] = []
        async with anyio.create_task_group() as tasks:

            async def rewind() -> None:
                response = await front.conn.prompt(session_id=front.session_id, prompt=[acp.text_block("/rewind")])
                answered.append(response.stop_reason)

            tasks.start_soon(rewind)
            with anyio.fail_after(60):  # a guard against a hang
                await front.editor.asked.wait()
            await front.conn.cancel(session_id=front.session_id)
            front.editor.release.set()
        assert answered == ["cancelled"]
        assert front.editor.messages_text() == "Rewind cancelled: nothing changed."
        assert tree(workspace) == after_first


async def test_lsp_asks_through_message_requests_and_restores_open_documents_by_one_edit(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path)
    script = write_script(tmp_path)
    async with lsp_front(workspace, tmp_path, script) as front:
        uri = front.editor.open(workspace / "a.txt", "alpha\nunsaved\n", "plaintext")
        await front.prompt(FIRST)
        assert front.editor.text(uri) == "ALPHA\nunsaved\n" and (workspace / "a.txt").read_text() == "alpha\n"
        [(text, files)] = await front.checkpoints()
        question = front.questions[-1]
        assert question.message == "Pi: rewind to before which message?"
        assert text == FIRST and files == {"a.txt": "modified", "gone.txt": "deleted", "made.txt": "created"}

        edits = len(front.editor.edits)
        result = await front.execute("pi.rewind", "1", "files")  # the argument form: nothing asked
        assert result["conflicts"] == [] and str(workspace / "a.txt") in result["restored"]
        [undo] = front.editor.edits[edits:]  # one edit of the buffer: one undo step
        assert list((undo.edit.changes or {}).keys()) == [uri] and len((undo.edit.changes or {})[uri]) == 1
        assert front.editor.text(uri) == "alpha\nunsaved\n"
        assert (workspace / "a.txt").read_text() == "alpha\n" and (workspace / "gone.txt").exists()
