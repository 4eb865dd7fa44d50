"""Checkpoints and rewind: every user message is a restore point for the files its run changed.

The session's tool-call hooks record, right before a tool runs (after its approval), what the
files it will change are: edit and write record the exact pre-image of their file (an editor
buffer's text when the editor serves it), a shell command a snapshot of the workspace
(snapshots.py) that is compared after it ran. The first change of a run to a file
wins: a checkpoint holds each file as it was before the run. What the agent left each file as is
noted too (the text edit and write handed the FileRouter, told through its write listeners, with no
read back; a shell call's snapshot after it), so a later change by someone else is a conflict.

`rewind` puts the files back as they were before a user message (every checkpoint from that one
on, the earliest pre-image of each file), forks the conversation there (the current branch kept,
as `fork` keeps it), or both. A file changed since the agent's last change is reported with a
diff and left alone unless forced. A preview says what a files rewind would restore, with each
file's diff, and changes nothing (an editor shows it before the user confirms). The data live in
store.py's folder beside the session file, so a resumed session can still rewind.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
import stat
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import anyio
import anyio.lowlevel
import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.agent import AfterToolCall, BeforeToolCall, BlockCall
from pi_rpc.ai import Wire
from pi_rpc.session.approvals.gate import ApprovalGate
from pi_rpc.session.checkpoints.snapshots import (
    Changed,
    GitShadow,
    SnapshotStoppedError,
    TooLargeError,
    TreeScan,
    git_program,
    git_work_tree,
)
from pi_rpc.session.checkpoints.store import (
    ABSENT,
    Checkpoint,
    CheckpointStore,
    FileState,
    PreImage,
    folder_beside,
    sha256_of,
)
from pi_rpc.session.configuration.config import SessionConfig
from pi_rpc.session.refusals import SessionBusy
from pi_rpc.session.runs import SessionRuns
from pi_rpc.session.storage.history import SessionHistory, SessionNotFoundError
from pi_rpc.tools import resolve_to_cwd

_log = logging.getLogger(__name__)

FILE_TOOLS = frozenset({"edit", "write"})
SHELL_TOOLS = frozenset({"bash", "powershell"})
READ_ONLY_TOOLS = frozenset({"read", "grep", "find", "ls"})
_DIFF_LIMIT = 64 * 1024  # characters of one conflict's diff
T = TypeVar("T")

RewindTarget = Literal["files", "conversation", "both"]
FileChangeKind = Literal["created", "modified", "deleted"]


class CheckpointFile(Wire, kw_only=True):
    path: str  # absolute
    change: FileChangeKind


class CheckpointInfo(Wire, kw_only=True):
    """The restore point before one user message: what its run changed, what was not captured."""

    entry_id: str
    text: str
    timestamp: str  # the user message's (ISO 8601)
    files: list[CheckpointFile]
    not_captured: list[str]


class RewindConflict(Wire, kw_only=True):
    path: str
    diff: str  # unified: the file as it is now (---) against what rewinding would restore (+++)


class RewindDiff(Wire, kw_only=True):
    """A file a previewed rewind would restore, and how (a preview writes nothing)."""

    path: str
    diff: str  # unified, as a conflict's


class RewindResult(Wire, kw_only=True):
    entry_id: str
    restored: list[str]
    conflicts: list[RewindConflict]
    not_restored: list[str]  # files that could not be restored, and why
    session_id: str | UnsetType = UNSET  # the fork's, when the conversation was rewound
    text: str | UnsetType = UNSET  # the user message rewound to, for the client to edit and send
    diffs: list[RewindDiff] | UnsetType = UNSET  # a preview's: each file of `restored` that would change


class CheckpointHost(Protocol):
    """What a session offers its checkpoints (`AgentSession` is the one host)."""

    cwd: str
    config: SessionConfig
    history: SessionHistory
    approvals: ApprovalGate
    runs: SessionRuns

    async def fork(self, entry_id: str) -> str: ...


class _Shell(msgspec.Struct):
    """A shell call's snapshot, taken before it ran, and the checkpoint it belongs to."""

    checkpoint: Checkpoint
    snapshots: GitShadow | TreeScan
    before: Any


class SessionCheckpoints:
    """One session's checkpoints: the tool-call hooks that record them, listing and rewind."""

    def __init__(self, session: CheckpointHost) -> None:
        self._session = session
        configured = session.config.checkpoints  # settings.json `checkpoints`
        self.limits = configured.snapshot_limits()
        self.max_bytes = configured.disk_limit_bytes
        self.capture_shell = configured.capture_shell
        self._stores: dict[Path, CheckpointStore] = {}
        self._snapshots: dict[Path, GitShadow | TreeScan] = {}
        self._shell_calls: dict[str, _Shell] = {}
        self._lock = anyio.Lock()
        self._temporary: Path | None = None  # for a session kept in no file
        self._written: dict[str, FileState] = {}  # what the edit and write tools last wrote, by real path
        session.config.tools.files.write_listeners.append(self._wrote)

    def _wrote(self, path: str, text: str) -> None:
        self._written[os.path.realpath(path)] = FileState(sha256_of(text.encode("utf-8", errors="surrogateescape")))

    # --- where -----------------------------------------------------------------------------------

    def _folder(self) -> Path:
        session_file = self._session.history.session_file
        if session_file is not None:
            return folder_beside(Path(session_file))
        if self._temporary is None:
            self._temporary = Path(tempfile.mkdtemp(prefix="pi-rpc-checkpoints-"))
            weakref.finalize(self, shutil.rmtree, self._temporary, ignore_errors=True)
        return self._temporary / self._session.history.session_id

    def _store(self) -> CheckpointStore:
        folder = self._folder()
        store = self._stores.get(folder)
        if store is None:
            store = self._stores[folder] = CheckpointStore(folder, self.max_bytes)
        return store

    @property
    def _workspace(self) -> str:
        return os.path.realpath(self._session.cwd)

    def _user_messages(self) -> list[tuple[str, str, str]]:
        """(entry id, text, timestamp) of every user message of the current branch, oldest first."""
        entries = self._session.history.entries
        found = []
        for entry in entries.branch():
            text = entries.fork_text(entry.id)
            if text is not None:
                found.append((entry.id, text, entry.timestamp))
        return found

    # --- the hooks -------------------------------------------------------------------------------

    async def before_tool_call(self, call: BeforeToolCall) -> BlockCall | None:
        """The approval gate first; for a call it lets run, the checkpoint, right before it runs."""
        blocked = await self._session.approvals.check(call)
        if blocked is None:
            await self._before(call)
        return blocked

    async def _before(self, call: BeforeToolCall) -> None:
        name = call.tool_call.name
        if name in READ_ONLY_TOOLS:
            return
        entry_id = self._session.history.entries.latest_user_entry()
        if entry_id is None:
            return
        async with self._lock:
            store = self._store()
            checkpoint = store.checkpoint(entry_id)
            try:
                if name in FILE_TOOLS:
                    path = self._tool_path(call.args)
                    if path is not None and path not in checkpoint.files:
                        checkpoint.files[path] = await self._pre_image(store, path)
                elif name in SHELL_TOOLS and not self.capture_shell:
                    _note(
                        checkpoint, "changes made by shell commands are not captured (checkpoints.captureShell: false)"
                    )
                elif name in SHELL_TOOLS:
                    await self._snapshot_before(store, checkpoint, call.tool_call.id)
                else:
                    _note(checkpoint, f"changes made by the tool {name!r} are not captured")
            except Exception as exc:  # a checkpoint never stops the tool; the listing says what is missing
                _log.warning("checkpoint before %s failed: %s", name, exc)
                _note(checkpoint, f"{name}: the files before the call could not be recorded ({exc})")
            await _save(store)

    async def after_tool_call(self, call: AfterToolCall) -> None:
        """Note what the call left its files as (a shell call: what its snapshots differ in)."""
        name = call.tool_call.name
        shell = self._shell_calls.pop(call.tool_call.id, None)
        if name not in FILE_TOOLS and shell is None:
            return
        async with self._lock:
            store = self._store()
            try:
                if shell is not None:
                    await self._snapshot_after(store, shell)
                else:
                    path = self._tool_path(call.args)
                    checkpoint = self._latest(store)
                    written = self._written.pop(path, None) if path is not None else None
                    if path is not None and checkpoint is not None and path in checkpoint.files:
                        if written is not None:
                            checkpoint.after[path] = store.index.agent_states[path] = written
                        else:  # nothing written (the call failed): the file is as the agent found it
                            checkpoint.after.setdefault(path, checkpoint.files[path].state)
                            store.index.agent_states.setdefault(path, checkpoint.files[path].state)
            except Exception as exc:
                _log.warning("checkpoint after %s failed: %s", name, exc)
                if shell is not None:
                    _note(shell.checkpoint, f"{name}: what the call changed could not be found ({exc})")
            await _save(store)
            if store.limit_unchecked:
                await anyio.to_thread.run_sync(store.enforce_limit)

    def _latest(self, store: CheckpointStore) -> Checkpoint | None:
        entry_id = self._session.history.entries.latest_user_entry()
        return store.find(entry_id) if entry_id is not None else None

    def _tool_path(self, args: Any) -> str | None:
        path = getattr(args, "path", None)
        return os.path.realpath(resolve_to_cwd(path, self._session.cwd)) if isinstance(path, str) else None

    async def _pre_image(self, store: CheckpointStore, path: str) -> PreImage:
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return PreImage(kind="absent")
        editor = await self._session.config.tools.files.editor_for(path)
        if editor is not None:
            data = (await editor.read_text_file(path)).encode("utf-8", errors="surrogateescape")
        else:
            data = await anyio.Path(path).read_bytes()
        blob = await anyio.to_thread.run_sync(store.put_blob, data)
        return PreImage(kind="file", blob=blob, mode=stat.S_IMODE(info.st_mode), editor=editor is not None)

    # --- shell calls -----------------------------------------------------------------------------

    async def _snapshots_for(self, store: CheckpointStore, checkpoint: Checkpoint) -> GitShadow | TreeScan:
        snapshots = self._snapshots.get(store.folder)
        if snapshots is not None:
            return snapshots
        workspace = self._workspace
        git = git_program()
        # A git process, in a worker thread: on the event loop it would hold every reply and abort
        # for as long as git takes (seconds on a loaded machine or a slow file system).
        tree = await anyio.to_thread.run_sync(git_work_tree, git, workspace) if git is not None else None
        if git is not None and tree is not None:
            snapshots = GitShadow(git, store.folder / "shadow.git", workspace, tree[0], tree[1], self.limits)
        else:
            if git is None and _inside_git_work_tree(workspace):
                _note(checkpoint, "git is not installed: the workspace is scanned, its ignore rules not applied")
            snapshots = TreeScan(store.folder / "scan", workspace, self.limits)
        self._snapshots[store.folder] = snapshots
        return snapshots

    async def _snapshot_before(self, store: CheckpointStore, checkpoint: Checkpoint, call_id: str) -> None:
        snapshots = await self._snapshots_for(store, checkpoint)
        trim_first = not self._shell_calls  # no other call waits for a diff against the cache
        try:
            before = snapshots.quick_snapshot(trim_first=trim_first) if isinstance(snapshots, TreeScan) else None
            if before is None:
                before = await _stoppable(snapshots, _snapshot, snapshots, trim_first)
        except TooLargeError as exc:
            _note(checkpoint, f"changes made by shell commands are not captured: the workspace has {exc}")
            return
        if isinstance(snapshots, GitShadow):
            _note(
                checkpoint,
                "shell commands: changes outside the workspace, to files git ignores and to empty folders "
                "are not captured",
            )
        else:
            _note(checkpoint, "shell commands: changes outside the workspace and to empty folders are not captured")
        self._shell_calls[call_id] = _Shell(checkpoint, snapshots, before)

    async def _snapshot_after(self, store: CheckpointStore, shell: _Shell) -> None:
        checkpoint, snapshots = shell.checkpoint, shell.snapshots
        try:
            changed = _unchanged_at_once(snapshots, shell.before)
            if changed is None:
                changed = await _stoppable(snapshots, _changes_since, snapshots, shell.before)
        except TooLargeError as exc:
            _note(checkpoint, f"changes made by shell commands are not captured: the workspace grew to {exc}")
            return
        if isinstance(snapshots, GitShadow):
            for path in snapshots.gitlinks:
                _note(checkpoint, f"changes inside the nested repository {path} are not captured")
        else:
            for path in snapshots.unreadable:
                _note(checkpoint, f"{path} could not be read: changes to it by shell commands are not captured")
        for change in changed:
            if change.path not in checkpoint.files:
                checkpoint.files[change.path] = _pre_image_of(store, change)
            state = await anyio.to_thread.run_sync(_disk_state, change.path)
            checkpoint.after[change.path] = store.index.agent_states[change.path] = state

    # --- what a front end asks -------------------------------------------------------------------

    def listing(self) -> list[CheckpointInfo]:
        """Every user message of the branch, the most recent first, with its run's changes."""
        store = self._store()
        infos = []
        for entry_id, text, timestamp in reversed(self._user_messages()):
            checkpoint = store.find(entry_id)
            files: list[CheckpointFile] = []
            notes: list[str] = []
            if checkpoint is not None:
                changes = [
                    _file_change(path, pre, checkpoint.after.get(path)) for path, pre in checkpoint.files.items()
                ]
                files = sorted((f for f in changes if f is not None), key=lambda f: f.path)
                notes = list(checkpoint.not_captured)
                if checkpoint.dropped:
                    notes.append(
                        f"this checkpoint's data were dropped to keep the session's checkpoints under "
                        f"{store.max_bytes // (1024 * 1024)} MiB: its files can no longer be restored"
                    )
            infos.append(
                CheckpointInfo(entry_id=entry_id, text=text, timestamp=timestamp, files=files, not_captured=notes)
            )
        return infos

    async def rewind(
        self, entry_id: str, restore: RewindTarget, force: bool = False, preview: bool = False
    ) -> RewindResult:
        """Back to before the user message `entry_id`: its files, its conversation, or both.
        `preview`: what rewinding the files would do, with a diff of each, and nothing done."""
        if self._session.runs.is_streaming:
            raise SessionBusy("Cannot rewind while a run is in progress: abort it first")
        ids = [entry for entry, _, _ in self._user_messages()]
        if entry_id not in ids:
            raise SessionNotFoundError(f"No user message {entry_id} on this session's branch to rewind to")
        position = ids.index(entry_id)
        result = RewindResult(entry_id=entry_id, restored=[], conflicts=[], not_restored=[])
        if restore in ("files", "both") or preview:
            async with self._lock:
                await self._restore_files(ids[position:], force, result, preview)
        if restore in ("conversation", "both") and not preview:
            old = self._store()
            result.text = await self._session.fork(entry_id)
            result.session_id = self._session.history.session_id
            new = self._store()
            if new is not old and position > 0:
                await anyio.to_thread.run_sync(old.copy_to, new, ids[:position])
        return result

    async def _restore_files(self, later: list[str], force: bool, result: RewindResult, preview: bool) -> None:
        store = self._store()
        diffs: list[RewindDiff] = []
        targets: dict[str, PreImage | None] = {}  # None: its data were dropped
        for entry_id in later:  # oldest first: the earliest pre-image of a file is what it was
            checkpoint = store.find(entry_id)
            if checkpoint is None:
                continue
            for path, pre in checkpoint.files.items():
                targets.setdefault(path, None if checkpoint.dropped else pre)
        for path, target in sorted(targets.items()):
            data = None if target is None or target.blob is None else store.get_blob(target.blob)
            if target is None or (target.kind != "absent" and data is None):
                result.not_restored.append(f"{path}: its checkpoint's data were dropped (disk limit)")
                continue
            pre = target
            now = await self._state_of(path, pre.editor)
            expected = store.index.agent_states.get(path)
            if now != pre.state and expected is not None and now != expected and not force:
                diff = await self._restore_diff(path, pre, data)
                result.conflicts.append(RewindConflict(path=path, diff=diff))
                continue
            if preview:  # say what would change, change nothing
                if now != pre.state:
                    diffs.append(RewindDiff(path=path, diff=await self._restore_diff(path, pre, data)))
                result.restored.append(path)
                continue
            if now != pre.state:
                try:
                    await self._put(path, pre, data)
                except OSError as exc:
                    result.not_restored.append(f"{path}: {exc}")
                    continue
            store.index.agent_states[path] = pre.state
            result.restored.append(path)
        if preview:
            result.diffs = diffs
        else:
            await _save(store)

    # --- files -----------------------------------------------------------------------------------

    async def _read(self, path: str, editor_text: bool) -> bytes | None:
        """What the file holds as the agent's tools see it: None when it does not exist."""
        if editor_text and await anyio.to_thread.run_sync(os.path.lexists, path):
            editor = await self._session.config.tools.files.editor_for(path)
            if editor is not None:
                return (await editor.read_text_file(path)).encode("utf-8", errors="surrogateescape")
        return await anyio.to_thread.run_sync(_disk_bytes, path)

    async def _state_of(self, path: str, editor_text: bool) -> FileState:
        data = await self._read(path, editor_text)
        return ABSENT if data is None else FileState(sha256_of(data))

    async def _restore_diff(self, path: str, pre: PreImage, data: bytes | None) -> str:
        now = await self._read(path, pre.editor)
        return _unified_diff(path, now, data if pre.kind != "absent" else None)

    async def _put(self, path: str, pre: PreImage, data: bytes | None) -> None:
        if pre.kind == "absent":
            await anyio.to_thread.run_sync(_remove, path, self._workspace)
            return
        assert data is not None
        if pre.editor and pre.kind == "file":
            editor = await self._session.config.tools.files.editor_for(path)
            if editor is not None:  # one edit the user can undo, unsaved buffers included
                await editor.write_text_file(path, data.decode("utf-8", errors="surrogateescape"))
                return
        await anyio.to_thread.run_sync(_write, path, pre, data)


async def _stoppable(snapshots: GitShadow | TreeScan, work: Callable[..., T], *args: Any) -> T:
    """`work(*args)` in a worker thread; cancelled meanwhile (an abort), the snapshot is stopped
    (its git process killed, its scan ended) and the thread waited for: nothing is left running."""
    finished = False

    async def stop_when_cancelled() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            if not finished:
                snapshots.stop()

    failed: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(stop_when_cancelled)
        try:
            result = await anyio.to_thread.run_sync(functools.partial(work, *args))
        except SnapshotStoppedError:
            await anyio.lowlevel.checkpoint()  # stopped by a cancellation: it is raised here
            raise
        except Exception as exc:  # raised past the task group, which would wrap it in a group
            failed = exc
        finally:
            finished = True
            group.cancel_scope.cancel()
    if failed is not None:
        raise failed
    return result


def _snapshot(snapshots: GitShadow | TreeScan, trim_first: bool) -> Any:
    """A snapshot, the cache trimmed first when asked: in one worker thread's call, one wake-up."""
    if trim_first:
        snapshots.trim()
    return snapshots.snapshot()


def _changes_since(snapshots: GitShadow | TreeScan, before: Any) -> list[Changed]:
    """What differs from `before` now (a TooLargeError is the new snapshot's: `changes` raises none)."""
    return snapshots.changes(before, snapshots.snapshot())


def _unchanged_at_once(snapshots: GitShadow | TreeScan, before: Any) -> list[Changed] | None:
    """No change, when a quick scan (no worker thread) finds the workspace's files as `before`
    had them; None when that takes the worker (a shadow repository, a larger tree, a change)."""
    if not isinstance(snapshots, TreeScan) or before.unreadable:
        return None
    after = snapshots.quick_snapshot()
    if after is None or after.files != before.files:
        return None  # the worker's snapshot then reads what differs (its cache, the new files)
    snapshots.unreadable = []
    return []


async def _save(store: CheckpointStore) -> None:
    """The index written, in a worker thread, unless the file holds it already."""
    data = store.unsaved()
    if data is not None:
        await anyio.to_thread.run_sync(store.save, data)


def _note(checkpoint: Checkpoint, text: str) -> None:
    if text not in checkpoint.not_captured:
        checkpoint.not_captured.append(text)


def _inside_git_work_tree(workspace: str) -> bool:
    return any((folder / ".git").exists() for folder in (Path(workspace), *Path(workspace).parents))


def _pre_image_of(store: CheckpointStore, change: Changed) -> PreImage:
    if change.before is None:
        return PreImage(kind="absent")
    return PreImage(kind="symlink" if change.symlink else "file", blob=store.put_blob(change.before), mode=change.mode)


def _file_change(path: str, pre: PreImage, after: FileState | None) -> CheckpointFile | None:
    if after is not None and after == pre.state:
        return None  # changed back, or the call failed: nothing to show
    if pre.kind == "absent":
        return CheckpointFile(path=path, change="created")
    return CheckpointFile(path=path, change="deleted" if after == ABSENT else "modified")


def _disk_bytes(path: str) -> bytes | None:
    try:
        if os.path.islink(path):
            return os.fsencode(os.readlink(path))
        return Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        return b""


def _disk_state(path: str) -> FileState:
    data = _disk_bytes(path)
    return ABSENT if data is None else FileState(sha256_of(data))


def _unified_diff(path: str, now: bytes | None, restored: bytes | None) -> str:
    if b"\0" in (now or b"")[:8192] or b"\0" in (restored or b"")[:8192]:
        return f"Binary files {path} (now) and {path} (checkpoint) differ\n"
    old = (now or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    new = (restored or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
    import difflib  # for a rewind's diff alone, not in every daemon's start-up

    lines = difflib.unified_diff(
        old,
        new,
        fromfile=f"{path} (now)" if now is not None else "/dev/null",
        tofile=f"{path} (checkpoint)" if restored is not None else "/dev/null",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return text if len(text) <= _DIFF_LIMIT else text[:_DIFF_LIMIT] + "\n[diff truncated]\n"


def _write(path: str, pre: PreImage, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if pre.kind == "symlink":
        if os.path.lexists(path):
            os.unlink(path)
        os.symlink(os.fsdecode(data), path)
        return
    temporary = f"{path}.pi-rpc-rewind"
    with open(temporary, "wb") as file:
        file.write(data)
    os.chmod(temporary, pre.mode)
    os.replace(temporary, path)


def _remove(path: str, workspace: str) -> None:
    """Delete a file the run created, and the folders that held only it, up to the workspace."""
    if os.path.lexists(path) and not (os.path.isdir(path) and not os.path.islink(path)):
        os.unlink(path)
    folder = os.path.dirname(path)
    while folder.startswith(workspace + os.sep):
        try:
            os.rmdir(folder)  # only an empty one
        except OSError:
            break
        folder = os.path.dirname(folder)


__all__ = [
    "CheckpointFile",
    "CheckpointInfo",
    "RewindConflict",
    "RewindResult",
    "RewindTarget",
    "SessionCheckpoints",
]
