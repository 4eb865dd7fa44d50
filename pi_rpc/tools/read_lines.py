"""The lines a text read selects, from a file read in chunks (Pi 1.5.1: read streams the file).

Only what `truncate_head` can show is kept: the selected lines up to one past the line and byte
limits, and of a line longer than the byte limit only its first bytes. Everything else is counted,
so memory does not grow with the file, however big it is or however long its lines. The result is
what splitting the whole text on `\\n` would give: the file's line count, the selected text's
shown part, and its full size for the truncation details.
"""

from __future__ import annotations

import codecs
import math
from collections.abc import AsyncIterable

import msgspec

from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, truncate_head


class Selection(msgspec.Struct, frozen=True):
    """What a read shows of a file: its line count, and the selected lines cut by `truncate_head`."""

    total_file_lines: int
    content: str
    truncation: Truncation
    first_line_bytes: int  # the first selected line's size, for the "line is too long" notice


class LineSelector:
    """Feed decoded text in pieces; `result` once the text has ended."""

    def __init__(self, start: int, limit: int | None) -> None:
        self._start = start
        self._end = math.inf if limit is None else start + limit
        self._line = 0  # index of the line being read
        self._stored: list[str] = []
        self._stored_bytes = 0
        self._storing = True
        self._pieces: list[str] = []  # the current selected line, while it is stored
        self._line_bytes = 0
        self._selected = 0
        self._selected_bytes = 0  # of the selected lines joined by "\n"
        self._first_line_bytes = 0
        self._last_selected_empty = True

    def _in_selection(self) -> bool:
        return self._start <= self._line < self._end

    def feed(self, text: str) -> None:
        position = 0
        while True:
            newline = text.find("\n", position)
            end = len(text) if newline == -1 else newline
            if end > position and self._in_selection():
                self._append(text[position:end])
            if newline == -1:
                return
            self._end_line()
            position = newline + 1

    def _append(self, piece: str) -> None:
        # A line over the byte limit is never shown whole: keep only enough of it to tell.
        if self._storing and self._line_bytes <= DEFAULT_MAX_BYTES:
            self._pieces.append(piece)
        self._line_bytes += len(piece.encode("utf-8"))

    def _end_line(self) -> None:
        if self._in_selection():
            if self._selected == 0:
                self._first_line_bytes = self._line_bytes
            if self._storing:
                # One line past the limits is kept, so truncate_head decides as on the whole text.
                if len(self._stored) > DEFAULT_MAX_LINES or self._stored_bytes > DEFAULT_MAX_BYTES:
                    self._storing = False
                text = "".join(self._pieces)
                self._stored_bytes += len(text.encode("utf-8")) + (1 if self._stored else 0)
                self._stored.append(text)
            self._selected_bytes += self._line_bytes + (1 if self._selected else 0)
            self._last_selected_empty = self._line_bytes == 0
            self._selected += 1
        self._pieces = []
        self._line_bytes = 0
        self._line += 1

    def result(self) -> Selection:
        self._end_line()  # the text after the last newline is a line too (maybe empty)
        content, truncation = truncate_head("\n".join(self._stored))
        if truncation.truncated:
            # The counts of the whole selection, not of the part kept (truncate_head's own rule:
            # a trailing newline ends the last line rather than starting one).
            lines = self._selected - (1 if self._selected > 1 and self._last_selected_empty else 0)
            truncation = msgspec.structs.replace(
                truncation, total_lines=lines if self._selected_bytes else 0, total_bytes=self._selected_bytes
            )
        return Selection(self._line, content, truncation, self._first_line_bytes)


def select_text(text: str, start: int, limit: int | None) -> Selection:
    """The selection of a text already in memory (editor buffers, other backends)."""
    selector = LineSelector(start, limit)
    selector.feed(text)
    return selector.result()


async def select_streamed(chunks: AsyncIterable[bytes], start: int, limit: int | None) -> Selection:
    """The selection of a file read chunk by chunk; bytes that are not UTF-8 become U+FFFD."""
    selector = LineSelector(start, limit)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    async for chunk in chunks:
        selector.feed(decoder.decode(chunk))
    selector.feed(decoder.decode(b"", final=True))
    return selector.result()
