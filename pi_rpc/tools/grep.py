"""The grep tool: ripgrep's JSON output, Pi's formatting, limits and notices (spec 13.1-13.8)."""

from __future__ import annotations

import base64
import os
import re
from collections.abc import Awaitable, Callable
from typing import Annotated

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
        Annotated[
            str,
            Meta(
                description="Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. "
                "Without '/', e.g. '*.ts', it matches file names at any depth"
            ),
        ]
        | UnsetType
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


class GrepOperations(msgspec.Struct):
    """Pi's GrepOperations (spec 1.11): replaceable I/O around the ripgrep search. (Pi 1.6.0 reads
    no file itself: context lines come from rg.)"""

    # Raises if the path does not exist.
    is_directory: Callable[[str], Awaitable[bool]] = local_is_directory


class _RgText(msgspec.Struct):
    text: str | None = None
    # rg sends base64 `bytes` instead when the text is not valid UTF-8.
    bytes: str | None = None

    def decoded(self) -> str:
        if self.text is not None:
            return self.text
        return base64.b64decode(self.bytes).decode("utf-8", errors="replace") if self.bytes else ""


class _RgData(msgspec.Struct):
    path: _RgText | None = None
    lines: _RgText | None = None
    line_number: int | None = None


class _RgEvent(msgspec.Struct):
    type: str
    data: _RgData | None = None


_decode_event = msgspec.json.Decoder(_RgEvent).decode


class _Collector:
    """rg's `match` and `context` events as Pi's `{rel}:{n}: text` / `{rel}-{n}- text` lines
    (spec 13.7), up to the match limit. The last allowed match's trailing context is still kept
    (a match inside it shown as context), and only one more match proves the limit cut results off."""

    def __init__(self, search_path: str, is_directory: bool, context: int, limit: int) -> None:
        self.search_path = search_path
        self.is_directory = is_directory
        self.context = context
        self.limit = limit
        self.lines: list[str] = []
        self.matches = 0
        self.limit_reached = False
        self.lines_truncated = False
        self._limit_hit = False
        self._trailing_end = 0
        self._last_file: str | None = None

    def rel(self, file_path: str) -> str:
        if self.is_directory:
            relative = os.path.relpath(os.path.join(self.search_path, file_path), self.search_path)
            if relative != "." and not relative.startswith(".."):
                return relative.replace(os.sep, "/")
        return os.path.basename(file_path)

    def _push(self, file_path: str, line_number: int, text: str, is_match: bool) -> None:
        self._last_file = file_path
        # Only the line terminator goes: a lone CR inside a line is content, as in read.
        cut, was_truncated = truncate_line(text.removesuffix("\n").removesuffix("\r"))
        self.lines_truncated = self.lines_truncated or was_truncated
        sep = ":" if is_match else "-"
        self.lines.append(f"{self.rel(file_path)}{sep}{line_number}{sep} {cut}")

    def on_line(self, raw: bytes) -> bool:
        """One line of rg's JSON; False once nothing more can be shown (rg is then stopped)."""
        try:
            event = _decode_event(raw)
        except msgspec.DecodeError:
            return True
        is_match = event.type == "match"
        data = event.data
        if (not is_match and event.type != "context") or data is None or data.line_number is None:
            return True
        file_path = data.path.decoded() if data.path is not None else ""
        if not file_path:
            return True
        text = data.lines.decoded() if data.lines is not None else ""
        line_number = data.line_number
        if not self._limit_hit:
            self._push(file_path, line_number, text, is_match)
            if is_match:
                self.matches += 1
                if self.matches >= self.limit:
                    self._limit_hit = True
                    self._trailing_end = line_number + self.context
            return True
        in_window = file_path == self._last_file and line_number <= self._trailing_end
        if in_window:
            self._push(file_path, line_number, text, False)
        if is_match:
            self.limit_reached = True
        return not (self.limit_reached and not (in_window and line_number < self._trailing_end))


def _argv(rg: str, params: GrepParams, search_path: str, context: int, is_directory: bool) -> list[str]:
    # --no-config: what the tool's parameters mean must not depend on RIPGREP_CONFIG_PATH (Pi 1.4.0).
    argv = [rg, "--no-config", "--json", "--line-number", "--color=never", "--hidden"]
    if params.ignore_case is True:
        argv.append("--ignore-case")
    if params.literal is True:
        argv.append("--fixed-strings")
    if not isinstance(params.glob, UnsetType) and params.glob:
        argv += ["--glob", _LEADING_DOT_SLASH.sub(r"\1", params.glob)]
    if context > 0:  # rg sends the surrounding lines as `context` events
        argv += ["--context", str(context)]
    # `--` keeps a pattern such as `--pre=sh` search text, never an option (spec 13.3). A directory
    # is searched as "." from inside it: rg roots `--glob` at its working directory.
    return [*argv, "--", params.pattern, "." if is_directory else search_path]


# A glob's leading `./` (after a negating `!`) names the search path itself; rg would match nothing.
_LEADING_DOT_SLASH = re.compile(r"^(!?)(?:\./)+")


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
        collector = _Collector(search_path, is_directory, context, limit)
        argv = _argv(rg, params, search_path, context, is_directory)
        try:
            run = await run_rg(argv, search_path if is_directory else None, collector.on_line, table)
        except OSError as exc:
            raise ToolError(f"Failed to run ripgrep: {exc}") from exc
        if not run.stopped and run.code not in (0, 1):
            raise ToolError(run.failure_text())
        if collector.matches == 0:
            return text_result("No matches found")
        return _finish(collector.lines, limit, collector.limit_reached, collector.lines_truncated)

    return ToolDefinition(
        name="grep",
        label="grep",
        description=DESCRIPTION,
        parameters=GrepParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
