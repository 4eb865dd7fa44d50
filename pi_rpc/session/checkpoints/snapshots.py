"""What a shell command changed in the workspace: a snapshot before it runs, one after, the difference.

A shell command can touch any file, so the workspace is snapshotted around it, in one of two ways:

- In a git work tree, with the `git` program, a **shadow repository** in the session's checkpoint
  folder: `git --git-dir=<shadow> --work-tree=<top> add -A` into the shadow's own index, then
  `write-tree`. The user's `.git` is only read (its `info/exclude`); its refs, index and objects are
  never written. Files the user's ignore rules ignore are not snapshotted (said in the listing).
  The shadow's index keeps file stats, so a snapshot after the first rehashes only changed files;
  when `add` changed nothing in it (`-v` lists every path it adds or removes), its tree is the last
  one written and `write-tree` is not run, and two snapshots of one tree differ in nothing without
  asking `diff-tree`: a command that changes no file costs four git processes, not seven.
- Elsewhere (or without `git`), a **scan**: every file's stat (mtime, size, mode, inode), its bytes
  copied once per content into the folder's `scan/` cache, compared by hash after the command.

Both are bounded (`SnapshotLimits`): a workspace with more files or bytes than the limits is not
snapshotted, and the checkpoint says its shell changes were not captured. Both run in a worker
thread and can be stopped from another (`stop`: the git process is killed, the scan ends at its
next file), so an abort never leaves one running. A scan that reads no file and lists at most
`QUICK_SCAN_ENTRIES` entries (a small folder, every file as the last snapshot saw it) is taken
at once by the caller instead (`quick_snapshot`): a few dozen stat calls cost less than waking a
worker thread and hearing back from it. What one cannot see is said, never guessed:
git records only the executable bit, so the shadow's snapshot keeps each file's permission bits
from its own stat; a file the scan cannot read is left out of the comparison and named.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import msgspec

from pi_rpc.session.checkpoints.store import sha256_of


class SnapshotLimits(msgspec.Struct, frozen=True):
    """How big a workspace may be for a shell command's changes to be captured (per snapshot)."""

    max_files: int = 100_000
    max_bytes: int = 1024 * 1024 * 1024
    # The cache a snapshot keeps (the shadow's objects, the scan's copies) grows with every version
    # of a changed file; past this it is dropped and the next snapshot starts afresh (cold).
    max_cache_bytes: int = 2 * 1024 * 1024 * 1024
    trim_every: int = 20  # snapshots between two looks at the cache's size


_MIB = 1024 * 1024
# The most directory entries a scan may list on the caller's thread (`TreeScan.quick_snapshot`).
QUICK_SCAN_ENTRIES = 256


class CheckpointSettings(msgspec.Struct, kw_only=True):
    """`checkpoints` in settings.json (docs/CONFIGURATION.md, "Checkpoints"): the limits above,
    in MiB, and the switch that turns the shell snapshots off (a tree too large to snapshot
    around every command); what is then not captured, each checkpoint says."""

    capture_shell: bool = msgspec.field(default=True, name="captureShell")
    max_scan_files: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(default=100_000, name="maxScanFiles")
    max_scan_mib: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(default=1024, name="maxScanMiB")
    # The pre-images of one session (store.py); past it the oldest checkpoints' go.
    disk_limit_mib: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(default=256, name="diskLimitMiB")
    cache_limit_mib: Annotated[int, msgspec.Meta(ge=1)] = msgspec.field(default=2048, name="cacheLimitMiB")

    def snapshot_limits(self) -> SnapshotLimits:
        return SnapshotLimits(
            max_files=self.max_scan_files,
            max_bytes=self.max_scan_mib * _MIB,
            max_cache_bytes=self.cache_limit_mib * _MIB,
        )

    @property
    def disk_limit_bytes(self) -> int:
        return self.disk_limit_mib * _MIB


class Changed(msgspec.Struct, frozen=True):
    """One file a command changed, with what it held before: None when it did not exist."""

    path: str  # absolute
    before: bytes | None = None
    mode: int = 0o644
    symlink: bool = False


class TooLargeError(Exception):
    """The workspace is past the snapshot limits; the message says by how much."""


class SnapshotStoppedError(Exception):
    """`stop` was called (an abort) while the snapshot was being taken."""


class GitSnapshot(msgspec.Struct, frozen=True):
    tree: str  # the id of the shadow's tree
    modes: dict[str, int]  # absolute path -> permission bits, from the snapshot's own lstat


class _Stoppable:
    """A snapshot another thread may stop: its git processes killed, its loops ended."""

    def __init__(self) -> None:
        self._stopped = threading.Event()
        self._processes: set[subprocess.Popen[bytes]] = set()
        self._guard = threading.Lock()

    def stop(self) -> None:
        self._stopped.set()
        with self._guard:
            for process in self._processes:
                process.kill()

    def _starting(self) -> None:
        self._stopped.clear()

    def _check(self) -> None:
        if self._stopped.is_set():
            raise SnapshotStoppedError("the snapshot was stopped")

    def _call(self, command: list[str], stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        self._check()
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_clean_env(),
        )
        with self._guard:
            self._processes.add(process)
        try:
            out, err = process.communicate(stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise OSError(f"{command[-1]} took more than {timeout:g} s") from None
        finally:
            with self._guard:
                self._processes.discard(process)
        self._check()
        return process.returncode, out, err


# Git may only read the user's configuration for ignore rules: no conversion, filter or monitor.
_GIT_CONFIG = (
    "core.autocrlf=false",
    "core.safecrlf=false",
    "core.fileMode=true",
    "core.symlinks=true",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.quotePath=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.addEmbeddedRepo=false",
)
# Highest precedence (the shadow's info/attributes): stored bytes are the file's bytes.
_ATTRIBUTES = "* -text !eol -filter -ident !working-tree-encoding\n"
_GITLINK = "160000"


def git_program() -> str | None:
    return shutil.which("git")


def _clean_env() -> dict[str, str]:
    # The user's GIT_DIR, GIT_INDEX_FILE, GIT_WORK_TREE... must not redirect the shadow's commands.
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def git_work_tree(git: str, workspace: str) -> tuple[str, str] | None:
    """(top of the work tree, the repository's common git folder) when `workspace` is in one."""
    try:
        done = subprocess.run(
            # the repository's own config is read here: nothing it names may run
            [git, "-C", workspace, "-c", "core.fsmonitor=false", "rev-parse", "--path-format=absolute"]
            + ["--show-toplevel", "--git-common-dir"],
            capture_output=True,
            env=_clean_env(),
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    lines = done.stdout.decode("utf-8", "surrogateescape").splitlines()
    return (lines[0], lines[1]) if len(lines) >= 2 else None


class GitShadow(_Stoppable):
    """Snapshots of the workspace in a shadow repository of the session's own."""

    def __init__(self, git: str, shadow: Path, workspace: str, top: str, common_dir: str, limits: SnapshotLimits):
        super().__init__()
        self._git, self._shadow, self._workspace, self._top = git, shadow, workspace, top
        self._common = Path(common_dir)
        self._limits = limits
        self.gitlinks: list[str] = []  # nested repositories seen by the last diff (not captured)
        self._taken = 0
        self._tree: str | None = None  # the tree of the shadow's index, as `write-tree` last wrote it

    def trim(self) -> bool:
        """Drop the shadow when its objects are past the cache limit (no snapshot of it may be
        waiting for its diff); True when it was dropped."""
        self._starting()
        self._taken += 1
        if self._taken % self._limits.trim_every or not (self._shadow / "HEAD").exists():
            return False
        counts = dict(line.split(": ", 1) for line in self._run("count-objects", "-v").decode().splitlines())
        kib = int(counts.get("size", "0")) + int(counts.get("size-pack", "0"))
        if kib * 1024 <= self._limits.max_cache_bytes:
            return False
        shutil.rmtree(self._shadow, ignore_errors=True)
        self._tree = None
        return True

    def _run(self, *args: str, stdin: bytes | None = None) -> bytes:
        command = [self._git, "-C", self._workspace, f"--git-dir={self._shadow}", f"--work-tree={self._top}"]
        for setting in _GIT_CONFIG:
            command += ["-c", setting]
        code, out, err = self._call([*command, *args], stdin, 600)
        if code != 0:
            raise OSError(f"git {args[0]} failed: {err.decode('utf-8', 'replace').strip()}")
        return out

    def _prepare(self) -> None:
        if not (self._shadow / "HEAD").exists():
            self._tree = None  # a new shadow: its index is empty
            self._shadow.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            subprocess.run(
                [self._git, "init", "-q", "--bare", str(self._shadow)], env=_clean_env(), check=True, timeout=60
            )
        info = self._shadow / "info"
        info.mkdir(exist_ok=True)
        (info / "attributes").write_text(_ATTRIBUTES)
        try:  # the user's own ignore rules of this clone, read afresh each time
            shutil.copyfile(self._common / "info" / "exclude", info / "exclude")
        except OSError:
            (info / "exclude").write_text("")

    def snapshot(self) -> GitSnapshot:
        """A tree holding the workspace as it is now; TooLargeError past the limits."""
        self._starting()
        self._prepare()
        names = self._run("ls-files", "-z", "-co", "--exclude-standard", "--", ".").split(b"\0")
        listed = [name for name in names if name]
        if len(listed) > self._limits.max_files:
            raise TooLargeError(f"{len(listed)} files, more than the {self._limits.max_files} snapshotted")
        total = 0
        modes: dict[str, int] = {}
        for name in listed:
            path = os.path.join(self._workspace, os.fsdecode(name))
            try:
                info = os.lstat(path)
            except OSError:
                continue
            total += info.st_size
            modes[path] = stat.S_IMODE(info.st_mode)
        self._check()
        if total > self._limits.max_bytes:
            raise TooLargeError(f"{total} bytes, more than the {self._limits.max_bytes} snapshotted")
        # Only these snapshots write the shadow's index (one at a time): when `add` changed none of
        # its entries, the tree last written is still the index's. Unknown while they run: an
        # `add` that fails or is stopped may have changed some.
        tree, self._tree = self._tree, None
        if self._run("add", "-A", "-v", "--ignore-errors", "--", ".").strip() or tree is None:
            tree = self._run("write-tree").decode().strip()
        self._tree = tree
        return GitSnapshot(tree, modes)

    def changes(self, before: Any, after: Any) -> list[Changed]:
        """Every file that differs between two snapshots, with its bytes and permission bits in
        the first (git's mode keeps only the executable bit: the snapshot's stat has the rest)."""
        self._starting()
        if before.tree == after.tree:
            self.gitlinks = []
            return []  # one tree: no file differs
        raw = self._run("diff-tree", "-r", "-z", "--no-renames", before.tree, after.tree).split(b"\0")
        found: list[tuple[str, str, str, str]] = []  # (path, status, mode before, blob before)
        self.gitlinks = []
        for head, name in zip(raw[0::2], raw[1::2], strict=False):
            fields = head.decode().lstrip(":").split()
            if len(fields) < 5:
                continue
            old_mode, new_mode, old_blob, _, status = fields[:5]
            path = os.path.join(self._top, os.fsdecode(name))
            if _GITLINK in (old_mode, new_mode):
                self.gitlinks.append(path)
                continue
            found.append((path, status, old_mode, old_blob))
        blobs = self._contents([blob for _, status, _, blob in found if status != "A"])
        return [
            Changed(path)
            if status == "A"
            else Changed(path, blobs[blob], before.modes.get(path, int(mode, 8) & 0o777), symlink=mode.startswith("12"))
            for path, status, mode, blob in found
        ]

    def _contents(self, blobs: list[str]) -> dict[str, bytes]:
        if not blobs:
            return {}
        out = self._run("cat-file", "--batch", stdin="".join(f"{b}\n" for b in blobs).encode())
        contents: dict[str, bytes] = {}
        position = 0
        while position < len(out):
            end = out.index(b"\n", position)
            blob, _, size = out[position:end].decode().split()
            start = end + 1
            contents[blob] = out[start : start + int(size)]
            position = start + int(size) + 1
        return contents


class _Seen(msgspec.Struct):
    signature: tuple[int, int, int, int]
    digest: str
    mode: int
    symlink: bool


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells a scanned file unchanged since the last snapshot (its bytes are read again otherwise)."""
    return (st.st_mtime_ns, st.st_size, st.st_mode, st.st_ino)


class _TooManyEntries(Exception):
    """More entries than a quick snapshot lists."""


class ScanSnapshot(msgspec.Struct, frozen=True):
    files: dict[str, _Seen]
    unreadable: frozenset[str]  # files it found and could not read: not compared


class TreeScan(_Stoppable):
    """Snapshots of a workspace outside git: stats, and each content copied once into `cache`."""

    def __init__(self, cache: Path, workspace: str, limits: SnapshotLimits) -> None:
        super().__init__()
        self.cache, self.workspace, self.limits = cache, workspace, limits
        self._known: dict[str, _Seen] = {}
        self._taken = 0
        self.unreadable: list[str] = []  # files the last diff could not compare (not captured)

    def trim(self) -> bool:
        """Drop the cache when it is past its limit (no snapshot of it may be waiting for its
        diff); True when it was dropped."""
        self._taken += 1
        if self._taken % self.limits.trim_every or not self.cache.is_dir():
            return False
        if sum(entry.stat().st_size for entry in os.scandir(self.cache)) <= self.limits.max_cache_bytes:
            return False
        shutil.rmtree(self.cache, ignore_errors=True)
        self._known = {}
        return True

    def quick_snapshot(self, *, trim_first: bool = False) -> ScanSnapshot | None:
        """The snapshot `snapshot` would take, when it can be taken without reading a file or the
        cache: the workspace lists at most `QUICK_SCAN_ENTRIES` entries and every file is as the
        last snapshot saw it. None otherwise (or when `trim_first` and the cache is due a look),
        for the caller to take the snapshot in a worker thread; nothing is changed then."""
        if trim_first and (self._taken + 1) % self.limits.trim_every == 0:
            return None
        self._starting()
        try:
            files = list(self._walk(QUICK_SCAN_ENTRIES))
        except _TooManyEntries:
            return None
        self._check_limits(files)
        seen: dict[str, _Seen] = {}
        for path, st in files:
            known = self._known.get(path)
            if known is None or known.signature != _signature(st):
                return None
            seen[path] = known
        if trim_first:
            self._taken += 1  # what `trim` counts, its look not due
        self._known = seen
        return ScanSnapshot(seen, frozenset())

    def snapshot(self) -> ScanSnapshot:
        self._starting()
        files = list(self._walk())
        self._check_limits(files)
        self.cache.mkdir(mode=0o700, parents=True, exist_ok=True)
        seen: dict[str, _Seen] = {}
        unreadable: set[str] = set()
        for path, st in files:
            self._check()
            signature = _signature(st)
            known = self._known.get(path)
            if known is not None and known.signature == signature:
                seen[path] = known
                continue
            symlink = stat.S_ISLNK(st.st_mode)
            try:
                data = os.fsencode(os.readlink(path)) if symlink else Path(path).read_bytes()
            except FileNotFoundError:
                continue  # gone meanwhile: not in this snapshot
            except OSError:
                unreadable.add(path)  # there, but not readable: neither created nor deleted
                continue
            digest = sha256_of(data)
            cached = self.cache / digest
            if not cached.exists():
                cached.write_bytes(data)
            seen[path] = _Seen(signature, digest, stat.S_IMODE(st.st_mode), symlink)
        self._known = seen
        return ScanSnapshot(seen, frozenset(unreadable))

    def _check_limits(self, files: list[tuple[str, os.stat_result]]) -> None:
        if len(files) > self.limits.max_files:
            raise TooLargeError(f"more than {self.limits.max_files} files to scan")
        if sum(st.st_size for _, st in files) > self.limits.max_bytes:
            raise TooLargeError(f"more than {self.limits.max_bytes} bytes to scan")

    def _walk(self, max_entries: int | None = None) -> Iterator[tuple[str, os.stat_result]]:
        """Every file and symbolic link below the workspace with its lstat; `_TooManyEntries`
        once more than `max_entries` directory entries were listed."""
        stack = [self.workspace]
        count = 0
        listed = 0
        while stack:
            self._check()
            folder = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue
            listed += len(entries)
            if max_entries is not None and listed > max_entries:
                raise _TooManyEntries
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name != ".git":
                        stack.append(entry.path)
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
                    count += 1
                    if count > self.limits.max_files:  # stop walking: the answer is known
                        raise TooLargeError(f"more than {self.limits.max_files} files to scan")
                    yield entry.path, st

    def changes(self, before: Any, after: Any) -> list[Changed]:
        changed: list[Changed] = []
        unknown = before.unreadable | after.unreadable
        self.unreadable = sorted(unknown)
        for path in sorted((before.files.keys() | after.files.keys()) - unknown):
            old, new = before.files.get(path), after.files.get(path)
            if old is None:
                changed.append(Changed(path))
            elif new is None or (new.digest, new.mode, new.symlink) != (old.digest, old.mode, old.symlink):
                changed.append(Changed(path, (self.cache / old.digest).read_bytes(), old.mode, old.symlink))
        return changed


__all__ = [
    "QUICK_SCAN_ENTRIES",
    "Changed",
    "SnapshotStoppedError",
    "CheckpointSettings",
    "GitShadow",
    "SnapshotLimits",
    "TooLargeError",
    "TreeScan",
    "git_program",
    "git_work_tree",
]
