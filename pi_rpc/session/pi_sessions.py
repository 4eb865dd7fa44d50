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
`custom` message; the model reads them as user text (agent/llm_messages.py).
"""

from __future__ import annotations

import datetime
import logging
import secrets
from collections.abc import Callable, Container
from typing import Any

import msgspec

from pi_rpc.ai import (
    AssistantMessage,
    CompactionSummaryMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    encode_json_into,
)

_log = logging.getLogger(__name__)

PI_FORMAT_VERSION = 2  # the first version whose entries have ids and parents
PI_CURRENT_VERSION = 3  # what Pi writes now, and what new sessions here are written as
# System messages (the tool declarations, spec 15.11) are `message` entries, as Pi 1.6.0 keeps
# them; files pi-rpc wrote before hold them as custom entries of this type, still read.
SYSTEM_ENTRY_TYPE = "pi-rpc/system-message"
# The message kinds of Pi's coding agent (its `AgentMessage` beyond the model's own).
_PI_KINDS = ("bashExecution", "compactionSummary", "branchSummary", "custom")
_ROLES = frozenset({"user", "assistant", "toolResult", "system", *_PI_KINDS})


def is_pi_session(version: int) -> bool:
    return version >= PI_FORMAT_VERSION


def _as_message(raw: dict[str, Any]) -> Message | None:
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


def entry_time_ms(entry: dict[str, Any]) -> int:
    """An entry's ISO timestamp in milliseconds, as Pi dates the messages it makes from entries."""
    try:
        moment = datetime.datetime.fromisoformat(str(entry.get("timestamp")))
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def compaction_summary(entry: dict[str, Any]) -> CompactionSummaryMessage:
    """The message a compaction entry starts the context with (Pi's createCompactionSummaryMessage)."""
    tokens = entry.get("tokensBefore")
    return CompactionSummaryMessage(
        summary=str(entry.get("summary", "")),
        tokens_before=tokens if isinstance(tokens, int) else 0,
        timestamp=entry_time_ms(entry),
    )


def parse_pi_entries(lines: list[bytes], source: object = "session") -> tuple[dict[str, dict[str, Any]], str | None]:
    """Every entry by id, in file order, and the id of the newest (the leaf). `lines` are the file's
    lines after the header; a last one without its newline was torn by a killed writer."""
    entries: dict[str, dict[str, Any]] = {}
    leaf: str | None = None
    for number, line in enumerate(lines, start=2):
        if not line.strip():
            continue
        try:
            entry = msgspec.json.decode(line)
        except msgspec.DecodeError as exc:
            torn = " (torn last line)" if number == len(lines) + 1 else ""
            _log.warning("%s:%d skipped%s: %s", source, number, torn, exc)
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            entries[entry["id"]] = entry
            leaf = entry["id"]
    return entries, leaf


def branch_to(entries: dict[str, dict[str, Any]], leaf: str | None) -> list[dict[str, Any]]:
    """The entries from the first to `leaf`, following `parentId` (a cycle or a missing parent
    ends the walk)."""
    path: list[dict[str, Any]] = []
    current = leaf
    while current is not None and current in entries and len(path) <= len(entries):
        path.append(entries[current])
        current = entries[current].get("parentId")
    path.reverse()
    return path


def context_entries(
    path: list[dict[str, Any]], message_of: Callable[[dict[str, Any]], Message | None] | None = None
) -> list[tuple[str, Message]]:
    """What the model reads from a branch, each message with the id of the entry it comes from
    (a compaction's summary: the compaction's own id). `message_of` reads an entry's message
    (`entry_message` unless the caller has it at hand)."""
    message_of = message_of or entry_message
    compaction = next((i for i in range(len(path) - 1, -1, -1) if path[i].get("type") == "compaction"), None)
    kept_from = 0
    messages: list[tuple[str, Message]] = []
    if compaction is not None:
        # Pi 1.6.0 starts the compacted context with the system message the compaction kept (the
        # prompt's sections and the tools as they stood), then the summary.
        system = compaction_system_message(path[compaction])
        if system is not None:
            messages.append((path[compaction]["id"], system))
        messages.append((path[compaction]["id"], compaction_summary(path[compaction])))
        first_kept = path[compaction].get("firstKeptEntryId")
        kept_from = next((i for i, entry in enumerate(path) if entry.get("id") == first_kept), compaction)
    # Pi 1.6.0's `context_edit` entries: the message an entry holds, out of the context
    # (`replacement: null`, a failed reply that was retried) or with other content.
    edits = {entry.get("targetId"): entry.get("replacement") for entry in path if entry.get("type") == "context_edit"}
    for index, entry in enumerate(path):
        if index < kept_from or index == compaction:
            continue
        if entry["id"] in edits and edits[entry["id"]] is None:
            continue
        if (message := message_of(entry)) is None:
            continue
        # The system messages the compaction kept are dropped, as Pi drops them: what they declared
        # is the compaction's system message, or is declared again (an older entry has none).
        if compaction is not None and index < compaction and isinstance(message, SystemMessage):
            continue
        messages.append((entry["id"], _edited(message, edits.get(entry["id"]))))
    return messages


def compaction_system_message(entry: dict[str, Any]) -> SystemMessage | None:
    """The system message a compaction entry keeps (Pi 1.6.0's `systemMessage`); None for an
    older entry, which has none."""
    raw = entry.get("systemMessage")
    message = _as_message(raw | {"role": "system"}) if isinstance(raw, dict) else None
    return message if isinstance(message, SystemMessage) else None


def _edited(message: Message, replacement: Any) -> Message:
    """`message` with a `context_edit`'s replacement content (text for a reply or a tool result
    becomes one text block, as Pi normalises it); unchanged when the edit says nothing usable."""
    content = replacement.get("content") if isinstance(replacement, dict) else None
    if content is None or not hasattr(message, "content"):
        return message
    if isinstance(content, str) and isinstance(message, AssistantMessage | ToolResultMessage):
        content = [{"type": "text", "text": content}]
    edited = _as_message(msgspec.to_builtins(message) | {"content": content})
    return edited if edited is not None else message


def entry_message(entry: dict[str, Any]) -> Message | None:
    """The message an entry holds, as the model reads it; None for entries that hold none."""
    raw: Any = None
    if entry.get("type") == "message":
        raw = entry.get("message")
    elif entry.get("type") == "custom" and entry.get("customType") == SYSTEM_ENTRY_TYPE:
        raw = entry.get("data")
    elif entry.get("type") == "branch_summary" and entry.get("summary"):  # Pi skips an empty one
        raw = {
            "role": "branchSummary",
            "summary": entry.get("summary"),
            "fromId": entry.get("fromId", ""),
            "timestamp": entry_time_ms(entry),
        }
    elif entry.get("type") == "custom_message":
        raw = {
            "role": "custom",
            "customType": entry.get("customType", ""),
            "content": entry.get("content", ""),
            "display": bool(entry.get("display")),
            "details": entry.get("details"),
            "timestamp": entry_time_ms(entry),
        }
    return _as_message(raw) if isinstance(raw, dict) else None


def _timestamp() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_entry_id(taken: Container[str] = ()) -> str:
    """A fresh entry id of Pi's shape (8 hex digits), unused in `taken`."""
    while (entry_id := secrets.token_hex(4)) in taken:
        pass
    return entry_id


def message_head(message: Message, entry_id: str, parent_id: str | None) -> dict[str, Any]:
    """A message's entry without its body: what a session keeps when it keeps the message itself."""
    # A system message is a `message` entry, as Pi 1.6.0 writes it (pi-rpc wrote a `custom`
    # entry before, which still loads).
    return {"type": "message", "id": entry_id, "parentId": parent_id, "timestamp": _timestamp()}


def entry_line(head: dict[str, Any], message: Message) -> bytearray:
    """The file's line for the entry `head` holding `message`, the message encoded straight into
    it: a long answer is not also held as JSON objects or as a second copy of its bytes."""
    key = b"data" if head.get("customType") == SYSTEM_ENTRY_TYPE else b"message"
    line = bytearray(msgspec.json.encode(head))
    line[-1:] = b',"' + key + b'":'  # head is never empty: it has at least a type and an id
    encode_json_into(message, line)
    line += b"}"
    return line


def context_edit_entry(entry_id: str, parent_id: str | None, target_id: str) -> dict[str, Any]:
    """Pi 1.6.0's entry taking the message of entry `target_id` out of the model's context (a
    failed reply that auto-retry replaces); the file keeps the message itself."""
    return {
        "type": "context_edit",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": _timestamp(),
        "targetId": target_id,
        "replacement": None,
    }


def custom_entry(entry_id: str, parent_id: str | None, custom_type: str, data: Any) -> dict[str, Any]:
    """Pi's `custom` entry: state of an extension's own (`customType`), never in the model's context."""
    return {
        "type": "custom",
        "customType": custom_type,
        "data": data,
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": _timestamp(),
    }


def session_info_entry(entry_id: str, parent_id: str | None, name: str) -> dict[str, Any]:
    """Pi's entry naming the session (`set_session_name`); the latest one in the file wins."""
    return {"type": "session_info", "id": entry_id, "parentId": parent_id, "timestamp": _timestamp(), "name": name}


def model_change_entry(entry_id: str, parent_id: str | None, provider: str, model_id: str) -> dict[str, Any]:
    """Pi's entry recording the model in use from here on (a session resumes on it)."""
    return {
        "type": "model_change",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": _timestamp(),
        "provider": provider,
        "modelId": model_id,
    }


def thinking_level_entry(entry_id: str, parent_id: str | None, level: str) -> dict[str, Any]:
    """Pi's entry recording the thinking level from here on (a session resumes on it)."""
    return {
        "type": "thinking_level_change",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": _timestamp(),
        "thinkingLevel": level,
    }


def compaction_entry(
    entry_id: str,
    parent_id: str | None,
    summary: str,
    first_kept_entry_id: str,
    tokens_before: int,
    details: dict[str, Any],
    system_message: SystemMessage | None = None,
) -> dict[str, Any]:
    """Pi's compaction entry: the branch's context starts with `system_message` (Pi 1.6.0's
    `systemMessage`: every system message before it replayed into one, dated by the compaction)
    and `summary`, then the entries from `firstKeptEntryId` on (none before this entry when it
    names itself)."""
    timestamp = _timestamp()
    entry: dict[str, Any] = {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent_id,
        "timestamp": timestamp,
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id,
        "tokensBefore": tokens_before,
        "details": details,
    }
    if system_message is not None:
        dated = msgspec.structs.replace(system_message, timestamp=entry_time_ms(entry))
        entry["systemMessage"] = msgspec.to_builtins(dated)
    return entry


def is_pi_entry(line: bytes) -> bool:
    """A whole entry line of a Pi session (for telling a complete last line from a torn one)."""
    try:
        entry = msgspec.json.decode(line)
    except msgspec.DecodeError:
        return False
    return isinstance(entry, dict) and isinstance(entry.get("type"), str) and isinstance(entry.get("id"), str)
