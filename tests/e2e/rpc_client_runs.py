"""Pi's own RpcClient driving a daemon: the scripted runs and what both clients must see."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.node_packages import PI_CLIENT, Node

from .conftest import SCRIPTS, daemon_env

# Calls every command method of the client in the npm folder it is given (0.73.1's or 1.6.0's).
DRIVER = PI_CLIENT.folder / "drive.mjs"


# Two configured models beside the scripted one (never asked: their address is only listed),
# so that setModel and setThinkingLevel have somewhere to go.
MODELS = {
    "providers": {
        "loop": {
            "baseUrl": "http://127.0.0.1:9/v1",
            "api": "openai-completions",
            "apiKey": "none",
            "models": [{"id": "fast"}, {"id": "thinker", "reasoning": True}],
        }
    }
}


Json = dict[str, Any]


# The runs a steer, a follow-up and an abort go into, before the e2e script's catch-all reply.
RUNS: list[Json] = [
    {
        "match": "^wait a bit",
        "turns": [
            [{"toolCall": {"name": "bash", "arguments": {"command": "sleep 1; echo slept"}}}],
            [{"text": "Stopping, as you asked."}],
        ],
    },
    {"match": "^later", "turns": [[{"text": "Done later."}]]},
]


def drive(
    client: Path, workspace: Path, home: Path, runs: list[Json] = RUNS, node: Node | None = None
) -> dict[str, Any]:
    """What DRIVER printed, driving pi-rpc with the RpcClient of the npm folder `client`, run under
    `node` (the machine's when None)."""
    agent_dir = home / "agent"  # Pi's agent folder: a settings.json that lets the short session compact
    agent_dir.mkdir(parents=True)
    (agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 10}}))
    (agent_dir / "models.json").write_text(json.dumps(MODELS))
    *replies, catch_all = json.loads((SCRIPTS / "e2e.json").read_text())["replies"]
    script = home / "script.json"
    script.write_text(json.dumps({"replies": [*replies, *runs, catch_all]}))
    # One prompt template and one skill of the project's, for getCommands.
    (workspace / ".pi" / "prompts").mkdir(parents=True)
    (workspace / ".pi" / "prompts" / "review.md").write_text("---\ndescription: Review a file\n---\nReview $1.")
    (workspace / ".pi" / "skills" / "deploy").mkdir(parents=True)
    skill = "---\nname: deploy\ndescription: Ship to staging\n---\nRun ./deploy.sh."
    (workspace / ".pi" / "skills" / "deploy" / "SKILL.md").write_text(skill)
    env = daemon_env(home) | {"PI_RPC_PYTHON": sys.executable, "PI_CODING_AGENT_DIR": str(agent_dir)}
    if node is not None:
        env["PATH"] = node.path
    # --approve: the project's own template and skill load only in a trusted workspace.
    done = subprocess.run(
        [
            str(node.node) if node is not None else "node",
            str(DRIVER),
            str(client),
            str(workspace),
            json.dumps(["--script", str(script), "--approve"]),
        ],
        env=env,
        capture_output=True,
        timeout=300,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def assert_answers_both_clients_see(result: Json, workspace: Path) -> None:
    """What the command methods Pi 0.73.1's and 1.6.0's clients share resolved to in `drive`."""
    calls = result["calls"]
    state = calls["getState"]["value"]
    assert state["autoCompactionEnabled"] is True and state["messageCount"] == 0
    user = next(m for m in calls["getMessages"]["value"] if m["role"] == "user")
    assert user["content"] == [{"type": "text", "text": "tour"}]  # Pi's shape: always a list of blocks
    assert calls["getLastAssistantText"]["value"] == "All done: fixed the greeting."
    assert calls["getSessionStats"]["value"]["toolCalls"] == 5
    models = [(m["provider"], m["id"]) for m in calls["getAvailableModels"]["value"]]
    assert models == [("faux", "scripted"), ("loop", "fast"), ("loop", "thinker")]
    # setModel and setThinkingLevel show in the state; Pi's cycles wrap round, as real Pi's do.
    assert calls["setModel"]["value"]["id"] == "thinker"
    on_thinker = calls["stateOnThinker"]["value"]
    assert (on_thinker["model"]["provider"], on_thinker["model"]["id"], on_thinker["thinkingLevel"]) == (
        "loop",
        "thinker",
        "high",
    )
    assert calls["cycleThinkingLevel"]["value"] == {"level": "off"}  # after high, as real Pi goes
    cycled = calls["cycleModel"]["value"]
    assert (cycled["model"]["id"], cycled["thinkingLevel"], cycled["isScoped"]) == ("scripted", "off", False)
    back = calls["stateAfterModels"]["value"]
    assert back["model"]["id"] == "scripted" and back["thinkingLevel"] == "off"
    # The workspace's template and skill, in Pi's shape.
    pi_folder = str(workspace / ".pi")
    assert calls["getCommands"]["value"] == [
        {
            "name": "review",
            "description": "Review a file",
            "source": "prompt",
            "sourceInfo": {
                "path": str(workspace / ".pi" / "prompts" / "review.md"),
                "source": "auto",
                "scope": "project",
                "origin": "top-level",
                "baseDir": pi_folder,
            },
        },
        {
            "name": "skill:deploy",
            "description": "Ship to staging",
            "source": "skill",
            "sourceInfo": {
                "path": str(workspace / ".pi" / "skills" / "deploy" / "SKILL.md"),
                "source": "auto",
                "scope": "project",
                "origin": "top-level",
                "baseDir": pi_folder,
            },
        },
    ]
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
    # abortBash while a command runs: it ends at once, with what it had printed.
    assert calls["abortBash"]["value"] is None
    assert calls["abortedBash"]["value"] == {
        "output": "started\n",
        "exitCode": None,
        "cancelled": True,
        "truncated": False,
    }
    exported = Path(calls["exportHtml"]["value"]["path"])
    # The page holds the conversation in context (the last command, which compaction kept).
    assert exported.parent == workspace.resolve() and "echo started; sleep 30" in exported.read_text()
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
    # switchSession back to the first session's file: its conversation, as it was before the clone.
    assert calls["switchSession"]["value"] == {"cancelled": False}
    # (The compaction summary message is made anew when a file loads: its timestamp differs.)
    untimed = [
        [{k: v for k, v in m.items() if k != "timestamp"} for m in calls[name]["value"]]
        for name in ("messagesAfterSwitch", "messagesBeforeClone")
    ]
    assert untimed[0] == untimed[1] and len(untimed[0]) == 5
    switched = calls["stateAfterSwitch"]["value"]
    assert switched["sessionFile"] == calls["stateAfterPrompt"]["value"]["sessionFile"]
    assert switched["sessionId"] == state["sessionId"] and switched["sessionName"] == "parity run"
    # steer while the run's tool ran, then followUp: the steer reached the model before its next
    # turn, the follow-up after the last, in the same run.
    said = [
        (m["role"], " ".join(part.get("text", part.get("name", "")) for part in m["content"]))
        for m in calls["messagesAfterSteering"]["value"]
    ]
    assert said == [
        ("user", "wait a bit"),
        ("assistant", "bash"),
        ("toolResult", "slept\n"),
        ("user", "and then stop"),
        ("assistant", "Stopping, as you asked."),
        ("user", "later"),
        ("assistant", "Done later."),
    ]
    [aborted] = calls["messagesAfterAbort"]["value"]
    assert aborted["role"] == "assistant" and aborted["stopReason"] == "aborted"
    assert calls["newSession"]["value"] == {"cancelled": False} and calls["stateAfterNew"]["value"]["messageCount"] == 0
    assert calls["clone"]["value"] == {"cancelled": False}
    # Four runs ended (0.73.1's waitForIdle resolves at agent_end, 1.6.0's at agent_settled): the
    # follow-up ran inside the steered one.
    assert result["events"].count("agent_end") == 4
