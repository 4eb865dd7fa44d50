"""Which of a process group are alive, and waiting for them to die."""

from __future__ import annotations

import os
from pathlib import Path

import anyio


def live_members(pgid: int) -> list[int]:
    """Processes of the group that are not yet dead (zombies wait for a reaper, not for us)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        state, _ppid, pgrp = stat.rsplit(")", 1)[1].split()[:3]
        if int(pgrp) == pgid and state not in ("Z", "X"):
            found.append(int(entry))
    return found


async def wait_until_dead(pids: list[int]) -> None:
    """Wait on pidfds, which become readable when the process exits: no polling."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            pass
    try:
        with anyio.fail_after(10):
            for fd in fds:
                await anyio.wait_readable(fd)
    finally:
        for fd in fds:
            os.close(fd)
