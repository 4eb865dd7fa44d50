"""Per-file serialisation of read-modify-write operations (spec 14).

edit and write run concurrently with other tools (spec 14.5); this queue is what keeps two of them
from interleaving on one file. The key is the file's real path, so two symlinks to one file share a
slot; a file that does not exist yet is keyed by its absolute path (spec 14.2).

The key is computed synchronously, before the first await, so calls are queued in exactly the
order they were made (spec 14.3) without the global registration chain Pi needs for its async
realpath. Each slot is a FIFO-fair anyio lock: a caller cancelled while waiting leaves the line
without letting anyone behind it jump ahead of the current holder, and the holder's slot is
released on every exit path, including failure and cancellation (spec 14.4).

In-process only: this is not a lock against bash or other programs.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import msgspec

T = TypeVar("T")


class _Slot(msgspec.Struct):
    lock: anyio.Lock
    users: int = 0


# Module state on purpose, like Pi's module-level queue map: what it guards is a file on disk, which
# every session of the daemon shares. A table per session would let two ACP sessions interleave
# their writes to one file. It holds only files being written right now (a slot is dropped with its
# last user), so no lock outlives the event loop that made it and nothing builds up over time.
_slots: dict[str, _Slot] = {}


def mutation_queue_key(path: str) -> str:
    """Spec 14.2: realpath of the absolute path; the absolute path itself if it does not exist."""
    absolute = os.path.abspath(path)
    try:
        return os.path.realpath(absolute, strict=True)
    except (FileNotFoundError, NotADirectoryError):
        return absolute


async def with_file_mutation_queue(path: str, fn: Callable[[], Awaitable[T]]) -> T:
    """Run `fn` alone for this file; calls for other files still run concurrently (spec 14.1)."""
    key = mutation_queue_key(path)
    slot = _slots.get(key)
    if slot is None:
        slot = _slots[key] = _Slot(anyio.Lock())
    slot.users += 1
    try:
        async with slot.lock:
            return await fn()
    finally:
        slot.users -= 1
        if slot.users == 0 and _slots.get(key) is slot:
            del _slots[key]


def pending_keys() -> list[str]:
    """Keys with a running or waiting mutation (for tests and diagnostics)."""
    return list(_slots)


__all__ = ["mutation_queue_key", "pending_keys", "with_file_mutation_queue"]
