"""The snapshots around a shell command read back exactly what each changed file held: git's
`diff-tree -z` and `cat-file --batch` output parsed for any names and bytes (the shadow path), and
the scan's cache (elsewhere)."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from pi_rpc.session.checkpoints.snapshots import GitShadow, SnapshotLimits, TreeScan

# Names git stores as they are: spaces, newlines, quotes, non-ASCII; not `.git` and no `/`.
NAMES = st.text(st.characters(exclude_categories=["Cs"], exclude_characters="/\0"), min_size=1, max_size=12).filter(
    lambda name: name not in (".", "..", ".git") and not name.startswith(".git")
)
FILES = st.dictionaries(NAMES, st.binary(max_size=300), min_size=1, max_size=6)


def snapshots_of(root: Path, with_git: bool) -> GitShadow | TreeScan:
    workspace = root / "ws"
    if with_git:
        git = shutil.which("git")
        assert git is not None
        subprocess.run([git, "init", "-q"], cwd=workspace, check=True)
        return GitShadow(
            git, root / "shadow.git", str(workspace), str(workspace), str(workspace / ".git"), SnapshotLimits()
        )
    return TreeScan(root / "scan", str(workspace), SnapshotLimits())


@seed(20261201)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(before=FILES, after=FILES, with_git=st.booleans())
def test_every_changed_file_comes_back_with_its_exact_bytes(
    before: dict[str, bytes], after: dict[str, bytes], with_git: bool
) -> None:
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        workspace = root / "ws"
        workspace.mkdir()
        for name, data in before.items():
            (workspace / name).write_bytes(data)
        snapshots = snapshots_of(root, with_git)
        first = snapshots.snapshot()
        for name in before.keys() - after.keys():
            (workspace / name).unlink()
        for name, data in after.items():
            (workspace / name).write_bytes(data)
        changed = snapshots.changes(first, snapshots.snapshot())
        expected = {
            name: before.get(name) for name in before.keys() | after.keys() if before.get(name) != after.get(name)
        }
        assert {Path(c.path).name: c.before for c in changed} == expected


def test_a_file_the_scan_cannot_read_is_named_and_never_taken_for_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Unreadable before the command and readable after, it used to look created (a rewind would
    have deleted it); now it is left out of the comparison and named."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    locked = workspace / "locked.txt"
    locked.write_text("mine\n")
    scan = TreeScan(tmp_path / "scan", str(workspace), SnapshotLimits())
    real_read = Path.read_bytes

    def refuse(path: Path) -> bytes:
        if path == locked:
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path)

    with monkeypatch.context() as patched:
        patched.setattr(Path, "read_bytes", refuse)
        before = scan.snapshot()
    (workspace / "made.txt").write_text("made\n")
    changed = scan.changes(before, scan.snapshot())
    assert [(Path(c.path).name, c.before) for c in changed] == [("made.txt", None)]
    assert scan.unreadable == [str(locked)]
