"""Message framing on stdio: LSP base framing (`Content-Length`) and JSON lines.

Both readers are incremental and bounded: bytes go in as they arrive, whole message bodies and
framing errors come out. A body larger than the cap is skipped without being buffered, and a
broken header is reported and skipped up to the next `Content-Length:` line, so one bad frame
never costs the messages after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024

_LINE_SEPARATOR = "\u2028".encode()
_PARAGRAPH_SEPARATOR = "\u2029".encode()
_CONTENT_LENGTH = re.compile(rb"^content-length:[ \t]*(\d+)[ \t]*$", re.IGNORECASE)
_HEADER = re.compile(rb"^[A-Za-z0-9-]+:.*$")


@dataclass
class FrameError:
    """A framing problem; the reader has already skipped past it."""

    message: str


Frame = bytes | FrameError


class LspFrameReader:
    def __init__(self, max_body: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._skip = 0  # bytes of an oversized body still to discard
        self._resync = False  # after a bad header: drop lines until a Content-Length line

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        if self._skip:
            dropped = min(self._skip, len(data))
            self._skip -= dropped
            data = data[dropped:]
        self._buffer += data
        while True:
            frame = self._next()
            if frame is None:
                return frames
            frames.append(frame)

    def finish(self) -> list[Frame]:
        """End of input: a partial frame left over is an error, not a silent loss."""
        if self._skip:
            return [FrameError(f"input ended {self._skip} bytes before the end of a skipped message")]
        if self._buffer.strip():
            left = len(self._buffer)
            self._buffer.clear()
            return [FrameError(f"input ended inside a message ({left} bytes unread)")]
        return []

    def _next(self) -> Frame | None:
        if self._resync and not self._drop_to_content_length():
            return None
        end = self._header_end()
        if end is None:
            if len(self._buffer) > MAX_HEADER_BYTES:
                self._resync = True
                self._buffer.clear()
                return FrameError(f"no end of headers within {MAX_HEADER_BYTES} bytes; skipping to the next frame")
            return None
        head_end, body_start = end
        header_lines = bytes(self._buffer[:head_end]).replace(b"\r\n", b"\n").split(b"\n")
        length: int | None = None
        for line in header_lines:
            match = _CONTENT_LENGTH.match(line.strip())
            if match:
                length = int(match.group(1))
            elif not _HEADER.match(line.strip()):
                del self._buffer[:body_start]
                self._resync = True
                return FrameError(f"malformed header line {line[:80]!r}; skipping to the next frame")
        if length is None:
            del self._buffer[:body_start]
            return FrameError("frame without a Content-Length header; skipped")
        if length > self.max_body:
            del self._buffer[:body_start]
            dropped = min(length, len(self._buffer))
            del self._buffer[:dropped]
            self._skip = length - dropped
            return FrameError(
                f"message of {length} bytes exceeds the limit of {self.max_body} bytes; skipped"
            )
        if len(self._buffer) - body_start < length:
            return None
        body = bytes(self._buffer[body_start : body_start + length])
        del self._buffer[: body_start + length]
        return body

    def _header_end(self) -> tuple[int, int] | None:
        # Only the head of the buffer can hold headers: searching a 60 MB body for a blank line
        # on every chunk that arrives made large messages quadratic.
        limit = MAX_HEADER_BYTES + 4
        crlf = self._buffer.find(b"\r\n\r\n", 0, limit)
        lf = self._buffer.find(b"\n\n", 0, limit)
        candidates = [(i, i + 4) for i in (crlf,) if i >= 0] + [(i, i + 2) for i in (lf,) if i >= 0]
        return min(candidates) if candidates else None

    def _drop_to_content_length(self) -> bool:
        while True:
            newline = self._buffer.find(b"\n")
            line_end = newline if newline >= 0 else len(self._buffer)
            if _CONTENT_LENGTH.match(bytes(self._buffer[:line_end]).strip()) and newline >= 0:
                self._resync = False
                return True
            if newline < 0:
                # Keep a possible partial "Content-Length" line; drop anything longer.
                if len(self._buffer) > MAX_HEADER_BYTES:
                    self._buffer.clear()
                return False
            del self._buffer[: newline + 1]


class JsonlFrameReader:
    """One JSON value per LF-terminated line; a trailing CR is stripped; U+2028 is not a separator."""

    def __init__(self, max_body: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._discarding = False

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        start = 0
        while True:
            newline = data.find(b"\n", start)
            if newline < 0:
                break
            piece = data[start:newline]
            start = newline + 1
            if self._discarding:
                self._discarding = False
                self._buffer.clear()
                continue
            self._buffer += piece
            frame = self._take_line()
            if frame is not None:
                frames.append(frame)
        if not self._discarding:
            self._buffer += data[start:]
            if len(self._buffer) > self.max_body:
                self._buffer.clear()
                self._discarding = True
                frames.append(FrameError(f"line exceeds the limit of {self.max_body} bytes; skipped"))
        return frames

    def finish(self) -> list[Frame]:
        if self._discarding:
            return []
        frame = self._take_line()
        return [frame] if frame is not None else []

    def _take_line(self) -> Frame | None:
        line = bytes(self._buffer)
        self._buffer.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return None
        if len(line) > self.max_body:
            return FrameError(f"line exceeds the limit of {self.max_body} bytes; skipped")
        return line


def encode_lsp(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode_jsonl(body: bytes) -> bytes:
    # JSON text is ASCII outside strings, so these byte sequences only occur inside strings.
    if _LINE_SEPARATOR in body or _PARAGRAPH_SEPARATOR in body:
        body = body.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
    return body + b"\n"
