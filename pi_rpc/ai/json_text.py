"""JSON encoding that survives strings JSON cannot carry.

Python keeps undecodable bytes of file names and file contents as lone surrogates
(surrogateescape); UTF-8 has no encoding for them, so one odd file name in a listing would make a
whole event unencodable. The fast path encodes as is; only a failure pays for a scrubbing copy.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

_ENCODER = msgspec.json.Encoder()
# A Python str holds no surrogate pairs, so any surrogate in one stands alone.
_SURROGATE = re.compile("[\ud800-\udfff]")


def encode_json(value: Any) -> bytes:
    try:
        return _ENCODER.encode(value)
    except UnicodeEncodeError:
        return _ENCODER.encode(_scrub(msgspec.to_builtins(value)))


def encode_json_into(value: Any, buffer: bytearray) -> None:
    """`value` encoded at the end of `buffer`: a long message goes into a line being built without
    a copy of its own."""
    offset = len(buffer)
    try:
        _ENCODER.encode_into(value, buffer, offset)
    except UnicodeEncodeError:
        del buffer[offset:]
        _ENCODER.encode_into(_scrub(msgspec.to_builtins(value)), buffer, offset)


def displayable(text: str) -> str:
    """`text` with each lone surrogate (an undecodable byte Python kept, or a stray escape) as U+FFFD."""
    return _SURROGATE.sub("\ufffd", text)


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return displayable(value)
    if isinstance(value, dict):
        return {_scrub(key): _scrub(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_scrub(item) for item in value]
    return value
