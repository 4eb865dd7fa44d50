"""OutputAccumulator: live command output with bounded memory (spec 10).

Chunks arrive as raw bytes. They are counted as they come (lines, bytes, the last line's size) and
only a rolling raw tail is kept, decoded when a snapshot is taken. Once the output outgrows the
limits, the complete raw output goes to a temp log file (mode 0600, never deleted), whose path the
truncation notice points the model at.

Bash can print hundreds of megabytes, so a chunk costs as little as possible: ASCII (what commands
mostly print) is counted on the bytes themselves, with no decoding; anything else goes through an
incremental UTF-8 decoder (a character split across chunks still decodes, an invalid byte counts as
the three bytes of U+FFFD), whose text is counted. Either way the decoded text is what a snapshot
shows: a newline decodes to itself whatever precedes it, so the tail decoded from a line start is
the text the stream decoded there.
"""

from __future__ import annotations

import codecs
import os
import secrets
import tempfile
from typing import BinaryIO

import msgspec

from pi_rpc.tools.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    TruncatedBy,
    Truncation,
    truncate_tail,
)


class OutputSnapshot(msgspec.Struct, frozen=True):
    content: str
    truncation: Truncation
    full_output_path: str | None


def _temp_file_path(prefix: str, directory: str | None) -> str:
    return os.path.join(directory or tempfile.gettempdir(), f"{prefix}-{secrets.token_hex(8)}.log")


class OutputAccumulator:
    def __init__(
        self,
        *,
        max_lines: int = DEFAULT_MAX_LINES,
        max_bytes: int = DEFAULT_MAX_BYTES,
        temp_file_prefix: str = "pi-output",
        temp_dir: str | None = None,
    ) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self._max_rolling_bytes = max(2 * max_bytes, 1)
        self._temp_file_prefix = temp_file_prefix
        self._temp_dir = temp_dir
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._undecoded = 0  # bytes ending the tail that the decoder holds (a split character)

        self._pending_raw: list[bytes] = []  # raw chunks held until the temp file exists
        self._pending_raw_bytes = 0
        self._tail = bytearray()  # the raw output's end, from a character boundary
        self._tail_at_line_start = True
        self._raw_bytes = 0
        self._decoded_bytes = 0
        self._completed_lines = 0
        self._open_line = False
        self._open_line_bytes = 0
        self._completed_line_bytes = 0  # the most recent line ended by a newline
        self._finished = False
        self._temp_path: str | None = None
        self._temp_file: BinaryIO | None = None

    # --- feeding ---------------------------------------------------------------------------------

    def append(self, data: bytes) -> None:
        if self._finished:
            raise RuntimeError("Cannot append to a finished output accumulator")
        self._raw_bytes += len(data)
        if not self._undecoded and data.isascii():
            self._count_ascii(data)  # ASCII decodes to itself: nothing to decode
        else:
            self._add_text(self._decoder.decode(data))
            self._undecoded = len(self._decoder.getstate()[0])
        self._keep_tail(data)
        if self._temp_file is not None or self._needs_temp_file():
            self._ensure_temp_file()
            assert self._temp_file is not None
            self._temp_file.write(data)
        elif data:
            self._pending_raw.append(data)
            self._pending_raw_bytes += len(data)

    def finish(self) -> None:
        """Flush the decoder (a dangling partial character becomes U+FFFD). Idempotent."""
        if self._finished:
            return
        self._finished = True
        self._add_text(self._decoder.decode(b"", final=True))
        self._undecoded = 0
        if self._needs_temp_file():
            self._ensure_temp_file()

    def close_temp_file(self) -> None:
        if self._temp_file is not None:
            self._temp_file.close()
            self._temp_file = None

    # --- reading ---------------------------------------------------------------------------------

    @property
    def total_lines(self) -> int:
        return self._completed_lines + (1 if self._open_line else 0)

    @property
    def total_bytes(self) -> int:
        """Decoded UTF-8 bytes seen so far."""
        return self._decoded_bytes

    @property
    def raw_bytes(self) -> int:
        return self._raw_bytes

    @property
    def last_line_bytes(self) -> int:
        """Bytes of the last line, for the partial-line notice (spec 9.12).

        A trailing newline ends the last line rather than starting an empty one (spec 7.4), so
        then it is the completed line's size (Pi reports 0 there, "line is 0B").
        """
        return self._open_line_bytes if self._open_line else self._completed_line_bytes

    @property
    def full_output_path(self) -> str | None:
        return self._temp_path

    @property
    def retained_bytes(self) -> int:
        """Output bytes held in memory: the rolling tail plus raw chunks not yet spilled."""
        return len(self._tail) + self._pending_raw_bytes

    def read_full_output(self, max_bytes: int) -> tuple[str, bool]:
        """The whole output as text, and whether it had to be shortened: up to `max_bytes` it is all
        there; beyond, its first and last halves around a `[... N bytes omitted ...]` line (Pi's
        structured bash result). Call after `close_temp_file`."""
        if self._temp_path is None:
            return b"".join(self._pending_raw).decode("utf-8", errors="replace"), False
        with open(self._temp_path, "rb") as log:
            size = os.fstat(log.fileno()).st_size
            if size <= max_bytes:
                return log.read().decode("utf-8", errors="replace"), False
            head_bytes = max_bytes // 2
            tail_bytes = max_bytes - head_bytes
            head = log.read(head_bytes)
            log.seek(size - tail_bytes)
            tail = log.read(tail_bytes)
        # Cut at character boundaries: an incomplete sequence ending the head is dropped, and the
        # tail starts after any continuation bytes.
        head_text = codecs.getincrementaldecoder("utf-8")(errors="replace").decode(head)
        start = 0
        while start < len(tail) and tail[start] & 0xC0 == 0x80:
            start += 1
        tail_text = tail[start:].decode("utf-8", errors="replace")
        omitted = size - head_bytes - tail_bytes
        return f"{head_text}\n\n[... {omitted} bytes omitted ...]\n\n{tail_text}", True

    def snapshot(self, *, persist_if_truncated: bool = False) -> OutputSnapshot:
        """Spec 10.6: the tail-truncated tail, with the global line and byte counts."""
        text, starts_mid_line = self._snapshot_text()
        content, tail = truncate_tail(text, max_lines=self.max_lines, max_bytes=self.max_bytes)
        truncated = self.total_lines > self.max_lines or self._decoded_bytes > self.max_bytes
        output_bytes = tail.output_bytes
        # Showing a line whose start was trimmed away is showing part of it, however it fitted.
        partial = tail.last_line_partial or (starts_mid_line and tail.output_lines > 0)
        if truncated and not tail.truncated and content.endswith("\n"):
            # Truncated output is whole lines joined without a final newline, as truncate_tail does.
            content, output_bytes = content[:-1], output_bytes - 1
        truncated_by: TruncatedBy | None = None
        if truncated:
            truncated_by = "bytes" if partial else tail.truncated_by
            truncated_by = truncated_by or ("bytes" if self._decoded_bytes > self.max_bytes else "lines")
        truncation = Truncation(
            truncated=truncated,
            truncated_by=truncated_by,
            total_lines=self.total_lines,
            total_bytes=self._decoded_bytes,
            output_lines=tail.output_lines,
            output_bytes=output_bytes,
            last_line_partial=partial,
            first_line_exceeds_limit=tail.first_line_exceeds_limit,
            max_lines=self.max_lines,
            max_bytes=self.max_bytes,
        )
        if persist_if_truncated and truncated:
            self._ensure_temp_file()
        return OutputSnapshot(content=content, truncation=truncation, full_output_path=self._temp_path)

    # --- internals -------------------------------------------------------------------------------

    def _count_ascii(self, data: bytes) -> None:
        """`_add_text` for ASCII, on the bytes: each is one character and one decoded byte."""
        size = len(data)
        if not size:
            return
        self._decoded_bytes += size
        newlines = data.count(b"\n")
        if newlines == 0:
            self._open_line_bytes += size
            self._open_line = True
            return
        self._completed_lines += newlines
        last = data.rfind(b"\n")
        if newlines == 1:
            self._completed_line_bytes = self._open_line_bytes + last
        else:
            self._completed_line_bytes = last - data.rfind(b"\n", 0, last) - 1
        self._open_line_bytes = size - last - 1
        self._open_line = self._open_line_bytes > 0

    def _add_text(self, text: str) -> None:
        if not text:
            return
        size = len(text.encode("utf-8"))
        self._decoded_bytes += size
        newlines = text.count("\n")
        if newlines == 0:
            self._open_line_bytes += size
            self._open_line = True
            return
        self._completed_lines += newlines
        last = text.rindex("\n")
        if newlines == 1:
            self._completed_line_bytes = self._open_line_bytes + len(text[:last].encode("utf-8"))
        else:
            previous = text.rindex("\n", 0, last)
            self._completed_line_bytes = len(text[previous + 1 : last].encode("utf-8"))
        rest = text[last + 1 :]
        self._open_line_bytes = len(rest.encode("utf-8"))
        self._open_line = bool(rest)

    def _keep_tail(self, data: bytes) -> None:
        """Add a chunk to the tail, cut back to its last maxRollingBytes once twice that long.

        When the cut would keep part of the chunk alone, it is cut from the chunk: a 1 MiB read
        is not copied into the tail first (only its end is).
        """
        keep = max(self._max_rolling_bytes, 4)  # room for a split character at the end
        if len(self._tail) + len(data) <= 2 * keep:
            self._tail += data
        elif len(data) > keep:
            self._tail = self._cut(data, keep)
        else:
            self._tail += data
            self._tail = self._cut(self._tail, keep)

    def _cut(self, data: bytes | bytearray, keep: int) -> bytearray:
        """data's last `keep` bytes, moved forward to a character boundary; notes whether they
        start a line."""
        start = len(data) - keep
        while start < len(data) and data[start] & 0xC0 == 0x80:
            start += 1
        # Whether the kept part starts a line decides if its first line is whole.
        self._tail_at_line_start = data[start - 1] == 0x0A
        return bytearray(memoryview(data)[start:])  # one copy, not a slice and then its copy

    def _snapshot_text(self) -> tuple[str, bool]:
        """The tail from its first whole line; True if it is one line whose start was cut.

        A character still split at the end (the decoder holds its start) is left out until it
        completes, as the decoder leaves it out of the text.
        """
        end = len(self._tail) - self._undecoded
        start, cut_line = 0, False
        if not self._tail_at_line_start:
            newline = self._tail.find(b"\n", 0, end)
            if newline == -1 or newline == end - 1:
                # The cut line is also the last line: keep it, truncate_tail shows its end. (Pi
                # drops it, and a huge single line ending in a newline would then show nothing.)
                cut_line = True
            else:
                start = newline + 1
        # Decoded in place, not copied first; the view is let go at once (the tail grows in place).
        with memoryview(self._tail) as view:
            return str(view[start:end], "utf-8", "replace"), cut_line

    def _needs_temp_file(self) -> bool:
        return (
            self._raw_bytes > self.max_bytes
            or self._decoded_bytes > self.max_bytes
            or self.total_lines > self.max_lines
        )

    def _ensure_temp_file(self) -> None:
        if self._temp_path is not None:
            return
        path = _temp_file_path(self._temp_file_prefix, self._temp_dir)
        # 0600 and O_EXCL: the output may hold secrets and the temp dir is shared.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        self._temp_path = path
        self._temp_file = os.fdopen(fd, "wb")
        for chunk in self._pending_raw:
            self._temp_file.write(chunk)
        self._pending_raw = []
        self._pending_raw_bytes = 0
