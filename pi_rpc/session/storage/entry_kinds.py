"""Pi's session file line by line: its header and each kind of entry, as msgspec Structs.

The kinds and their fields are Pi 1.6.0's (its `SessionEntry` union in `session-manager.ts`, its
docs/session-format.md); pi-rpc writes the same shapes, fields in the order it has always written
them (a Struct encodes its tag, then the base's fields, then its own). A line is decoded once, when
the file is read (`read_entry`), and an entry made here is encoded once, when it is appended.

A newer Pi may write a kind this daemon does not know, or fields it does not declare: such a line
still loads, as a `RawEntry` for an unknown kind, and the line itself is kept beside the entry
(entries.py), so a fork writes it back, and Pi mode sends it, as the file had it. A field pi-rpc
reads from a file is optional when an older or hand-written file may leave it out (the reader then
takes the value pi-rpc always took for a missing one); an entry whose field has the wrong type does
not read as its kind and is kept raw too, taking no part in the context.
"""

from __future__ import annotations

import datetime
import logging
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import (
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
    UserContent,
    Wire,
    encode_json,
)

_log = logging.getLogger(__name__)

# The message kinds of Pi's coding agent (its `AgentMessage` beyond the model's own).
_PI_KINDS = ("bashExecution", "compactionSummary", "branchSummary", "custom")
_ROLES = frozenset({"user", "assistant", "toolResult", "system", *_PI_KINDS})


class SessionHeader(Wire, tag_field="type", tag="session", kw_only=True):
    """The file's first line: not an entry (no id in the tree)."""

    version: int
    id: str
    cwd: str
    timestamp: str
    # The file of the session this one was forked, cloned or started from (Pi's `parentSession`).
    parent_session: str | UnsetType = UNSET


class _Entry(Wire, tag_field="type", kw_only=True):
    """Pi's `SessionEntryBase`: every entry has an id, the id of the entry it follows, and an ISO
    time (`""` when a hand-written file has none)."""

    id: str
    parent_id: str | None = None
    timestamp: str = ""

    @property
    def type(self) -> str:
        """The entry's kind, as its line names it."""
        tag = self.__struct_config__.tag
        assert isinstance(tag, str)
        return tag


class SessionMessageEntry(_Entry, tag="message", kw_only=True):
    message: Message


class ThinkingLevelChangeEntry(_Entry, tag="thinking_level_change", kw_only=True):
    thinking_level: str | UnsetType = UNSET


class ModelChangeEntry(_Entry, tag="model_change", kw_only=True):
    provider: str | UnsetType = UNSET
    model_id: str | UnsetType = UNSET


class UsageEntry(_Entry, tag="usage", kw_only=True):
    """Usage that is no assistant message (Pi's cache warming); outside the context."""

    kind: str
    provider: str
    model: str
    usage: Usage
    note: str | UnsetType = UNSET


class CompactionEntry(_Entry, tag="compaction", kw_only=True):
    """The branch's context starts with `summary`, then the entries from `first_kept_entry_id` on
    (none before this entry when it names itself, or names no entry)."""

    summary: str | UnsetType = UNSET
    first_kept_entry_id: str | UnsetType = UNSET
    tokens_before: int | UnsetType = UNSET
    # Pi's own: `{readFiles, modifiedFiles}` (compaction_files.py); an extension's: anything.
    details: Any = UNSET
    usage: Usage | UnsetType = UNSET
    from_hook: bool | UnsetType = UNSET  # made by an extension
    # Pi 1.6.0's `systemMessage`: every system message before the compaction replayed into one (the
    # prompt's sections and the tools as they stood), which starts the compacted context. Kept as
    # read and decoded when the context is built (`compaction_system_message`), so a declaration
    # this daemon cannot read costs the system message, not the whole compaction.
    system_message: dict[str, Any] | UnsetType = UNSET


class BranchSummaryEntry(_Entry, tag="branch_summary", kw_only=True):
    """What an abandoned branch did, from `from_id` (its leaf) back to where this one continues."""

    from_id: str = ""
    summary: str | UnsetType = UNSET
    details: Any = UNSET  # arbitrary JSON: Pi's file lists, or an extension's own data
    usage: Usage | UnsetType = UNSET
    from_hook: bool | UnsetType = UNSET


class CustomEntry(_Entry, tag="custom", kw_only=True):
    """An extension's state, outside the context (and, of `SYSTEM_ENTRY_TYPE`, a system message
    pi-rpc wrote before Pi had them)."""

    custom_type: str
    data: Any = UNSET  # arbitrary JSON, the extension's own


class CustomMessageEntry(_Entry, tag="custom_message", kw_only=True):
    """A message an extension put in the context (Pi's `custom` role)."""

    custom_type: str | UnsetType = UNSET
    content: str | list[UserContent] = ""
    display: bool = False
    details: Any = UNSET  # arbitrary JSON, for the extension; the model never reads it


class LabelEntry(_Entry, tag="label", kw_only=True):
    """A user's bookmark on entry `target_id`; no `label` takes it away."""

    target_id: str
    label: str | None | UnsetType = UNSET


class SessionInfoEntry(_Entry, tag="session_info", kw_only=True):
    """The session's name from here on (the latest one written wins; an empty one clears it)."""

    name: str | UnsetType = UNSET


class ContentReplacement(Wire, kw_only=True):
    """A `context_edit`'s new content for its target's message (a string: one text block)."""

    content: str | list[TextContent | ImageContent | ThinkingContent | ToolCall]


class ContextEditEntry(_Entry, tag="context_edit", kw_only=True):
    """Pi 1.6.0: the message of entry `target_id` out of the context from here on (`replacement`
    None, a failed reply that was retried), or with other content; the file keeps the message."""

    target_id: str
    replacement: ContentReplacement | None = None


class RawEntry(msgspec.Struct, kw_only=True):
    """An entry of a kind this daemon does not know (a newer Pi's), or one whose fields are not of
    its kind's types: its place in the tree, and the object as the file has it."""

    type: str
    id: str
    parent_id: str | None
    timestamp: str
    fields: dict[str, Any]  # the whole JSON object: arbitrary, whatever its writer put there


KnownEntry = (
    SessionMessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | UsageEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | ContextEditEntry
)
Entry = KnownEntry | RawEntry

_decode_known = msgspec.json.Decoder(KnownEntry).decode


def read_entry(line: bytes) -> Entry | None:
    """The entry on one line of a Pi file; None when the line is JSON but no entry (no string `id`).
    Raises `msgspec.DecodeError` when it is not JSON (a torn last line)."""
    try:
        return _decode_known(line)
    except msgspec.ValidationError:
        pass  # a kind of a newer Pi, or a field of another type: read loosely below
    fields = msgspec.json.decode(line)
    if not isinstance(fields, dict) or not isinstance(entry_id := fields.get("id"), str):
        return None
    parent = fields.get("parentId")
    parent_id = parent if isinstance(parent, str) else None
    timestamp = str(fields.get("timestamp", ""))
    if fields.get("type") == "message" and isinstance(raw := fields.get("message"), dict):
        message = read_message(raw)  # Pi's own kinds may spell an absent field `null`
        if message is not None:
            return SessionMessageEntry(id=entry_id, parent_id=parent_id, timestamp=timestamp, message=message)
    kind = str(fields.get("type", ""))
    return RawEntry(type=kind, id=entry_id, parent_id=parent_id, timestamp=timestamp, fields=fields)


def read_message(raw: dict[str, Any]) -> Message | None:
    """A message object of a file (or one made from an entry); None, and logged when it is of a
    known role, when it does not read as a message."""
    role = raw.get("role")
    if role not in _ROLES:
        return None
    # Pi leaves out a field of its own kinds it has no value for (a bash command's `exitCode`, a
    # custom message's `details`); a writer that spells that `null` is read alike.
    fields = {key: value for key, value in raw.items() if value is not None} if role in _PI_KINDS else raw
    try:
        message: Message = msgspec.convert(fields, Message)
    except msgspec.ValidationError as exc:
        _log.warning("Pi session message skipped: %s", exc)
        return None
    return message


def entry_json(entry: Entry) -> bytes:
    """The entry's line (without its newline), encoded from it: a raw one's object as it was read."""
    return encode_json(entry.fields if isinstance(entry, RawEntry) else entry)


def entry_timestamp() -> str:
    """Now, as an entry's ISO time in milliseconds, as Pi writes it."""
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
