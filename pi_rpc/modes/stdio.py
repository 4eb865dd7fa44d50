"""What every stdio mode shares: a private protocol fd, a writer that never blocks (its bounded
queue lives in modes/writer.py), stdin chunks and frames, and signals. The lifecycle that uses them
(and the way out) is `serve` in modes/daemon.py.

Stdout belongs to the protocol. At start a mode keeps a private duplicate of fd 1 for its writer
and points fd 1 (and `sys.stdout`) at stderr, so a stray print, a library or a child process
cannot corrupt the stream.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import sys
from collections.abc import Callable
from typing import Protocol

import anyio

from pi_rpc.modes.framing import Frame
from pi_rpc.modes.writer import StdoutSink

__all__ = ["FrameReader", "StdoutSink", "claim_stdout", "read_chunk", "read_frames", "watch_signals"]

_log = logging.getLogger(__name__)

READ_CHUNK = 1 << 16
# How long a graceful abort may take at exit before children are killed regardless.
EXIT_ABORT_SECONDS = 5.0


def claim_stdout() -> int:
    """Keep a private copy of fd 1 for the protocol; point fd 1 and sys.stdout at stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


class FrameReader(Protocol):
    """modes/framing.py's incremental readers (LSP headers, JSON lines)."""

    def feed(self, data: bytes) -> list[Frame]: ...

    def finish(self) -> list[Frame]: ...


async def read_frames(fd: int, reader: FrameReader, dispatch: Callable[[Frame], object]) -> None:
    """Every frame on `fd` (or framing error) to `dispatch`, in order; returns at end of input."""
    while True:
        chunk = await read_chunk(fd)
        for frame in reader.feed(chunk) if chunk else reader.finish():
            dispatch(frame)
        if not chunk:
            return


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
