"""`pi-rpc --mode rpc` driven by Pi 1.6.0's own `RpcClient` (npm `@earendil-works/pi-coding-agent`,
installed in tests/pi16_client) under Node 24 from PyPI: every one of its 33 command methods,
each result asserted. tests/pi_client/drive.mjs finds the command methods on the client's
prototype and calls each; where pi-rpc still answers as Pi 0.73.1 did, the difference is listed
in `EXPECTED` under its row (tests/e2e/pi16_differences.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.node_packages import PI16_CLIENT, ensure_installed, runtime_of

from .pi16_differences import Differences
from .rpc_client_runs import RUNS, Json, assert_answers_both_clients_see, drive

pytestmark = pytest.mark.e2e

EXPECTED: dict[str, str] = {}  # every row this test compares matches Pi 1.6.0
# A steer, a follow-up and a clear_queue need the run's tool to be running for a while.
SLOW_RUNS = [
    {
        **RUNS[0],
        "turns": [
            [{"toolCall": {"name": "bash", "arguments": {"command": "sleep 3; echo slept"}}}],
            *RUNS[0]["turns"][1:],
        ],
    },
    *RUNS[1:],
]
UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
DISPOSITION = "Cannot read properties of undefined (reading 'disposition')"


def disposition(call: Json, differences: Differences, expected: str, what: str) -> None:
    matches = call == {"ok": True, "value": expected}
    differences.check("P6", matches, what)
    if not matches:  # only the disposition is missing: the command itself was taken
        assert call == {"ok": False, "error": DISPOSITION}


def test_every_command_method_of_pi16s_client_gets_its_answer(workspace: Path, tmp_path: Path) -> None:
    client = ensure_installed(PI16_CLIENT)
    result = drive(client, workspace, tmp_path / "home", SLOW_RUNS, runtime_of(PI16_CLIENT))
    calls, differences = result["calls"], Differences(EXPECTED)
    assert len(result["methods"]) == 33 and sorted(result["called"]) == sorted(result["methods"])
    sends_disposition = {
        "promptAndWait",
        "promptAfterCompaction",
        "prompt",
        "steerDropped",
        "followUpDropped",
        "steer",
        "followUp",
        "promptToAbort",
    }
    failed = {name: call["error"] for name, call in calls.items() if not call["ok"] and name not in sends_disposition}
    assert failed == {}  # nothing times out, nothing is "unknown"
    for name in ("promptAndWait", "promptAfterCompaction"):
        call = calls[name]
        if differences.check("P6", call["ok"], f"{name} resolving"):  # to the run's events, up to agent_settled
            assert call["value"][0] == "agent_start" and call["value"][-1] == "agent_settled"
    for name in ("prompt", "promptToAbort"):
        disposition(calls[name], differences, "started", name)
    for name in ("steerDropped", "followUpDropped", "steer", "followUp"):
        disposition(calls[name], differences, "queued", name)
    state = calls["getState"]["value"]
    differences.check("S2", "sessionFile" in state, "get_state's sessionFile before the first prompt")
    differences.check("UUIDv7", UUID7.fullmatch(state["sessionId"]) is not None, "the session id")
    assert_answers_both_clients_see(result, workspace)
    # The commands 1.6.0's client adds to 0.73.1's.
    assert calls["thinkingLevelsOfScripted"]["value"] == ["off"]  # a model without reasoning
    assert calls["getAvailableThinkingLevels"]["value"] == ["off", "minimal", "low", "medium", "high"]
    entries = calls["getEntries"]["value"]
    assert entries["leafId"] == entries["entries"][-1]["id"]
    assert [entry["type"] for entry in entries["entries"]][:2] == ["model_change", "thinking_level_change"]
    messages = [entry["message"]["role"] for entry in entries["entries"] if entry["type"] == "message"]
    # The system message first, a `message` entry as Pi 1.6.0 writes it.
    assert messages[:3] == ["system", "user", "assistant"] and messages[-1] == "assistant"
    # Since an entry: only those after it (the cursor of a client that reconnects).
    assert calls["getEntriesSince"]["value"] == {"entries": entries["entries"][-1:], "leafId": entries["leafId"]}
    tree = calls["getTree"]["value"]
    [root] = tree["tree"]
    path, node = [], root
    while True:  # one branch so far: each entry has one child
        path.append(node["entry"])
        if not node["children"]:
            break
        [node] = node["children"]
    assert path == entries["entries"] and tree["leafId"] == entries["leafId"]
    # clear_queue took back the steer and follow-up queued while the tool ran; they never reached the run.
    assert calls["clearQueue"]["value"] == {"steering": ["never mind"], "followUp": ["nor this"]}
    assert calls["waitForIdle"]["value"] is None  # resolved at agent_settled
    settled = result["events"].count("agent_settled")
    assert settled == result["events"].count("agent_end") == 4
    differences.check("P4", "aborted" in result["settledAfterAbort"], "agent_settled after an abort")
    differences.settle()
