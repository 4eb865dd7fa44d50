"""Reading Pi's session entries: the newest branch, compactions, Pi's own message kinds; appending
to a Pi file after a torn last line (pi_rpc/session/storage/pi_sessions.py, store.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
from msgspec import UNSET

from pi_rpc.ai.types import (
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    CustomMessage,
    TextContent,
    UserMessage,
    text_of,
)
from pi_rpc.session.compaction.planning import summary_text
from pi_rpc.session.storage.store import load_session, open_session

HEADER = {"type": "session", "version": 3, "id": "s-1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/w"}


def user(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "t",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1},
    }


def write(path: Path, *entries: dict[str, Any], tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in (HEADER, *entries)) + tail)
    return path


def test_the_newest_branch_after_its_compaction(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.jsonl",
        user("a", None, "first"),
        user("b", "a", "second"),
        user("x", "a", "other branch"),
        {"type": "compaction", "id": "c", "parentId": "x", "summary": "S", "firstKeptEntryId": "x"},
        {
            "type": "message",
            "id": "d",
            "parentId": "c",
            "timestamp": "t",
            "message": {
                "role": "bashExecution",
                "command": "ls",
                "output": "f",
                "exitCode": 0,
                "cancelled": False,
                "truncated": False,
                "timestamp": 1,
            },
        },
    )
    _, messages = load_session(path)
    assert summary_text(messages[0]) == "S"
    assert [text_of(m.content) for m in messages[1:] if isinstance(m, UserMessage)] == ["other branch"]
    assert messages[2:] == [
        BashExecutionMessage(command="ls", output="f", exit_code=0, cancelled=False, truncated=False, timestamp=1)
    ]


def test_a_bash_execution_keeps_its_role_and_an_excluded_one_stays_in_the_transcript(tmp_path: Path) -> None:
    def bash(entry_id: str, parent: str | None, **fields: Any) -> dict[str, Any]:
        message = {"role": "bashExecution", "command": "env", "output": "", "cancelled": True, "truncated": False}
        return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": "t", "message": message | fields}

    path = write(tmp_path / "s.jsonl", bash("a", None, exitCode=None), bash("b", "a", excludeFromContext=True))
    _, entries, file = open_session(path)
    messages = entries.context()
    assert [(type(m).__name__, getattr(m, "exclude_from_context", None)) for m in messages] == [
        ("BashExecutionMessage", UNSET),
        ("BashExecutionMessage", True),
    ]
    # Written back in Pi's shape: the role kept, no exit code when there was none.
    file.append(messages[1])
    last = json.loads(path.read_text().splitlines()[-1])["message"]
    assert last["role"] == "bashExecution" and last["excludeFromContext"] is True and "exitCode" not in last


def test_appending_after_a_torn_entry_keeps_the_chain(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", user("a", None, "first"), tail=b'{"type":"message","id":"b","par')
    _, entries, file = open_session(path)
    assert len(entries.context()) == 1 and entries.leaf == file.pi_leaf == "a"
    file.append(UserMessage(content=[TextContent(text="next")]))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 3 and lines[-1]["parentId"] == "a" and lines[-1]["message"]["role"] == "user"
    assert [text_of(m.content) for m in load_session(path)[1] if isinstance(m, UserMessage)] == ["first", "next"]


def test_pis_summaries_and_extension_messages_keep_their_roles(tmp_path: Path) -> None:
    """spec 16.2: a compaction entry gives Pi's compactionSummary message, a branch_summary entry
    a branchSummary one and a custom_message entry a custom one, each dated by its entry."""
    at = "2026-01-01T00:00:05.000Z"
    path = write(
        tmp_path / "s.jsonl",
        user("a", None, "first"),
        {
            "type": "compaction",
            "id": "c",
            "parentId": "a",
            "timestamp": at,
            "summary": "S",
            "firstKeptEntryId": "a",
            "tokensBefore": 321,
        },
        {
            "type": "branch_summary",
            "id": "b",
            "parentId": "c",
            "timestamp": at,
            "fromId": "x",
            "summary": "went elsewhere",
        },
        {"type": "branch_summary", "id": "e", "parentId": "b", "timestamp": at, "fromId": "y", "summary": ""},
        {
            "type": "custom_message",
            "id": "m",
            "parentId": "e",
            "timestamp": at,
            "customType": "todo",
            "content": [{"type": "text", "text": "remember"}],
            "display": True,
            "details": {"n": 1},
        },
    )
    _, messages = load_session(path)
    ms = 1767225605000
    assert messages == [
        CompactionSummaryMessage(summary="S", tokens_before=321, timestamp=ms),
        UserMessage(content=[TextContent(text="first")], timestamp=1),
        BranchSummaryMessage(summary="went elsewhere", from_id="x", timestamp=ms),  # the empty one: skipped, as Pi does
        CustomMessage(
            custom_type="todo", content=[TextContent(text="remember")], display=True, details={"n": 1}, timestamp=ms
        ),
    ]
    wire = json.loads(msgspec.json.encode(messages[3]))
    assert wire == {
        "role": "custom",
        "customType": "todo",
        "content": [{"type": "text", "text": "remember"}],
        "display": True,
        "details": {"n": 1},
        "timestamp": ms,
    }


def test_an_entry_whose_field_has_another_type_is_kept_as_the_file_has_it(tmp_path: Path) -> None:
    """A compaction whose `tokensBefore` is no number does not read as a compaction: the context
    keeps what it would have summarised, and the entry is listed, and copied into a fork, as is."""
    odd = {"type": "compaction", "id": "c", "parentId": "a", "timestamp": "t", "summary": "S"}
    odd |= {"firstKeptEntryId": "c", "tokensBefore": "lots"}
    path = write(tmp_path / "s.jsonl", user("a", None, "first"), odd, user("b", "c", "second"))
    _, entries, _ = open_session(path)
    assert [text_of(m.content) for m in entries.context() if isinstance(m, UserMessage)] == ["first", "second"]
    [listed] = [e for e in entries.after(None) if e.id == "c"]
    assert (listed.type, listed.summary, listed.tokens_before) == ("compaction", "S", UNSET)
    assert json.loads(entries.json_of(entries.entries["c"])) == odd
