"""`--mode pi`: Pi's own RPC protocol, as a Pi client speaks it (spec 16.1-16.6)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .conftest import SCRIPTS, daemon_env, descendants, still_running, watch

pytestmark = pytest.mark.e2e

Json = dict[str, Any]


class PiClient:
    def __init__(self, workspace: Path, home: Path, *args: str, script: str = "e2e.json") -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pi_rpc",
                "--mode",
                "pi",
                "--cwd",
                str(workspace),
                "--script",
                str(SCRIPTS / script),
                *args,
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=daemon_env(home),
        )
        self.lines: list[Json] = []
        self._lock = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._lock:
                self.lines.append(json.loads(line))
                self._lock.notify_all()
        with self._lock:
            self._lock.notify_all()

    def send(self, command: Json | bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command if isinstance(command, bytes) else json.dumps(command).encode() + b"\n")
        self.proc.stdin.flush()

    def wait_for(self, predicate: Callable[[Json], bool], start: int = 0) -> Json:
        with self._lock:
            found: list[Json] = []

            def ready() -> bool:
                found[:] = [line for line in self.lines[start:] if predicate(line)][:1]
                return bool(found)

            assert self._lock.wait_for(ready, 60), "expected line did not arrive"
            return found[0]

    def call(self, command: Json) -> Json:
        start = len(self.lines)
        self.send(command)
        return self.wait_for(lambda line: line.get("type") == "response" and line.get("id") == command.get("id"), start)

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(30)
        self._reader.join(5)
        self.proc.stdout.close()
        return code


@pytest.fixture
def pi(workspace: Path, tmp_path: Path) -> Iterator[PiClient]:
    client = PiClient(workspace, tmp_path)
    yield client
    if client.proc.poll() is None:
        client.proc.kill()
        client.proc.wait()
    for pipe in (client.proc.stdin, client.proc.stdout):
        if pipe is not None and not pipe.closed:
            pipe.close()


def test_prompt_while_streaming_needs_a_streaming_behaviour_and_abort_kills_the_tool(pi: PiClient) -> None:
    """spec 15.12 (session level) and 16.5 abort."""
    assert pi.call({"id": "1", "type": "prompt", "message": "slow"})["success"] is True
    pi.wait_for(
        lambda line: line.get("type") == "tool_execution_update" and "started" in str(line["partialResult"]["content"])
    )
    busy = pi.call({"id": "2", "type": "prompt", "message": "again"})
    assert busy["success"] is False and busy["error"] == (
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    )
    queued = pi.call({"id": "3", "type": "prompt", "message": "later", "streamingBehavior": "followUp"})
    assert queued["success"] is True
    assert pi.call({"id": "4", "type": "clear_queue"})["data"] == {"steering": [], "followUp": ["later"]}
    tool_processes = watch(descendants(pi.proc.pid))
    assert tool_processes
    assert pi.call({"id": "5", "type": "abort"})["success"] is True  # answered once idle
    assert still_running(tool_processes) == 0
    assert pi.call({"id": "6", "type": "get_state"})["data"]["isStreaming"] is False
    assert pi.close() == 0
