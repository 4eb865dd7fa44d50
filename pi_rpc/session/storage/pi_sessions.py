"""Pi's session files (format version 2 and later): read them, and append to them in Pi's own
shape. New sessions are written this way too, so a Pi user's session continues here and a session
started here loads in Pi.

Pi's file is a header (`{"type": "session", "version": 3, "id", "timestamp", "cwd"}`) and then
entries, each with an `id` and the `parentId` of the entry it follows, so one file can hold several
branches. The conversation is the path from the newest entry back to the first; on that path,
`message` entries carry the messages and a `compaction` entry replaces what came before its
`firstKeptEntryId` by its summary. Pi's own message kinds keep their roles, as Pi reads them: a
user's bash command (`bashExecution`), the compaction's summary (`compactionSummary`, made from the
compaction entry), a `branch_summary` entry's `branchSummary` and a `custom_message` entry's
`custom` message; the model reads them as user text (agent/llm_messages.py). The entry kinds,
and how a line is read and written, are entry_kinds.py's.
"""

from __future__ import annotations

import datetime
import logging
import secrets
from collections.abc import Callable, Container

import msgspec
from msgspec import UNSET

from pi_rpc.ai import (
    AssistantMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    Message,
    SystemMessage,
    TextContent,
    ToolResultMessage,
)
from pi_rpc.session.storage.entry_kinds import (
    BranchSummaryEntry,
    CompactionEntry,
    ContentReplacement,
    ContextEditEntry,
    CustomEntry,
    CustomMessageEntry,
    Entry,
    SessionMessageEntry,
    read_entry,
    read_message,
)

_log = logging.getLogger(__name__)

PI_FORMAT_VERSION = 2  # the first version whose entries have ids and parents
PI_CURRENT_VERSION = 3  # what Pi writes now, and what new sessions here are written as
# System messages (the tool declarations, spec 15.12) are `message` entries, as Pi 1.6.0 keeps
# them; files pi-rpc wrote before hold them as custom entries of this type, still read.
SYSTEM_ENTRY_TYPE = "pi-rpc/system-message"


def is_pi_session(version: int) -> bool:
    return version >= PI_FORMAT_VERSION


def entry_time_ms(entry: Entry) -> int:
    """An entry's ISO timestamp in milliseconds, as Pi dates the messages it makes from entries."""
    try:
        moment = datetime.datetime.fromisoformat(entry.timestamp)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def compaction_summary(entry: CompactionEntry) -> CompactionSummaryMessage:
    """The message a compaction entry starts the context with (Pi's createCompactionSummaryMessage)."""
    return CompactionSummaryMessage(
        summary="" if entry.summary is UNSET else entry.summary,
        tokens_before=0 if entry.tokens_before is UNSET else entry.tokens_before,
        timestamp=entry_time_ms(entry),
    )


def parse_pi_entries(
    lines: list[bytes], source: object = "session"
) -> tuple[dict[str, Entry], str | None, dict[str, bytes]]:
    """Every entry by id, in file order, the id of the newest (the leaf), and the line each was
    read from. `lines` are the file's lines after the header; a last one without its newline was
    torn by a killed writer."""
    entries: dict[str, Entry] = {}
    read_from: dict[str, bytes] = {}
    leaf: str | None = None
    for number, line in enumerate(lines, start=2):
        if not line.strip():
            continue
        try:
            entry = read_entry(line)
        except msgspec.DecodeError as exc:
            torn = " (torn last line)" if number == len(lines) + 1 else ""
            _log.warning("%s:%d skipped%s: %s", source, number, torn, exc)
            continue
        if entry is not None:
            entries[entry.id] = entry
            read_from[entry.id] = line
            leaf = entry.id
    return entries, leaf, read_from


def branch_to(entries: dict[str, Entry], leaf: str | None) -> list[Entry]:
    """The entries from the first to `leaf`, following `parentId` (a cycle or a missing parent
    ends the walk)."""
    path: list[Entry] = []
    current = leaf
    while current is not None and current in entries and len(path) <= len(entries):
        path.append(entries[current])
        current = entries[current].parent_id
    path.reverse()
    return path


def context_entries(
    path: list[Entry], message_of: Callable[[Entry], Message | None] | None = None
) -> list[tuple[str, Message]]:
    """What the model reads from a branch, each message with the id of the entry it comes from
    (a compaction's summary: the compaction's own id). `message_of` reads an entry's message
    (`entry_message` unless the caller has it at hand)."""
    message_of = message_of or entry_message
    compaction = next((i for i in range(len(path) - 1, -1, -1) if isinstance(path[i], CompactionEntry)), None)
    kept_from = 0
    messages: list[tuple[str, Message]] = []
    if compaction is not None:
        latest = path[compaction]
        assert isinstance(latest, CompactionEntry)
        # Pi 1.6.0 starts the compacted context with the system message the compaction kept (the
        # prompt's sections and the tools as they stood), then the summary.
        if (system := compaction_system_message(latest)) is not None:
            messages.append((latest.id, system))
        messages.append((latest.id, compaction_summary(latest)))
        first_kept = latest.first_kept_entry_id
        kept_from = next((i for i, entry in enumerate(path) if entry.id == first_kept), compaction)
    # Pi 1.6.0's `context_edit` entries: the message an entry holds, out of the context
    # (`replacement: null`, a failed reply that was retried) or with other content.
    edits = {entry.target_id: entry.replacement for entry in path if isinstance(entry, ContextEditEntry)}
    for index, entry in enumerate(path):
        if index < kept_from or index == compaction:
            continue
        if entry.id in edits and edits[entry.id] is None:
            continue
        if (message := message_of(entry)) is None:
            continue
        # The system messages the compaction kept are dropped, as Pi drops them: what they declared
        # is the compaction's system message, or is declared again (an older entry has none).
        if compaction is not None and index < compaction and isinstance(message, SystemMessage):
            continue
        messages.append((entry.id, _edited(message, edits.get(entry.id))))
    return messages


def compaction_system_message(entry: CompactionEntry) -> SystemMessage | None:
    """The system message a compaction entry keeps (Pi 1.6.0's `systemMessage`); None for an
    older entry, which has none, or one this daemon cannot read."""
    if entry.system_message is UNSET:
        return None
    try:
        return msgspec.convert(entry.system_message | {"role": "system"}, SystemMessage)
    except msgspec.ValidationError:
        return None


def _edited(message: Message, replacement: ContentReplacement | None) -> Message:
    """`message` with a `context_edit`'s replacement content (text for a reply or a tool result
    becomes one text block, as Pi normalises it); unchanged when the edit says nothing usable."""
    if replacement is None or not hasattr(message, "content"):
        return message
    content = replacement.content
    if isinstance(content, str) and isinstance(message, AssistantMessage | ToolResultMessage):
        content = [TextContent(text=content)]
    edited = read_message(msgspec.to_builtins(message) | {"content": msgspec.to_builtins(content)})
    return edited if edited is not None else message


def entry_message(entry: Entry) -> Message | None:
    """The message an entry holds, as the model reads it; None for entries that hold none."""
    match entry:
        case SessionMessageEntry(message=message):
            return message
        case CustomEntry(custom_type=custom_type, data=data) if custom_type == SYSTEM_ENTRY_TYPE:
            return read_message(data) if isinstance(data, dict) else None
        case BranchSummaryEntry(summary=str(summary)) if summary:  # Pi skips an empty one
            return BranchSummaryMessage(summary=summary, from_id=entry.from_id, timestamp=entry_time_ms(entry))
        case CustomMessageEntry():
            return CustomMessage(
                custom_type="" if entry.custom_type is UNSET else entry.custom_type,
                content=entry.content,
                display=entry.display,
                details=UNSET if entry.details is None else entry.details,
                timestamp=entry_time_ms(entry),
            )
    return None


def new_entry_id(taken: Container[str] = ()) -> str:
    """A fresh entry id of Pi's shape (8 hex digits), unused in `taken`."""
    while (entry_id := secrets.token_hex(4)) in taken:
        pass
    return entry_id


def is_pi_entry(line: bytes) -> bool:
    """A whole entry line of a Pi session (for telling a complete last line from a torn one)."""
    try:
        entry = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return isinstance(entry, dict) and isinstance(entry.get("type"), str) and isinstance(entry.get("id"), str)
