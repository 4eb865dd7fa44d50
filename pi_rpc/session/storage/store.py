"""Session persistence: one append-only JSON-lines file per session, as Pi keeps its sessions.

`{data dir}/sessions/{workspace slug}-{hash}/{started}_{session id}.jsonl` (when a Pi client sets
`PI_CODING_AGENT_DIR`: Pi's `$PI_CODING_AGENT_DIR/sessions/--{cwd}--/`); in a folder the user
chose as Pi lets them choose one (`--session-dir`, `PI_CODING_AGENT_SESSION_DIR`, settings.json
`sessionDir`: a `SessionDir`), the files of every workspace directly in it, as Pi writes them
there, a workspace's own told apart by the cwd their header records. In Pi's format
(pi_sessions.py): a header (`{"type": "session", "version": 3, ...}`), then the session's entries
(entries.py), each appended as it is made: a message when it ends (Pi persists on `message_end`
too), a compaction when it is done. Files of our first format (version 1: a message per line)
are still read and continued as they are; their messages get ids by position, and a compaction
cannot be written to them (it holds for the daemon's life).

Durability: each line goes to the kernel in one unbuffered write as it is appended, so a killed
daemon loses at most the line being written. That torn fragment would swallow the next line
appended after it, so every append first makes sure the file ends on a fresh line (a fragment
that is not a whole record is cut off, and the log says so); loading skips, and logs, any line
that is not one. Nothing here is fsynced: a kill cannot lose what the kernel has.

Privacy: transcripts hold prompts, code and tool output, so files are 0600 and folders 0700, and
existing ones are narrowed when they are opened. Folders are keyed by a hash of the exact
workspace path (the readable slug alone made `/x/a-b` and `/x/a/b` share one); sessions in the
old slug-only folders are still found, by the `cwd` their header records.
"""

from __future__ import annotations

import datetime
import glob
import hashlib
import logging
import os
import re
import stat
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import msgspec
import platformdirs

from pi_rpc.ai import (
    PI_AGENT_DIR_VARIABLE,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Message,
    UserMessage,
    Wire,
    encode_json,
    pi_agent_dir,
    text_of,
)
from pi_rpc.session.storage.entries import SessionEntries
from pi_rpc.session.storage.entry_kinds import Entry, SessionHeader, SessionMessageEntry, entry_json, entry_timestamp
from pi_rpc.session.storage.pi_sessions import (
    PI_CURRENT_VERSION,
    is_pi_entry,
    is_pi_session,
    new_entry_id,
    parse_pi_entries,
)

_log = logging.getLogger(__name__)

PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700
_TAIL_CHUNK = 64 * 1024


class SessionSummary(Wire, kw_only=True):
    """One stored session, for `session/list`."""

    session_id: str
    path: str
    started: str
    modified: str
    message_count: int
    first_message: str
    name: str | None = None  # its latest `session_info` name (`session/setName`, Pi's `/name`)


_decode_header = msgspec.json.Decoder(SessionHeader).decode
_decode_message = msgspec.json.Decoder(Message).decode

# Pi's variable naming the folder its sessions are kept in (its `ENV_SESSION_DIR`).
SESSION_DIR_VARIABLE = "PI_CODING_AGENT_SESSION_DIR"
OUR_SESSION_DIR_VARIABLE = "PI_RPC_SESSION_DIR"


class SessionDir(msgspec.Struct, frozen=True):
    """A folder holding session files directly, every workspace's side by side, as Pi keeps them
    in a folder the user chose: a workspace's sessions are the files whose header records its cwd."""

    path: Path


# Where sessions are kept: a root holding a folder per workspace, or a folder the user chose.
SessionRoot = Path | SessionDir


def chosen_session_root(command_line: str | None, setting: str | None, cwd: str) -> SessionRoot | None:
    """The folder the user chose, in Pi's order: `--session-dir`, then `PI_CODING_AGENT_SESSION_DIR`,
    then (ours, a root of workspace folders) `PI_RPC_SESSION_DIR`, then settings.json `sessionDir`.
    `~` is the home folder in each (newest Pi expands it in all three); a relative setting is
    relative to the workspace (Pi's own folder when it runs), the others to where the daemon was
    started. None: the default root (`sessions_root`)."""
    if command_line:
        return SessionDir(Path(command_line).expanduser().absolute())
    if variable := os.environ.get(SESSION_DIR_VARIABLE):
        return SessionDir(Path(variable).expanduser().absolute())
    if os.environ.get(OUR_SESSION_DIR_VARIABLE):
        return None
    if setting:
        return SessionDir(Path(cwd, Path(setting).expanduser()).absolute())
    return None


def sessions_folder(root: SessionRoot | None) -> Path:
    """The folder every session file is kept under, for a report (`pi-rpc doctor`)."""
    return root.path if isinstance(root, SessionDir) else root or sessions_root()


def sessions_root() -> Path:
    """`PI_RPC_SESSION_DIR`; else, for a Pi client that names Pi's agent folder
    (`PI_CODING_AGENT_DIR`), Pi's own sessions folder, so Pi and pi-rpc see each other's sessions;
    else our user data folder."""
    override = os.environ.get(OUR_SESSION_DIR_VARIABLE)
    if override:
        return Path(override)
    if os.environ.get(PI_AGENT_DIR_VARIABLE):
        return pi_sessions_dir()
    return Path(platformdirs.user_data_dir("pi-rpc")) / "sessions"


def pi_sessions_dir() -> Path:
    """Pi's `getSessionsDir`."""
    return pi_agent_dir() / "sessions"


def pi_workspace_folder_name(cwd: str) -> str:
    """Pi's name for a workspace's folder of sessions (`getDefaultSessionDir`): the path without
    its leading separator, separators and colons as dashes, between `--` and `--`."""
    return "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", cwd)) + "--"


def _slug(cwd: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", cwd.strip("/")) or "root"


def workspace_folder(cwd: str, root: SessionRoot | None = None) -> Path:
    """The folder the workspace's sessions are written to: under a root, its own folder, a readable
    slug (like Pi's `--path--` names) made unambiguous by a hash of the exact path (in Pi's sessions
    folder, Pi's own name for it); a chosen folder itself."""
    if isinstance(root, SessionDir):
        return root.path
    base = root or sessions_root()
    if base == pi_sessions_dir():  # Pi's folder keeps Pi's layout, so Pi finds the sessions there
        return base / pi_workspace_folder_name(cwd)
    digest = hashlib.sha256(cwd.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return base / f"{_slug(cwd)}-{digest}"


def legacy_workspace_folder(cwd: str, root: Path | None = None) -> Path:
    """The slug-only folder of earlier versions, which two workspaces can share (`/a-b`, `/a/b`):
    its files count only when their header records this `cwd`."""
    return (root or sessions_root()) / _slug(cwd)


# --- permissions ---------------------------------------------------------------------------------


def _narrow(path: Path | int, mode: int) -> None:
    """Take away group and other access (a path, or an open descriptor); never fatal."""
    try:
        current = stat.S_IMODE(os.stat(path).st_mode)
        if current & 0o077:
            if isinstance(path, int):
                os.fchmod(path, current & mode)
            else:
                os.chmod(path, current & mode)
    except OSError as exc:
        _log.warning("cannot make %s private: %s", path, exc)


def _private_folder(folder: Path, root: SessionRoot | None) -> None:
    # The sessions root and the workspace folder are ours, and so is a folder chosen for sessions;
    # folders above them are the user's.
    if not isinstance(root, SessionDir):
        folder.parent.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
        _narrow(folder.parent, PRIVATE_FOLDER_MODE)
    folder.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    _narrow(folder, PRIVATE_FOLDER_MODE)


def private_workspace_subfolder(cwd: str, name: str, root: SessionRoot | None = None) -> Path:
    """A folder of the workspace's own beside its sessions (the LSP mode's answers), private like
    them; created when missing. In a chosen folder, one every workspace shares (its files are named
    uniquely)."""
    folder = workspace_folder(cwd, root)
    _private_folder(folder, root)
    subfolder = folder / name
    subfolder.mkdir(mode=PRIVATE_FOLDER_MODE, exist_ok=True)
    _narrow(subfolder, PRIVATE_FOLDER_MODE)
    return subfolder


# --- writing -------------------------------------------------------------------------------------


def _is_record(fragment: bytes, first_line: bool) -> bool:
    try:
        (_decode_header if first_line else _decode_message)(fragment)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return not first_line and is_pi_entry(fragment)
    return True


def _last_line_start(fd: int, size: int) -> int:
    """Offset just after the last newline before `size` (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        found = os.pread(fd, end - start, start).rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


def end_on_a_fresh_line(fd: int, path: Path) -> None:
    """Make the file open at `fd` (read-write) end with a newline before anything is appended.

    A last line without its newline was torn by a killed writer. Whole records only lost their
    newline and get it back; anything else is cut off, since appending to it would corrupt the
    next line too."""
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return
    start = _last_line_start(fd, size)
    fragment = os.pread(fd, size - start, start)
    if _is_record(fragment, first_line=start == 0):
        os.write(fd, b"\n")
        return
    os.ftruncate(fd, start)
    _log.warning("%s: dropped a torn last line (%d bytes) left by an interrupted write", path, size - start)


def _write_all(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def new_session_path(
    cwd: str, session_id: str, root: SessionRoot | None = None, started: datetime.datetime | None = None
) -> Path:
    """Where a new session's file goes in the workspace's folder: named by when it started and its id."""
    started = started or datetime.datetime.now(datetime.UTC)
    return workspace_folder(cwd, root) / f"{started.strftime('%Y-%m-%dT%H-%M-%S')}_{session_id}.jsonl"


class SessionFile:
    """An open session file; `write_entry` appends one entry as one line.

    A plain class, not a record: it holds an open descriptor and its own write position, which are
    neither arguments nor part of what it is."""

    __slots__ = ("__weakref__", "_end", "_fd", "mode", "path", "pi_format", "pi_leaf", "session_id")

    def __init__(
        self,
        path: Path,
        session_id: str,
        mode: Literal["write", "off"] = "write",
        pi_leaf: str | None = None,
        pi_format: bool = False,
    ) -> None:
        """An existing file is continued in the format it was written in (read here unless the
        caller says it is Pi's)."""
        self.path = path
        self.session_id = session_id
        self.mode: Literal["write", "off"] = mode
        # Pi's format (the default for new files): messages are appended as entries after `pi_leaf`.
        self.pi_leaf = pi_leaf
        self.pi_format = pi_format
        # Open for appends from the first write until this object is collected: an append is then
        # one fstat and one write, not open, chmod, stat, read and close.
        self._fd: int | None = None
        # The file's size after our last line; any other size means another writer came in between.
        self._end = -1
        if pi_format:
            return
        try:
            with open(self.path, "rb") as source:
                header = _decode_header(source.readline())
        except (OSError, msgspec.DecodeError, msgspec.ValidationError):
            return
        if is_pi_session(header.version):
            self.pi_format = True
            self.pi_leaf = parse_pi_entries(self.path.read_bytes().split(b"\n")[1:])[1]

    def __repr__(self) -> str:
        return (
            f"SessionFile(path={self.path!r}, session_id={self.session_id!r}, mode={self.mode!r}, "
            f"pi_leaf={self.pi_leaf!r}, pi_format={self.pi_format!r})"
        )

    @classmethod
    def create(
        cls,
        cwd: str,
        session_id: str,
        root: SessionRoot | None = None,
        *,
        parent_session: str | None = None,
        path: Path | None = None,
        planned: Path | None = None,
    ) -> SessionFile:
        """A new file in the workspace's folder (named as `planned` when the name was reported
        before), or at `path` (Pi's `--session` of a file that does not exist yet); its header
        names `parent_session` when it has one."""
        started = datetime.datetime.now(datetime.UTC)
        if path is None:
            path = planned or new_session_path(cwd, session_id, root, started)
            _private_folder(path.parent, root)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
        session = cls(path=path, session_id=session_id, pi_format=True)
        header = SessionHeader(version=PI_CURRENT_VERSION, id=session_id, cwd=cwd, timestamp=started.isoformat())
        if parent_session is not None:
            header.parent_session = parent_session
        session._write(encode_json(header))
        return session

    def append(self, message: Message) -> None:
        """A message after the file's last entry."""
        entry_id = new_entry_id()
        self.write_entry(
            SessionMessageEntry(id=entry_id, parent_id=self.pi_leaf, timestamp=entry_timestamp(), message=message)
        )

    def write_entry(self, entry: Entry, line: bytes | None = None) -> None:
        """`entry`, as `line` when given (the line a file gave it), else encoded from it."""
        if self.pi_format:
            self.pi_leaf = entry.id
            self._write(line if line is not None else entry_json(entry))
            return
        # Our first format holds only messages.
        if not isinstance(entry, SessionMessageEntry):
            _log.info("%s: a %s entry cannot be kept in this file's format", self.path, entry.type)
            return
        self._write(encode_json(entry.message))

    def _write(self, line: bytes | bytearray) -> None:
        if self.mode == "off":
            return
        try:
            fd = self._append_fd()
            size = os.fstat(fd).st_size
            if size != self._end:
                # First write, or another writer appended since ours (Pi on the same session, or one
                # killed mid-line): only then can the tail be torn.
                end_on_a_fresh_line(fd, self.path)
                size = os.fstat(fd).st_size
            data = line + b"\n"
            _write_all(fd, data)  # one unbuffered write: in the kernel when this returns
            self._end = size + len(data)
        except OSError as exc:
            # Persistence must never take the session down; say so once and stop trying.
            _log.error("cannot write session file %s: %s; persistence is off for this session", self.path, exc)
            self.mode = "off"

    def _append_fd(self) -> int:
        if self._fd is None:
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_FILE_MODE)
            weakref.finalize(self, os.close, fd)  # a session's file goes when the session lets go of it
            self._fd = fd
            _narrow(fd, PRIVATE_FILE_MODE)
        return self._fd


# --- reading -------------------------------------------------------------------------------------


def open_session(path: Path) -> tuple[SessionHeader, SessionEntries, SessionFile]:
    """A stored session to continue: its header, its entries, and the file to append to (in the
    format it was written in, ours or Pi's). Raises `OSError` or `ValueError` when unreadable."""
    header, entries = load_entries(path)
    if not is_pi_session(header.version):
        return header, entries, SessionFile(path=path, session_id=header.id)
    # The file was just read: its leaf is the entries' (no second pass over a long file).
    return header, entries, SessionFile(path=path, session_id=header.id, pi_leaf=entries.leaf, pi_format=True)


def load_session(path: Path) -> tuple[SessionHeader, list[Message]]:
    """The header and the messages the model reads. Raises `OSError` or `ValueError` when the
    header is unreadable."""
    header, entries = load_entries(path)
    return header, entries.context()


def load_entries(path: Path) -> tuple[SessionHeader, SessionEntries]:
    """The header and every readable entry; a line that is not one (torn by a killed writer) is
    skipped and logged. Raises `OSError` or `ValueError` when the header is unreadable."""
    _narrow(path, PRIVATE_FILE_MODE)
    data = path.read_bytes()
    lines = data.split(b"\n")
    header = _decode_header(lines[0])
    if is_pi_session(header.version):
        return header, SessionEntries.read(lines[1:], path)
    messages: list[Message] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            messages.append(_decode_message(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            torn = " (torn last line)" if number == len(lines) and not data.endswith(b"\n") else ""
            _log.warning("%s:%d skipped%s: %s", path, number, torn, exc)
    return header, SessionEntries.numbered(messages)


def read_header(path: Path) -> SessionHeader | None:
    """The header of the session file at `path`; None when it has none that can be read."""
    try:
        with open(path, "rb") as source:
            return _decode_header(source.readline())
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def _recorded_cwd(path: Path) -> str | None:
    header = read_header(path)
    return header.cwd if header is not None else None


def other_workspace(path: Path, cwd: str) -> str | None:
    """The workspace the session file at `path` belongs to when that is not `cwd` (by the cwd its
    header records, symlinks resolved); None when it is this one's, or records none."""
    recorded = _recorded_cwd(path)
    if recorded is None or os.path.realpath(recorded) == os.path.realpath(cwd):
        return None
    return recorded


def other_workspace_message(session: str, other: str) -> str:
    """Why a session of another workspace is not continued here, and what does it instead."""
    return (
        f"Session {session} belongs to another workspace ({other}): open it there, "
        f"or --fork {session} copies it into this one"
    )


def _session_files(cwd: str, root: SessionRoot | None, pattern: str) -> Iterator[Path]:
    """This workspace's files matching `pattern`, from its own folder and the legacy one (from a
    chosen folder, those whose header records this cwd)."""
    if isinstance(root, SessionDir):
        folders = [root.path]
    else:
        folders = [workspace_folder(cwd, root), legacy_workspace_folder(cwd, root)]
    for folder in folders:
        if not folder.is_dir():
            continue
        _narrow(folder, PRIVATE_FOLDER_MODE)
        for path in folder.glob(pattern):
            if _recorded_cwd(path) == cwd:
                yield path


def find_session(cwd: str, session_id: str, root: SessionRoot | None = None) -> Path | None:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", session_id):
        return None  # ids are ours (hex); anything else, "../x" or "*", names no session
    # Escaped all the same: the pattern must only ever match this one id.
    matches = sorted(_session_files(cwd, root, f"*_{glob.escape(session_id)}.jsonl"), key=lambda p: p.name)
    return matches[-1] if matches else None


def list_sessions(cwd: str, root: SessionRoot | None = None) -> list[SessionSummary]:
    """Stored sessions of this workspace that hold a prompt, newest first (the open one too, once
    it has one)."""
    summaries = [summary for path in _session_files(cwd, root, "*.jsonl") if (summary := _summary(path)) is not None]
    return sorted(summaries, key=lambda s: s.modified, reverse=True)


def _every_session_file(root: SessionRoot | None, pattern: str) -> list[Path]:
    """Every workspace's files matching `pattern`: in the workspace folders of a root, or directly
    in a chosen folder."""
    base, pattern = (root.path, pattern) if isinstance(root, SessionDir) else (root or sessions_root(), f"*/{pattern}")
    return list(base.glob(pattern)) if base.is_dir() else []


def list_all_sessions(root: SessionRoot | None = None) -> list[tuple[str, SessionSummary]]:
    """Every stored session of every workspace that holds a prompt, as (its recorded cwd,
    summary), newest first."""
    found: list[tuple[str, SessionSummary]] = []
    for path in _every_session_file(root, "*.jsonl"):
        cwd = _recorded_cwd(path)
        summary = _summary(path) if cwd is not None else None
        if cwd is not None and summary is not None:
            found.append((cwd, summary))
    return sorted(found, key=lambda item: item[1].modified, reverse=True)


def find_session_anywhere(session_id: str, root: SessionRoot | None = None) -> Path | None:
    """A stored session by id alone, whatever workspace recorded it."""
    if not re.fullmatch(r"[A-Za-z0-9_-]+", session_id):
        return None
    matches = sorted(_every_session_file(root, f"*_{glob.escape(session_id)}.jsonl"), key=lambda p: p.name)
    return matches[-1] if matches else None


# A session is listed once it holds one of these: a prompt, or the summary a compaction or a
# branch left of earlier prompts.
_CONVERSATION = (UserMessage, CompactionSummaryMessage, BranchSummaryMessage)


def _summary(path: Path) -> SessionSummary | None:
    try:
        header, entries = load_entries(path)
    except (OSError, ValueError, IndexError):
        return None
    messages = entries.context()
    if not any(isinstance(m, _CONVERSATION) for m in messages):
        # Nothing to resume: a session opened and left (or still open) before its first prompt
        # would fill an editor's resume picker with empty entries.
        return None
    first = next((text_of(m.content) for m in messages if isinstance(m, UserMessage)), "")
    modified = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC).isoformat()
    return SessionSummary(
        session_id=header.id,
        path=str(path),
        started=header.timestamp,
        modified=modified,
        message_count=len(messages),
        first_message=first[:200],
        name=entries.name(),
    )
