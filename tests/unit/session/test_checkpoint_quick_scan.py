"""What the snapshots around a shell command cost when it changes nothing (snapshots.py): in a small
folder outside git, no worker thread once the folder's files are known (the scan lists a few
entries and reads nothing, `TreeScan.quick_snapshot`); in a git work tree, four git processes, not
seven. Whatever the command changes is still captured exactly."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest

from pi_rpc.session.checkpoints.snapshots import (
    QUICK_SCAN_ENTRIES,
    GitShadow,
    SnapshotLimits,
    TooLargeError,
    TreeScan,
)

from .helpers import open_session, reply, script, session_config, tool_call


def folder(root: Path) -> Path:
    workspace = root / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "b.txt").write_text("beta\n")
    return workspace


def test_a_known_small_folder_is_scanned_without_reading_and_as_the_full_scan_would(tmp_path: Path) -> None:
    workspace = folder(tmp_path)
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits())
    assert scan.quick_snapshot() is None  # nothing known yet: the files must be read
    full = scan.snapshot()
    quick = scan.quick_snapshot()
    assert quick is not None and quick.files == full.files
    assert scan.changes(full, quick) == []


@pytest.mark.parametrize(
    "change",
    [
        lambda ws: (ws / "a.txt").write_text("ALPHA!\n"),
        lambda ws: (ws / "new.txt").write_text("new\n"),
        lambda ws: (ws / "sub" / "b.txt").chmod(0o600),
    ],
    ids=["modified", "created", "mode"],
)
def test_a_changed_or_new_file_sends_the_scan_to_the_worker(tmp_path: Path, change: Callable[[Path], Any]) -> None:
    workspace = folder(tmp_path)
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits())
    before = scan.snapshot()
    change(workspace)
    assert scan.quick_snapshot() is None
    assert [Path(c.path).name for c in scan.changes(before, scan.snapshot())] in (["a.txt"], ["new.txt"], ["b.txt"])


def test_a_deleted_file_shows_in_the_quick_scan_and_its_bytes_come_from_the_cache(tmp_path: Path) -> None:
    workspace = folder(tmp_path)
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits())
    before = scan.snapshot()
    (workspace / "a.txt").unlink()
    after = scan.quick_snapshot()
    assert after is not None and str(workspace / "a.txt") not in after.files
    assert [(Path(c.path).name, c.before) for c in scan.changes(before, after)] == [("a.txt", b"alpha\n")]


def test_a_larger_folder_is_left_to_the_worker(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for number in range(QUICK_SCAN_ENTRIES + 1):
        (workspace / f"{number}.txt").write_text("x")
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits())
    scan.snapshot()
    assert scan.quick_snapshot() is None


def test_the_quick_scan_keeps_the_limits_and_the_cache_look(tmp_path: Path) -> None:
    workspace = folder(tmp_path)
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits(trim_every=2))
    scan.snapshot()
    assert scan.quick_snapshot(trim_first=True) is not None  # the first of two: no look at the cache
    assert scan.quick_snapshot(trim_first=True) is None  # the second: the worker looks at its size
    assert scan.trim() is False
    scan.limits = SnapshotLimits(max_files=1)
    with pytest.raises(TooLargeError, match="more than 1 files"):
        scan.quick_snapshot()


SHELL_SCRIPT = script(
    reply("^first", [tool_call("bash", command="echo warm")], [{"text": "ok"}]),
    reply("^look", [tool_call("bash", command="cat a.txt")], [{"text": "ok"}]),
    reply("^change", [tool_call("bash", command="printf 'ALPHA\\n' > a.txt && rm sub/b.txt")], [{"text": "ok"}]),
)


@pytest.mark.anyio
async def test_a_shell_call_that_changes_nothing_wakes_no_worker_for_its_snapshots(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each shell call woke a worker thread twice (snapshot before, snapshot and diff after), about
    a millisecond each; now only a call that reads files does, and a change is still captured."""
    workspace = folder(tmp_path).resolve()
    woken: list[str] = []
    real_run_sync = anyio.to_thread.run_sync

    async def counting(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        woken.append(getattr(function, "__name__", type(function).__name__))
        return await real_run_sync(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counting)
    async with open_session(session_config(workspace, SHELL_SCRIPT)) as (session, _events):
        await session.prompt("first")  # the folder's files read and cached once
        woken.clear()
        await session.prompt("look")
        assert woken == ["save"]  # the new checkpoint's index, nothing for the snapshots
        woken.clear()
        await session.prompt("change")
        assert "partial" in woken  # the snapshot that reads the changed file, in the worker
        listed = session.checkpoints.listing()
    changed = {str(Path(f.path).relative_to(workspace)): f.change for f in listed[0].files}
    assert changed == {"a.txt": "modified", "sub/b.txt": "deleted"}
    assert [f.path for f in listed[1].files] == []


def test_a_shadow_snapshot_of_an_unchanged_tree_runs_no_write_tree_and_its_diff_no_git(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Around a command that changes nothing the shadow ran seven git processes (ls-files, add,
    write-tree, twice, and diff-tree); `add -v` says when it changed nothing in the index, whose
    tree is then the last one written, and one tree needs no diff: four. A change is still found."""
    workspace = folder(tmp_path)
    git = shutil.which("git")
    assert git is not None
    subprocess.run([git, "init", "-q"], cwd=workspace, check=True)
    shadow = GitShadow(
        git, tmp_path / "shadow.git", str(workspace), str(workspace), str(workspace / ".git"), SnapshotLimits()
    )
    commands: list[str] = []
    real_call = GitShadow._call

    def counting(self: GitShadow, command: list[str], stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        settings = command[5:]  # after git, -C, its folder, --git-dir and --work-tree
        while settings[0] == "-c":
            settings = settings[2:]
        commands.append(settings[0])
        return real_call(self, command, stdin, timeout)

    monkeypatch.setattr(GitShadow, "_call", counting)
    first = shadow.snapshot()
    assert commands == ["ls-files", "add", "write-tree"]
    commands.clear()
    same = shadow.snapshot()
    assert shadow.changes(first, same) == []
    assert commands == ["ls-files", "add"]
    (workspace / "sub" / "b.txt").write_text("BETA\n")
    (workspace / "a.txt").chmod(0o755)
    commands.clear()
    changed = shadow.changes(same, shadow.snapshot())
    assert commands == ["ls-files", "add", "write-tree", "diff-tree", "cat-file"]
    assert sorted((Path(c.path).name, c.before) for c in changed) == [("a.txt", b"alpha\n"), ("b.txt", b"beta\n")]
    commands.clear()
    assert shadow.changes(shadow.snapshot(), shadow.snapshot()) == []
    assert commands == ["ls-files", "add", "ls-files", "add"]
