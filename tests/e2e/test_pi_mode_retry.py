"""Pi mode's retry toggle against a real loopback server: with `set_auto_retry false` a failed
request is not retried (Pi's `set_auto_retry`); by default it is, with Pi's event shape."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.providers.sse_server import json_reply

from .conftest import daemon_env
from .loopback_model import RETRY_BASE_MS, Loopback, completions_turn

pytestmark = pytest.mark.e2e


def run_pi(loopback: Loopback, workspace: Path, home: Path, commands: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Send `commands`, wait for the run to settle, close stdin: every line the daemon wrote."""
    argv = [
        sys.executable,
        "-m",
        "pi_rpc",
        "--mode",
        "rpc",
        "--cwd",
        str(workspace),
        "--no-session",
        "--api",
        "openai-completions",
        "--base-url",
        f"{loopback.server.url}/v1",
        "--model",
        "test-model",
    ]
    env = daemon_env(home) | {"PI_RPC_RETRY_BASE_MS": RETRY_BASE_MS}
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        lines: list[dict[str, Any]] = []
        for command in commands:
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
        for raw in proc.stdout:
            lines.append(json.loads(raw))
            if lines[-1].get("type") == "agent_settled":
                break
        proc.stdin.close()
        assert proc.wait(30) == 0
    return lines


def test_auto_retry_can_be_turned_off(loopback: Loopback, workspace: Path, tmp_path: Path) -> None:
    loopback.script(json_reply(503, {"error": {"message": "busy"}}), completions_turn("Back."))
    lines = run_pi(
        loopback,
        workspace,
        tmp_path,
        [{"id": "1", "type": "set_auto_retry", "enabled": False}, {"id": "2", "type": "prompt", "message": "hi"}],
    )
    assert [line["id"] for line in lines if line["type"] == "response"] == ["1", "2"]
    assert not any(line["type"].startswith("auto_retry") for line in lines)
    end = next(line for line in lines if line["type"] == "agent_end")
    assert end["messages"][-1]["stopReason"] == "error" and len(loopback.requests()) == 1
    assert end["willRetry"] is False  # newest Pi's flag: no retry follows


def test_a_failed_request_is_retried_by_default(loopback: Loopback, workspace: Path, tmp_path: Path) -> None:
    """Pi's order (recorded from Pi 0.73.1 in pi_transcripts/retry.jsonl): the failed reply ends its
    run, then auto_retry_start, and a new run without a new prompt."""
    loopback.script(json_reply(503, {"error": {"message": "busy"}}), completions_turn("Back."))
    lines = run_pi(loopback, workspace, tmp_path, [{"id": "1", "type": "prompt", "message": "hi"}])
    start = next(line for line in lines if line["type"] == "auto_retry_start")
    assert set(start) == {"type", "attempt", "maxAttempts", "delayMs", "errorMessage"} and start["attempt"] == 1
    kinds = [
        line["type"] + (f":{line['message'].get('stopReason')}" if line["type"] == "message_end" else "")
        for line in lines
        if line["type"] in ("agent_start", "message_end", "agent_end", "auto_retry_start", "auto_retry_end")
        and line.get("message", {}).get("role") in (None, "assistant")
    ]
    assert kinds == [
        "agent_start",
        "message_end:error",
        "agent_end",
        "auto_retry_start",
        "agent_start",
        "message_end:stop",
        "auto_retry_end",
        "agent_end",
    ]
    assert next(line for line in lines if line["type"] == "auto_retry_end")["success"] is True
    # Newest Pi's `willRetry`: the failed run's agent_end says a retry follows, the last one not.
    assert [line["willRetry"] for line in lines if line["type"] == "agent_end"] == [True, False]
    # The failed reply left the context: the model got the prompt again, not the error.
    assert len(loopback.requests()) == 2


def test_the_last_failed_attempt_ends_the_retries(loopback: Loopback, workspace: Path, tmp_path: Path) -> None:
    loopback.script(*[json_reply(503, {"error": {"message": "busy"}})] * 4)
    lines = run_pi(loopback, workspace, tmp_path, [{"id": "1", "type": "prompt", "message": "hi"}])
    assert [line["attempt"] for line in lines if line["type"] == "auto_retry_start"] == [1, 2, 3]
    end = next(line for line in lines if line["type"] == "auto_retry_end")
    assert end["success"] is False and end["attempt"] == 3 and "busy" in end["finalError"]
    assert sum(line["type"] == "agent_end" for line in lines) == 4 and len(loopback.requests()) == 4
    # Every failed attempt but the last says a retry follows.
    assert [line["willRetry"] for line in lines if line["type"] == "agent_end"] == [True, True, True, False]
