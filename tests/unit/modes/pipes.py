"""A JSON-lines front end in-process: its `run()` in the test's event loop, over two os.pipe()s.

No subprocess and no interpreter start-up, yet the front end's own reader, dispatch and writer
all run; the test is the client on the other ends of the pipes.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio

Json = dict[str, Any]


class Runnable(Protocol):
    async def run(self) -> None: ...


class LinePeer:
    """The client's ends of the pipes: JSON lines out, every line the front end writes in."""

    def __init__(self, to_daemon: int, from_daemon: int) -> None:
        self._to_daemon = to_daemon
        self._from_daemon = from_daemon
        self.lines: list[Json] = []
        self._changed = anyio.Event()
        self._input_open = True

    def send(self, message: Json | bytes) -> None:
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        os.write(self._to_daemon, data + b"\n")

    def close_input(self) -> None:
        """End of stdin, as when the editor goes away: the front end shuts down."""
        if self._input_open:
            self._input_open = False
            os.close(self._to_daemon)

    async def read_all(self) -> None:
        pending = b""
        while True:
            chunk = await anyio.to_thread.run_sync(os.read, self._from_daemon, 1 << 16, abandon_on_cancel=True)
            if not chunk:
                return
            *complete, pending = (pending + chunk).split(b"\n")
            self.lines += [json.loads(line) for line in complete if line.strip()]
            self._changed.set()

    async def wait_for(self, predicate: Callable[[Json], bool], start: int = 0) -> Json:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            while True:
                found = next((line for line in self.lines[start:] if predicate(line)), None)
                if found is not None:
                    return found
                self._changed = anyio.Event()
                await self._changed.wait()


@asynccontextmanager
async def serve_over_pipes(make: Callable[[int, int], Runnable]) -> AsyncIterator[LinePeer]:
    """`make(stdin_fd, stdout_fd)` builds the front end; it runs until the test closes its input."""
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    peer = LinePeer(stdin_w, stdout_r)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_run_then_close, make(stdin_r, stdout_w).run, stdout_w)
            tasks.start_soon(peer.read_all)
            try:
                yield peer
            finally:
                peer.close_input()
    finally:
        for fd in (stdin_r, stdout_r):
            os.close(fd)


async def _run_then_close(run: Callable[[], Awaitable[None]], stdout_w: int) -> None:
    try:
        with anyio.fail_after(60):  # a guard against a hang at shutdown
            await run()
    finally:
        os.close(stdout_w)  # the reader sees end of output
