"""Finding the processes a test's command started, wherever they were reparented to."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import anyio

KINDS = ("bg", "nohup", "setsid", "double")
POLL_ROUNDS = 600  # 0.1 s apart: a bound on the wait, not a timing assertion


def tree_command(marker: str, *, foreground: bool) -> str:
    """Start one process of each kind, named `{marker}-{kind}`; optionally block in a sleep."""
    lines = [
        f"(exec -a {marker}-bg sleep 300) &",
        f"nohup bash -c 'exec -a {marker}-nohup sleep 300' >/dev/null 2>&1 &",
        f"setsid bash -c 'exec -a {marker}-setsid sleep 300' >/dev/null 2>&1 &",
        f"( (exec -a {marker}-double sleep 300) & ) &",
        "echo started",
    ]
    if foreground:
        lines.append(f"exec -a {marker}-fg sleep 300")
    return "\n".join(lines)


def marked(marker: str) -> list[int]:
    """Pids whose command line starts with the marker (the kernel's view, not a process tree)."""
    needle = marker.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if cmdline.startswith(needle):
            found.append(int(entry.name))
    return found


def poll(condition: Callable[[], bool]) -> bool:
    for _ in range(POLL_ROUNDS):
        if condition():
            return True
        time.sleep(0.1)
    return condition()


async def poll_async(condition: Callable[[], bool]) -> bool:
    for _ in range(POLL_ROUNDS):
        if condition():
            return True
        await anyio.sleep(0.1)
    return condition()
