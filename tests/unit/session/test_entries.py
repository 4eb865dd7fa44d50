"""A session's entries keep the ids of its file (pi_rpc/session/storage/entries.py): a compaction is
written as Pi's compaction entry and read back the same way, fork points and the entries cursor
name the same entries before and after a compaction and a reload (protocol/PROTOCOL.md, "Session
entries")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_rpc.agent.llm_messages import to_llm
from pi_rpc.ai.types import (
    AssistantMessage,
    CompactionSummaryMessage,
    Message,
    SystemMessage,
    TextContent,
    UserMessage,
    current_system_message,
    text_of,
)
from pi_rpc.session.compaction.planning import CompactionSettings, summary_text
from pi_rpc.session.storage.entries import EntryNotOnBranchError, SessionEntries
from pi_rpc.session.storage.entry_kinds import SessionMessageEntry
from pi_rpc.session.storage.store import SessionFile, load_entries, load_session
from pi_rpc.session.storage.store import open_session as open_session_file

from .helpers import open_session, reply, script, session_config

pytestmark = pytest.mark.anyio

FILLER = "f" * 400  # about 100 tokens: a prompt with it outweighs a short reply
SUMMARY = reply("^<conversation>", [{"text": "THE SUMMARY"}])
TURNS = [reply(f"^{word}", [{"text": f"reply {word}"}]) for word in ("one", "two", "three")]
# Keeps the last prompt with filler and what follows it.
KEEP = CompactionSettings(keep_recent_tokens=100)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def file_entries(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()[1:]]


def texts(messages: list[Message]) -> list[str]:
    return [
        m.summary if isinstance(m, CompactionSummaryMessage) else text_of(m.content)[:9]
        for m in messages
        if isinstance(m, UserMessage | AssistantMessage | CompactionSummaryMessage)
    ]


async def test_a_compaction_is_written_and_read_back_with_real_entry_ids(workspace: Path) -> None:
    config = session_config(workspace, script(SUMMARY, *TURNS), compaction=KEEP)
    async with open_session(config) as (session, _):
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        points_before = session.history.fork_points()
        result = await session.compaction.compact()
        path = session.history.session_file
        assert path is not None
        written = file_entries(path)
        # The kept turn starts at the second prompt, named by the id its file entry has.
        [kept_prompt] = [e for e in written if e.get("message", {}).get("role") == "user" and "two" in str(e)]
        assert result.first_kept_entry_id == kept_prompt["id"]
        compaction = written[-1]
        assert compaction["type"] == "compaction" and compaction["parentId"] == written[-2]["id"]
        assert compaction["summary"] == "THE SUMMARY" and compaction["firstKeptEntryId"] == kept_prompt["id"]
        assert compaction["tokensBefore"] == result.tokens_before > 0
        in_memory = texts(session.messages)
        assert in_memory == ["THE SUMMARY", "two fffff", "reply two"]
        # Fork points keep their ids across the compaction (Pi lists the whole history's).
        assert session.history.fork_points() == points_before
        await session.prompt(f"three {FILLER}")
        ids = [entry.id for entry in session.history.after()[0]]
    # The file alone: the transcript is the summary and the kept turns, the history still there.
    _, messages = load_session(Path(path))
    assert texts(messages) == [*in_memory, "three fff", "reply thr"]
    assert any(f"one {FILLER}" in json.dumps(e.get("message")) for e in file_entries(path))
    _, entries = load_entries(Path(path))
    assert [entry.id for entry in entries.after(None)] == ids


async def test_forking_after_a_compaction(workspace: Path) -> None:
    config = session_config(workspace, script(SUMMARY, *TURNS), compaction=KEEP)
    async with open_session(config) as (session, _):
        await session.prompt(f"one {FILLER}")
        await session.prompt(f"two {FILLER}")
        result = await session.compaction.compact()
        await session.prompt(f"three {FILLER}")
        first_file = session.history.session_file or ""
        three = next(entry_id for entry_id, text in session.history.fork_points() if text.startswith("three"))
        # At a message after the compaction: the summary and the kept turn come along.
        assert (await session.fork(three)).startswith("three ") and session.history.session_file != first_file
        assert texts(session.messages) == ["THE SUMMARY", "two fffff", "reply two"]
        path = session.history.session_file or ""
        written = file_entries(path)
        [compaction] = [e for e in written if e["type"] == "compaction"]
        assert compaction["firstKeptEntryId"] == result.first_kept_entry_id
        assert {e["id"] for e in written} < {e["id"] for e in file_entries(first_file)}  # the same ids
        assert texts(load_session(Path(path))[1]) == texts(session.messages)
        # At the first kept message, which the compaction follows: what came before it, verbatim
        # (Pi forks off the tree, where the compaction comes later).
        assert (await session.fork(result.first_kept_entry_id)).startswith("two ")
        assert texts(session.messages) == ["one fffff", "reply one"]
        assert texts(load_session(Path(session.history.session_file or ""))[1]) == ["one fffff", "reply one"]


async def test_the_entries_cursor_and_its_errors(workspace: Path) -> None:
    config = session_config(workspace, script(*TURNS))
    async with open_session(config) as (session, _):
        await session.prompt("one")
        seen, leaf = session.history.after()
        assert leaf == seen[-1].id and [e.parent_id for e in seen[1:]] == [e.id for e in seen[:-1]]
        await session.prompt("two")
        missed, new_leaf = session.history.after(since=leaf)
        assert [e.parent_id for e in missed][0] == leaf and missed[-1].id == new_leaf
        assert [texts([e.message]) for e in missed if isinstance(e.message, UserMessage | AssistantMessage)] == [
            ["two"],
            ["reply two"],
        ]
        assert session.history.after(since=new_leaf) == ([], new_leaf)
        assert [e.id for e in session.history.after(since=leaf, limit=1)[0]] == [missed[0].id]
        with pytest.raises(EntryNotOnBranchError, match="^Entry nope is not an entry of this session's current"):
            session.history.after(since="nope")
        [first_prompt, _] = session.history.fork_points()
        await session.fork(first_prompt[0])
        with pytest.raises(EntryNotOnBranchError, match=f"^Entry {new_leaf} is not an entry"):
            session.history.after(since=new_leaf)  # the fork is a new session: only what came before


async def test_old_positional_ids_are_not_fork_points(workspace: Path) -> None:
    async with open_session(session_config(workspace, script(*TURNS))) as (session, _):
        await session.prompt("one")
        [(entry_id, text)] = session.history.fork_points()
        assert text == "one" and len(entry_id) == 8 and entry_id != "m1"
        with pytest.raises(LookupError, match="^Invalid entry ID for forking: m1$"):
            await session.fork("m1")


# --- the entry model against its file, any sequence of appends and compactions ------------------

Step = tuple[str, int]  # ("message", role) or ("compact", how many recent messages to keep)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("message"), st.integers(min_value=0, max_value=2)),
        st.tuples(st.just("compact"), st.integers(min_value=0, max_value=4)),
    ),
    max_size=25,
)


def _message(role: int, number: int) -> Message:
    if role == 0:
        return UserMessage(content=[TextContent(text=f"user {number}")])
    if role == 1:
        return AssistantMessage(
            content=[TextContent(text=f"assistant {number}")], api="faux", provider="faux", model="scripted"
        )
    return SystemMessage(content=f"system {number}")


def _seen(messages: list[Message]) -> list[tuple[str, str]]:
    """What the model reads (a summary message is made anew when read)."""
    return [(type(m).__name__, text_of(llm.content)) for m in messages if (llm := to_llm(m)) is not None]


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(plan=steps)
def test_the_file_reads_back_the_entries_kept_in_memory(tmp_path: Path, plan: list[Step]) -> None:
    """Whatever was appended and compacted, the file gives back the same branch, ids and context,
    and a cursor at any entry lists exactly the ones after it."""
    file = SessionFile.create("/w", "s", root=tmp_path / f"sessions-{len(list(tmp_path.iterdir()))}")
    entries = SessionEntries()
    context: list[Message] = []
    for number, (kind, value) in enumerate(plan):
        if kind == "message":
            message = _message(value, number)
            context.append(message)
            file.write_entry(entries.add_message(message))
            kept_entry = entries.entries[entries.leaf or ""]
            assert isinstance(kept_entry, SessionMessageEntry) and kept_entry.message is message  # no JSON copy kept
            continue
        kept = context[len(context) - value :] if value and context and value <= len(context) else []
        before = current_system_message(entries.context())
        file.write_entry(entries.add_compaction(f"summary {number}", next(iter(kept), None), number, {}))
        # Every system message so far replayed into one starts the context, then the summary; the
        # kept system messages are dropped in its favour, as Pi 1.6.0 drops them.
        context = [message for message in kept if not isinstance(message, SystemMessage)]
        read = entries.context()
        if before is not None:
            system, *read = read
            assert isinstance(system, SystemMessage) and system.content == before.content
        assert [summary_text(m) for m in read[:1]] == [f"summary {number}"]
        assert read[1:] == context
    _, loaded = load_entries(file.path)
    assert loaded.leaf == entries.leaf
    assert [e.id for e in loaded.after(None)] == [e.id for e in entries.after(None)]
    assert _seen(loaded.context()) == _seen(entries.context())
    branch = [e.id for e in entries.after(None)]
    for index, entry_id in enumerate(branch):
        assert [e.id for e in loaded.after(entry_id)] == branch[index + 1 :]


def test_a_file_of_our_first_format_keeps_positional_ids_across_a_reload(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    header = {"type": "session", "version": 1, "id": "s", "cwd": "/w", "timestamp": "t"}
    first = UserMessage(content=[TextContent(text="first")])
    path.write_text("\n".join(json.dumps(x) for x in (header, msgspec.to_builtins(first))) + "\n")
    _, entries, file = open_session_file(path)
    assert [e.id for e in entries.after(None)] == ["v1-1"]
    second_message = UserMessage(content=[TextContent(text="second")])
    second = entries.add_message(second_message)
    assert second.id == "v1-2"  # the id it has when the file is read again
    file.write_entry(second)
    file.write_entry(entries.add_compaction("S", None, 1, {}))  # not kept by this format
    assert json.loads(path.read_text().splitlines()[-1])["role"] == "user"  # still a message a line
    _, reloaded = load_entries(path)
    assert [e.id for e in reloaded.after(None)] == ["v1-1", "v1-2"]
    assert texts(reloaded.context()) == ["first", "second"]


def test_a_sessions_name_is_pis_session_info_entry_and_the_latest_wins(tmp_path: Path) -> None:
    file = SessionFile.create("/w", "s", root=tmp_path)
    entries = SessionEntries()
    hello = UserMessage(content=[TextContent(text="hello")])
    file.write_entry(entries.add_message(hello))
    file.write_entry(entries.add_session_info("first name"))
    file.write_entry(entries.add_session_info("second name"))
    assert entries.name() == "second name"
    info = [e for e in file_entries(str(file.path)) if e["type"] == "session_info"]
    assert [(e["name"], e["parentId"]) for e in info] == [
        ("first name", info[0]["parentId"]),
        ("second name", info[0]["id"]),
    ]
    _, loaded = load_entries(file.path)
    assert loaded.name() == "second name" and texts(loaded.context()) == ["hello"]  # no message of its own
    assert [e.name for e in loaded.after(None) if e.type == "session_info"] == ["first name", "second name"]
    file.write_entry(loaded.add_session_info("  "))  # Pi: an empty name clears it
    assert load_entries(file.path)[1].name() is None


def test_the_latest_user_entry_is_the_branchs_newest_user_message() -> None:
    """What a tool call's checkpoint belongs to, found walking back from the leaf: the last of the
    branch's user messages, another branch's newer ones not counted."""
    entries = SessionEntries()
    assert entries.latest_user_entry() is None
    first = entries.add_message(_message(0, 1)).id
    entries.add_message(_message(1, 1))
    assert entries.latest_user_entry() == first
    fork_at = entries.leaf
    second = entries.add_message(_message(0, 2)).id
    entries.add_thinking_level_change("high")
    assert entries.latest_user_entry() == second
    entries.leaf = fork_at  # back on the first branch: "two" is another branch's
    assert entries.latest_user_entry() == first
    branch_users = [entry.id for entry in entries.branch() if entries.fork_text(entry.id) is not None]
    assert branch_users[-1] == entries.latest_user_entry()
