"""Conversations with Pi 1.6.0 and with pi-rpc over Pi's RPC protocol, step by step."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tests.node_packages import real_pi16

Json = dict[str, Any]


# This daemon and real Pi, each in Pi's RPC mode on the loopback model `loop/m`.
PI_RPC = [sys.executable, "-m", "pi_rpc", "--mode", "rpc", "--provider", "loop", "--model", "m"]


def pi16_rpc() -> list[str]:
    """Pi 1.6.0 on the same model (installed on first use: skipped without Node 24, failed in CI)."""
    return [*real_pi16(), "--mode", "rpc", "--offline", "--provider", "loop", "--model", "m"]


# A command, or a step that runs between two (editing a file, say) and may return the next
# command, made from the lines printed so far.
Step = Json | Callable[[list[Json]], Json | None]


def converse(argv: list[str], commands: Sequence[Step], env: dict[str, str], cwd: Path) -> list[Json]:
    """Send each command once the previous one was answered (a prompt: once its run ended)."""
    with subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        lines: list[Json] = []
        for step in commands:
            command = step(lines) if callable(step) else step
            if command is None:
                continue
            proc.stdin.write(json.dumps(command) + "\n")
            proc.stdin.flush()
            wanted = "agent_end" if command["type"] == "prompt" else "response"
            for raw in proc.stdout:
                lines.append(json.loads(raw))
                if lines[-1].get("type") == wanted and (wanted != "response" or lines[-1]["id"] == command["id"]):
                    break
        proc.stdin.close()
        proc.kill()
        proc.wait()
    return lines


def answer(lines: list[Json], command_id: str) -> Any:
    found = next(line for line in lines if line.get("type") == "response" and line.get("id") == command_id)
    assert found["success"], found
    return found.get("data")
