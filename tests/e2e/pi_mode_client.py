"""A client of the daemon in Pi's RPC mode over real pipes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .conftest import SCRIPTS, daemon_env

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
