"""The ls tool: one directory, dotfiles included, sorted, `/` after directories (spec 13.15-13.19)."""

from __future__ import annotations

import math
import os
import stat
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import anyio.to_thread
import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.agent.types import AbortSignal, AgentToolResult, OnUpdate, ToolError, text_result
from pi_rpc.tools.base import ToolContext, ToolDefinition
from pi_rpc.tools.fs import node_error_message
from pi_rpc.tools.paths import resolve_to_cwd
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, format_size, truncate_head

DEFAULT_LIMIT = 500
# Pi passes Number.MAX_SAFE_INTEGER as maxLines: the entry limit already caps the rows.
NO_LINE_LIMIT = 2**53 - 1

DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. "
    f"Includes dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first)."
)
PROMPT_SNIPPET = "List directory contents"


class LsParams(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, Meta(description="Directory to list (default: current directory)")] | UnsetType = (
        UNSET
    )
    limit: (
        Annotated[float, Meta(description="Maximum number of entries to return (default: 500)")] | UnsetType
    ) = UNSET


async def _exists(path: str) -> bool:
    return await anyio.to_thread.run_sync(os.access, path, os.F_OK)


async def _is_directory(path: str) -> bool:
    # os.stat follows symlinks, as Node's fs.stat does.
    return stat.S_ISDIR((await anyio.to_thread.run_sync(os.stat, path)).st_mode)


async def _readdir(path: str) -> list[str]:
    return await anyio.to_thread.run_sync(os.listdir, path)


@dataclass
class LsOperations:
    """Pi's LsOperations (spec 1.10). Pi's `stat(p).isDirectory()` is `is_directory(p)` here."""

    exists: Callable[[str], Awaitable[bool]] = _exists
    # Raises OSError if the path cannot be stat'ed.
    is_directory: Callable[[str], Awaitable[bool]] = _is_directory
    readdir: Callable[[str], Awaitable[list[str]]] = _readdir


def sort_key(name: str) -> tuple[str, str, str]:
    """Approximates Pi's `a.toLowerCase().localeCompare(b.toLowerCase())` (spec 13.18, 17.6).

    Letters compare without case first and without accents before that, as ICU's collation does;
    the name itself breaks ties so the order never depends on the directory's order.
    """
    lowered = name.lower()
    base = "".join(ch for ch in unicodedata.normalize("NFKD", lowered) if not unicodedata.combining(ch))
    return base, lowered, name


def _limit_of(value: float | UnsetType) -> int:
    if isinstance(value, UnsetType) or not math.isfinite(value):
        return DEFAULT_LIMIT
    return max(1, math.ceil(value))


async def _entries(ops: LsOperations, dir_path: str, names: list[str], limit: int) -> tuple[list[str], bool]:
    """Stat entries in order up to the limit; True when entries were left over."""
    results: list[str] = []
    for name in sorted(names, key=sort_key):
        if len(results) >= limit:
            return results, True
        try:
            is_directory = await ops.is_directory(os.path.join(dir_path, name))
        except OSError:
            continue  # dangling symlink, raced deletion: Pi skips what it cannot stat
        results.append(f"{name}/" if is_directory else name)
    return results, False


def _finish(results: list[str], limit: int, limit_reached: bool) -> AgentToolResult:
    output, truncation = truncate_head("\n".join(results), max_lines=NO_LINE_LIMIT)
    details: dict[str, Any] = {}
    notices: list[str] = []
    if limit_reached:
        notices.append(f"{limit} entries limit reached. Use limit={limit * 2} for more")
        details["entryLimitReached"] = limit
    if truncation.truncated:
        notices.append(f"{format_size(DEFAULT_MAX_BYTES)} limit reached")
        details["truncation"] = truncation
    if notices:
        output += f"\n\n[{'. '.join(notices)}]"
    return text_result(output, details if details else UNSET)


def create_ls_tool(cwd: str, *, operations: LsOperations | None = None) -> ToolDefinition:
    """Spec 13.15-13.19: not recursive and not gitignore-aware."""
    ops = operations or LsOperations()

    async def execute(
        call_id: str, params: LsParams, signal: AbortSignal, on_update: OnUpdate, ctx: ToolContext
    ) -> AgentToolResult:
        path = params.path if isinstance(params.path, str) and params.path else "."
        dir_path = resolve_to_cwd(path, ctx.cwd or cwd)
        limit = _limit_of(params.limit)
        if not await ops.exists(dir_path):
            raise ToolError(f"Path not found: {dir_path}")
        if not await ops.is_directory(dir_path):
            raise ToolError(f"Not a directory: {dir_path}")
        try:
            names = await ops.readdir(dir_path)
        except OSError as exc:
            raise ToolError(f"Cannot read directory: {node_error_message(exc, 'scandir', dir_path)}") from exc
        results, limit_reached = await _entries(ops, dir_path, names, limit)
        if not results:
            return text_result("(empty directory)")
        return _finish(results, limit, limit_reached)

    return ToolDefinition(
        name="ls",
        label="ls",
        description=DESCRIPTION,
        parameters=LsParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
