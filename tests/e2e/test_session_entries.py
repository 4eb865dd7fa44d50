"""`session/entries` as a durable cursor, over real pipes: a client that remembers the last entry
id it saw gets exactly what it missed, also from a new daemon that loaded the session after the
first was killed, and a compaction made before the kill is still applied (protocol/PROTOCOL.md,
"Session entries")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient, RpcError

from .conftest import daemon_env
from .loopback_model import Loopback, completions_turn
from .message_texts import texts

pytestmark = pytest.mark.e2e

Json = dict[str, Any]


def start(loopback: Loopback, workspace: Path, tmp_path: Path) -> DaemonClient:
    """A daemon with its agent folder at tmp_path/agent, so its sessions are in Pi's folder there
    (`PI_CODING_AGENT_DIR`); each one started here shares them."""
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir(exist_ok=True)
    provider = {"baseUrl": f"{loopback.server.url}/v1", "api": "openai-completions", "models": [{"id": "small"}]}
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"loop": provider}}))
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 1000}}))
    env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
    client = DaemonClient(["--cwd", str(workspace), "--provider", "loop", "--model", "small"], env=env)
    client.request("initialize", {"clientInfo": {"name": "pytest"}})
    return client


def said(entries: list[Json]) -> list[str]:
    """The user and assistant texts of `entries`, and a marker for each compaction."""
    return [
        "<compaction>" if e["type"] == "compaction" else texts(e["message"])[:10]
        for e in entries
        if e["type"] == "compaction" or e.get("message", {}).get("role") in ("user", "assistant")
    ]


def test_a_client_gets_what_it_missed_across_a_daemon_restart(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    loopback.script(
        completions_turn("answer one"),
        completions_turn("answer two"),
        completions_turn("THE SUMMARY"),
        completions_turn("answer three"),
        completions_turn("answer four"),
    )
    with start(loopback, workspace, tmp_path) as first:
        first.request("prompt", {"message": "one"})
        listed = first.request("session/entries")
        cursor = listed["leafId"]
        assert cursor == listed["entries"][-1]["id"] and said(listed["entries"]) == ["one", "answer one"]
        first.request("prompt", {"message": "two " + "x" * 4000})
        compacted = first.request("compact")
        # The client was away for the second turn and the compaction, then comes back with its cursor.
        missed = first.request("session/entries", {"since": cursor})
        assert said(missed["entries"]) == ["two xxxxxx", "answer two", "<compaction>"]
        assert missed["entries"][0]["parentId"] == cursor
        assert missed["entries"][-1]["firstKeptEntryId"] == compacted["firstKeptEntryId"] == missed["entries"][0]["id"]
        cursor = missed["leafId"]
        first.request("prompt", {"message": "three"})
        after_compaction = first.request("session/entries", {"since": cursor})
        session_id = first.request("state")["sessionId"]
        first.proc.kill()  # no shutdown: what reached the file is all the next daemon has
        first.proc.wait()

    with start(loopback, workspace, tmp_path) as second:
        second.request("session/load", {"sessionId": session_id})
        # The compaction holds: the summary, then the kept turn and what followed.
        messages = second.request("messages")["messages"]
        assert [texts(m)[:10] for m in messages if m["role"] in ("user", "assistant")] == [
            "two xxxxxx",
            "answer two",
            "three",
            "answer thr",
        ]
        assert [m["role"] for m in messages[:2]] == ["system", "compactionSummary"]
        assert messages[1]["summary"] == "THE SUMMARY"
        # The same cursor gives the same entries, ids and all, from the new daemon.
        assert second.request("session/entries", {"since": cursor}) == after_compaction
        cursor = after_compaction["leafId"]
        second.request("prompt", {"message": "four"})
        assert said(second.request("session/entries", {"since": cursor})["entries"]) == ["four", "answer fou"]
        with pytest.raises(RpcError) as refused:
            second.request("session/entries", {"since": "0badc0de"})
        assert (refused.value.code, refused.value.message) == (
            -32004,
            "Entry 0badc0de is not an entry of this session's current branch",
        )
        assert second.close() == 0
    # The full history is still in the file.
    [path] = (tmp_path / "agent" / "sessions").rglob(f"*_{session_id}.jsonl")
    assert '"one"' in path.read_text() and '"answer one"' in path.read_text()
