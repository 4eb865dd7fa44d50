"""The ls tool: one directory, dotfiles included, sorted, `/` after directories (spec 13.15-13.19)."""

from __future__ import annotations

import os
import unicodedata
from collections.abc import Awaitable, Callable
from typing import Annotated

import anyio.to_thread
import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError, text_result
from pi_rpc.ai import Wire, displayable
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.fs import node_error_message
from pi_rpc.tools.listing import (
    Notice,
    as_count,
    finish_listing,
    local_exists,
    local_is_directory,
    path_argument,
)
from pi_rpc.tools.paths import resolve_to_cwd
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, Truncation

DEFAULT_LIMIT = 500

DESCRIPTION = (
    "List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. "
    f"Includes dotfiles. Output is truncated to {DEFAULT_LIMIT} entries or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first)."
)
PROMPT_SNIPPET = "List directory contents"


class LsParams(msgspec.Struct, rename="camel", kw_only=True):
    path: Annotated[str, Meta(description="Directory to list (default: current directory)")] | UnsetType = UNSET
    limit: Annotated[float, Meta(description="Maximum number of entries to return (default: 500)")] | UnsetType = UNSET


async def _readdir(path: str) -> list[str]:
    return await anyio.to_thread.run_sync(os.listdir, path)


class LsOperations(msgspec.Struct):
    """Pi's LsOperations (spec 1.11). Pi's `stat(p).isDirectory()` is `is_directory(p)` here."""

    exists: Callable[[str], Awaitable[bool]] = local_exists
    # Raises OSError if the path cannot be stat'ed.
    is_directory: Callable[[str], Awaitable[bool]] = local_is_directory
    readdir: Callable[[str], Awaitable[list[str]]] = _readdir


def sort_key(name: str) -> tuple[str, str, str]:
    """Approximates Pi's `a.toLowerCase().localeCompare(b.toLowerCase())` (spec 13.18, 19.6).

    Letters compare without case first and without accents before that, as ICU's collation does;
    the name itself breaks ties so the order never depends on the directory's order.
    """
    lowered = name.lower()
    base = "".join(ch for ch in unicodedata.normalize("NFKD", lowered) if not unicodedata.combining(ch))
    return base, lowered, name


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


class LsDetails(Wire):
    """`details` of an ls result; each field absent unless its limit was hit."""

    entry_limit_reached: int | UnsetType = UNSET
    truncation: Truncation | UnsetType = UNSET


def _finish(results: list[str], limit: int, limit_reached: bool) -> AgentToolResult:
    text = f"{limit} entries limit reached. Use limit={limit * 2} for more"
    return finish_listing(results, LsDetails, Notice(text, "entry_limit_reached", limit) if limit_reached else None)


def create_ls_tool(*, operations: LsOperations | None = None) -> ToolDefinition:
    """Spec 13.15-13.19: not recursive and not gitignore-aware."""
    ops = operations or LsOperations()

    async def execute(params: LsParams, call: ToolCallContext) -> AgentToolResult:
        dir_path = resolve_to_cwd(path_argument(params.path), call.cwd)
        limit = max(1, as_count(params.limit, DEFAULT_LIMIT))
        if not await ops.exists(dir_path):
            raise ToolError(f"Path not found: {dir_path}")
        if not await ops.is_directory(dir_path):
            raise ToolError(f"Not a directory: {dir_path}")
        try:
            names = await ops.readdir(dir_path)
        except OSError as exc:
            raise ToolError(f"Cannot read directory: {node_error_message(exc, 'scandir', dir_path)}") from exc
        results, limit_reached = await _entries(ops, dir_path, names, limit)
        # A name that is not UTF-8 was kept for stat as surrogates; the listing shows U+FFFD.
        results = [displayable(name) for name in results]
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
