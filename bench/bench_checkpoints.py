"""What a checkpoint costs: the snapshots around a shell command, in time and disk.

Run: `.venv/bin/python bench/bench_checkpoints.py [--files 50000] [--tree PATH]`

A run's edit and write calls cost one read of the file they change (its pre-image). A shell call
costs a snapshot before and one after it (pi_rpc/session/checkpoints/snapshots.py); the first of a
session is cold (every file hashed and stored), the next ones warm (only changed files rehashed).
Measured on `--tree` (default: this repository's own tree, a git work tree: the shadow repository
path, then the scan path over the same files) and on a generated tree of `--files` small files
(with `git init`: the shadow path; without: the scan). One pass each: the machine is shared.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_rpc.session.checkpoints.snapshots import GitShadow, SnapshotLimits, TreeScan, git_program, git_work_tree

ROOT = Path(__file__).resolve().parents[1]


def disk_use(folder: Path) -> int:
    """Bytes the folder takes on disk (blocks, as `du` counts them: a small file takes a block)."""
    return sum(p.lstat().st_blocks * 512 for p in folder.rglob("*"))


def timed(work: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    result = work()
    return time.perf_counter() - start, result


def measure(name: str, snapshots: GitShadow | TreeScan, cache: Path, change: Path) -> None:
    cold, first = timed(snapshots.snapshot)
    warm, before = timed(snapshots.snapshot)
    change.write_text(change.read_text() + "changed\n")  # the command: one file changed
    after_s, after = timed(snapshots.snapshot)
    diff_s, changed = timed(lambda: snapshots.changes(before, after))
    assert [Path(c.path).name for c in changed] == [change.name], changed
    print(  # noqa: T201
        f"{name:<40} cold {cold:6.2f} s   warm before+after {warm + after_s + diff_s:6.2f} s   "
        f"cache on disk {disk_use(cache) / 2**20:7.1f} MiB"
    )
    del first


def generated_tree(folder: Path, files: int, with_git: bool) -> Path:
    for index in range(files):
        sub = folder / f"d{index % 500:03d}"
        if index < 500:
            sub.mkdir(parents=True)
        (sub / f"f{index}.txt").write_text(f"file {index}\n" * 4)
    if with_git:
        subprocess.run(["git", "init", "-q"], cwd=folder, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=50_000)
    parser.add_argument("--tree", type=Path, default=ROOT)
    args = parser.parse_args()
    git = git_program()
    assert git is not None, "git is needed for the shadow path"
    limits = SnapshotLimits()
    with tempfile.TemporaryDirectory(prefix="pi-rpc-bench-checkpoints-") as temporary:
        scratch = Path(temporary)
        # This repository's tree, copied (its .git left out, a fresh one made) so that the one
        # changed file is not the user's.
        tree = scratch / "tree"
        ignored = shutil.ignore_patterns(".git", ".venv", "node_modules")
        shutil.copytree(args.tree, tree, symlinks=True, ignore=ignored)
        subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
        count = sum(len(files) for _, _, files in os.walk(tree))
        top, common = git_work_tree(git, str(tree)) or (str(tree), str(tree / ".git"))
        readme = tree / "README.md"
        shadow = GitShadow(git, scratch / "s1.git", str(tree), top, common, limits)
        measure(f"this repository ({count} files), shadow", shadow, scratch / "s1.git", readme)
        scan = TreeScan(scratch / "scan1", str(tree), limits)
        measure(f"this repository ({count} files), scan", scan, scratch / "scan1", readme)
        for with_git in (True, False):
            folder = generated_tree(scratch / f"gen-{with_git}", args.files, with_git)
            change = folder / "d000" / "f0.txt"
            if with_git:
                top, common = git_work_tree(git, str(folder)) or (str(folder), str(folder / ".git"))
                snapshots: GitShadow | TreeScan = GitShadow(git, scratch / "s2.git", str(folder), top, common, limits)
                cache = scratch / "s2.git"
            else:
                snapshots, cache = TreeScan(scratch / "scan2", str(folder), limits), scratch / "scan2"
            measure(f"{args.files} small files, {'shadow' if with_git else 'scan'}", snapshots, cache, change)


if __name__ == "__main__":
    main()
