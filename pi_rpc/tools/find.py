"""The find tool: files by glob pattern, respecting .gitignore (spec 13.9-13.14).

Pi runs `fd`; we have no fd, so ripgrep lists the files (`rg --files --hidden --no-require-git`,
which applies .gitignore hierarchically in and out of git repositories, like fd's flags) and the
glob is matched here with fd's rules as Pi 1.6.0 uses them: a pattern without `/` matches the file
name; a relative one with `/` matches the path relative to the search directory (a leading `./`
dropped); an absolute one the absolute path.
`*` and `?` never cross `/`, and a pattern with no uppercase letter ignores case (fd's smart case).

The glob is matched here rather than handed to `rg --glob` because rg's globs override ignore
rules: `rg --files -g '*.log'` lists gitignored logs, which fd never does.

Differences from fd, by necessity: rg lists files only. Directories are reported (with a trailing
`/`, as fd prints them) when they contain at least one listed file; empty directories and
directories whose files are all ignored are not. Symlinks are not listed. Output is in path order
(rg `--sort path`), directories just before their contents, where fd's is unordered.
"""

from __future__ import annotations

import os
import re
from collections.abc import Awaitable, Callable
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
    local_exists,
    path_argument,
)
from pi_rpc.tools.paths import resolve_to_cwd
from pi_rpc.tools.process import ProcessTable
from pi_rpc.tools.ripgrep import RgLocator, locate_rg, require_rg, run_rg
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, Truncation

DEFAULT_LIMIT = 1000
NO_FILES = "No files found matching pattern"
# What the custom-glob path asks a remote backend to skip (spec 13.14).
GLOB_IGNORE = ["**/node_modules/**", "**/.git/**"]

DESCRIPTION = (
    "Search for files by glob pattern. Returns matching file paths relative to the search directory. "
    f"Respects .gitignore. Output is truncated to {DEFAULT_LIMIT} results or {DEFAULT_MAX_BYTES // 1024}KB "
    "(whichever is hit first)."
)
PROMPT_SNIPPET = "Find files by glob pattern (respects .gitignore)"


class FindParams(msgspec.Struct, rename="camel", kw_only=True):
    pattern: Annotated[
        str,
        Meta(
            description="Glob pattern relative to the search directory, e.g. 'src/**/*.ts'. "
            "Without '/', e.g. '*.ts', it matches file names at any depth"
        ),
    ]
    path: Annotated[str, Meta(description="Directory to search in (default: current directory)")] | UnsetType = UNSET
    limit: Annotated[float, Meta(description="Maximum number of results (default: 1000)")] | UnsetType = UNSET


class GlobOptions(msgspec.Struct):
    ignore: list[str]
    limit: int


class FindOperations(msgspec.Struct):
    """Pi's FindOperations (spec 1.11, 13.14). With `glob` set, the backend does the matching."""

    exists: Callable[[str], Awaitable[bool]] = local_exists
    # glob(pattern, search_path, options) -> relative or absolute paths; None means local ripgrep.
    glob: Callable[[str, str, GlobOptions], Awaitable[list[str]]] | None = None


# --- fd-style glob matching ----------------------------------------------------------------------


def _char_class(pattern: str, start: int) -> tuple[str, int]:
    """Translate `[...]` starting at pattern[start] == "["; returns (regex, index after `]`)."""
    i = start + 1
    negated = i < len(pattern) and pattern[i] in "!^"
    if negated:
        i += 1
    items: list[str] = []
    first = True
    while i < len(pattern) and (pattern[i] != "]" or first):
        first = False
        ch = pattern[i]
        if ch == "-" and items and i + 1 < len(pattern) and pattern[i + 1] != "]":
            items.append("-")
        else:
            items.append(re.escape(ch))
        i += 1
    if i >= len(pattern):
        raise ValueError("unclosed character class; missing ']'")
    return f"[{'^' if negated else ''}{''.join(items)}]", i + 1


def _recursive(pattern: str, i: int, out: list[str]) -> int:
    """Handle `**` at pattern[i]; returns the index after what it consumed."""
    end = i + 2
    starts_component = i == 0 or pattern[i - 1] in "/{,"
    ends_component = end == len(pattern) or pattern[end] in "/},"
    if not (starts_component and ends_component):
        out.append("[^/]*")  # like globset: `a**` is a plain star
        return end
    if end == len(pattern) or pattern[end] in "},":
        out.append(".*")  # `**` alone, or `dir/**`: everything below
        return end
    out.append("(?:.*/)?")  # `**/`: any number of leading directories, including none
    return end + 1


def glob_to_regex(pattern: str) -> str:
    """fd's glob (globset with literal separators) as a Python regex; ValueError if malformed."""
    out: list[str] = []
    in_group = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**", i):
            i = _recursive(pattern, i, out)
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            regex, i = _char_class(pattern, i)
            out.append(regex)
            continue
        elif ch == "{":
            if in_group:
                raise ValueError("nested alternate groups are not allowed")
            in_group = True
            out.append("(?:")
        elif ch == "}" and in_group:
            in_group = False
            out.append(")")
        elif ch == "," and in_group:
            out.append("|")
        elif ch == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(ch))
        i += 1
    if in_group:
        raise ValueError("unclosed alternate group; missing '}'")
    return "".join(out)


def compile_find_pattern(pattern: str, search_path: str) -> Callable[[str], bool]:
    """Spec 13.11: a predicate on paths relative to search_path (with `/` separators).

    Pi 1.5.1: a leading `./` is dropped (fd's paths never hold `/./`), and a relative pattern with
    `/` is anchored at the search path (`src/*.ts` finds `src/a.ts`, not `pkg/src/a.ts`;
    `**/src/*.ts` finds both). An absolute pattern is matched against the absolute path."""
    effective = re.sub(r"^(?:\./)+", "", pattern)
    full_path = "/" in effective
    root = search_path.replace(os.sep, "/").rstrip("/") + "/"
    anchored = full_path and not effective.startswith("/")
    try:
        regex = glob_to_regex(effective)
    except ValueError as exc:
        raise ToolError(f"error parsing glob '{effective}': {exc}") from None
    flags = re.DOTALL if any(ch.isupper() for ch in effective) else re.DOTALL | re.IGNORECASE
    matcher = re.compile(regex, flags).fullmatch
    if anchored:
        return lambda rel: matcher(rel) is not None
    if full_path:
        return lambda rel: matcher(root + rel) is not None
    return lambda rel: matcher(rel.rsplit("/", 1)[-1]) is not None


# --- results -------------------------------------------------------------------------------------


def relativize(result: str, search_path: str) -> str:
    """Spec 13.12: relative to the search path, `/` separators, a trailing separator kept."""
    trailing = result.endswith(os.sep) or result.endswith("/")
    relative = os.path.relpath(result, search_path) if os.path.isabs(result) else result
    posix = relative.replace(os.sep, "/")
    return f"{posix}/" if trailing and not posix.endswith("/") else posix


class FindDetails(Wire):
    """`details` of a find result; each field absent unless its limit was hit."""

    result_limit_reached: int | UnsetType = UNSET
    truncation: Truncation | UnsetType = UNSET


def _finish(results: list[str], limit: int, limit_notice: str) -> AgentToolResult:
    reached = Notice(limit_notice, "result_limit_reached", limit) if len(results) >= limit else None
    return finish_listing(results, FindDetails, reached)


class _Lister:
    """Receives `rg --files` lines; keeps matching files and the directories that contain them."""

    def __init__(self, matches: Callable[[str], bool], limit: int) -> None:
        self.matches = matches
        self.limit = limit
        self.results: list[str] = []
        self.listed = 0
        self._dirs: set[str] = set()

    def _add(self, rel: str, shown: str) -> bool:
        if self.matches(rel):
            self.results.append(shown)
        return len(self.results) < self.limit

    def _new_dirs(self, rel: str) -> list[str]:
        """Ancestors of rel not seen before, outermost first."""
        fresh: list[str] = []
        parent = rel.rpartition("/")[0]
        while parent and parent not in self._dirs:
            self._dirs.add(parent)
            fresh.append(parent)
            parent = parent.rpartition("/")[0]
        return fresh[::-1]

    def on_line(self, raw: bytes) -> bool:
        line = raw.decode("utf-8", errors="replace").removesuffix("\r")
        if not line.strip():
            return True
        self.listed += 1
        rel = line.replace(os.sep, "/").removeprefix("./")
        for directory in self._new_dirs(rel):
            if not self._add(directory, f"{directory.strip()}/"):
                return False
        return self._add(rel, rel.strip())


async def _custom_glob(ops: FindOperations, pattern: str, search_path: str, limit: int) -> AgentToolResult:
    assert ops.glob is not None
    if not await ops.exists(search_path):
        raise ToolError(f"Path not found: {search_path}")
    found = await ops.glob(pattern, search_path, GlobOptions(ignore=list(GLOB_IGNORE), limit=limit))
    if not found:
        return text_result(NO_FILES)
    results = [relativize(path, search_path) for path in found]
    return _finish(results, limit, f"{limit} results limit reached")


def create_find_tool(
    *, operations: FindOperations | None = None, locate: RgLocator = locate_rg, processes: ProcessTable | None = None
) -> ToolDefinition:
    """Spec 13.9-13.14. `locate` finds the rg binary (a test passes one that returns None). rg runs in
    `processes`, the session's table (without one, a table of the tool's own)."""
    ops = operations or FindOperations()
    table = processes if processes is not None else ProcessTable()

    async def execute(params: FindParams, call: ToolCallContext) -> AgentToolResult:
        search_path = resolve_to_cwd(path_argument(params.path), call.cwd)
        limit = max(1, as_count(params.limit, DEFAULT_LIMIT))
        if ops.glob is not None:
            return await _custom_glob(ops, params.pattern, search_path, limit)

        rg = require_rg(locate)
        if not await ops.exists(search_path):
            raise ToolError(f"Path not found: {search_path}")
        if not await anyio.to_thread.run_sync(os.path.isdir, search_path):
            raise ToolError(f"Not a directory: {search_path}")
        lister = _Lister(compile_find_pattern(params.pattern, search_path), limit)
        argv = [rg, "--files", "--hidden", "--no-require-git", "--color=never", "--sort", "path"]
        try:
            # Run inside the search path so rg prints paths relative to it.
            run = await run_rg(argv, search_path, lister.on_line, table)
        except OSError as exc:
            raise ToolError(f"Failed to run ripgrep: {exc}") from exc
        if not run.stopped and run.code not in (0, 1) and lister.listed == 0:
            raise ToolError(run.failure_text())  # an exit with output is tolerated, as for fd
        if not lister.results:
            return text_result(NO_FILES)
        notice = f"{limit} results limit reached. Use limit={limit * 2} for more, or refine pattern"
        return _finish(lister.results, limit, notice)

    return ToolDefinition(
        name="find",
        label="find",
        description=DESCRIPTION,
        parameters=FindParams,
        execute=execute,
        prompt_snippet=PROMPT_SNIPPET,
    )
