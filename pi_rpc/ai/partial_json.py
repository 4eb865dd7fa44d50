"""Parse the JSON prefix a model has streamed so far (Pi `utils/json-parse.ts`).

Tool-call arguments arrive as fragments of one JSON object. Editors want to show them filling in,
so every delta is parsed leniently: the prefix is closed (open string, dangling key, trailing comma,
unclosed brackets) and decoded. What cannot be completed yet is dropped, never guessed.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import msgspec


def parse_streaming_json(text: str) -> dict[str, Any]:
    """Best-effort object from a JSON prefix; `{}` when nothing usable has arrived."""
    if not text.strip():
        return {}
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        try:
            value = _decode_prefix(text)
        except RecursionError:
            return {}
    except RecursionError:  # nesting deeper than any real arguments: nothing usable
        return {}
    return value if isinstance(value, dict) else {}


def _decode_prefix(text: str) -> Any:
    closed = _close(text)
    # Each retry drops one more trailing token (a half-written number, literal or key).
    for candidate in _candidates(closed, text):
        try:
            return msgspec.json.decode(candidate)
        except msgspec.DecodeError:
            continue
    return {}


def _candidates(closed: str, text: str) -> list[str]:
    out = [closed]
    trimmed = text
    for _ in range(4):
        trimmed = _drop_last_token(trimmed)
        if not trimmed:
            break
        out.append(_close(trimmed))
    return out


class _Scan(NamedTuple):
    outside: list[tuple[int, str]]  # each character outside strings (quotes excluded), by index
    in_string: bool  # the text ends inside a string
    escaped: bool  # ... right after a backslash


def _scan(text: str) -> _Scan:
    """The one pass both repairs need: which characters are structure, and how the text ends."""
    outside: list[tuple[int, str]] = []
    in_string = escaped = False
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        else:
            outside.append((index, char))
    return _Scan(outside, in_string, escaped)


def _drop_last_token(text: str) -> str:
    """Remove the last incomplete member: back up to the previous ',' '{' or '[' outside strings."""
    cuts = [index for index, char in _scan(text).outside if char in ",{["]
    if not cuts:
        return ""
    cut = cuts[-1]
    return text[:cut] if text[cut] == "," else text[: cut + 1]


def _close(text: str) -> str:
    scan = _scan(text)
    closers: list[str] = []
    for _, char in scan.outside:
        if char == "{":
            closers.append("}")
        elif char == "[":
            closers.append("]")
        elif char in "}]" and closers:
            closers.pop()
    body = text
    if scan.in_string:
        if scan.escaped:
            body = body[:-1]
        body += '"'
    stripped = body.rstrip()
    if stripped.endswith(","):
        stripped = stripped[:-1]
    if stripped.endswith(":"):
        stripped += " null"
    return stripped + "".join(reversed(closers))
