"""The grep tool: ripgrep's JSON output, Pi's formatting, limits and notices (spec 13.1-13.8)."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated

import anyio.to_thread
import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError, text_result
from pi_rpc.ai import Wire
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.listing import (
    Notice,
    as_count,
    finish_listing,
    local_is_directory,
    path_argument,
)
from pi_rpc.tools.paths import resolve_to_cwd
from pi_rpc.tools.process import ProcessTable
from pi_rpc.tools.ripgrep import RgLocator, locate_rg, require_rg, run_rg
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH, Truncation, truncate_line

DEFAULT_LIMIT = 100

DESCRIPTION = (
    "Search file contents for a pattern. Returns matching lines with file paths and line numbers. "
    f"Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} matches or {DEFAULT_MAX_BYTES // 1024}KB "
    f"(whichever is hit first). Long lines are truncated to {GREP_MAX_LINE_LENGTH} chars."
)
PROMPT_SNIPPET = "Search file contents for patterns (respects .gitignore)"


class GrepParams(msgspec.Struct, rename="camel", kw_only=True):
    pattern: Annotated[str, Meta(description="Search pattern (regex or literal string)")]
    path: Annotated[str, Meta(description="Directory or file to search (default: current directory)")] | UnsetType = (
        UNSET
    )
    glob: (
        Annotated[str, Meta(description="Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'")] | UnsetType
    ) = UNSET
    ignore_case: Annotated[bool, Meta(description="Case-insensitive search (default: false)")] | UnsetType = UNSET
    literal: (
        Annotated[bool, Meta(description="Treat pattern as literal string instead of regex (default: false)")]
        | UnsetType
    ) = UNSET
    context: (
        Annotated[float, Meta(description="Number of lines to show before and after each match (default: 0)")]
        | UnsetType
    ) = UNSET
    limit: Annotated[float, Meta(description="Maximum number of matches to return (default: 100)")] | UnsetType = UNSET


def _read_text(path: str) -> str:
    # Node's readFile(p, "utf-8") replaces invalid bytes with U+FFFD; so do we.
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        return f.read()


async def _read_file(path: str) -> str:
    return await anyio.to_thread.run_sync(_read_text, path)


@dataclass
class GrepOperations:
    """Pi's GrepOperations (spec 1.10): replaceable I/O around the ripgrep search."""

    # Raises if the path does not exist.
    is_directory: Callable[[str], Awaitable[bool]] = local_is_directory
    # Reads a file for context lines.
    read_file: Callable[[str], Awaitable[str]] = _read_file


class _RgText(msgspec.Struct):
    # rg sends {"bytes": <base64>} instead when the text is not valid UTF-8.
    text: str | None = None


class _RgData(msgspec.Struct):
    path: _RgText | None = None
    lines: _RgText | None = None
    line_number: int | None = None


class _RgEvent(msgspec.Struct):
    type: str
    data: _RgData | None = None


_decode_event = msgspec.json.Decoder(_RgEvent).decode


@dataclass
class _Match:
    file_path: str
    line_number: int
    line_text: str | None


def _split_file_lines(content: str) -> list[str]:
    return content.replace("\r\n", "\n").replace("\r", "\n").split("\n")


class _Formatter:
    """Turns collected matches into Pi's `{rel}:{n}: text` / `{rel}-{n}- text` lines (spec 13.7)."""

    def __init__(self, search_path: str, is_directory: bool, context: int, ops: GrepOperations) -> None:
        self.search_path = search_path
        self.is_directory = is_directory
        self.context = context
        self.ops = ops
        self.lines_truncated = False
        self._files: dict[str, list[str]] = {}

    def rel(self, file_path: str) -> str:
        if self.is_directory:
            relative = os.path.relpath(file_path, self.search_path)
            if relative != "." and not relative.startswith(".."):
                return relative.replace(os.sep, "/")
        return os.path.basename(file_path)

    def _cut(self, text: str) -> str:
        cut, was_truncated = truncate_line(text)
        self.lines_truncated = self.lines_truncated or was_truncated
        return cut

    async def _file_lines(self, file_path: str) -> list[str]:
        if file_path not in self._files:
            try:
                self._files[file_path] = _split_file_lines(await self.ops.read_file(file_path))
            except Exception:
                self._files[file_path] = []
        return self._files[file_path]

    async def format(self, match: _Match) -> list[str]:
        rel = self.rel(match.file_path)
        if self.context == 0 and match.line_text is not None:
            text = match.line_text.replace("\r\n", "\n").replace("\r", "").removesuffix("\n")
            return [f"{rel}:{match.line_number}: {self._cut(text)}"]
        lines = await self._file_lines(match.file_path)
        if not lines:
            return [f"{rel}:{match.line_number}: (unable to read file)"]
        start = max(1, match.line_number - self.context)
        end = min(len(lines), match.line_number + self.context) if self.context else match.line_number
        block = []
        for current in range(start, end + 1):
            text = self._cut(lines[current - 1].replace("\r", "") if current <= len(lines) else "")
            sep = ":" if current == match.line_number else "-"
            block.append(f"{rel}{sep}{current}{sep} {text}")
        return block


def _argv(rg: str, params: GrepParams, search_path: str) -> list[str]:
    argv = [rg, "--json", "--line-number", "--color=never", "--hidden"]
    if params.ignore_case is True:
        argv.append("--ignore-case")
    if params.literal is True:
        argv.append("--fixed-strings")
    if not isinstance(params.glob, UnsetType) and params.glob:
        argv += ["--glob", params.glob]
    # `--` keeps a pattern such as `--pre=sh` search text, never an option (spec 13.3).
    return [*argv, "--", params.pattern, search_path]


class GrepDetails(Wire):
    """`details` of a grep result, in notice order; each field absent unless its limit was hit."""

    match_limit_reached: int | UnsetType = UNSET
    truncation: Truncation | UnsetType = UNSET
    lines_truncated: bool | UnsetType = UNSET


def _finish(lines: list[str], limit: int, limit_reached: bool, lines_truncated: bool) -> AgentToolResult:
    limit_notice = None
    if limit_reached:
        text = f"{limit} matches limit reached. Use limit={limit * 2} for more, or refine pattern"
        limit_notice = Notice(text, "match_limit_reached", limit)
    after: list[Notice] = []
    if lines_truncated:
        text = f"Some lines truncated to {GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines"
        after.append(Notice(text, "lines_truncated", True))
    return finish_listing(lines, GrepDetails, limit_notice, *after)


def create_grep_tool(
    *, operations: GrepOperations | None = None, locate: RgLocator = locate_rg, processes: ProcessTable | None = None
) -> ToolDefinition:
    """Spec 13.1-13.8. `locate` finds the rg binary (a test passes one that returns None). rg runs in
    `processes`, the session's table (without one, a table of the tool's own)."""
    ops = operations or GrepOperations()
    table = processes if processes is not None else ProcessTable()

    async def execute(params: GrepParams, call: ToolCallContext) -> AgentToolResult:
        rg = require_rg(locate)
        base = call.cwd
        search_path = resolve_to_cwd(path_argument(params.path), base)
        try:
            is_directory = await ops.is_directory(search_path)
        except Exception:
            raise ToolError(f"Path not found: {search_path}") from None
        context = max(0, as_count(params.context, 0))
        limit = max(1, as_count(params.limit, DEFAULT_LIMIT))

        matches: list[_Match] = []
        count = 0

        def on_line(raw: bytes) -> bool:
            nonlocal count
            try:
                event = _decode_event(raw)
            except msgspec.DecodeError:
                return True
            if event.type != "match" or event.data is None:
                return True
            count += 1
            data = event.data
            if data.path is not None and data.path.text and data.line_number is not None:
                text = data.lines.text if data.lines is not None else None
                matches.append(_Match(data.path.text, data.line_number, text))
            return count < limit

        # rg anchors `--glob` patterns containing `/` at its working directory, as in Pi.
        rg_cwd = base if await anyio.to_thread.run_sync(os.path.isdir, base) else None
        try:
            run = await run_rg(_argv(rg, params, search_path), rg_cwd, on_line, table)
        except OSError as exc:
            raise ToolError(f"Failed to run ripgrep: {exc}") from exc
        if not run.stopped and run.code not in (0, 1):
            raise ToolError(run.failure_text())
        if count == 0:
            return text_result("No matches found")

        formatter = _Formatter(search_path, is_directory, context, ops)
        lines: list[str] = []
        for match in matches:
            lines += await formatter.format(match)
        return _finish(lines, limit, run.stopped, formatter.lines_truncated)

    return ToolDefinition(
        name="grep",
        label="grep",
        description=DESCRIPTION,
        parameters=GrepParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
