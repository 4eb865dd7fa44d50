"""`pi-rpc --mode rpc` driven by Pi's own `RpcClient` (npm `@mariozechner/pi-coding-agent`) under Node.

The client is installed by `npm ci` from tests/pi_client/package-lock.json into that folder's
git-ignored node_modules, once (tests/node_packages.py); tests/pi_client/drive.mjs calls every command method and prints
what each resolved to.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.node_packages import PI_CLIENT, ensure_installed

from .conftest import SCRIPTS, daemon_env

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def pi_client() -> Path:
    return ensure_installed(PI_CLIENT) / "drive.mjs"


def drive(driver: Path, workspace: Path, home: Path, *args: str) -> dict[str, Any]:
    agent_dir = home / "agent"  # Pi's agent folder: a settings.json that lets the short session compact
    agent_dir.mkdir(parents=True)
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 10}}))
    env = daemon_env(home) | {"PI_RPC_PYTHON": sys.executable, "PI_CODING_AGENT_DIR": str(agent_dir)}
    done = subprocess.run(
        ["node", str(driver), str(workspace), json.dumps(list(args))],
        env=env,
        capture_output=True,
        timeout=300,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_every_command_method_of_pis_client_gets_an_answer(pi_client: Path, workspace: Path, tmp_path: Path) -> None:
    result = drive(pi_client, workspace, tmp_path / "home", "--script", str(SCRIPTS / "e2e.json"))
    calls = result["calls"]
    # Every call resolves: nothing times out, nothing is "unknown".
    failed = {name: call["error"] for name, call in calls.items() if not call["ok"]}
    assert failed == {}
    state = calls["getState"]["value"]
    assert state["autoCompactionEnabled"] is True and "sessionFile" not in state and state["messageCount"] == 0
    events = calls["promptAndWait"]["value"]
    assert events[0] == "agent_start" and events[-1] == "agent_end" and "tool_execution_end" in events
    user = next(m for m in calls["getMessages"]["value"] if m["role"] == "user")
    assert user["content"] == [{"type": "text", "text": "tour"}]  # Pi's shape: always a list of blocks
    assert calls["getLastAssistantText"]["value"] == "All done: fixed the greeting."
    assert calls["getSessionStats"]["value"]["toolCalls"] == 5
    assert calls["cycleModel"]["value"] is None  # one model only
    assert calls["cycleThinkingLevel"]["value"] is None  # the scripted model does not reason
    assert calls["getCommands"]["value"] == []
    assert calls["bash"]["value"] == {
        "output": "from-the-user\n",
        "exitCode": 3,
        "cancelled": False,
        "truncated": False,
    }
    # The command joins the conversation as Pi's own message kind, in Pi's shape.
    [ran] = calls["messagesAfterBash"]["value"]
    del ran["timestamp"]
    assert ran == {
        "role": "bashExecution",
        "command": "echo from-the-user; exit 3",
        "output": "from-the-user\n",
        "exitCode": 3,
        "cancelled": False,
        "truncated": False,
    }
    assert "bash_execution_update" in result["events"]
    exported = Path(calls["exportHtml"]["value"]["path"])
    assert exported.parent == workspace.resolve() and "from-the-user" in exported.read_text()
    compacted = calls["compact"]["value"]
    assert (
        compacted["summary"]
        and compacted["tokensBefore"] > 0
        and re.fullmatch("[0-9a-f]{8}", compacted["firstKeptEntryId"])
    )
    assert result["events"].count("compaction_start") == result["events"].count("compaction_end") == 1
    after = calls["stateAfterSettings"]["value"]
    assert after["sessionName"] == "parity run" and after["autoCompactionEnabled"] is False
    assert after["steeringMode"] == "all" and after["followUpMode"] == "all"
    [tour] = calls["getForkMessages"]["value"]
    assert tour["text"] == "tour" and re.fullmatch("[0-9a-f]{8}", tour["entryId"])  # the entry's id in the file
    # Forked (after the compaction and a clone) at the first user message of the session: its id
    # outlived both (Pi lists the whole history's user messages).
    assert calls["fork"]["value"] == {"text": "tour", "cancelled": False}
    forked = calls["stateAfterFork"]["value"]
    assert forked["sessionId"] != state["sessionId"] and "sessionName" not in forked
    assert forked["messageCount"] < after["messageCount"]  # what came before the first prompt
    assert calls["clone"]["value"] == {"cancelled": False} and calls["newSession"]["value"] == {"cancelled": False}
    # The three runs ended (waitForIdle of this client version resolves at agent_end).
    assert result["events"].count("agent_end") == 3
