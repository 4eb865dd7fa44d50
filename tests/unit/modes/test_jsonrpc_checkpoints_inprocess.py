"""Checkpoints and rewind through the JSON-RPC front end, in-process, with the scripted model: a run
edits two files, writes one, creates one and deletes one with bash, a second run edits again; a
rewind puts back the first run's result, then the original tree, bytes and modes, and leaves the
user's git repository (status, HEAD, index) exactly as it was."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_rpc.ai.json_text import encode_json
from pi_rpc.modes.jsonrpc.protocol import AgentEventNotification
from pi_rpc.session.checkpoints import session_checkpoints as checkpoints_module
from pi_rpc.session.checkpoints.snapshots import GitShadow, SnapshotLimits, TreeScan
from tests.e2e.rewind_scenario import Tree, git, make_workspace, tree

from ..session.helpers import FOREVER, reply, script, session_config, tool_call
from .jsonrpc_client import Editor, RpcError, jsonrpc_editor

pytestmark = pytest.mark.anyio

Json = dict[str, Any]

SCRIPT = script(
    reply(
        "^first",
        [tool_call("edit", path="a.txt", edits=[{"oldText": "alpha", "newText": "ALPHA"}])],
        [tool_call("edit", path="tool.sh", edits=[{"oldText": "echo one", "newText": "echo two"}])],
        [tool_call("write", path="notes/new.md", content="# new\n")],
        [tool_call("bash", command="printf 'made\\n' > made.txt && mkdir -p out && echo x > out/o.txt")],
        [tool_call("bash", command="rm gone.txt")],
        [{"text": "first done"}],
    ),
    reply(
        "^buffer", [tool_call("edit", path="a.txt", edits=[{"oldText": "alpha", "newText": "ALPHA"}])], [{"text": "ok"}]
    ),
    reply(
        "^second",
        [tool_call("edit", path="a.txt", edits=[{"oldText": "ALPHA", "newText": "OMEGA"}])],
        [tool_call("edit", path="b.txt", edits=[{"oldText": "beta", "newText": "BETA"}])],
        [{"text": "second done"}],
    ),
)


def git_view(workspace: Path) -> tuple[bytes, bytes, bytes, bytes]:
    """The user's index (read first: `status` without optional locks never rewrites it), status,
    HEAD and refs."""
    index = (workspace / ".git" / "index").read_bytes()
    return (
        index,
        git(workspace, "--no-optional-locks", "status", "--porcelain", "--ignored"),
        git(workspace, "rev-parse", "HEAD"),
        git(workspace, "for-each-ref"),
    )


async def start(editor: Editor) -> None:
    editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
    await editor.request("initialize", {"clientInfo": {"name": "test"}})


async def checkpoints(editor: Editor) -> list[Json]:
    return list((await editor.request("session/checkpoints"))["checkpoints"])


def by_path(items: list[Json], workspace: Path, field: str) -> dict[str, str]:
    """`field` of each item, by its path relative to the workspace."""
    return {os.path.relpath(item["path"], workspace): item[field] for item in items}


def changes(checkpoint: Json, workspace: Path) -> dict[str, str]:
    return by_path(checkpoint["files"], workspace, "change")


async def two_runs(editor: Editor, workspace: Path) -> tuple[Tree, list[Json]]:
    await start(editor)
    assert (await editor.request("prompt", {"message": "first"}))["stopReason"] == "stop"
    after_first = tree(workspace)
    assert (await editor.request("prompt", {"message": "second"}))["stopReason"] == "stop"
    assert (workspace / "a.txt").read_text() == "OMEGA\n"
    return after_first, await checkpoints(editor)


FIRST_RUN = {
    "a.txt": "modified",
    "tool.sh": "modified",
    "notes/new.md": "created",
    "made.txt": "created",
    "out/o.txt": "created",
    "gone.txt": "deleted",
}


@pytest.mark.parametrize("with_git", [True, False], ids=["git-work-tree", "plain-folder"])
async def test_rewinding_files_gives_the_first_runs_result_then_the_original_tree(
    tmp_path: Path, with_git: bool
) -> None:
    workspace = make_workspace(tmp_path, with_git)
    original = tree(workspace)
    before_git = git_view(workspace) if with_git else None
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        after_first, listed = await two_runs(editor, workspace)
        assert [c["text"] for c in listed] == ["second", "first"]  # the most recent first
        assert changes(listed[0], workspace) == {"a.txt": "modified", "b.txt": "modified"}
        assert changes(listed[1], workspace) == FIRST_RUN
        assert any("shell commands" in note for note in listed[1]["notCaptured"])
        assert listed[0]["notCaptured"] == []

        second = await editor.request("session/rewind", {"entryId": listed[0]["entryId"], "restore": "files"})
        assert second["conflicts"] == [] and len(second["restored"]) == 2
        assert tree(workspace) == after_first

        first = await editor.request("session/rewind", {"entryId": listed[1]["entryId"], "restore": "files"})
        assert first["conflicts"] == [] and first["notRestored"] == []
        assert tree(workspace) == original
        if before_git is not None:
            assert git_view(workspace) == before_git
        # files only: the conversation is as it was
        assert len(await checkpoints(editor)) == 2


async def test_a_file_the_user_changed_is_a_conflict_left_alone_until_forced(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=True)
    original = tree(workspace)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        _, listed = await two_runs(editor, workspace)
        (workspace / "b.txt").write_text("BETA\nuncommitted\nthe user's line\n")
        params = {"entryId": listed[1]["entryId"], "restore": "files"}
        b_txt = str(workspace / "b.txt")

        # A preview (even of "both") says what the rewind would do and changes nothing.
        now = tree(workspace)
        preview = await editor.request("session/rewind", {**params, "restore": "both", "preview": True})
        assert tree(workspace) == now and len(await checkpoints(editor)) == 2  # no file written, no fork
        assert [c["path"] for c in preview["conflicts"]] == [b_txt]
        diffs = by_path(preview["diffs"], workspace, "diff")
        assert set(diffs) == set(FIRST_RUN)
        assert sorted(preview["restored"]) == sorted(str(workspace / name) for name in FIRST_RUN)
        assert "-OMEGA" in diffs["a.txt"] and "+alpha" in diffs["a.txt"]
        assert "+++ /dev/null" in diffs["made.txt"]  # a created file would be deleted

        result = await editor.request("session/rewind", params)
        assert "diffs" not in result
        assert [c["path"] for c in result["conflicts"]] == [b_txt]
        diff = result["conflicts"][0]["diff"]
        assert "-the user's line" in diff and "+beta" in diff
        assert (workspace / "b.txt").read_text().endswith("the user's line\n")  # left alone
        assert b_txt not in result["restored"] and (workspace / "a.txt").read_text() == "alpha\n"

        forced = await editor.request("session/rewind", {**params, "force": True})
        assert forced["conflicts"] == [] and b_txt in forced["restored"]
        assert tree(workspace) == original


class Buffers:
    """The editor's side of fs/readTextFile and fs/writeTextFile: its open buffers, else the disk."""

    def __init__(self, editor: Editor, buffers: dict[str, str]) -> None:
        self.editor, self.buffers = editor, buffers
        self.writes: list[Json] = []
        self._answered: set[Any] = set()

    async def request(self, method: str, params: Json) -> Any:
        """Send a request, answering the daemon's file requests until its response comes."""
        msg_id = self.editor.request_nowait(method, params)
        while True:
            message = await self.editor.wait_for(
                lambda m: (
                    m.get("id") == msg_id
                    or (str(m.get("method", "")).startswith("fs/") and m["id"] not in self._answered)
                )
            )
            if message.get("id") == msg_id:
                return await self.editor.result(msg_id)
            self._answered.add(message["id"])
            path = message["params"]["path"]
            if message["method"] == "fs/readTextFile":
                text = self.buffers[path] if path in self.buffers else await anyio.Path(path).read_text()
                self.editor.answer(message, {"content": text})
            else:
                self.writes.append(message["params"])
                self.buffers[path] = message["params"]["content"]
                self.editor.answer(message, None)


async def test_an_unsaved_buffer_is_restored_through_the_editor(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=True)
    a_txt = str(workspace / "a.txt")
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        files = Buffers(editor, {a_txt: "alpha\nunsaved in the editor\n"})
        editor.session.subscribe(lambda event: editor.send(encode_json(AgentEventNotification(params=event))))
        await editor.request("initialize", {"clientInfo": {"name": "test"}, "capabilities": {"files": True}})
        await files.request("prompt", {"message": "buffer"})
        assert files.buffers[a_txt] == "ALPHA\nunsaved in the editor\n" and files.writes[-1]["path"] == a_txt
        [checkpoint] = await checkpoints(editor)
        result = await files.request("session/rewind", {"entryId": checkpoint["entryId"], "restore": "files"})
        assert result["restored"] == [a_txt] and result["conflicts"] == []
        # one write the editor applies (and can undo), the unsaved text as it was; the disk untouched
        assert files.writes[-1] == {"path": a_txt, "content": "alpha\nunsaved in the editor\n"}
        assert len(files.writes) == 2
        assert await anyio.Path(a_txt).read_text() == "alpha\n"


async def test_a_resumed_session_can_still_rewind(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=True)
    original = tree(workspace)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        _, listed = await two_runs(editor, workspace)
        session_file = editor.session.history.session_file
    assert session_file is not None
    assert Path(session_file).with_suffix(".checkpoints").is_dir()  # kept beside the session file
    async with jsonrpc_editor(session_config(workspace, SCRIPT, resume_from=Path(session_file))) as editor:
        await start(editor)
        assert await checkpoints(editor) == listed
        result = await editor.request("session/rewind", {"entryId": listed[1]["entryId"], "restore": "files"})
        assert result["conflicts"] == []
    assert tree(workspace) == original


async def test_rewinding_both_forks_the_conversation_and_keeps_the_earlier_checkpoints(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=True)
    original = tree(workspace)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        after_first, listed = await two_runs(editor, workspace)
        old_session = (await editor.request("state"))["sessionId"]
        result = await editor.request("session/rewind", {"entryId": listed[0]["entryId"], "restore": "both"})
        assert result["text"] == "second" and result["sessionId"] != old_session
        assert tree(workspace) == after_first
        assert await checkpoints(editor) == [listed[1]]  # the fork holds the first message only
        await editor.request("session/rewind", {"entryId": listed[1]["entryId"], "restore": "files"})
        assert tree(workspace) == original
        # the branch it came from is kept, as a fork keeps it
        assert old_session in {s["sessionId"] for s in (await editor.request("session/list"))["sessions"]}


async def test_without_git_a_git_work_tree_is_scanned_and_the_listing_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace = make_workspace(tmp_path, with_git=True)
    original = tree(workspace)
    monkeypatch.setattr(checkpoints_module, "git_program", lambda: None)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        _, listed = await two_runs(editor, workspace)
        assert any("git is not installed" in note for note in listed[1]["notCaptured"])
        assert changes(listed[1], workspace) == FIRST_RUN
        await editor.request("session/rewind", {"entryId": listed[1]["entryId"], "restore": "files"})
    assert tree(workspace) == original


async def test_no_rewind_while_a_run_is_going(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=False)
    async with jsonrpc_editor(session_config(workspace, script(reply("^stream", FOREVER)))) as editor:
        await start(editor)
        editor.request_nowait("prompt", {"message": "stream"})
        await editor.wait_for(lambda m: m.get("method") == "agent/event" and m["params"]["type"] == "message_update")
        [checkpoint] = await checkpoints(editor)
        with pytest.raises(RpcError) as busy:
            await editor.request("session/rewind", {"entryId": checkpoint["entryId"], "restore": "files"})
        assert busy.value.code == -32002 and "abort" in busy.value.message


async def test_past_the_disk_limit_the_oldest_checkpoints_data_go_first(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=False)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        editor.session.checkpoints.max_bytes = 10  # every pre-image is past it: only the newest is kept
        _, listed = await two_runs(editor, workspace)
        assert not any("dropped" in note for note in listed[0]["notCaptured"])
        assert any("dropped" in note and "no longer be restored" in note for note in listed[1]["notCaptured"])
        result = await editor.request("session/rewind", {"entryId": listed[1]["entryId"], "restore": "files"})
        assert result["restored"] == [str(workspace / "b.txt")]  # changed by the second run only
        assert any(str(workspace / "a.txt") in reason for reason in result["notRestored"])
        assert (workspace / "b.txt").read_text() == "beta\n" and (workspace / "a.txt").read_text() == "OMEGA\n"


async def test_bad_requests_get_clear_errors(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=False)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor)
        with pytest.raises(RpcError) as unknown:
            await editor.request("session/rewind", {"entryId": "nope", "restore": "files"})
        assert unknown.value.code == -32004 and "nope" in unknown.value.message
        with pytest.raises(RpcError) as invalid:
            await editor.request("session/rewind", {"entryId": "nope", "restore": "everything"})
        assert invalid.value.code == -32602


async def test_a_workspace_past_the_limits_says_its_shell_changes_were_not_captured(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=False)
    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        editor.session.checkpoints.limits = SnapshotLimits(max_files=3)
        _, listed = await two_runs(editor, workspace)
        notes = listed[1]["notCaptured"]
        assert any("not captured" in note and "more than 3 files" in note for note in notes)
        # the edit and write tools' pre-images are exact whatever the size
        assert {"a.txt", "tool.sh", "notes/new.md"} <= set(changes(listed[1], workspace))


def test_the_shadow_repository_is_the_sessions_and_the_users_git_is_untouched(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=True)
    before = git_view(workspace)
    objects = sorted(p.name for p in (workspace / ".git" / "objects").rglob("*"))
    git_path = shutil.which("git")
    assert git_path is not None
    shadow = GitShadow(
        git_path, tmp_path / "shadow.git", str(workspace), str(workspace), str(workspace / ".git"), SnapshotLimits()
    )
    first = shadow.snapshot()
    (workspace / "a.txt").write_text("changed\n")
    (workspace / "more.log").write_text("ignored by the user's rules\n")
    changed = shadow.changes(first, shadow.snapshot())
    assert [(Path(c.path).name, c.before) for c in changed] == [("a.txt", b"alpha\n")]
    now = git_view(workspace)
    assert (now[0], now[2], now[3]) == (before[0], before[2], before[3])  # index, HEAD, refs
    assert sorted(p.name for p in (workspace / ".git" / "objects").rglob("*")) == objects


@pytest.mark.parametrize("with_git", [True, False], ids=["shadow", "scan"])
def test_a_cache_past_its_limit_is_dropped_and_the_next_snapshot_starts_afresh(tmp_path: Path, with_git: bool) -> None:
    workspace = make_workspace(tmp_path, with_git)
    limits = SnapshotLimits(max_cache_bytes=1, trim_every=2)
    git_path = shutil.which("git")
    assert git_path is not None
    cache = tmp_path / "cache"
    snapshots = (
        GitShadow(git_path, cache, str(workspace), str(workspace), str(workspace / ".git"), limits)
        if with_git
        else TreeScan(cache, str(workspace), limits)
    )
    assert snapshots.trim() is False  # not yet time to look
    first = snapshots.snapshot()
    assert cache.is_dir() and snapshots.trim() is True and not cache.exists()
    (workspace / "a.txt").write_text("changed\n")
    second = snapshots.snapshot()  # cold again, and still right
    third = snapshots.snapshot()
    assert snapshots.changes(second, third) == [] and first is not None


def test_the_scan_sees_a_changed_mode_and_a_replaced_file(tmp_path: Path) -> None:
    workspace = make_workspace(tmp_path, with_git=False)
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits())
    first = scan.snapshot()
    (workspace / "a.txt").chmod(0o600)
    (workspace / "b.txt").unlink()
    (workspace / "b.txt").write_text("beta\n")  # same bytes, new inode: not a change
    changed = scan.changes(first, scan.snapshot())
    assert [(Path(c.path).name, c.before, c.mode) for c in changed] == [("a.txt", b"alpha\n", 0o644)]


GIT_THAT_WAITS = """#!/bin/sh
# git, except that `rev-parse` waits until the test says go (or gives up after 20 s).
case "$*" in *rev-parse*)
  : > "$PI_TEST_DIR/asked"
  i=0
  while [ ! -e "$PI_TEST_DIR/go" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done
  [ -e "$PI_TEST_DIR/go" ] || : > "$PI_TEST_DIR/gave-up"
esac
exec {git} "$@"
"""


async def test_finding_the_work_tree_before_a_shell_command_leaves_the_event_loop_running(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The git lookup that picks the snapshot kind runs off the event loop: while git is slow, the
    daemon still answers (here: a task on the loop releases git; on the loop, git would wait)."""
    real_git = shutil.which("git")
    assert real_git is not None
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text(GIT_THAT_WAITS.format(git=real_git))
    (fake / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PI_TEST_DIR", str(tmp_path))
    workspace = make_workspace(tmp_path, with_git=True)

    async def release_git() -> None:
        while not (tmp_path / "asked").exists():  # noqa: ASYNC110 - another process makes the file
            await anyio.sleep(0.02)
        (tmp_path / "go").touch()

    async with jsonrpc_editor(session_config(workspace, SCRIPT)) as editor:
        await start(editor)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(release_git)
            assert (await editor.request("prompt", {"message": "first"}))["stopReason"] == "stop"
    assert not (tmp_path / "gave-up").exists()
    assert (workspace / "made.txt").exists()
