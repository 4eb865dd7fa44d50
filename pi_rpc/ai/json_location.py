"""Where in a JSON config file an error is: the line a user opens their editor at.

msgspec reports a malformed document as "... (byte N)" and a wrong value by its JSON path
("`$.providers.local.models[0].id`"), neither of which an editor can jump to. This module turns
both into line numbers, without re-parsing the document with another parser's rules: the
locator below walks just enough JSON to find where each value starts.
"""

from __future__ import annotations

import re

import msgspec

_BYTE = re.compile(r"\s*\(byte (\d+)\)$")
_PATH_PART = re.compile(r"\[(\d+)\]|\.?([^.\[\]]+)")
_NUMBER_OR_WORD = re.compile(rb"[-+0-9.eEa-zA-Z]+")


def line_and_column(raw: bytes, offset: int) -> tuple[int, int]:
    """1-based line and column of the byte at `offset` (columns count characters, not bytes)."""
    offset = max(0, min(offset, len(raw)))
    before = raw[:offset]
    line_start = before.rfind(b"\n") + 1
    column = len(before[line_start:].decode("utf-8", errors="replace")) + 1
    return before.count(b"\n") + 1, column


def describe_decode_error(raw: bytes, exc: msgspec.DecodeError) -> str:
    """`line L, column C: JSON is malformed: ...` for msgspec's `... (byte N)` message."""
    text = str(exc)
    match = _BYTE.search(text)
    if match is None:
        return text
    line, column = line_and_column(raw, int(match.group(1)))
    return f"line {line}, column {column}: {text[: match.start()]}"


def line_of_path(raw: bytes, path: str) -> int | None:
    """The line where the value at `path` (`providers.local.models[0].id`, optionally `$.`-prefixed)
    starts; `None` when the document is malformed or has no such value."""
    wanted: list[str | int] = []
    for index, key in _PATH_PART.findall(path.removeprefix("$").removeprefix(".")):
        wanted.append(int(index) if index else key)
    try:
        offset = _Locator(raw).find(wanted)
    except (IndexError, ValueError):
        return None
    return None if offset is None else line_and_column(raw, offset)[0]


class _Locator:
    """A minimal JSON walker: skips values and descends along one path, recording offsets."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.pos = 0

    def _space(self) -> None:
        while self.pos < len(self.raw) and self.raw[self.pos] in b" \t\r\n":
            self.pos += 1

    def _string(self) -> str:
        start = self.pos
        self.pos += 1
        while self.raw[self.pos] != ord('"'):
            self.pos += 2 if self.raw[self.pos] == ord("\\") else 1
        self.pos += 1
        decoded = msgspec.json.decode(self.raw[start : self.pos])
        if not isinstance(decoded, str):
            raise ValueError("not a string")
        return decoded

    def _skip(self) -> None:
        self._space()
        char = self.raw[self.pos]
        if char == ord('"'):
            self._string()
        elif char in b"[{":
            closing = ord("]") if char == ord("[") else ord("}")
            self.pos += 1
            self._space()
            if self.raw[self.pos] == closing:
                self.pos += 1
                return
            while True:
                if closing == ord("}"):
                    self._space()
                    self._string()
                    self._expect(b":")
                self._skip()
                self._space()
                if self.raw[self.pos] == closing:
                    self.pos += 1
                    return
                self._expect(b",")
        else:
            match = _NUMBER_OR_WORD.match(self.raw, self.pos)
            if match is None:
                raise ValueError("unexpected character")
            self.pos = match.end()

    def _expect(self, token: bytes) -> None:
        self._space()
        if self.raw[self.pos : self.pos + 1] != token:
            raise ValueError(f"expected {token!r}")
        self.pos += 1

    def find(self, path: list[str | int]) -> int | None:
        self._space()
        for part in path:
            if not self._enter(part):
                return None
            self._space()
        return self.pos

    def _enter(self, part: str | int) -> bool:
        """Move to the start of child `part` of the value at the cursor; False if it has none."""
        opening = self.raw[self.pos]
        if isinstance(part, int) and opening == ord("["):
            self.pos += 1
            for _ in range(part):
                self._skip()
                self._expect(b",")
            self._space()
            return self.raw[self.pos] != ord("]")
        if isinstance(part, str) and opening == ord("{"):
            self.pos += 1
            self._space()
            while self.raw[self.pos] != ord("}"):
                self._space()
                key = self._string()
                self._expect(b":")
                self._space()
                if key == part:
                    return True
                self._skip()
                self._space()
                if self.raw[self.pos] == ord(","):
                    self.pos += 1
                    self._space()
            return False
        return False
