"""Where a session's checkpoints are kept: an index and the pre-images it names.

A session kept in a file keeps its checkpoints in the folder beside it, `<file stem>.checkpoints/`:
`index.json` (every checkpoint: the user message it belongs to, what each file it changed was
before, what the agent left it as) and `blobs/<sha256>`, the pre-images' bytes, each stored once.
A session kept in no file (`--no-session`) keeps them in a temporary folder that goes with the
daemon. Blobs past the session's disk limit are dropped, the oldest checkpoints' first; a
checkpoint whose data was dropped says so in its listing and its files are no longer restored.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

FOLDER_SUFFIX = ".checkpoints"
# The pre-images of one session's checkpoints take at most this much disk; past it the oldest
# checkpoints' data go first (docs/CONFIGURATION.md, "Checkpoints").
MAX_SESSION_BYTES = 256 * 1024 * 1024
_PRIVATE = 0o700

PreImageKind = Literal["absent", "file", "symlink"]


class FileState(msgspec.Struct, frozen=True):
    """What a file holds: None when it does not exist, else the sha256 of its bytes (of its
    target, for a symbolic link)."""

    sha256: str | None


ABSENT = FileState(None)


class PreImage(msgspec.Struct, kw_only=True):
    """A file as it was before the run first changed it."""

    kind: PreImageKind
    blob: str | None = None  # sha256 of the bytes in blobs/ ("file": contents, "symlink": target)
    mode: int = 0o644  # permission bits of a "file"
    editor: bool = False  # the text of an editor buffer: read and restored through the editor

    @property
    def state(self) -> FileState:
        return ABSENT if self.kind == "absent" else FileState(self.blob)


class Checkpoint(msgspec.Struct, kw_only=True):
    """The restore point of one user message: every file its run changed, as it was before."""

    entry_id: str
    created_ms: int
    files: dict[str, PreImage] = msgspec.field(default_factory=dict)  # absolute path -> pre-image
    after: dict[str, FileState] = msgspec.field(default_factory=dict)  # what the run left them as
    not_captured: list[str] = msgspec.field(default_factory=list)
    dropped: bool = False  # its blobs went to keep the session under its disk limit


class CheckpointIndex(msgspec.Struct, kw_only=True):
    version: int = 1
    checkpoints: list[Checkpoint] = msgspec.field(default_factory=list)  # oldest first
    # What the agent's last change (or the last rewind) left each file as: a file that differs
    # now was changed by someone else since, and a rewind reports it as a conflict.
    agent_states: dict[str, FileState] = msgspec.field(default_factory=dict)


def folder_beside(session_file: Path) -> Path:
    return session_file.parent / (session_file.stem + FOLDER_SUFFIX)


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class CheckpointStore:
    """One session's checkpoints on disk. Every method is synchronous: the session calls them in
    a worker thread."""

    def __init__(self, folder: Path, max_bytes: int = MAX_SESSION_BYTES) -> None:
        self.folder = folder
        self.max_bytes = max_bytes
        self._blobs = folder / "blobs"
        self._index_path = folder / "index.json"
        # The index file's bytes as last read or written: a save that would write them again is
        # skipped (most shell calls change no file, and a turn then writes nothing here).
        self._saved: bytes | None = None
        self.index = self._load()
        # Whether `enforce_limit` could drop anything: it drops only while the blobs are past the
        # limit, so it has a look once, then whenever a new blob may have put them past it, or a
        # new checkpoint came while they are (the oldest goes once it is not alone). Their size is
        # what it last counted plus what `put_blob` wrote since.
        self.limit_unchecked = True
        self._blob_bytes: int | None = None

    def _load(self) -> CheckpointIndex:
        try:
            data = self._index_path.read_bytes()
            index = msgspec.json.decode(data, type=CheckpointIndex)
        except FileNotFoundError:
            return CheckpointIndex()
        except (OSError, msgspec.DecodeError):  # unreadable: start afresh rather than fail the run
            return CheckpointIndex()
        self._saved = data
        return index

    def _make_folders(self) -> None:
        self.folder.mkdir(mode=_PRIVATE, parents=True, exist_ok=True)
        self._blobs.mkdir(mode=_PRIVATE, exist_ok=True)

    def unsaved(self) -> bytes | None:
        """The index as `save` would write it, or None when the file holds exactly that already
        (cheap enough for the event loop: no worker thread is woken for a save that changes nothing)."""
        data = msgspec.json.encode(self.index)
        return None if data == self._saved and self._index_path.exists() else data

    def save(self, data: bytes | None = None) -> None:
        """Write the index (`data`: its encoding from `unsaved`)."""
        self._make_folders()
        data = msgspec.json.encode(self.index) if data is None else data
        temporary = self._index_path.with_suffix(".json.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, self._index_path)
        self._saved = data

    # --- checkpoints ----------------------------------------------------------------------------

    def checkpoint(self, entry_id: str) -> Checkpoint:
        """The checkpoint of the user message `entry_id`, made when missing."""
        for checkpoint in self.index.checkpoints:
            if checkpoint.entry_id == entry_id:
                return checkpoint
        checkpoint = Checkpoint(entry_id=entry_id, created_ms=int(time.time() * 1000))
        self.index.checkpoints.append(checkpoint)
        self.limit_unchecked = self.limit_unchecked or self._past_limit()
        return checkpoint

    def _past_limit(self) -> bool:
        return self._blob_bytes is None or self._blob_bytes > self.max_bytes

    def find(self, entry_id: str) -> Checkpoint | None:
        return next((c for c in self.index.checkpoints if c.entry_id == entry_id), None)

    # --- blobs ----------------------------------------------------------------------------------

    def put_blob(self, data: bytes) -> str:
        digest = sha256_of(data)
        path = self._blobs / digest
        if not path.exists():
            self._make_folders()
            temporary = path.with_suffix(".tmp")
            temporary.write_bytes(data)
            os.replace(temporary, path)
            if self._blob_bytes is not None:
                self._blob_bytes += len(data)
            self.limit_unchecked = self.limit_unchecked or self._past_limit()
        return digest

    def get_blob(self, digest: str) -> bytes | None:
        try:
            return (self._blobs / digest).read_bytes()
        except FileNotFoundError:
            return None

    def blobs_size(self) -> int:
        try:
            return sum(entry.stat().st_size for entry in os.scandir(self._blobs) if entry.is_file())
        except FileNotFoundError:
            return 0

    def enforce_limit(self) -> list[str]:
        """Drop the oldest checkpoints' blobs until the blobs fit the limit (the newest checkpoint
        is kept whole); returns the entry ids of the checkpoints dropped."""
        dropped: list[str] = []
        size = self.blobs_size()
        live = [c for c in self.index.checkpoints if not c.dropped]
        while size > self.max_bytes and len(live) > 1:
            oldest = live.pop(0)
            oldest.dropped = True
            dropped.append(oldest.entry_id)
            kept = _blob_names(live)
            for digest in _blob_names([oldest]) - kept:
                path = self._blobs / digest
                try:
                    size -= path.stat().st_size
                    path.unlink()
                except FileNotFoundError:
                    pass
        self._blob_bytes = size
        self.limit_unchecked = False
        if dropped:
            self.save()
        return dropped

    # --- a fork carries the checkpoints of its messages -----------------------------------------

    def copy_to(self, other: CheckpointStore, entry_ids: Iterable[str]) -> None:
        """Give `other` (a fork's store) the checkpoints of `entry_ids` and the blobs they name."""
        wanted = set(entry_ids)
        carried = [c for c in self.index.checkpoints if c.entry_id in wanted and other.find(c.entry_id) is None]
        if not carried:
            return
        other._make_folders()
        for digest in _blob_names(carried):
            source, target = self._blobs / digest, other._blobs / digest
            if source.exists() and not target.exists():
                try:
                    os.link(source, target)  # blobs never change: one copy on disk serves both
                except OSError:
                    shutil.copyfile(source, target)
        other.index.checkpoints = sorted([*other.index.checkpoints, *carried], key=lambda c: c.created_ms)
        for path, state in self.index.agent_states.items():
            other.index.agent_states.setdefault(path, state)
        other.limit_unchecked, other._blob_bytes = True, None  # its blobs counted afresh
        other.save()


def _blob_names(checkpoints: Iterable[Checkpoint]) -> set[str]:
    return {pre.blob for c in checkpoints for pre in c.files.values() if pre.blob is not None}


__all__ = [
    "ABSENT",
    "Checkpoint",
    "CheckpointIndex",
    "CheckpointStore",
    "FileState",
    "PreImage",
    "folder_beside",
    "sha256_of",
]
