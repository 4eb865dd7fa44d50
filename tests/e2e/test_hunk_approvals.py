"""Keeping one hunk of two over the wire: the daemon as a subprocess over real pipes, both framings.
The approval request numbers the hunks, the answer keeps the second, the file on disk has only it,
and the tool result the model reads names the kept and the rejected hunk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient

pytestmark = pytest.mark.e2e

ORIGINAL = "".join(f"line {n}\n" for n in range(1, 31))


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_keeping_the_second_hunk_writes_only_it(
    spawn: Callable[..., DaemonClient], workspace: Path, framing: str
) -> None:
    (workspace / "notes.txt").write_text(ORIGINAL)
    client = spawn(framing=framing, script="hunks.json")
    client.request("initialize", {"clientInfo": {"name": "test"}, "capabilities": {"approvals": True}})
    prompt = client.request_nowait("prompt", {"message": "two changes"})
    request = client.wait_for_message(lambda m: m.get("method") == "approval/request")
    hunks: list[dict[str, Any]] = request["params"]["preview"]["hunks"]
    assert [(h["index"], h["oldStart"], h["newStart"]) for h in hunks] == [(0, 1, 1), (1, 24, 24)]
    client.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": "allow", "hunks": [1]}})
    assert client.result(prompt)["stopReason"] == "stop"
    end = client.wait_for_type("tool_execution_end")
    assert (workspace / "notes.txt").read_text() == ORIGINAL.replace("line 28\n", "line twenty-eight\n")
    text = end["result"]["content"][0]["text"]
    assert text.startswith(
        "Successfully applied 1 of 2 hunk(s) to notes.txt. The user kept hunk(s) 2 and rejected hunk(s) 1,"
    )
    assert text.endswith(f"Hunk 1:\n{hunks[0]['text']}")
    assert end["result"]["details"]["hunks"]["kept"] == [1]
    # The transcript the model reads next holds that same result.
    messages = client.request("messages")["messages"]
    result = next(m for m in messages if m["role"] == "toolResult")
    assert result["content"][0]["text"] == text and not result["isError"]
