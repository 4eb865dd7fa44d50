"""The protocol writer: frames out to the client without blocking, with memory bounded when the
client stops reading.

Handing every message to an asyncio transport buffered without limit: a client that stopped
reading during an 80 MB answer cost 161 MiB, and the terminal events (`message_end`, `turn_end`,
`agent_end`) each carry the whole answer again. Here, at most about `HIGH_WATER` bytes of framed
output wait for the pipe. Past that, messages queue unencoded: a lazily encoded message holds only
a reference to objects the session keeps anyway, and consecutive streamed deltas of one content
block merge into one pending delta (their texts joined), so a stalled client costs about the size
of the text it has not read yet, never the size of every event. Nothing is dropped: once the
client reads again it gets the same text, in fewer, larger deltas, followed by every other message
in order.

Merging alone still cost the whole unread answer (the session holds it too: a 40 MB answer to a
client that read nothing cost 83 MiB). So once more than `HOLD_BACKLOG` waits unencoded, the sink
holds its producers until the client has taken all but `RESUME_BACKLOG` of it: a model's stream
waits at its next event (`wait_for_room`, which the front ends hand to `AgentSession.subscribe`),
and live tool snapshots are skipped (modes/event_output.py). Only the stream waits: the reader and
every other request (an abort among them) go on, and their replies queue behind what waits. The
log says when a stall begins and when the client reads again, once each.

Writes to a pipe are gathered per pass of the event loop: what is sent between two awaits leaves
in one `writev`, so a burst of events wakes the client once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import stat
from collections import deque
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from pi_rpc.ai import TextParts

_log = logging.getLogger(__name__)

# Framed bytes handed to the pipe but not yet taken by the client, at most (plus one message).
HIGH_WATER = 1 << 20
# A merged delta is written out in pieces of at most this many characters, so a long pending run
# never becomes one huge frame at once.
MAX_DELTA_CHARS = 1 << 20
# Past this much output queued unencoded (bytes or characters), the stream holds ...
HOLD_BACKLOG = 4 << 20
# ... until the client has taken all but this much of it.
RESUME_BACKLOG = 1 << 20
# Buffers handed to one writev (Linux allows 1024).
MAX_WRITE_BUFFERS = 256

Frame = Callable[[bytes], bytes]


class _Encoded:
    __slots__ = ("encode", "size")

    def __init__(self, encode: Callable[[], bytes], size: int) -> None:
        self.encode = encode
        self.size = size  # bytes already held (0 for a lazy message)


class _Delta:
    """Consecutive deltas of one content block waiting for the client: their text and the newest
    way to encode a delta carrying a given text."""

    __slots__ = ("key", "text", "encode")

    def __init__(self, key: Hashable, text: str, encode: Callable[[str], bytes]) -> None:
        # Only a client that falls behind queues deltas: the stream's module (the builder's, which
        # holds TextParts) is then loaded already, or is loaded here rather than at the start.
        from pi_rpc.ai import TextParts

        self.key = key
        self.text: TextParts = TextParts(text)
        self.encode = encode

    @property
    def size(self) -> int:
        return len(self.text)

    def merge(self, text: str, encode: Callable[[str], bytes]) -> None:
        self.text.append(text)
        self.encode = encode


class StdoutSink:
    """Frames and writes bodies to the protocol fd without ever blocking the event loop."""

    def __init__(self, fd: int, frame: Frame) -> None:
        self._fd = fd
        self._frame = frame
        self._loop: asyncio.AbstractEventLoop | None = None
        self._out: deque[memoryview] = deque()  # framed bytes, oldest first
        self._out_bytes = 0
        self._pending: deque[_Encoded | _Delta] = deque()  # not yet encoded, in order
        self._pending_size = 0  # bytes or characters queued, roughly
        self._watching = False
        self._flush_due = False  # a flush is scheduled for the end of this pass of the loop
        self._closed = False
        self._drained: anyio.Event | None = None  # set once nothing is left to write
        self._holding = False  # the client is too far behind: the stream waits (`wait_for_room`)
        self._room: anyio.Event | None = None  # set when the hold ends
        self._wrote = False  # the first bytes reached the pipe (or it closed)
        self._written: anyio.Event | None = None  # set then, for `wait_written`

    async def open(self) -> None:
        if os.isatty(self._fd):
            # O_NONBLOCK would be set on the terminal's open file, which stdin and the shell
            # share: our reads would see EAGAIN and the shell's next program a non-blocking
            # terminal. A person at a terminal reads slower than we write: plain blocking writes.
            return
        mode = os.fstat(self._fd).st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode):
            os.set_blocking(self._fd, False)
            self._loop = asyncio.get_running_loop()
        # A regular file takes plain blocking writes: it never fills up.

    # --- what the modes call ---------------------------------------------------------------------

    def send(self, body: bytes) -> None:
        """Write a message (already encoded) after everything sent before it."""
        if self._closed:
            return
        if self._pending or self._out_bytes >= HIGH_WATER:
            self._queue(_Encoded(lambda: body, len(body)))
        else:
            self._write(self._frame(body))

    def send_lazy(self, encode: Callable[[], bytes]) -> None:
        """Like `send`, but encoded only when its turn comes: while the client is behind, only a
        reference waits, not the encoded copy."""
        if self._closed:
            return
        if self._pending or self._out_bytes >= HIGH_WATER:
            self._queue(_Encoded(encode, 0))
        else:
            self._write(self._frame(encode()))

    def send_delta(self, key: Hashable, text: str, encode: Callable[[str], bytes]) -> None:
        """A streamed delta of the content block `key`; `encode(text)` gives the message carrying
        `text` as its delta. While the client is behind, it joins the previous queued delta of
        the same block when that is the last thing queued."""
        if self._closed:
            return
        if not self._pending and self._out_bytes < HIGH_WATER:
            self._write(self._frame(encode(text)))
            return
        last = self._pending[-1] if self._pending else None
        if isinstance(last, _Delta) and last.key == key:
            last.merge(text, encode)
            self._pending_size += len(text)
            self._check_hold()
        else:
            self._queue(_Delta(key, text, encode))

    def backlog(self) -> int:
        """Output not yet taken by the client: framed bytes plus what waits to be encoded."""
        return self._out_bytes + self._pending_size

    @property
    def holding(self) -> bool:
        """The client is too far behind: producers wait (or, for snapshots, skip) until it reads."""
        return self._holding

    async def wait_for_room(self) -> None:
        """Return once the client is not too far behind; a model's stream awaits this between its
        events (at once, without suspending, while the client keeps up)."""
        while self._holding and not self._closed:
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()

    async def wait_written(self) -> None:
        """Return once the first message has reached the client (the daemon answered something)."""
        if not self._wrote:
            if self._written is None:
                self._written = anyio.Event()
            await self._written.wait()

    async def drain(self) -> None:
        """Wait until everything has been taken by the client (bounded by the caller)."""
        while not self._closed and (self._out or self._pending):
            self._drained = anyio.Event()
            await self._drained.wait()

    # --- internals ----------------------------------------------------------------------------------

    def _queue(self, item: _Encoded | _Delta) -> None:
        self._pending.append(item)
        self._pending_size += item.size
        self._watch()
        self._check_hold()

    def _check_hold(self) -> None:
        if not self._holding and self._pending_size > HOLD_BACKLOG:
            self._holding = True
            _log.warning(
                "the client is not reading (%.1f MiB wait for it): holding the stream until it reads",
                self.backlog() / (1 << 20),
            )

    def _release_hold(self) -> None:
        if self._holding and (self._closed or self._pending_size <= RESUME_BACKLOG):
            self._holding = False
            if not self._closed:
                _log.warning("the client is reading again: the stream resumes")
            if self._room is not None:
                self._room.set()
                self._room = None

    def _write(self, data: bytes) -> None:
        self._out.append(memoryview(data))
        self._out_bytes += len(data)
        if self._loop is None:
            self._flush()  # a terminal or a regular file: plain blocking writes
        elif not self._flush_due and not self._watching:
            # What is sent during one pass of the event loop leaves in one writev: a turn emits
            # its events in bursts (message_end, turn_end, agent_end, ...) between two awaits,
            # and each write to the pipe wakes the client.
            self._flush_due = True
            self._loop.call_soon(self._scheduled_flush)

    def _scheduled_flush(self) -> None:
        self._flush_due = False
        self._flush()

    def _flush(self) -> None:
        """Write what the pipe takes now; refill from the queue while below the high-water mark."""
        while not self._closed:
            while self._out:
                buffers = list(itertools.islice(self._out, MAX_WRITE_BUFFERS))
                try:
                    written = os.writev(self._fd, buffers)
                except BlockingIOError:
                    written = 0
                except OSError:
                    self._close()  # the client is gone; stdin EOF will end the daemon
                    return
                self._out_bytes -= written
                if written and not self._wrote:
                    self._set_wrote()
                short = written < sum(len(buffer) for buffer in buffers)
                while written and written >= len(self._out[0]):
                    written -= len(self._out.popleft())
                if written:
                    self._out[0] = self._out[0][written:]
                if short:
                    self._watch()
                    return
            if not self._pending:
                self._unwatch()
                self._set_drained()
                return
            self._refill()

    def _refill(self) -> None:
        while self._pending and self._out_bytes < HIGH_WATER:
            item = self._pending[0]
            if isinstance(item, _Delta):
                text = item.text.take(MAX_DELTA_CHARS)
                self._pending_size -= len(text)
                if not item.size:
                    self._pending.popleft()
                data = self._frame(item.encode(text))
            else:
                self._pending.popleft()
                self._pending_size -= item.size
                data = self._frame(item.encode())
            self._out.append(memoryview(data))
            self._out_bytes += len(data)
        self._release_hold()

    def _watch(self) -> None:
        if self._loop is not None and not self._watching and not self._closed:
            self._loop.add_writer(self._fd, self._flush)
            self._watching = True

    def _unwatch(self) -> None:
        if self._loop is not None and self._watching:
            self._loop.remove_writer(self._fd)
            self._watching = False

    def _set_wrote(self) -> None:
        self._wrote = True
        if self._written is not None:
            self._written.set()

    def _set_drained(self) -> None:
        if self._drained is not None:
            self._drained.set()

    def _close(self) -> None:
        self._closed = True
        self._unwatch()
        self._out.clear()
        self._pending.clear()
        self._out_bytes = self._pending_size = 0
        self._set_drained()
        self._set_wrote()
        self._release_hold()  # the client is gone: nothing waits for it
