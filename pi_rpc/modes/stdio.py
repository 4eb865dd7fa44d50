"""What every stdio mode shares: a private protocol fd, a writer that never blocks, stdin
chunks, signals, and the way out (abort the run, kill what the tools started, flush).

Stdout belongs to the protocol. At start a mode keeps a private duplicate of fd 1 for its writer
and points fd 1 (and `sys.stdout`) at stderr, so a stray print, a library or a child process
cannot corrupt the stream.
"""

from __future__ import annotations

import asyncio
import logging
import os
import select
import signal
import sys
from collections.abc import Callable

import anyio

from pi_rpc.session.session import AgentSession
from pi_rpc.tools.process import kill_all_process_groups

_log = logging.getLogger(__name__)

READ_CHUNK = 1 << 16
# How long a graceful abort may take at exit before children are killed regardless.
EXIT_ABORT_SECONDS = 5.0


class StdoutSink:
    """Frames and writes bodies to the protocol fd without ever blocking the event loop."""

    def __init__(self, fd: int, frame: Callable[[bytes], bytes]) -> None:
        self._fd = fd
        self._frame = frame
        self._transport: asyncio.WriteTransport | None = None
        self._closed = False

    async def open(self) -> None:
        if os.isatty(self._fd):
            # A pipe transport would set O_NONBLOCK on the terminal's open file, which stdin and
            # the shell share: the shell's next program would find it non-blocking. A person at a
            # terminal reads slower than we write anyway, so plain blocking writes do here.
            return
        loop = asyncio.get_running_loop()
        try:
            pipe = os.fdopen(self._fd, "wb", buffering=0, closefd=False)
            self._transport, _ = await loop.connect_write_pipe(asyncio.Protocol, pipe)
        except (ValueError, OSError):
            self._transport = None  # a regular file: plain blocking writes are fine there

    def send(self, body: bytes) -> None:
        if self._closed:
            return
        data = self._frame(body)
        if self._transport is not None:
            if self._transport.is_closing():
                self._closed = True
                return
            self._transport.write(data)
            return
        try:
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
        except OSError:
            self._closed = True  # the client is gone; stdin EOF will end the daemon

    def backlog(self) -> int:
        """Bytes written but not yet taken by the client."""
        return self._transport.get_write_buffer_size() if self._transport is not None else 0

    async def drain(self) -> None:
        """Wait until what was written has left our buffer (bounded by the caller)."""
        while self._transport is not None and not self._transport.is_closing():
            if self._transport.get_write_buffer_size() == 0:
                return
            await anyio.sleep(0.01)


def claim_stdout() -> int:
    """Keep a private copy of fd 1 for the protocol; point fd 1 and sys.stdout at stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


async def read_chunk(fd: int) -> bytes:
    """The next bytes on `fd`; b"" at end of input (or when reading fails: the client is gone)."""
    return await anyio.to_thread.run_sync(_read_chunk, fd, abandon_on_cancel=True)


def _read_chunk(fd: int) -> bytes:
    while True:
        try:
            return os.read(fd, READ_CHUNK)
        except BlockingIOError:
            # Someone set O_NONBLOCK on the open file we share (a terminal's, with another
            # program): "nothing yet" is not end of input, so wait until there is something.
            select.select([fd], [], [])
        except OSError:
            return b""


async def watch_signals(stop: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            _log.info("signal %s; exiting", signal.Signals(signum).name)
            stop.set()
            return


async def wind_down(session: AgentSession, sink: StdoutSink) -> None:
    """Every way out: abort the run, stop the MCP servers, kill every process group a tool
    started, flush the output."""
    with anyio.move_on_after(EXIT_ABORT_SECONDS, shield=True):
        await session.close()
    kill_all_process_groups()
    with anyio.move_on_after(2, shield=True):
        await sink.drain()
