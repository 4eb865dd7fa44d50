"""Server-sent events from a byte stream, with a bound on the length of one line.

A provider (or something posing as one) that sends a line with no newline would otherwise make
us buffer it whole: a 200 MiB line took the daemon from 53 to 706 MiB of RSS. Lines are split on
bytes (`\\r\\n`, `\\r` or `\\n`, as the SSE spec says; never U+2028, which `str.splitlines` would
also split on) and decoded as UTF-8 only once complete, so the buffered part of a line is the
only thing that grows, and it may not grow past `max_line_bytes`.
"""

from __future__ import annotations

import re
from collections.abc import AsyncGenerator, AsyncIterable

from httpx_sse import ServerSentEvent

MIB = 1 << 20
# Large enough for any real event (a whole tool call, a Responses API `response.completed`
# carrying a long answer), small enough that one line cannot exhaust memory.
MAX_SSE_LINE_BYTES = 32 * MIB

_NEWLINE = re.compile(rb"\r\n?|\n")


class SSELineTooLong(Exception):
    """The stream held a line longer than the limit; the message says so in MiB."""

    def __init__(self, limit: int) -> None:
        size = f"{limit / MIB:g} MiB" if limit >= MIB else f"{limit} bytes"
        super().__init__(f"provider sent an SSE line over {size}")


class SSELineSplitter:
    """Bytes in, complete lines out; the unfinished line is kept, up to `max_line_bytes`."""

    def __init__(self, max_line_bytes: int = MAX_SSE_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._partial = bytearray()
        self._after_cr = False  # the last chunk ended in `\r`: a leading `\n` belongs to it

    def feed(self, chunk: bytes) -> list[str]:
        lines: list[str] = []
        start = 1 if self._after_cr and chunk.startswith(b"\n") else 0
        self._after_cr = False
        for newline in _NEWLINE.finditer(chunk, start):
            if self._partial:
                self._keep(chunk, start, newline.start())
                lines.append(self._partial.decode("utf-8", "replace"))
                self._partial.clear()
            else:
                if newline.start() - start > self.max_line_bytes:
                    raise SSELineTooLong(self.max_line_bytes)
                lines.append(chunk[start : newline.start()].decode("utf-8", "replace"))
            start = newline.end()
            self._after_cr = newline.group() == b"\r" and start == len(chunk)
        self._keep(chunk, start, len(chunk))
        return lines

    def finish(self) -> list[str]:
        """The last line, when the stream ended without a newline after it."""
        if not self._partial:
            return []
        line = self._partial.decode("utf-8", "replace")
        self._partial.clear()
        return [line]

    def _keep(self, chunk: bytes, start: int, end: int) -> None:
        if len(self._partial) + (end - start) > self.max_line_bytes:
            raise SSELineTooLong(self.max_line_bytes)
        self._partial += chunk[start:end]


class SSEEventDecoder:
    """Lines in, events out, as the SSE spec's "interpret an event stream" describes."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._last_id = ""
        self._retry: int | None = None

    def decode(self, line: str) -> ServerSentEvent | None:
        if not line:
            if not self._data and not self._event:
                return None
            sse = ServerSentEvent(event=self._event, data="\n".join(self._data), id=self._last_id, retry=self._retry)
            self._event, self._data, self._retry = "", [], None
            return sse
        if line.startswith(":"):
            return None  # a comment (servers send them as keep-alives)
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._last_id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None


async def aiter_sse_bytes(
    chunks: AsyncIterable[bytes], max_line_bytes: int = MAX_SSE_LINE_BYTES
) -> AsyncGenerator[ServerSentEvent, None]:
    """The events in a byte stream. Raises `SSELineTooLong` when a line exceeds the bound."""
    splitter = SSELineSplitter(max_line_bytes)
    decoder = SSEEventDecoder()
    async for chunk in chunks:
        for line in splitter.feed(chunk):
            sse = decoder.decode(line)
            if sse is not None:
                yield sse
    for line in splitter.finish():
        decoder.decode(line)  # an event with no blank line after it is incomplete: dropped (spec)
