"""Compaction end to end against a real loopback model server: a long scripted conversation is
compacted automatically near the window, the recent turns stay verbatim, the next request fits, and
`compact` works on demand (protocol/PROTOCOL.md, "Compaction"). Configured as a Pi user would:
PI_CODING_AGENT_DIR holds models.json and settings.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.providers.sse_server import json_reply

from .conftest import daemon_env
from .loopback_model import Loopback, completions_turn
from .message_texts import texts

pytestmark = pytest.mark.e2e

WINDOW = 12000
SETTINGS = {"compaction": {"reserveTokens": 4000, "keepRecentTokens": 1000}}


def start(loopback: Loopback, workspace: Path, tmp_path: Path) -> DaemonClient:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "loop": {
                        "baseUrl": f"{loopback.server.url}/v1",
                        "api": "openai-completions",
                        "models": [{"id": "small", "contextWindow": WINDOW}],
                    }
                }
            }
        )
    )
    (agent_dir / "settings.json").write_text(json.dumps(SETTINGS))
    env = daemon_env(tmp_path / "home") | {"PI_CODING_AGENT_DIR": str(agent_dir)}
    return DaemonClient(["--cwd", str(workspace), "--provider", "loop", "--model", "small", "--no-session"], env=env)


def test_a_long_conversation_is_compacted_and_keeps_its_last_turns(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    filler = "x" * 4000  # about 1000 tokens per prompt
    loopback.script(
        completions_turn("answer one", usage=(3000, 10)),
        completions_turn("answer two", usage=(6000, 10)),
        completions_turn("answer three", usage=(9000, 10)),  # past 12000 - 4000: compaction is due
        completions_turn("## Goal\nSUMMARY OF TURNS ONE AND TWO"),  # the summarisation request
        completions_turn("answer four", usage=(2500, 10)),
    )
    with start(loopback, workspace, tmp_path) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        for word in ("one", "two", "three"):
            assert client.request("prompt", {"message": f"turn {word} {filler}"})["stopReason"] == "stop"
        kinds = [e["type"] for e in client.events() if e["type"].startswith("compaction")]
        assert kinds == ["compaction_start", "compaction_end"]
        end = next(e for e in client.events() if e["type"] == "compaction_end")
        assert end["reason"] == "threshold" and end["result"]["tokensBefore"] == 9010
        stats = client.request("session/stats")
        assert stats["contextUsage"]["contextWindow"] == WINDOW
        assert client.request("prompt", {"message": "turn four"})["stopReason"] == "stop"
        assert client.close() == 0
    summarising, after = loopback.requests()[3:]
    asked = texts(summarising.json["messages"][-1])
    assert "[User]: turn one" in asked and "[Assistant]: answer two" in asked and "turn three" not in asked
    messages = [m for m in after.json["messages"] if m["role"] != "system"]
    assert "SUMMARY OF TURNS ONE AND TWO" in texts(messages[0])
    # The last turns verbatim, then the new prompt; the earlier ones only in the summary.
    assert [texts(m)[:10] for m in messages[1:]] == ["turn three", "answer thr", "turn four"]
    assert len(json.dumps(after.json)) / 4 < WINDOW - SETTINGS["compaction"]["reserveTokens"]


def test_compact_on_demand_with_instructions(loopback: Loopback, workspace: Path, tmp_path: Path) -> None:
    loopback.script(
        completions_turn("first reply"), completions_turn("second reply"), completions_turn("A SHORT SUMMARY")
    )
    with start(loopback, workspace, tmp_path) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        client.request("prompt", {"message": "first"})
        client.request("prompt", {"message": "second " + "y" * 4000})
        result = client.request("compact", {"customInstructions": "the file names"})
        assert result["summary"] == "A SHORT SUMMARY"
        # The first entry kept is named by its id, and the entry is the second prompt.
        entries = client.request("session/entries")["entries"]
        kept = next(e for e in entries if e["id"] == result["firstKeptEntryId"])
        assert texts(kept["message"]).startswith("second y")
        assert entries[-1]["type"] == "compaction" and entries[-1]["firstKeptEntryId"] == kept["id"]
        messages = client.request("messages")["messages"]
        # The system message the compaction kept, Pi's summary message, then the kept turn (the
        # summary made user text only for the model)
        assert [m["role"] for m in messages[:2]] == ["system", "compactionSummary"]
        assert messages[1]["summary"] == "A SHORT SUMMARY"
        assert [texts(m)[:8] for m in messages[2:]] == ["second y", "second r"]
        assert client.close() == 0
    asked = texts(loopback.requests()[2].json["messages"][-1])
    assert asked.endswith("Also focus on: the file names")


def test_a_request_refused_for_its_size_is_compacted_and_retried(
    loopback: Loopback,
    workspace: Path,
    tmp_path: Path,
) -> None:
    overflow = {"error": {"message": "This model's maximum context length is 12000 tokens", "type": "invalid"}}
    loopback.script(
        completions_turn("answer one"),
        completions_turn("answer two"),
        json_reply(400, overflow),
        # The history and the refused turn's start are summarised at once, so both get this text.
        completions_turn("SUMMARY"),
        completions_turn("SUMMARY"),
        completions_turn("answer three"),
    )
    with start(loopback, workspace, tmp_path) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        client.request("prompt", {"message": "one"})
        client.request("prompt", {"message": "two " + "z" * 4000})
        outcome = client.request("prompt", {"message": "three " + "z" * 4000})
        assert outcome["stopReason"] == "stop"
        end = next(e for e in client.events() if e["type"] == "compaction_end")
        assert end["reason"] == "overflow" and end["willRetry"] is True
        messages = client.request("messages")["messages"]
        assert client.close() == 0
    # The compaction kept the tools' declaration: it starts the context, and none follows. Only the
    # refused attempt followed the prompt, so the prompt's turn was summarised too (Pi 1.6.0's split
    # turn): the retry sent the summaries, not what overflowed.
    assert [m["role"] for m in messages[:2]] == ["system", "compactionSummary"]
    assert messages[1]["summary"] == "SUMMARY\n\n---\n\n## Earlier in the current turn\n\nSUMMARY"
    assert [texts(m)[:5] for m in messages[2:]] == ["answe"]
    assert not any(m["role"] == "assistant" and m.get("stopReason") == "error" for m in messages)
