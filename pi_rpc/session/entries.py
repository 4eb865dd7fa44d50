"""A session's entries in memory, with the ids its file gives them.

A session is Pi's tree of entries (pi_sessions.py): each has an `id` and the `parentId` of the one
it follows, and the leaf is the entry the next one follows. The model's context is read off the
branch from the first entry to the leaf. Entries keep their ids for the session's life and across
a reload of its file, so a fork point, a compaction's `firstKeptEntryId` and a client's cursor
(`session/entries {since}`) name the same entry before and after a compaction or a restart.

Entries are kept as the JSON objects the file holds, so an entry of a kind this daemon does not
use (a model change, a label) is copied unchanged into a fork. The one exception is the body of a
message this session made: the message object is kept, not its JSON again (a long answer would
otherwise be held twice), and the file's line is encoded from it (`message_kept`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from msgspec import UNSET, UnsetType

from pi_rpc.ai import AssistantMessage, Message, UserMessage, Wire, current_system_message, text_of
from pi_rpc.session.pi_sessions import (
    branch_to,
    compaction_entry,
    compaction_summary,
    context_edit_entry,
    context_entries,
    custom_entry,
    entry_message,
    message_head,
    model_change_entry,
    new_entry_id,
    parse_pi_entries,
    session_info_entry,
    thinking_level_entry,
)

Entry = dict[str, Any]


class EntryNotOnBranchError(LookupError):
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


class SessionEntries:
    """Every entry of one session by id (in the order written) and the leaf."""

    def __init__(self, entries: dict[str, Entry] | None = None, leaf: str | None = None) -> None:
        self.entries: dict[str, Entry] = entries if entries is not None else {}
        self.leaf = leaf
        # The message objects of the transcript by entry id: a compaction finds the entry of the
        # first message it keeps by identity, whatever the transcript's length.
        self._messages: dict[str, Message] = {}
        # A file of our first format numbers its messages by place (`v1-3`); None: random ids.
        self._next_number: int | None = None

    @classmethod
    def read(cls, lines: list[bytes], source: object = "session") -> SessionEntries:
        """From a Pi file's lines after its header."""
        return cls(*parse_pi_entries(lines, source))

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
            if self.entries[entry_id].get("type") == "compaction":
                messages.append(message)  # its summary: in context only while it is the latest
            else:
                messages.append(self._messages.setdefault(entry_id, message))
        return messages

    def _message_of(self, entry: Entry) -> Message | None:
        """The entry's message: the one in use, else read from the entry."""
        return self._messages.get(entry["id"]) or entry_message(entry)

    def shown(self, every_branch: bool = False) -> list[tuple[Entry, Message | None]]:
        """The branch's entries, first to last (with `every_branch`, every entry, in the order
        written), each with the message a reader sees for it: a compaction's summary where it was
        made, and nothing left out for a compaction (Pi's exported page shows them all)."""
        chosen = self.entries.values() if every_branch else self.branch()
        return [
            (entry, compaction_summary(entry) if entry.get("type") == "compaction" else self._message_of(entry))
            for entry in chosen
        ]

    def latest_compaction(self) -> Entry | None:
        """The branch's newest compaction entry: the one its context starts from."""
        return next((entry for entry in reversed(self.branch()) if entry.get("type") == "compaction"), None)

    def since_compaction(self) -> list[Message] | None:
        """The messages of the branch's entries after its newest compaction, in order; None when
        the branch has none (a reply among them was sent the compacted context)."""
        branch = self.branch()
        index = next((i for i in range(len(branch) - 1, -1, -1) if branch[i].get("type") == "compaction"), None)
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

    def fork_text(self, entry_id: str) -> str | None:
        """The text of the user message entry `entry_id`; None when it is no such entry."""
        entry = self.entries.get(entry_id)
        if entry is None or entry.get("type") != "message":
            return None
        message = self._message_of(entry)
        raw = entry.get("message")  # absent from a message this session made: the object says it all
        if not isinstance(message, UserMessage) or isinstance(raw, dict) and raw.get("role") != "user":
            return None
        return text_of(message.content)

    def after(self, since: str | None, limit: int | None = None) -> list[SessionEntry]:
        """The branch's entries after `since` (all when None), at most `limit` of them."""
        branch = self.branch()
        start = 0
        if since is not None:
            start = next((i + 1 for i, entry in enumerate(branch) if entry["id"] == since), -1)
            if start < 0:
                where = "is on another branch" if since in self.entries else "is not an entry"
                raise EntryNotOnBranchError(f"Entry {since} {where} of this session's current branch")
        chosen = branch[start:] if limit is None else branch[start : start + limit]
        return [self._described(entry) for entry in chosen]

    def _described(self, entry: Entry) -> SessionEntry:
        described = SessionEntry(
            id=entry["id"],
            parent_id=entry.get("parentId"),
            type=str(entry.get("type", "")),
            timestamp=str(entry.get("timestamp", "")),
        )
        message = self._message_of(entry)
        if message is not None and entry.get("type") in ("message", "custom"):
            described.message = message
        if isinstance(summary := entry.get("summary"), str):
            described.summary = summary
        if isinstance(first_kept := entry.get("firstKeptEntryId"), str):
            described.first_kept_entry_id = first_kept
        if isinstance(tokens := entry.get("tokensBefore"), int):
            described.tokens_before = tokens
        if isinstance(custom_type := entry.get("customType"), str):
            described.custom_type = custom_type
        if entry.get("type") == "session_info" and isinstance(name := entry.get("name"), str):
            described.name = name
        if entry.get("type") == "model_change":
            if isinstance(provider := entry.get("provider"), str):
                described.provider = provider
            if isinstance(model_id := entry.get("modelId"), str):
                described.model_id = model_id
        if entry.get("type") == "thinking_level_change" and isinstance(level := entry.get("thinkingLevel"), str):
            described.thinking_level = level
        return described

    def recorded_model(self) -> tuple[str, str] | None:
        """(provider, model id) the branch was last on: its latest model change or assistant
        message, as Pi restores a session's model."""
        found: tuple[str, str] | None = None
        for entry in self.branch():
            if entry.get("type") == "model_change":
                provider, model_id = entry.get("provider"), entry.get("modelId")
                if isinstance(provider, str) and isinstance(model_id, str):
                    found = (provider, model_id)
            elif entry.get("type") == "message":
                raw = entry.get("message")  # read from a file; absent from a message this session made
                if isinstance(raw, dict):
                    provider, model_id = raw.get("provider"), raw.get("model")
                    if raw.get("role") == "assistant" and isinstance(provider, str) and isinstance(model_id, str):
                        found = (provider, model_id)
                elif isinstance(message := self._messages.get(entry["id"]), AssistantMessage):
                    found = (message.provider, message.model)
        return found

    def custom_data(self, custom_type: str) -> list[Any]:
        """The `data` of the branch's `custom` entries of `custom_type`, root first."""
        return [
            entry.get("data")
            for entry in self.branch()
            if entry.get("type") == "custom" and entry.get("customType") == custom_type
        ]

    def recorded_thinking_level(self) -> str | None:
        """The branch's latest thinking level change; None when it records none."""
        levels = [e.get("thinkingLevel") for e in self.branch() if e.get("type") == "thinking_level_change"]
        return levels[-1] if levels and isinstance(levels[-1], str) else None

    def has_messages(self) -> bool:
        """Whether the branch holds any message (a session with only settings entries is empty)."""
        return any(self._message_of(entry) is not None for entry in self.branch())

    # --- writing --------------------------------------------------------------------------------

    def message_kept(self, entry: Entry) -> Message | None:
        """The message of an entry kept without its body (one this session made), for its line in
        a file; None when the entry holds its own."""
        return None if "message" in entry or "data" in entry else self._messages.get(entry["id"])

    def add_message(self, message: Message) -> Entry:
        """A message as the new leaf; returns its entry (without the body: see `message_kept`)."""
        if self._next_number is None:
            entry_id = new_entry_id(self.entries)
        else:  # the same id the message gets when the file is read again
            entry_id, self._next_number = f"v1-{self._next_number}", self._next_number + 1
        return self._add(message_head(message, entry_id, self.leaf), message)

    def add_compaction(
        self, summary: str, first_kept: Message | None, tokens_before: int, details: dict[str, Any]
    ) -> Entry:
        """Pi's compaction entry as the new leaf: the context becomes `summary` and the messages
        from `first_kept` on (none when None)."""
        entry_id = new_entry_id(self.entries)
        kept_id = (self.entry_id_of(first_kept) if first_kept is not None else None) or entry_id
        system = current_system_message(self.context())
        entry = compaction_entry(entry_id, self.leaf, summary, kept_id, tokens_before, details, system)
        return self._add(entry, None)

    def name(self) -> str | None:
        """The session's name: the latest `session_info` entry's, in the order written (as Pi
        reads it; an empty one clears it)."""
        for entry in reversed(self.entries.values()):
            if entry.get("type") == "session_info":
                name = entry.get("name")
                return name.strip() or None if isinstance(name, str) else None
        return None

    def add_session_info(self, name: str) -> Entry:
        """Pi's `session_info` entry naming the session, as the new leaf; returns it, for the file."""
        entry_id = new_entry_id(self.entries)
        return self._add(session_info_entry(entry_id, self.leaf, name), None)

    def add_context_edit(self, target_id: str) -> Entry:
        """Pi 1.6.0's `context_edit` entry taking entry `target_id`'s message out of the context,
        as the new leaf; returns it, for the file."""
        return self._add(context_edit_entry(new_entry_id(self.entries), self.leaf, target_id), None)

    def add_custom(self, custom_type: str, data: Any) -> Entry:
        """Pi's `custom` entry of `custom_type` as the new leaf; returns it, for the file."""
        return self._add(custom_entry(new_entry_id(self.entries), self.leaf, custom_type, data), None)

    def add_model_change(self, provider: str, model_id: str) -> Entry:
        """Pi's `model_change` entry as the new leaf; returns it, for the file."""
        return self._add(model_change_entry(new_entry_id(self.entries), self.leaf, provider, model_id), None)

    def add_thinking_level_change(self, level: str) -> Entry:
        """Pi's `thinking_level_change` entry as the new leaf; returns it, for the file."""
        return self._add(thinking_level_entry(new_entry_id(self.entries), self.leaf, level), None)

    def branched(self, leaf: str | None) -> SessionEntries:
        """A new session's entries: this branch up to `leaf` (none when None), ids unchanged."""
        path = branch_to(self.entries, leaf)
        copy = SessionEntries({entry["id"]: entry for entry in path}, leaf if path else None)
        copy._messages = {entry["id"]: self._messages[entry["id"]] for entry in path if entry["id"] in self._messages}
        return copy

    def _add(self, entry: Entry, message: Message | None) -> Entry:
        self.entries[entry["id"]] = entry
        self.leaf = entry["id"]
        if message is not None:
            self._messages[entry["id"]] = message
        return entry
