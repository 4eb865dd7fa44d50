"""Session persistence: one append-only JSON-lines file per session, as Pi keeps its sessions.

`{data dir}/sessions/{workspace slug}/{started}_{session id}.jsonl`. The first line is a header
(`{"type": "session", ...}`); every later line is one transcript message, appended when the
message ends (Pi persists on `message_end` too). Appending whole lines and flushing each means a
crash loses at most the line being written, and a torn last line is skipped on load, never fatal.
"""

from __future__ import annotations

import datetime
import glob
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import msgspec
import platformdirs

from pi_rpc.ai.json_text import encode_json
from pi_rpc.ai.types import Message, UserMessage, Wire, text_of

_log = logging.getLogger(__name__)

SESSION_FORMAT_VERSION = 1


class SessionHeader(Wire, tag_field="type", tag="session", kw_only=True):
    version: int
    id: str
    cwd: str
    timestamp: str


class SessionSummary(Wire, kw_only=True):
    """One stored session, for `session/list`."""

    session_id: str
    path: str
    started: str
    modified: str
    message_count: int
    first_message: str


_decode_header = msgspec.json.Decoder(SessionHeader).decode
_decode_message = msgspec.json.Decoder(Message).decode


def sessions_root() -> Path:
    override = os.environ.get("PI_RPC_SESSION_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir("pi-rpc")) / "sessions"


def workspace_folder(cwd: str, root: Path | None = None) -> Path:
    """A readable folder name for a workspace path (like Pi's `--path--` names). Two paths can
    share one (`/a-b`, `/a/b`): readers check each file's recorded `cwd`."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", cwd.strip("/")) or "root"
    return (root or sessions_root()) / slug


@dataclass
class SessionFile:
    """An open session file; `append` writes one message as one line."""

    path: Path
    session_id: str
    mode: Literal["write", "off"] = "write"

    @classmethod
    def create(cls, cwd: str, session_id: str, root: Path | None = None) -> SessionFile:
        folder = workspace_folder(cwd, root)
        folder.mkdir(parents=True, exist_ok=True)
        started = datetime.datetime.now(datetime.UTC)
        path = folder / f"{started.strftime('%Y-%m-%dT%H-%M-%S')}_{session_id}.jsonl"
        session = cls(path=path, session_id=session_id)
        session._write(encode_json(SessionHeader(version=SESSION_FORMAT_VERSION, id=session_id, cwd=cwd,
                                                     timestamp=started.isoformat())))
        return session

    def append(self, message: Message) -> None:
        self._write(encode_json(message))

    def _write(self, line: bytes) -> None:
        if self.mode == "off":
            return
        try:
            with open(self.path, "ab") as out:
                out.write(line + b"\n")
        except OSError as exc:
            # Persistence must never take the session down; say so once and stop trying.
            _log.error("cannot write session file %s: %s; persistence is off for this session", self.path, exc)
            self.mode = "off"


def load_session(path: Path) -> tuple[SessionHeader, list[Message]]:
    lines = path.read_bytes().split(b"\n")
    header = _decode_header(lines[0])
    messages: list[Message] = []
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        try:
            messages.append(_decode_message(line))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            _log.warning("%s:%d skipped: %s", path, number, exc)
    return header, messages


def find_session(cwd: str, session_id: str, root: Path | None = None) -> Path | None:
    if not re.fullmatch(r"[A-Za-z0-9_-]+", session_id):
        return None  # ids are ours (hex); anything else, "../x" or "*", names no session
    folder = workspace_folder(cwd, root)
    # Escaped all the same: the pattern must only ever match this one id.
    matches = sorted(folder.glob(f"*_{glob.escape(session_id)}.jsonl")) if folder.is_dir() else []
    return matches[-1] if matches else None


def list_sessions(cwd: str, root: Path | None = None) -> list[SessionSummary]:
    """Stored sessions of this workspace, newest first."""
    folder = workspace_folder(cwd, root)
    if not folder.is_dir():
        return []
    summaries = []
    for path in folder.glob("*.jsonl"):
        try:
            header, messages = load_session(path)
        except (OSError, msgspec.DecodeError, msgspec.ValidationError, IndexError):
            continue
        if header.cwd != cwd:
            continue
        first = next((text_of(m.content) for m in messages if isinstance(m, UserMessage)), "")
        modified = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC).isoformat()
        summaries.append(SessionSummary(session_id=header.id, path=str(path), started=header.timestamp,
                                        modified=modified, message_count=len(messages),
                                        first_message=first[:200]))
    return sorted(summaries, key=lambda s: s.modified, reverse=True)
