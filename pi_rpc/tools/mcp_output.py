"""Pi's cap on what an MCP tool result shows the model (pi-mcp `limitMcpContent`).

The text blocks of a result, joined by newlines, may be at most 20 KB (UTF-8). Longer text keeps
its first and last 10 KB around a `…N chars truncated…` marker (cut at character boundaries),
under Pi's (and Codex's) warning line, and the full text goes to a temp file (mode 0600, never
deleted) whose path ends the text so the model can read it with offset/limit. Images follow the
text; other content is what tools/mcp.py already made of it.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Sequence

from pi_rpc.ai import ImageContent, TextContent, ToolResultContent

MCP_OUTPUT_MAX_BYTES = 20 * 1024


def limit_mcp_content(content: Sequence[ToolResultContent]) -> list[ToolResultContent]:
    """`content` as it is when its text fits, else one cut text block and the images."""
    combined = "\n".join(block.text for block in content if isinstance(block, TextContent))
    data = combined.encode()
    if len(data) <= MCP_OUTPUT_MAX_BYTES:
        return list(content)
    try:
        where = f"\n\n[Full output: {_save(data)} (read it with offset/limit)]"
    except OSError as exc:
        where = f"\n\n[Could not save the full output: {exc}]"
    # A final newline ends the last line instead of starting another.
    lines = combined.count("\n") + 1 - (1 if combined.endswith("\n") else 0)
    text = (
        f"Warning: truncated output (original token count: {math.ceil(len(data) / 4)})\n"
        f"Total output lines: {lines}\n\n{truncate_middle(data, MCP_OUTPUT_MAX_BYTES)}{where}"
    )
    return [TextContent(text=text), *(block for block in content if isinstance(block, ImageContent))]


def truncate_middle(data: bytes, max_bytes: int) -> str:
    """The first half of `max_bytes` and the last, at character starts, around the count of
    characters cut out."""

    def is_start(index: int) -> bool:  # UTF-8 continuation bytes are 10xxxxxx
        return index >= len(data) or (data[index] & 0xC0) != 0x80

    head_end = max_bytes // 2
    while head_end > 0 and not is_start(head_end):
        head_end -= 1
    tail_start = len(data) - (max_bytes - max_bytes // 2)
    while tail_start < len(data) and not is_start(tail_start):
        tail_start += 1
    removed = len(data[head_end:tail_start].decode())
    return f"{data[:head_end].decode()}…{removed} chars truncated…{data[tail_start:].decode()}"


def _save(data: bytes) -> str:
    fd, path = tempfile.mkstemp(prefix="pi-mcp-", suffix=".txt")  # mode 0600
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path
