"""Message framing on stdio: LSP base framing (`Content-Length`) and JSON lines.

Both readers are incremental and bounded: bytes go in as they arrive, whole message bodies and
framing errors come out. A body larger than the cap is skipped without being buffered, and bytes
that are not a frame are reported and skipped up to the next `Content-Length:` wherever it starts,
so one bad frame (or one stray byte written to our stdin) never costs the messages after it.
"""

from __future__ import annotations

import re

import msgspec

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_HEADER_BYTES = 8 * 1024

_LINE_SEPARATOR = "\u2028".encode()
_PARAGRAPH_SEPARATOR = "\u2029".encode()
# Where a frame can start again after bytes that are not one: the header, wherever it begins.
_RESYNC = re.compile(rb"content-length:", re.IGNORECASE)
_RESYNC_KEEP = len(b"content-length:") - 1  # a header split across reads may start this far back
# A whole Content-Length header line inside a body. JSON cannot hold it (a raw line break is not
# allowed inside a string, and the words are not JSON outside one), so a body that contains it
# overran the next frame: its length was too large.
_EMBEDDED_HEADER = re.compile(rb"content-length:[ \t]{0,8}\d{1,15}[ \t]{0,8}\r?\n", re.IGNORECASE)
_EMBEDDED_OVERLAP = 64  # a header split across reads is found when the rest arrives
_OVERRUN_LOOKBEHIND = 32  # how far a too-large length may have run into the next header
_HEADER_LINE = re.compile(rb"([A-Za-z0-9-]+):[ \t]*([\x20-\x7e]*?)[ \t]*")
_HEADER_PREFIX = re.compile(rb"[A-Za-z0-9-]*(?::[\x20-\x7e\t]*)?\r?")
_LENGTH_VALUE = re.compile(rb"\d{1,15}")
_PREVIEW_BYTES = 40
# What is kept of the start and the end of a skipped oversized message: enough to find the id of
# the request it answers (modes/editor_requests.py), so that request fails at once.
KEPT_BYTES = 256


class FrameError(msgspec.Struct):
    """A framing problem; the reader has already skipped past it.

    `json_lines` is set when the skipped bytes look like a JSON message sent without LSP headers,
    so the daemon can name `--framing jsonl` to whoever is typing at it."""

    message: str
    json_lines: bool = False
    # For a message skipped as too large: its size, and its first and last KEPT_BYTES bytes.
    size: int | None = None
    head: bytes = b""
    tail: bytes = b""


Frame = bytes | FrameError


class LspFrameReader:
    """LSP base framing, strict in what it accepts and quick to recover.

    A header block must be `Name: value` lines (printable ASCII, each name once) with exactly one
    `Content-Length` of plain decimal digits, ended by a blank line (CRLF or bare LF). Anything
    else is skipped up to the next `Content-Length:` wherever it starts (also in the middle of a
    line or of the bad bytes themselves), and the skipped range is reported by stream offset.
    """

    def __init__(self, max_body: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._offset = 0  # stream offset of _buffer[0]
        self._length: int | None = None  # body length of the frame whose headers were read
        self._dropped = 0  # body bytes of an oversized frame already discarded
        self._scanned = 0  # body bytes already searched for an embedded header
        self._skip_start: int | None = None  # stream offset where an unfinished skipped range began
        self._last_body_tail = b""  # end of the body just delivered, for a length that overran
        self._overrun = 0  # how many of those bytes were put back as the next header's start
        self._skip_reason = ""  # why the open skipped range began; empty once reported
        self._skip_json = False
        self._oversized_head = b""  # the start of the oversized body being skipped

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames: list[Frame] = []
        while self._advance(frames):
            pass
        return frames

    def finish(self) -> list[Frame]:
        """End of input: a partial frame left over is an error, not a silent loss."""
        frames: list[Frame] = []
        end = self._offset + len(self._buffer)
        if self._skip_start is not None:
            frames.append(FrameError(f"input ended; skipped bytes {self._skip_start}..{end} without a frame"))
        elif self._length is not None:
            missing = self._length - self._dropped - len(self._buffer)
            over = (
                f" of {self._length} bytes, over the limit of {self.max_body}" if self._length > self.max_body else ""
            )
            frames.append(FrameError(f"input ended {missing} bytes before the end of a message body{over}"))
        elif self._buffer.strip():
            frames.append(FrameError(f"input ended inside a frame header ({len(self._buffer)} bytes unread)"))
        self._drop(len(self._buffer))
        return frames

    def _advance(self, frames: list[Frame]) -> bool:
        """One step; False when more input is needed."""
        if self._skip_start is not None:
            return self._skip_to_header(frames, 0)
        if self._length is None:
            return self._read_headers(frames)
        return self._read_body(frames)

    def _drop(self, count: int) -> None:
        del self._buffer[:count]
        self._offset += count

    def _read_headers(self, frames: list[Frame]) -> bool:
        if not self._buffer:
            return False
        fields: dict[bytes, bytes] = {}
        pos = 0
        while True:
            newline = self._buffer.find(b"\n", pos, MAX_HEADER_BYTES)
            if newline < 0:
                if len(self._buffer) >= MAX_HEADER_BYTES:
                    return self._bad(frames, f"no end of headers within {MAX_HEADER_BYTES} bytes")
                if not _HEADER_PREFIX.fullmatch(self._buffer, pos):
                    return self._bad(frames, f"malformed header line {bytes(self._buffer[pos : pos + 80])!r}")
                return False  # the rest of the header has not arrived yet
            line = bytes(self._buffer[pos:newline]).removesuffix(b"\r")
            pos = newline + 1
            if not line:
                break
            match = _HEADER_LINE.fullmatch(line)
            if match is None:
                return self._bad(frames, f"malformed header line {line[:80]!r}")
            name = match.group(1).lower()
            if name in fields:
                return self._bad(frames, f"duplicate header {match.group(1).decode()!r}")
            fields[name] = match.group(2)
        length = fields.get(b"content-length")
        if length is None:
            return self._bad(frames, "frame without a Content-Length header")
        if not _LENGTH_VALUE.fullmatch(length):
            return self._bad(frames, f"invalid Content-Length {length[:40]!r}")
        self._drop(pos)
        self._length, self._dropped, self._scanned = int(length), 0, 0
        self._last_body_tail = b""
        self._oversized_head = b""
        return True

    def _read_body(self, frames: list[Frame]) -> bool:
        length = self._length
        assert length is not None
        remaining = length - self._dropped  # body bytes from _buffer[0] on
        end = min(len(self._buffer), remaining)
        scan_from = max(0, self._scanned - _EMBEDDED_OVERLAP)
        embedded = None
        if self._buffer.find(b"\n", scan_from, end) >= 0:  # memchr first: the regex is slower
            embedded = _EMBEDDED_HEADER.search(self._buffer, scan_from, end)
        self._scanned = end
        if embedded is not None:
            start = embedded.start()
            body_offset = self._dropped + start
            self._drop(start)
            self._length = None
            frames.append(
                FrameError(
                    f"message body (Content-Length {length}) holds the next frame's header after {body_offset} "
                    f"bytes: its length was too large; skipped it and resynchronised at byte {self._offset}"
                )
            )
            return True
        if len(self._buffer) >= remaining:
            body = bytes(self._buffer[:remaining])
            self._drop(remaining)
            self._length = None
            if length > self.max_body:
                head = self._oversized_head + body[: KEPT_BYTES - len(self._oversized_head)]
                frames.append(
                    FrameError(
                        f"message of {length} bytes exceeds the limit of {self.max_body} bytes; skipped",
                        size=length,
                        head=head,
                        tail=body[-KEPT_BYTES:],
                    )
                )
                return True
            self._last_body_tail = body[-_OVERRUN_LOOKBEHIND:]
            frames.append(body)
            return True
        if length > self.max_body:
            # Discard as it arrives: an oversized body is never buffered, only its first and last bytes.
            discard = max(0, len(self._buffer) - max(_EMBEDDED_OVERLAP, KEPT_BYTES))
            if len(self._oversized_head) < KEPT_BYTES:  # the discarded bytes are the body's first ones
                self._oversized_head += bytes(self._buffer[: min(discard, KEPT_BYTES - len(self._oversized_head))])
            self._drop(discard)
            self._dropped += discard
            self._scanned -= discard
        return False

    def _bad(self, frames: list[Frame], reason: str) -> bool:
        """The bytes at the buffer's start are not a frame: skip to the next header after them."""
        if self._last_body_tail and self._overran_into_header():
            frames.append(
                FrameError(
                    f"{reason} at byte {self._offset + self._overrun}: resynchronised at a Content-Length header "
                    f"that began {self._overrun} bytes earlier, inside the message before "
                    "(was its Content-Length too large?)"
                )
            )
            return True
        preview = bytes(self._buffer[:_PREVIEW_BYTES])
        self._skip_start = self._offset
        self._skip_reason = f"{reason} ({preview!r})"
        self._skip_json = preview.lstrip()[:1] in (b"{", b"[")
        return self._skip_to_header(frames, 1)

    def _overran_into_header(self) -> bool:
        """A too-large length ate the start of the next header: put those bytes back."""
        tail = self._last_body_tail
        self._last_body_tail = b""
        joined = tail + bytes(self._buffer[: len(_RESYNC.pattern)])
        starts = [m.start() for m in _RESYNC.finditer(joined) if m.start() < len(tail)]
        if not starts:
            return False
        back = tail[starts[-1] :]
        self._buffer[:0] = back
        self._offset -= len(back)
        self._overrun = len(back)
        return True

    def _skip_to_header(self, frames: list[Frame], start: int) -> bool:
        """Drop bytes up to the next `Content-Length:`; report the range once when it starts and
        once when it ends (a single line when both are already in view)."""
        assert self._skip_start is not None
        found = _RESYNC.search(self._buffer, start)
        if found is None:
            self._drop(max(0, len(self._buffer) - _RESYNC_KEEP))
            if self._skip_reason:
                frames.append(
                    FrameError(
                        f"{self._skip_reason} at byte {self._skip_start}; skipping to the next Content-Length header",
                        self._skip_json,
                    )
                )
                self._skip_reason = ""
            return False
        self._drop(found.start())
        span = f"bytes {self._skip_start}..{self._offset}"
        if self._skip_reason:
            frames.append(
                FrameError(
                    f"{self._skip_reason}: skipped {span}; resynchronised at a Content-Length header", self._skip_json
                )
            )
        else:
            frames.append(FrameError(f"skipped {span}; resynchronised at a Content-Length header"))
        self._skip_start = None
        self._skip_reason = ""
        return True


class JsonlFrameReader:
    """One JSON value per LF-terminated line; a trailing CR is stripped; U+2028 is not a separator.

    A line over the limit is discarded as it arrives and reported when it ends, with its size and
    its first and last KEPT_BYTES bytes."""

    def __init__(self, max_body: int = DEFAULT_MAX_MESSAGE_BYTES) -> None:
        self.max_body = max_body
        self._buffer = bytearray()
        self._discarding = False
        self._discarded = 0  # bytes of the oversized line discarded so far
        self._head = b""
        self._tail = b""

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
                self._discard(piece)
                frames.append(self._oversized())
                continue
            self._buffer += piece
            frame = self._take_line()
            if frame is not None:
                frames.append(frame)
        rest = data[start:]
        if self._discarding:
            self._discard(rest)
        else:
            self._buffer += rest
            if len(self._buffer) > self.max_body:
                line = bytes(self._buffer)
                self._buffer.clear()
                self._discarding, self._discarded, self._head, self._tail = True, 0, line[:KEPT_BYTES], b""
                self._discard(line)
        return frames

    def finish(self) -> list[Frame]:
        if self._discarding:
            self._discarding = False
            return [FrameError(f"input ended inside a line of {self._discarded} bytes, over the limit; skipped")]
        frame = self._take_line()
        return [frame] if frame is not None else []

    def _discard(self, data: bytes) -> None:
        self._discarded += len(data)
        self._tail = (self._tail + data)[-KEPT_BYTES:]

    def _oversized(self) -> FrameError:
        self._discarding = False
        size = self._discarded - (1 if self._tail.endswith(b"\r") else 0)
        tail = self._tail.removesuffix(b"\r")
        return FrameError(
            f"line of {size} bytes exceeds the limit of {self.max_body} bytes; skipped",
            size=size,
            head=self._head,
            tail=tail,
        )

    def _take_line(self) -> Frame | None:
        line = bytes(self._buffer)
        self._buffer.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return None
        if len(line) > self.max_body:
            return FrameError(
                f"line of {len(line)} bytes exceeds the limit of {self.max_body} bytes; skipped",
                size=len(line),
                head=line[:KEPT_BYTES],
                tail=line[-KEPT_BYTES:],
            )
        return line


def encode_lsp(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def encode_jsonl(body: bytes) -> bytes:
    # JSON text is ASCII outside strings, so these byte sequences only occur inside strings.
    if _LINE_SEPARATOR in body or _PARAGRAPH_SEPARATOR in body:
        body = body.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
    return body + b"\n"
