"""Killing what a test left running, and saying that it had to."""

from __future__ import annotations

import os

from .procs import marked


def kill_leftovers(marker: str) -> None:
    for pid in marked(marker):
        try:
            os.kill(pid, 9)
        except OSError:
            pass
