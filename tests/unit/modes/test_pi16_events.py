"""Pi mode's events and responses as Pi 1.6.0 sends them, in-process (PiDaemon over pipes, the
scripted model, real tools): the usage beside each `message_update`, `toolcall_start`'s
`toolName`, `agent_settled {aborted}`, the disposition of a prompt, steer and follow-up, the
message metadata, and `get_last_assistant_text` past replies that said nothing."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from pi_rpc.agent.loop import declare_tool_changes
from pi_rpc.ai import SystemMessage, sections_text
from pi_rpc.session.configuration.config import RetryConfig

from ..session.helpers import FOREVER, reply, script, session_config, tool_call
from .pi_harness import pi_mode
from .pipes import Json

pytestmark = pytest.mark.anyio

WRITE = reply("^write", [tool_call("write", path="notes.txt", content="hello\n")], [{"text": "Wrote it."}])


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


async def test_message_updates_carry_the_usage_and_toolcall_start_names_the_tool(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        await pi.event("agent_settled")
        updates = [line for line in pi.peer.lines if line["type"] == "message_update"]
        assert updates and all(set(line) == {"type", "usage", "assistantMessageEvent"} for line in updates)
        assert {"input", "output", "totalTokens", "cost"} <= set(updates[-1]["usage"])
        [start] = [
            u["assistantMessageEvent"] for u in updates if u["assistantMessageEvent"]["type"] == "toolcall_start"
        ]
        assert start["toolName"] == "write" and start["id"] and "name" not in start


async def test_messages_carry_pending_then_their_metadata(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        await pi.event("agent_settled")
        starts = [line["message"] for line in pi.peer.lines if line["type"] == "message_start"]
        assert [m["stopReason"] for m in starts if m["role"] == "assistant"] == ["pending", "pending"]
        ends = [line["message"] for line in pi.peer.lines if line["type"] == "message_end"]
        assistants = [m for m in ends if m["role"] == "assistant"]
        assert [m["stopReason"] for m in assistants] == ["toolUse", "stop"]
        assert all(m["thinkingLevel"] == "off" and m["durationMs"] >= 0 for m in assistants)
        [result] = [m for m in ends if m["role"] == "toolResult"]
        [tool_end] = [line for line in pi.peer.lines if line["type"] == "tool_execution_end"]
        assert result["durationMs"] == tool_end["durationMs"]


async def test_agent_settled_says_whether_the_run_was_aborted(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE, reply("^stream", FOREVER)))) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        assert (await pi.event("agent_settled")) == {"type": "agent_settled", "aborted": False}
        start = len(pi.peer.lines)
        await pi.call({"id": "2", "type": "prompt", "message": "stream forever"})
        await pi.peer.wait_for(lambda line: line.get("type") == "message_update", start)
        await pi.call({"id": "3", "type": "abort"})
        settled = [line for line in pi.peer.lines[start:] if line["type"] == "agent_settled"]
        assert settled == [{"type": "agent_settled", "aborted": True}]


async def test_prompt_steer_and_follow_up_say_their_disposition(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(reply("^stream", FOREVER)))) as pi:
        started = await pi.data({"id": "1", "type": "prompt", "message": "stream forever"})
        assert started == {"disposition": "started"}
        await pi.event("message_update")
        queued = await pi.data({"id": "2", "type": "prompt", "message": "later", "streamingBehavior": "followUp"})
        assert queued == {"disposition": "queued"}
        assert await pi.data({"id": "3", "type": "steer", "message": "steer"}) == {"disposition": "queued"}
        assert await pi.data({"id": "4", "type": "follow_up", "message": "then"}) == {"disposition": "queued"}
        await pi.call({"id": "5", "type": "abort"})


async def test_last_assistant_text_skips_replies_that_said_nothing(workspace: Path) -> None:
    """The text of the last reply with text, past a reply that only called tools, and past one
    aborted before it said anything; an empty reply that ended normally is the answer (None)."""
    tool_only = reply("^tools", [tool_call("write", path="a.txt", content="a\n")], [{"text": "Done with tools."}])
    silent = reply("^silent", [{"text": ""}])
    aborted = reply("^stream", [{"text": "", "delayMs": 60_000}])
    async with pi_mode(session_config(workspace, script(tool_only, silent, aborted))) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "tools"})
        await pi.event("agent_settled")
        assert await pi.data({"id": "2", "type": "get_last_assistant_text"}) == {"text": "Done with tools."}
        start = len(pi.peer.lines)
        await pi.call({"id": "3", "type": "prompt", "message": "stream"})
        await pi.peer.wait_for(
            lambda line: line.get("type") == "message_start" and line["message"]["role"] == "assistant", start
        )
        await pi.call({"id": "4", "type": "abort"})
        assert await pi.data({"id": "5", "type": "get_last_assistant_text"}) == {"text": "Done with tools."}
        start = len(pi.peer.lines)
        await pi.call({"id": "6", "type": "prompt", "message": "silent"})
        await pi.peer.wait_for(lambda line: line.get("type") == "agent_settled", start)
        assert await pi.data({"id": "7", "type": "get_last_assistant_text"}) == {"text": None}


def header_of(path: Path) -> Json | None:
    """The session file's header line; None when there is no file."""
    return json.loads(path.read_text().splitlines()[0]) if path.exists() else None


async def test_get_state_names_the_session_file_before_it_exists_and_ids_are_uuid7(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        before = await pi.data({"id": "1", "type": "get_state"})
        session_id = before["sessionId"]
        assert uuid.UUID(session_id).version == 7 and str(uuid.UUID(session_id)) == session_id
        path = Path(before["sessionFile"])
        assert path.name.endswith(f"_{session_id}.jsonl") and header_of(path) is None  # made with the first message
        await pi.call({"id": "2", "type": "prompt", "message": "write notes"})
        await pi.event("agent_settled")
        after = await pi.data({"id": "3", "type": "get_state"})
        header = header_of(path)
        assert after["sessionFile"] == str(path) and header is not None
        assert header["id"] == session_id and header["version"] == 3
        await pi.call({"id": "4", "type": "new_session"})
        fresh = await pi.data({"id": "5", "type": "get_state"})
        assert uuid.UUID(fresh["sessionId"]).version == 7 and fresh["sessionFile"] != str(path)


async def test_no_session_file_is_named_when_none_is_kept(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE), persist=False)) as pi:
        assert "sessionFile" not in await pi.data({"id": "1", "type": "get_state"})


def session_lines(path: Path) -> list[Json]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_a_retried_failure_leaves_the_context_through_a_context_edit_entry(workspace: Path) -> None:
    """Pi 1.6.0: the failed reply stays in the file, a `context_edit` entry (sent as
    `entry_appended`) takes it out of the context, and a reload leaves it out too."""
    flaky = script(reply("^hi", [{"error": "503 Service Unavailable: busy"}]), reply("^hi", [{"text": "Back."}]))
    async with pi_mode(session_config(workspace, flaky, retry=RetryConfig(base_ms=1))) as pi:
        path = Path((await pi.data({"id": "1", "type": "get_state"}))["sessionFile"])
        await pi.call({"id": "2", "type": "prompt", "message": "hi"})
        await pi.event("auto_retry_end")
        await pi.event("agent_settled")
        [appended] = [line for line in pi.peer.lines if line["type"] == "entry_appended"]
        types = pi.types()
        assert types.index("auto_retry_start") < types.index("entry_appended") < types.index("auto_retry_end")
        lines = session_lines(path)
        [failed] = [e for e in lines if e["type"] == "message" and e["message"].get("stopReason") == "error"]
        edit = appended["entry"]
        assert edit["type"] == "context_edit" and edit["replacement"] is None
        assert edit["targetId"] == failed["id"] and edit["parentId"] == failed["id"] and edit in lines
        after_edit = lines[lines.index(edit) + 1]
        assert after_edit["parentId"] == edit["id"] and after_edit["message"]["content"][0]["text"] == "Back."
        roles = [m["role"] for m in (await pi.data({"id": "3", "type": "get_messages"}))["messages"]]
        await pi.data({"id": "4", "type": "switch_session", "sessionPath": str(path)})
        reloaded = (await pi.data({"id": "5", "type": "get_messages"}))["messages"]
        assert [m["role"] for m in reloaded] == roles and all(m.get("stopReason") != "error" for m in reloaded)


async def test_system_messages_are_message_entries_as_pi_writes_them(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        path = Path((await pi.data({"id": "1", "type": "get_state"}))["sessionFile"])
        await pi.call({"id": "2", "type": "prompt", "message": "write notes"})
        await pi.event("agent_settled")
        [system] = [e for e in session_lines(path) if e.get("message", {}).get("role") == "system"]
        assert system["type"] == "message" and system["message"]["toolsAdded"]


def pi16_session(path: Path, cwd: Path) -> None:
    """A session file in the shape Pi 1.6.0 writes (measured): a system message with sections, a
    failed reply taken out by a `context_edit`, a cache-warming `usage` entry, and a kind no
    version of pi-rpc knows."""
    usage = {"input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1, "cost": {"total": 0}}

    def reply(text: str, stop: str) -> Json:
        content = [{"type": "text", "text": text}] if text else []
        return {"role": "assistant", "content": content, "api": "openai-completions", "provider": "loop"} | {
            "model": "m",
            "usage": usage,
            "stopReason": stop,
            "timestamp": 3,
            "durationMs": 64,
            "thinkingLevel": "off",
        }

    system = {
        "role": "system",
        "content": "",
        "sections": {"preamble": "You are Pi."},
        "toolsAdded": [],
        "timestamp": 1,
    }
    entries: list[Json] = [
        {
            "type": "session",
            "version": 3,
            "id": "01a23561-cdde-75cc-b196-1a5a938c4a68",
            "timestamp": "t",
            "cwd": str(cwd),
        },
        {"type": "message", "id": "a1", "parentId": None, "timestamp": "t", "message": system},
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "t",
            "message": {"role": "user", "content": "hi", "timestamp": 2},
        },
        {"type": "message", "id": "a3", "parentId": "a2", "timestamp": "t", "message": reply("", "error")},
        {"type": "context_edit", "id": "a4", "parentId": "a3", "timestamp": "t", "targetId": "a3", "replacement": None},
        {"type": "message", "id": "a5", "parentId": "a4", "timestamp": "t", "message": reply("Back.", "stop")},
        {
            "type": "usage",
            "id": "a6",
            "parentId": "a5",
            "timestamp": "t",
            "kind": "cache_warm",
            "provider": "loop",
            "model": "m",
            "usage": usage,
        },
        {"type": "something_newer", "id": "a7", "parentId": "a6", "timestamp": "t", "payload": [1, 2]},
    ]
    path.write_text("".join(json.dumps(entry) + "\n" for entry in entries))


async def test_a_pi16_session_file_loads_with_its_new_entries_and_keeps_them(workspace: Path) -> None:
    path = workspace.parent / "pi16.jsonl"
    pi16_session(path, workspace)
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        await pi.data({"id": "1", "type": "switch_session", "sessionPath": str(path)})
        messages = (await pi.data({"id": "2", "type": "get_messages"}))["messages"]
        assert [m["role"] for m in messages] == ["system", "user", "assistant"]
        assert messages[0]["sections"] == {"preamble": "You are Pi."} and messages[2]["content"][0]["text"] == "Back."
        listed = await pi.data({"id": "3", "type": "get_entries"})
        by_id = {e["id"]: e for e in listed["entries"]}
        assert [by_id[i]["type"] for i in ("a4", "a6", "a7")] == ["context_edit", "usage", "something_newer"]
        assert by_id["a7"]["payload"] == [1, 2]
        await pi.data({"id": "4", "type": "clone"})  # a new file with every entry of the branch, as it was
        clone = Path((await pi.data({"id": "5", "type": "get_state"}))["sessionFile"])
        kept = session_lines(clone)[1:]
        original = session_lines(path)[1:]
        assert [e["type"] for e in kept][: len(original)] == [e["type"] for e in original]
        assert kept[0]["message"]["sections"] == {"preamble": "You are Pi."} and kept[6]["payload"] == [1, 2]


def file_lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")


def newer_pi_session(path: Path, cwd: Path) -> list[bytes]:
    """A session file as a newer Pi might write it: a kind no version of pi-rpc knows, and fields
    it does not declare on known kinds (the entry's and its message's), in Pi's own JSON (no spaces,
    `1e+21` as JavaScript spells it). Returns its entry lines."""
    header = {"type": "session", "version": 3, "id": "0b1c2d3e", "timestamp": "t", "cwd": str(cwd)}
    user = {"role": "user", "content": "héllo", "timestamp": 2, "attachments": [{"kind": "note"}]}
    answer: Json = {"role": "assistant", "content": [{"type": "text", "text": "Hi."}], "api": "faux", "provider": "p"}
    answer |= {"model": "m", "stopReason": "stop", "timestamp": 3, "routerState": {"tier": 2}}
    entries: list[Json] = [
        {"type": "model_change", "id": "b1", "parentId": None, "timestamp": "t", "provider": "p", "modelId": "m"},
        {"type": "message", "id": "b2", "parentId": "b1", "timestamp": "t", "message": user, "origin": "sdk"},
        {"type": "message", "id": "b3", "parentId": "b2", "timestamp": "t", "message": answer},
        {"type": "label", "id": "b4", "parentId": "b3", "timestamp": "t", "targetId": "b2", "label": "start"}
        | {"color": "red"},
        {"type": "bookmark_v9", "id": "b5", "parentId": "b4", "timestamp": "t", "weight": "WEIGHT", "tags": ["x"]},
    ]
    lines = [json.dumps(entry, separators=(",", ":")).replace('"WEIGHT"', "1e+21").encode() for entry in entries]
    path.write_bytes(b"".join(line + b"\n" for line in [json.dumps(header).encode(), *lines]))
    return lines


async def test_a_newer_pis_kinds_and_fields_are_written_back_and_sent_as_the_file_has_them(workspace: Path) -> None:
    """An entry of a kind pi-rpc does not know, and the fields it does not read on the kinds it
    knows, survive a load: a clone writes every line back byte for byte, and `get_entries` and
    `get_tree` send each entry with all of its fields."""
    path = workspace.parent / "newer.jsonl"
    lines = newer_pi_session(path, workspace)
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        await pi.data({"id": "1", "type": "switch_session", "sessionPath": str(path)})
        messages = (await pi.data({"id": "2", "type": "get_messages"}))["messages"]
        assert [m["role"] for m in messages] == ["user", "assistant"] and messages[0]["content"] == "héllo"
        listed = (await pi.data({"id": "3", "type": "get_entries"}))["entries"][: len(lines)]
        assert listed == [json.loads(line) for line in lines]  # then the thinking level the load recorded
        tree = (await pi.data({"id": "4", "type": "get_tree"}))["tree"]
        chain = [tree[0]]
        while chain[-1]["children"]:
            chain.append(chain[-1]["children"][0])
        assert [node["entry"] for node in chain][: len(lines)] == listed and chain[1]["label"] == "start"
        await pi.data({"id": "5", "type": "clone"})
        clone = Path((await pi.data({"id": "6", "type": "get_state"}))["sessionFile"])
        assert file_lines(clone)[1 : 1 + len(lines)] == lines


async def test_the_first_system_message_carries_the_prompt_in_sections(workspace: Path) -> None:
    async with pi_mode(session_config(workspace, script(WRITE))) as pi:
        await pi.call({"id": "1", "type": "prompt", "message": "write notes"})
        await pi.event("agent_settled")
        systems = [line["message"] for line in pi.peer.lines if line["type"] == "message_end"]
        [system] = [m for m in systems if m["role"] == "system"]  # nothing changed after: no second one
        sections = system["sections"]
        assert list(sections)[:3] == ["preamble", "tools", "rules"] and list(sections)[-1] == "cwd"
        assert sections["cwd"] == f"<cwd>\n{workspace}\n</cwd>" and "- write: " in sections["tools"]
        assert system["content"] == "" and [t["name"] for t in system["toolsAdded"]]


def test_a_changed_section_is_declared_again_and_a_removed_one_as_null() -> None:
    told = SystemMessage(sections={"preamble": "P", "tools": "<tools>\nA\n</tools>", "skills": "S"})
    now = {"preamble": "P", "tools": "<tools>\nA, B\n</tools>", "cwd": "<cwd>\n/w\n</cwd>"}
    [delta] = declare_tool_changes([told], [], [], now)
    assert isinstance(delta, SystemMessage)
    assert delta.sections == {"tools": "<tools>\nA, B\n</tools>", "cwd": "<cwd>\n/w\n</cwd>", "skills": None}
    assert declare_tool_changes([told, delta], [], [], now) == []  # told already: nothing to declare
    assert sections_text(now) == "P\n\n<tools>\nA, B\n</tools>\n\n<cwd>\n/w\n</cwd>"
