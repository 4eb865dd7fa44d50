"""What the listing tools (grep, find, ls) share: their default local operations, their argument
readings and their result tail.

The tail is Pi's: the lines joined and cut to the byte limit only, then every limit that was hit
named in one bracketed line, the notices joined with ". " (spec 13.8, 13.13, 13.19), each one
also recorded under its own key in `details`.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable
from typing import Any, NamedTuple

import anyio.to_thread
from msgspec import UnsetType

from pi_rpc.agent import AgentToolResult, text_result
from pi_rpc.ai import Wire
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

# Pi passes Number.MAX_SAFE_INTEGER as maxLines: the result limit already caps the rows.
NO_LINE_LIMIT = 2**53 - 1


async def local_exists(path: str) -> bool:
    """Node's `existsSync`: "can access" (F_OK); a dangling symlink does not exist."""
    return await anyio.to_thread.run_sync(os.access, path, os.F_OK)


async def local_is_directory(path: str) -> bool:
    """Node's `statSync(p).isDirectory()`: follows symlinks, raises OSError if it cannot stat."""
    return stat.S_ISDIR((await anyio.to_thread.run_sync(os.stat, path)).st_mode)


def as_count(value: float | UnsetType, default: int) -> int:
    """A JSON number argument as a whole count; a fraction rounds up (Pi compares with >=)."""
    if isinstance(value, UnsetType) or not math.isfinite(value):
        return default
    return math.ceil(value)


def path_argument(path: str | UnsetType) -> str:
    """Pi's `path || "."`: absent or empty means the effective cwd."""
    return path if isinstance(path, str) and path else "."


class Notice(NamedTuple):
    """One limit that was hit: its text for the model, and the field of the tool's details that
    records it (its Python name; the Struct camelCases it)."""

    text: str
    field: str
    value: Any


def finish_listing(
    lines: list[str], details: Callable[..., Wire], limit: Notice | None, *after: Notice
) -> AgentToolResult:
    """The result text and details: `limit` (the tool's own count limit) comes first, then the
    byte limit, then `after`, each setting its field of `details` (the tool's Details Struct,
    whose field order is this order). With no notice there are no details at all."""
    output, truncation = truncate_head("\n".join(lines), max_lines=NO_LINE_LIMIT)
    notices = [limit] if limit is not None else []
    if truncation.truncated:
        notices.append(Notice(f"{format_size(DEFAULT_MAX_BYTES)} limit reached", "truncation", truncation))
    notices += after
    if not notices:
        return text_result(output)
    output += f"\n\n[{'. '.join(notice.text for notice in notices)}]"
    return text_result(output, details(**{notice.field: notice.value for notice in notices}))
