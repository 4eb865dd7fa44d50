"""The file's line for a message this session made is encoded straight from the message
(entry_kinds.entry_json): the same JSON Pi's entry would be, and safe for what JSON cannot carry."""

from __future__ import annotations

import json

from pi_rpc.ai.types import Message, SystemMessage, TextContent, UserMessage
from pi_rpc.session.storage.entry_kinds import CustomEntry, SessionMessageEntry, entry_json, entry_timestamp
from pi_rpc.session.storage.pi_sessions import SYSTEM_ENTRY_TYPE, entry_message


def message_entry(message: Message, entry_id: str, parent_id: str | None) -> SessionMessageEntry:
    return SessionMessageEntry(id=entry_id, parent_id=parent_id, timestamp=entry_timestamp(), message=message)


def test_the_line_is_the_entry_pi_keeps() -> None:
    message = UserMessage(content=[TextContent(text="hello")], timestamp=1)
    entry = message_entry(message, "0123abcd", None)
    assert json.loads(entry_json(entry)) == {
        "type": "message",
        "id": "0123abcd",
        "parentId": None,
        "timestamp": entry.timestamp,
        "message": {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 1},
    }


def test_a_system_message_goes_in_a_message_entry_as_pi_writes_it() -> None:
    message = SystemMessage(content="tools")
    line = json.loads(entry_json(message_entry(message, "0123abcd", "ffff0000")))
    assert (line["type"], line["parentId"], line["message"]["role"]) == ("message", "ffff0000", "system")
    assert line["message"]["content"] == "tools" and "customType" not in line


def test_a_system_message_in_the_custom_entry_pi_rpc_wrote_before_still_loads() -> None:
    entry = CustomEntry(
        id="0123abcd", custom_type=SYSTEM_ENTRY_TYPE, data={"role": "system", "content": "tools", "timestamp": 5}
    )
    assert entry_message(entry) == SystemMessage(content="tools", timestamp=5)


def test_a_lone_surrogate_in_a_message_becomes_a_replacement_character() -> None:
    """An undecodable byte of a file name (kept by Python as a lone surrogate) in a tool's output
    must not make the session's line unwritable."""
    message = UserMessage(content=[TextContent(text="name \udcff.txt")], timestamp=1)
    line = json.loads(entry_json(message_entry(message, "0123abcd", None)))
    assert line["message"]["content"][0]["text"] == "name \ufffd.txt"
