"""Reading a daemon's stdout as it streams, its memory from /proc, and the answers that stream."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path
from typing import Any

from tests.providers.sse_server import sse_event


def status_kib(pid: int) -> dict[str, int]:
    values: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key.startswith("Vm") and rest.strip().endswith("kB"):
            values[key] = int(rest.split()[0])
    return values


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def wait_idle(pid: int, guard: float = 120) -> None:
    """Until the process has used no CPU for a while (it has done all it can without us)."""
    deadline = time.monotonic() + guard
    last = cpu_ticks(pid)
    quiet = 0
    while quiet < 5 and time.monotonic() < deadline:
        time.sleep(0.2)
        now = cpu_ticks(pid)
        quiet = quiet + 1 if now == last else 0
        last = now


def completion_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    return sse_event(
        {
            "id": "c1",
            "object": "chat.completion.chunk",
            "model": "test-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def completion_stream(pieces: list[str]) -> list[bytes]:
    return [
        completion_chunk({"role": "assistant", "content": ""}),
        *(completion_chunk({"content": p}) for p in pieces),
        completion_chunk({}, "stop"),
        b"data: [DONE]\n\n",
    ]


def read_jsonl_until(fd: int, done: bytes, buffer: bytearray, guard: float = 100) -> None:
    """Read into `buffer` until `done` appears (only new bytes are searched)."""
    deadline = time.monotonic() + guard
    searched = 0
    while done not in buffer[searched:] and time.monotonic() < deadline:
        searched = max(0, len(buffer) - len(done))
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                return
            buffer += chunk
