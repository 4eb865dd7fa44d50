"""A session's entries in memory, with the ids its file gives them.

A session is Pi's tree of entries (pi_sessions.py): each has an `id` and the `parentId` of the one
it follows, and the leaf is the entry the next one follows. The model's context is read off the
branch from the first entry to the leaf. Entries keep their ids for the session's life and across
a reload of its file, so a fork point, a compaction's `firstKeptEntryId` and a client's cursor
(`session/entries {since}`) name the same entry before and after a compaction or a restart.

Entries are Pi's kinds as Structs (entry_kinds.py), each read once from its line. An entry read
from a file keeps that line too, which a fork writes back and Pi mode sends as it is: an entry of
a kind this daemon does not know, or a field it does not declare (a newer Pi's), is copied
unchanged. An entry made here holds its message object and is encoded from it when it is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from pi_rpc.ai import AssistantMessage, Message, UserMessage, Wire, current_system_message, text_of
from pi_rpc.session.refusals import UnknownSessionOrEntry
from pi_rpc.session.storage.entry_kinds import (
    BranchSummaryEntry,
    CompactionEntry,
    ContextEditEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    ModelChangeEntry,
    RawEntry,
    SessionInfoEntry,
    SessionMessageEntry,
    ThinkingLevelChangeEntry,
    entry_json,
    entry_timestamp,
)
from pi_rpc.session.storage.pi_sessions import (
    branch_to,
    compaction_summary,
    context_entries,
    entry_message,
    entry_time_ms,
    new_entry_id,
    parse_pi_entries,
)

_Made = TypeVar("_Made", bound=Entry)


class EntryNotOnBranchError(UnknownSessionOrEntry, LookupError):
    """A cursor that names no entry of the current branch."""


class SessionEntry(Wire, kw_only=True):
    """One entry of a session's branch, as `session/entries` lists it."""

    id: str
    parent_id: str | None
    type: str  # Pi's entry kinds: "message", "compaction", "custom", "branch_summary", ...
    timestamp: str
    message: Message | UnsetType = UNSET  # what the model reads from a message entry
    summary: str | UnsetType = UNSET  # a compaction's or a branch summary's text
    first_kept_entry_id: str | UnsetType = UNSET  # compaction: the first entry kept verbatim
    tokens_before: int | UnsetType = UNSET  # compaction: the context's size before it
    custom_type: str | UnsetType = UNSET  # custom entries: whose they are
    name: str | UnsetType = UNSET  # session_info: the session's name from here on
    provider: str | UnsetType = UNSET  # model_change: the model from here on
    model_id: str | UnsetType = UNSET
    thinking_level: str | UnsetType = UNSET  # thinking_level_change: the level from here on


# The fields `session/entries` copies from an entry this daemon reads raw, when they have the type
# it lists (and, for a few, when the entry is of the kind they belong to): as from any entry.
_RAW_DESCRIBED: tuple[tuple[str, str, type, str | None], ...] = (
    ("summary", "summary", str, None),
    ("firstKeptEntryId", "first_kept_entry_id", str, None),
    ("tokensBefore", "tokens_before", int, None),
    ("customType", "custom_type", str, None),
    ("name", "name", str, "session_info"),
    ("provider", "provider", str, "model_change"),
    ("modelId", "model_id", str, "model_change"),
    ("thinkingLevel", "thinking_level", str, "thinking_level_change"),
)


class SessionEntries:
    """Every entry of one session by id (in the order written) and the leaf."""

    def __init__(
        self, entries: dict[str, Entry] | None = None, leaf: str | None = None, lines: dict[str, bytes] | None = None
    ) -> None:
        self.entries: dict[str, Entry] = entries if entries is not None else {}
        self.leaf = leaf
        # The line each entry read from a file came from: what a fork writes and Pi mode sends, so
        # what this daemon does not read of it (a newer Pi's fields) goes along.
        self._lines: dict[str, bytes] = lines if lines is not None else {}
        # The message objects of the transcript by entry id: a compaction finds the entry of the
        # first message it keeps by identity, whatever the transcript's length.
        self._messages: dict[str, Message] = {}
        # A file of our first format numbers its messages by place (`v1-3`); None: random ids.
        self._next_number: int | None = None

    @classmethod
    def read(cls, lines: list[bytes], source: object = "session") -> SessionEntries:
        """From a Pi file's lines after its header."""
        entries, leaf, read_from = parse_pi_entries(lines, source)
        return cls(entries, leaf, read_from)

    @classmethod
    def numbered(cls, messages: Sequence[Message]) -> SessionEntries:
        """Messages of a file without ids (our first format): each one an entry numbered by its
        place, chained one after the other."""
        entries = cls()
        entries._next_number = 1
        for message in messages:
            entries.add_message(message)
        return entries

    # --- reading --------------------------------------------------------------------------------

    def branch(self) -> list[Entry]:
        return branch_to(self.entries, self.leaf)

    def context(self) -> list[Message]:
        """The messages the model reads, the ones already in use as the same objects."""
        messages: list[Message] = []
        for entry_id, message in context_entries(self.branch(), self._message_of):
            if isinstance(self.entries[entry_id], CompactionEntry):
                messages.append(message)  # its summary: in context only while it is the latest
            else:
                messages.append(self._messages.setdefault(entry_id, message))
        return messages

    def _message_of(self, entry: Entry) -> Message | None:
        """The entry's message: the one in use, else read from the entry."""
        return self._messages.get(entry.id) or entry_message(entry)

    def shown(self, every_branch: bool = False) -> list[tuple[Entry, Message | None]]:
        """The branch's entries, first to last (with `every_branch`, every entry, in the order
        written), each with the message a reader sees for it: a compaction's summary where it was
        made, and nothing left out for a compaction (Pi's exported page shows them all)."""
        chosen = self.entries.values() if every_branch else self.branch()
        return [
            (entry, compaction_summary(entry) if isinstance(entry, CompactionEntry) else self._message_of(entry))
            for entry in chosen
        ]

    def latest_compaction(self) -> CompactionEntry | None:
        """The branch's newest compaction entry: the one its context starts from."""
        return next((entry for entry in reversed(self.branch()) if isinstance(entry, CompactionEntry)), None)

    def since_compaction(self) -> list[Message] | None:
        """The messages of the branch's entries after its newest compaction, in order; None when
        the branch has none (a reply among them was sent the compacted context)."""
        branch = self.branch()
        index = next((i for i in range(len(branch) - 1, -1, -1) if isinstance(branch[i], CompactionEntry)), None)
        if index is None:
            return None
        return [message for entry in branch[index + 1 :] if (message := self._message_of(entry)) is not None]

    def entry_id_of(self, message: Message) -> str | None:
        return next((entry_id for entry_id, known in self._messages.items() if known is message), None)

    def fork_points(self) -> list[tuple[str, str]]:
        """(entry id, text) of every user message of the session, in the order written (Pi's
        `get_fork_messages` lists every branch's)."""
        points: list[tuple[str, str]] = []
        for entry_id in self.entries:
            text = self.fork_text(entry_id)
            if text:
                points.append((entry_id, text))
        return points

    def latest_user_entry(self) -> str | None:
        """The id of the branch's newest user message, walking back from the leaf only as far as it
        (`branch()` would walk the whole branch: a tool call asks this once per call)."""
        current, steps = self.leaf, 0
        while current is not None and steps <= len(self.entries):  # a cycle ends it, as in branch_to
            entry = self.entries.get(current)
            if entry is None:
                return None
            if self.fork_text(current) is not None:
                return current
            current, steps = entry.parent_id, steps + 1
        return None

    def fork_text(self, entry_id: str) -> str | None:
        """The text of the user message entry `entry_id`; None when it is no such entry."""
        entry = self.entries.get(entry_id)
        if not isinstance(entry, SessionMessageEntry):
            return None
        message = self._message_of(entry)
        return text_of(message.content) if isinstance(message, UserMessage) else None

    def after(self, since: str | None, limit: int | None = None) -> list[SessionEntry]:
        """The branch's entries after `since` (all when None), at most `limit` of them."""
        branch = self.branch()
        start = 0
        if since is not None:
            start = next((i + 1 for i, entry in enumerate(branch) if entry.id == since), -1)
            if start < 0:
                where = "is on another branch" if since in self.entries else "is not an entry"
                raise EntryNotOnBranchError(f"Entry {since} {where} of this session's current branch")
        chosen = branch[start:] if limit is None else branch[start : start + limit]
        return [self._described(entry) for entry in chosen]

    def _described(self, entry: Entry) -> SessionEntry:
        described = SessionEntry(id=entry.id, parent_id=entry.parent_id, type=entry.type, timestamp=entry.timestamp)
        message = self._message_of(entry)
        if message is not None and isinstance(entry, SessionMessageEntry | CustomEntry):
            described.message = message
        match entry:
            case CompactionEntry():
                described.summary, described.tokens_before = entry.summary, entry.tokens_before
                described.first_kept_entry_id = entry.first_kept_entry_id
            case BranchSummaryEntry():
                described.summary = entry.summary
            case CustomEntry() | CustomMessageEntry():
                described.custom_type = entry.custom_type
            case SessionInfoEntry():
                described.name = entry.name
            case ModelChangeEntry():
                described.provider, described.model_id = entry.provider, entry.model_id
            case ThinkingLevelChangeEntry():
                described.thinking_level = entry.thinking_level
            case RawEntry():
                for key, attribute, kind, only_in in _RAW_DESCRIBED:
                    value = entry.fields.get(key)
                    if isinstance(value, kind) and only_in in (None, entry.type):
                        setattr(described, attribute, value)
        return described

    def recorded_model(self) -> tuple[str, str] | None:
        """(provider, model id) the branch was last on: its latest model change or assistant
        message, as Pi restores a session's model."""
        found: tuple[str, str] | None = None
        for entry in self.branch():
            if isinstance(entry, ModelChangeEntry):
                if entry.provider is not UNSET and entry.model_id is not UNSET:
                    found = (entry.provider, entry.model_id)
            elif isinstance(entry, SessionMessageEntry):
                if isinstance(message := entry.message, AssistantMessage):
                    found = (message.provider, message.model)
            elif isinstance(entry, RawEntry) and entry.type == "message":
                found = _raw_reply_model(entry.fields.get("message")) or found
        return found

    def custom_data(self, custom_type: str) -> list[Any]:
        """The `data` of the branch's `custom` entries of `custom_type`, root first (None for one
        that has none)."""
        return [
            None if entry.data is UNSET else entry.data
            for entry in self.branch()
            if isinstance(entry, CustomEntry) and entry.custom_type == custom_type
        ]

    def recorded_thinking_level(self) -> str | None:
        """The branch's latest thinking level change; None when it records none."""
        levels = [
            entry.thinking_level if isinstance(entry, ThinkingLevelChangeEntry) else UNSET
            for entry in self.branch()
            if entry.type == "thinking_level_change"
        ]
        return levels[-1] if levels and isinstance(levels[-1], str) else None

    def has_messages(self) -> bool:
        """Whether the branch holds any message (a session with only settings entries is empty)."""
        return any(self._message_of(entry) is not None for entry in self.branch())

    # --- writing --------------------------------------------------------------------------------

    def line_of(self, entry: Entry) -> bytes | None:
        """The line the file gave `entry`; None for one made here (encoded from itself)."""
        return self._lines.get(entry.id)

    def json_of(self, entry: Entry) -> bytes:
        """The entry's JSON: the line the file gave it, else encoded from it."""
        line = self._lines.get(entry.id)
        return line if line is not None else entry_json(entry)

    def add_message(self, message: Message) -> SessionMessageEntry:
        """A message as the new leaf; returns its entry."""
        if self._next_number is None:
            entry_id = new_entry_id(self.entries)
        else:  # the same id the message gets when the file is read again
            entry_id, self._next_number = f"v1-{self._next_number}", self._next_number + 1
        # A system message is a `message` entry, as Pi 1.6.0 writes it (pi-rpc wrote a `custom`
        # entry before, which still loads).
        entry = SessionMessageEntry(id=entry_id, parent_id=self.leaf, timestamp=entry_timestamp(), message=message)
        self._messages[entry_id] = message
        return self._add(entry)

    def add_compaction(
        self, summary: str, first_kept: Message | None, tokens_before: int, details: dict[str, Any]
    ) -> CompactionEntry:
        """Pi's compaction entry as the new leaf: the context becomes `summary` and the messages
        from `first_kept` on (none when None)."""
        entry_id = new_entry_id(self.entries)
        kept_id = (self.entry_id_of(first_kept) if first_kept is not None else None) or entry_id
        entry = CompactionEntry(
            id=entry_id,
            parent_id=self.leaf,
            timestamp=entry_timestamp(),
            summary=summary,
            first_kept_entry_id=kept_id,
            tokens_before=tokens_before,
            details=details,
        )
        if (system := current_system_message(self.context())) is not None:
            # Pi 1.6.0's `systemMessage`, dated by the compaction as Pi dates what it makes from an entry
            dated = msgspec.structs.replace(system, timestamp=entry_time_ms(entry))
            entry = msgspec.structs.replace(entry, system_message=msgspec.to_builtins(dated))
        return self._add(entry)

    def name(self) -> str | None:
        """The session's name: the latest `session_info` entry's, in the order written (as Pi
        reads it; an empty one clears it)."""
        for entry in reversed(self.entries.values()):
            if entry.type == "session_info":
                name = entry.name if isinstance(entry, SessionInfoEntry) else UNSET
                return name.strip() or None if isinstance(name, str) else None
        return None

    def add_session_info(self, name: str) -> SessionInfoEntry:
        """Pi's `session_info` entry naming the session, as the new leaf; returns it, for the file."""
        entry_id = new_entry_id(self.entries)
        return self._add(SessionInfoEntry(id=entry_id, parent_id=self.leaf, timestamp=entry_timestamp(), name=name))

    def add_context_edit(self, target_id: str) -> ContextEditEntry:
        """Pi 1.6.0's `context_edit` entry taking entry `target_id`'s message out of the context,
        as the new leaf; returns it, for the file."""
        entry_id = new_entry_id(self.entries)
        return self._add(
            ContextEditEntry(
                id=entry_id, parent_id=self.leaf, timestamp=entry_timestamp(), target_id=target_id, replacement=None
            )
        )

    def add_custom(self, custom_type: str, data: Any) -> CustomEntry:
        """Pi's `custom` entry of `custom_type` as the new leaf; returns it, for the file."""
        entry_id = new_entry_id(self.entries)
        return self._add(
            CustomEntry(
                id=entry_id, parent_id=self.leaf, timestamp=entry_timestamp(), custom_type=custom_type, data=data
            )
        )

    def add_model_change(self, provider: str, model_id: str) -> ModelChangeEntry:
        """Pi's `model_change` entry as the new leaf; returns it, for the file."""
        entry_id = new_entry_id(self.entries)
        return self._add(
            ModelChangeEntry(
                id=entry_id, parent_id=self.leaf, timestamp=entry_timestamp(), provider=provider, model_id=model_id
            )
        )

    def add_thinking_level_change(self, level: str) -> ThinkingLevelChangeEntry:
        """Pi's `thinking_level_change` entry as the new leaf; returns it, for the file."""
        entry_id = new_entry_id(self.entries)
        return self._add(
            ThinkingLevelChangeEntry(
                id=entry_id,
                parent_id=self.leaf,
                timestamp=entry_timestamp(),
                thinking_level=level,
            )
        )

    def branched(self, leaf: str | None) -> SessionEntries:
        """A new session's entries: this branch up to `leaf` (none when None), ids unchanged."""
        path = branch_to(self.entries, leaf)
        ids = [entry.id for entry in path]
        copy = SessionEntries(
            {entry.id: entry for entry in path},
            leaf if path else None,
            {entry_id: self._lines[entry_id] for entry_id in ids if entry_id in self._lines},
        )
        copy._messages = {entry_id: self._messages[entry_id] for entry_id in ids if entry_id in self._messages}
        return copy

    def _add(self, entry: _Made) -> _Made:
        self.entries[entry.id] = entry
        self.leaf = entry.id
        return entry


def _raw_reply_model(message: object) -> tuple[str, str] | None:
    """(provider, model) of an assistant message object a file holds that does not read as one."""
    if not isinstance(message, dict) or message.get("role") != "assistant":
        return None
    provider, model_id = message.get("provider"), message.get("model")
    return (provider, model_id) if isinstance(provider, str) and isinstance(model_id, str) else None
