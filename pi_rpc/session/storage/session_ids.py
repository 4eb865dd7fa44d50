"""New session ids as Pi makes them: UUIDv7 (RFC 9562), time-ordered, in the dashed form.

Python 3.11's `uuid` has no version 7. Ids of older files (32 hex digits, pi-rpc's before) still
load and are still found: an id is only ever compared whole or by prefix, never parsed.
"""

from __future__ import annotations

import os
import time
import uuid


def new_session_id() -> str:
    """48 bits of Unix time in milliseconds, the version, 74 random bits, the variant."""
    value = (time.time_ns() // 1_000_000 & (1 << 48) - 1) << 80 | int.from_bytes(os.urandom(10)) & (1 << 80) - 1
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # variant 10
    return str(uuid.UUID(int=value))
