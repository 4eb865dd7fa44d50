"""The bash tool, its process-group handling and the powershell variant (spec 9, 10.8)."""

from __future__ import annotations

import math
import re
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path

import anyio
import msgspec
import pytest
from msgspec import UNSET, UnsetType
from msgspec.structs import replace

from pi_rpc.agent.types import AgentToolResult, ToolCallContext, ToolError
from pi_rpc.ai.types import JsonSchemaSampling, Model, TextContent
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.bash import (
    STRUCTURED_OUTPUT_MAX_BYTES,
    BashDetails,
    BashOutput,
    BashParams,
    ShellExit,
    SpawnContext,
    UpdateThrottle,
    create_bash_tool,
    timeout_status,
)
from pi_rpc.tools.powershell import create_powershell_tool
from pi_rpc.tools.process import ProcessTable, ProcessTables, run_process_group

from .process_watch import live_members, wait_until_dead

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def temp_logs_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Full-output logs land in the test's own directory."""
    logs = tmp_path / "logs"
    logs.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(logs))
    return logs


def text_of(result: AgentToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, TextContent))


async def run(
    tool: ToolDefinition,
    command: str,
    ctx: ToolCallContext,
    *,
    seconds: float | UnsetType = UNSET,
    updates: list[AgentToolResult] | None = None,
) -> AgentToolResult:
    sink = updates if updates is not None else []
    params = BashParams(command=command, timeout=seconds)
    return await tool.execute(params, replace(ctx, id="call-1", on_update=sink.append))


async def execute(
    tool: ToolDefinition, params: BashParams, on_update: Callable[[AgentToolResult], None], ctx: ToolCallContext
) -> None:
    await tool.execute(params, replace(ctx, id="call-1", on_update=on_update))


def read_text(path: str) -> str:
    return Path(path).read_text()


def size_of(path: str) -> int:
    return Path(path).stat().st_size


class ScriptedOperations:
    """A runner that feeds chunks synchronously, as a remote backend might."""

    def __init__(self, chunks: list[bytes], code: int | None = 0) -> None:
        self.chunks = chunks
        self.code = code
        self.calls: list[tuple[str, str, Mapping[str, str]]] = []

    async def exec(
        self,
        command: str,
        cwd: str,
        on_data: Callable[[bytes], None],
        timeout: float | None,  # noqa: ASYNC109
        env: Mapping[str, str],
    ) -> int | None:
        self.calls.append((command, cwd, env))
        for chunk in self.chunks:
            on_data(chunk)
        return self.code


@pytest.fixture
def ctx(tmp_path: Path) -> ToolCallContext:
    work = tmp_path / "work"
    work.mkdir()
    return ToolCallContext(cwd=str(work))


# --- declaration --------------------------------------------------------------------------------


def test_declaration() -> None:
    """spec 9.1, 9.2"""
    tool = create_bash_tool()
    assert (tool.name, tool.label) == ("bash", "bash")
    assert tool.description == (
        "Execute a bash command in the current working directory. Returns stdout and stderr. "
        "Output is truncated to last 2000 lines or 50KB (whichever is hit first). If truncated, "
        "full output is saved to a temp file. Optionally provide a timeout in seconds."
    )
    assert tool.prompt_snippet == "Execute bash commands (ls, grep, find, etc.)"
    assert tool.prompt_guidelines == [
        "You can inspect PI_* environment variables for current model and session details."
    ]
    assert create_bash_tool(expose_session_environment=False).prompt_guidelines == []
    assert tool.constrained_sampling == JsonSchemaSampling(strict="prefer")
    schema = msgspec.json.schema_components([BashParams])[1]["BashParams"]
    assert schema["required"] == ["command"]
    assert schema["properties"]["command"] == {"type": "string", "description": "Shell command to execute"}
    assert schema["properties"]["timeout"] == {
        "type": "number",
        "description": "Timeout in seconds (optional, no default timeout)",
    }


def test_powershell_declaration() -> None:
    """spec 9.2, 9.15"""
    tool = create_powershell_tool()
    assert (tool.name, tool.label) == ("powershell", "powershell")
    assert tool.description.startswith("Execute a PowerShell command in the current working directory.")
    assert tool.prompt_snippet == "Execute PowerShell commands"
    assert tool.parameters is BashParams


@pytest.mark.skipif(shutil.which("pwsh") is not None, reason="PowerShell is installed here")
async def test_powershell_without_pwsh_is_a_clear_error(ctx: ToolCallContext) -> None:
    """spec 9.15: off by default; without pwsh the call fails with a tool error, never a crash."""
    with pytest.raises(ToolError, match="^PowerShell not found"):
        await run(create_powershell_tool(), "Get-Date", ctx)


# --- outcomes -----------------------------------------------------------------------------------


async def test_output_and_merged_stderr(ctx: ToolCallContext) -> None:
    """spec 9.6, 9.13: stdout and stderr in one stream; success has no details."""
    result = await run(create_bash_tool(), "echo out; echo err >&2", ctx)
    assert text_of(result) == "out\nerr\n"
    assert result.details is UNSET


async def test_no_output(ctx: ToolCallContext) -> None:
    """spec 9.12"""
    assert text_of(await run(create_bash_tool(), "true", ctx)) == "(no output)"


async def test_stdin_is_closed(ctx: ToolCallContext) -> None:
    """spec 9.6: a command that reads stdin sees EOF at once instead of eating the RPC wire."""
    assert text_of(await run(create_bash_tool(), "cat; echo end", ctx)) == "end\n"


async def test_runs_in_effective_cwd(ctx: ToolCallContext, tmp_path: Path) -> None:
    """spec 1.10, 9.6: each call runs in the cwd its context gives, one tool serving both."""
    tool = create_bash_tool()
    assert text_of(await run(tool, "pwd", ctx)) == f"{ctx.cwd}\n"
    assert text_of(await run(tool, "pwd", ToolCallContext(cwd=str(tmp_path)))) == f"{tmp_path}\n"


async def test_non_zero_exit(ctx: ToolCallContext) -> None:
    """spec 9.13 (Pi 1.6.0): a result marked isError, its text the output and the exit status, its
    structured content the exit code."""
    result = await run(create_bash_tool(), "echo hi; exit 3", ctx)
    assert result.is_error is True and text_of(result) == "hi\n\n\nCommand exited with code 3"
    assert result.structured_content == BashOutput(output="hi\n", truncated=False, exit_code=3, wall_time_seconds=0)
    quiet = await run(create_bash_tool(), "exit 1", ctx)
    assert quiet.is_error is True and text_of(quiet) == "(no output)\n\nCommand exited with code 1"


async def test_signal_death_reports_128_plus_signal(ctx: ToolCallContext) -> None:
    """spec 9.13"""
    result = await run(create_bash_tool(), "kill -9 $$", ctx)
    assert text_of(result) == "(no output)\n\nCommand exited with code 137"
    assert isinstance(result.structured_content, BashOutput) and result.structured_content.exit_code == 137


async def test_success_has_structured_output(ctx: ToolCallContext) -> None:
    """Pi 0.99: `structuredContent` {output, truncated, exit_code, wall_time_seconds} (a tenth of a
    second), beside the model's text; no `isError`."""
    result = await run(create_bash_tool(), "echo one; sleep 0.3; echo two", ctx)
    assert result.is_error is UNSET
    structured = result.structured_content
    assert isinstance(structured, BashOutput)
    assert (structured.output, structured.truncated, structured.exit_code) == ("one\ntwo\n", False, 0)
    assert (
        structured.wall_time_seconds >= 0.3 and round(structured.wall_time_seconds, 1) == structured.wall_time_seconds
    )
    assert msgspec.json.decode(msgspec.json.encode(structured)).keys() == {
        "output",
        "truncated",
        "exit_code",
        "wall_time_seconds",
    }


async def test_structured_output_is_whole_up_to_a_mib_then_head_and_tail(ctx: ToolCallContext) -> None:
    """Pi 0.99: the model's text keeps the last 2000 lines, the structured output all of them up to
    1 MiB; beyond, the first and last halves around `[... N bytes omitted ...]` and the log's path."""
    small = await run(create_bash_tool(), "seq 1 3000", ctx)
    assert isinstance(small.structured_content, BashOutput)
    assert small.structured_content.output == "".join(f"{i}\n" for i in range(1, 3001))
    assert small.structured_content.truncated is False and small.structured_content.full_output_path is UNSET
    big = await run(create_bash_tool(), "head -c 1100000 /dev/zero | tr '\\0' a; printf END", ctx)
    structured = big.structured_content
    assert isinstance(structured, BashOutput) and structured.truncated is True
    half = STRUCTURED_OUTPUT_MAX_BYTES // 2
    omitted = 1100003 - STRUCTURED_OUTPUT_MAX_BYTES
    assert structured.output == "a" * half + f"\n\n[... {omitted} bytes omitted ...]\n\n" + "a" * (half - 3) + "END"
    assert isinstance(big.details, BashDetails) and structured.full_output_path == big.details.full_output_path


async def test_runner_without_exit_code(ctx: ToolCallContext) -> None:
    """spec 9.13"""
    tool = create_bash_tool(operations=ScriptedOperations([b"x"], code=None))
    with pytest.raises(ToolError) as err:
        await run(tool, "whatever", ctx)
    assert str(err.value) == "x\n\nCommand terminated without an exit code"


async def test_non_zero_exit_keeps_truncation_details(ctx: ToolCallContext) -> None:
    """spec 9.13: the notice is part of the error text; details survive."""
    result = await run(create_bash_tool(), "seq 1 3000; exit 2", ctx)
    details = result.details
    assert isinstance(details, BashDetails) and not isinstance(details.truncation, UnsetType)
    assert text_of(result).endswith(
        f"[Showing lines 1001-3000 of 3000. Full output: {details.full_output_path}]\n\nCommand exited with code 2"
    )


async def test_missing_working_directory(tmp_path: Path) -> None:
    """spec 9.6"""
    missing = str(tmp_path / "gone")
    with pytest.raises(ToolError) as err:
        await run(create_bash_tool(), "echo hi", ToolCallContext(cwd=missing))
    assert str(err.value) == f"Working directory does not exist: {missing}\nCannot execute bash commands."


async def test_custom_shell_path_must_exist(ctx: ToolCallContext) -> None:
    """spec 9.5"""
    with pytest.raises(ToolError) as err:
        await run(create_bash_tool(shell_path="/no/such/shell"), "echo", ctx)
    assert str(err.value) == "Custom shell path not found: /no/such/shell"


async def test_custom_shell_path_is_used(ctx: ToolCallContext) -> None:
    """spec 9.5: [shell, "-c", command]."""
    sh = shutil.which("sh")
    assert sh is not None
    tool = create_bash_tool(shell_path=sh)
    assert text_of(await run(tool, "echo via sh", ctx)) == "via sh\n"


async def test_command_prefix_and_spawn_hook(ctx: ToolCallContext) -> None:
    """spec 9.3: prefix prepended as "{prefix}\\n{command}"; the hook may rewrite the spawn."""
    ops = ScriptedOperations([])

    def hook(spawn: SpawnContext) -> SpawnContext:
        spawn.env["HOOKED"] = "1"
        return SpawnContext(spawn.command + " # hooked", "/elsewhere", spawn.env)

    await run(create_bash_tool(operations=ops, command_prefix="set -e", spawn_hook=hook), "ls", ctx)
    command, cwd, env = ops.calls[0]
    assert (command, cwd, env["HOOKED"]) == ("set -e\nls # hooked", "/elsewhere", "1")
    real = create_bash_tool(command_prefix="GREETING=hello")
    assert text_of(await run(real, "echo $GREETING", ctx)) == "hello\n"


@pytest.mark.parametrize(
    ("seconds", "message"),
    [
        (0, "Invalid timeout: must be a finite number of seconds"),
        (-1, "Invalid timeout: must be a finite number of seconds"),
        (math.inf, "Invalid timeout: must be a finite number of seconds"),
        (math.nan, "Invalid timeout: must be a finite number of seconds"),
        (2147484, "Invalid timeout: maximum is 2147483.647 seconds"),
    ],
)
async def test_invalid_timeout(ctx: ToolCallContext, seconds: float, message: str) -> None:
    """spec 9.4: rejected before anything starts."""
    ops = ScriptedOperations([b"ran"])
    updates: list[AgentToolResult] = []
    with pytest.raises(ToolError) as err:
        await run(create_bash_tool(operations=ops), "echo", ctx, seconds=seconds, updates=updates)
    assert str(err.value) == message
    assert ops.calls == [] and updates == []


async def test_largest_timeout_is_accepted(ctx: ToolCallContext) -> None:
    """spec 9.4: 2147483.647 s is exactly the maximum."""
    assert text_of(await run(create_bash_tool(), "echo ok", ctx, seconds=2147483.647)) == "ok\n"


async def test_timeout_kills_the_group(ctx: ToolCallContext) -> None:
    """spec 9.8, 9.13: the status line follows the output; background children die too."""
    with pytest.raises(ToolError) as err:
        await run(create_bash_tool(), "sleep 30 & echo $$ $!; sleep 30", ctx, seconds=0.5)
    first_line, rest = str(err.value).split("\n", 1)
    assert rest == "\n\nCommand timed out after 0.5 seconds"
    pgid, background = (int(p) for p in first_line.split())
    await wait_until_dead([background])
    assert live_members(pgid) == []


async def test_timeout_after_the_shell_exited_says_its_exit_code(ctx: ToolCallContext) -> None:
    """Pi 1.6.0: the shell exited at once, but a background process it started kept writing to its
    output until the timeout: both facts, the shell's exit code and when it exited, are told."""
    command = "(while :; do echo tick; sleep 0.05; done) & exit 4"
    with pytest.raises(ToolError) as err:
        await run(create_bash_tool(), command, ctx, seconds=1)
    text = str(err.value)
    assert text.startswith("tick\n")
    status = text.rsplit("\n\n", 1)[1]
    assert re.fullmatch(
        r"Command timed out after 1 seconds\. The shell exited with code 4 after (0|0\.\d) seconds, but background "
        r"processes it started kept writing output until the timeout\.",
        status,
    ), status


def test_timeout_status_wording() -> None:
    """Pi 1.6.0's words (bash.js), with the seconds printed as JavaScript prints numbers."""
    assert timeout_status(2, None) == "Command timed out after 2 seconds"
    assert timeout_status(1.5, ShellExit(0, 0.2)) == (
        "Command timed out after 1.5 seconds. The shell exited with code 0 after 0.2 seconds, "
        "but background processes it started kept writing output until the timeout."
    )


async def test_timeout_without_output(ctx: ToolCallContext) -> None:
    """spec 9.13: just the status line; {timeout} as passed."""
    with pytest.raises(ToolError) as err:
        await run(create_bash_tool(), "sleep 30", ctx, seconds=1)
    assert str(err.value) == "Command timed out after 1 seconds"


# --- abort --------------------------------------------------------------------------------------


async def test_abort_kills_the_whole_group_at_once(ctx: ToolCallContext) -> None:
    """spec 9.8, 9.13: SIGKILL to the group, grandchildren included; the last update, which the
    loop makes the result, is the output and "Command aborted"."""
    processes = ProcessTable()
    tool = create_bash_tool(processes=processes)
    updates: list[AgentToolResult] = []
    started = anyio.Event()

    def on_update(result: AgentToolResult) -> None:
        updates.append(result)
        if text_of(result).endswith("\n"):
            started.set()

    params = BashParams(command="sleep 30 & echo $$ $!; sleep 30")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(execute, tool, params, on_update, ctx)
            await started.wait()
            pgid, background = (int(p) for p in text_of(updates[-1]).split())
            seen = len(updates)
            members = live_members(pgid)
            assert set(members) >= {pgid, background}
            scope.cancel()
    assert scope.cancelled_caught
    await wait_until_dead(members)
    assert live_members(pgid) == []
    assert pgid not in processes.live()
    assert tool.final_update_on_abort
    assert len(updates) == seen + 1
    assert text_of(updates[-1]) == f"{pgid} {background}\n\n\nCommand aborted"
    assert msgspec.json.encode(updates[-1].details) == b"{}"


async def test_abort_before_any_output(ctx: ToolCallContext) -> None:
    """spec 9.13: aborted with nothing printed, the result is "Command aborted" alone."""
    tool = create_bash_tool()
    updates: list[AgentToolResult] = []
    running = anyio.Event()

    def on_update(result: AgentToolResult) -> None:
        updates.append(result)
        running.set()

    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(execute, tool, BashParams(command="sleep 30"), on_update, ctx)
            await running.wait()
            scope.cancel()
    assert [text_of(u) if u.content else "" for u in updates] == ["", "Command aborted"]


async def test_abort_text_keeps_the_truncation_notice(ctx: ToolCallContext) -> None:
    """spec 9.13: "any truncation notice (with Full output: {path}) is still part of {text}"."""
    tool = create_bash_tool()
    updates: list[AgentToolResult] = []
    all_there = anyio.Event()

    def on_update(result: AgentToolResult) -> None:
        updates.append(result)
        d = result.details
        if isinstance(d, BashDetails) and not isinstance(d.truncation, UnsetType):
            if d.truncation.total_lines == 3000:
                all_there.set()

    params = BashParams(command="seq 1 3000; sleep 30")
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(execute, tool, params, on_update, ctx)
            await all_there.wait()
            scope.cancel()
    last = updates[-1]
    assert isinstance(last.details, BashDetails)
    path = last.details.full_output_path
    assert isinstance(path, str) and read_text(path) == "".join(f"{i}\n" for i in range(1, 3001))
    text = text_of(last)
    assert text.startswith("1001\n1002\n")
    assert text.endswith(f"3000\n\n[Showing lines 1001-3000 of 3000. Full output: {path}]\n\nCommand aborted")


# --- output handling ----------------------------------------------------------------------------


async def test_4000_lines(ctx: ToolCallContext) -> None:
    """spec 10.8 (test-pinned), through a real shell."""
    result = await run(create_bash_tool(), "seq -f 'line-%04g' 1 4000", ctx)
    details = result.details
    assert isinstance(details, BashDetails) and not isinstance(details.truncation, UnsetType)
    assert (details.truncation.total_lines, details.truncation.output_lines) == (4000, 2000)
    text = text_of(result)
    assert text.startswith("line-2001\n")
    assert text.endswith(f"line-4000\n\n[Showing lines 2001-4000 of 4000. Full output: {details.full_output_path}]")
    assert isinstance(details.full_output_path, str)
    assert read_text(details.full_output_path) == "".join(f"line-{i:04d}\n" for i in range(1, 4001))
    assert msgspec.to_builtins(details)["truncation"]["truncatedBy"] == "lines"


async def test_truncated_by_bytes_notice(ctx: ToolCallContext, temp_logs_in_tmp_path: Path) -> None:
    """spec 9.12: byte-limited notice, log file named after the bash prefix."""
    command = "for i in $(seq 1 100); do head -c 1000 /dev/zero | tr '\\0' x; echo; done"
    result = await run(create_bash_tool(), command, ctx)
    details = result.details
    assert isinstance(details, BashDetails) and isinstance(details.full_output_path, str)
    assert text_of(result).endswith(
        f"\n\n[Showing lines 50-100 of 100 (50.0KB limit). Full output: {details.full_output_path}]"
    )
    assert Path(details.full_output_path).parent == temp_logs_in_tmp_path
    assert Path(details.full_output_path).name.startswith("pi-bash-")
    assert size_of(details.full_output_path) == 100 * 1001


async def test_character_split_across_chunks(ctx: ToolCallContext) -> None:
    """spec 10.2: E2 | 82 AC still decodes to the euro sign."""
    tool = create_bash_tool(operations=ScriptedOperations([b"\xe2", b"\x82\xac", b"\n"]))
    assert text_of(await run(tool, "anything", ctx)) == "€\n"


async def test_updates_are_throttled(ctx: ToolCallContext) -> None:
    """spec 9.11: 5000 single-line chunks emitted synchronously yield fewer than 25 updates."""
    chunks = [f"line {i}\n".encode() for i in range(5000)]
    tool = create_bash_tool(operations=ScriptedOperations(chunks))
    updates: list[AgentToolResult] = []
    result = await run(tool, "spam", ctx, updates=updates)
    assert len(updates) < 25
    assert updates[0].content == [] and updates[0].details is UNSET
    # The final pending update is flushed: the last one shows the end of the output.
    assert text_of(updates[-1]).endswith("line 4999")
    assert text_of(result).startswith("line 3000\n")


async def test_first_update_is_immediate_and_later_ones_trail(ctx: ToolCallContext) -> None:
    """spec 9.11: leading edge at once, then a single trailing update for a burst."""
    tool = create_bash_tool()
    updates: list[AgentToolResult] = []
    await run(tool, "echo one; sleep 0.3; echo two; echo three", ctx, updates=updates)
    texts = [text_of(u) for u in updates]
    assert texts[0] == "" and texts[1].startswith("one\n")
    assert texts[-1] == "one\ntwo\nthree\n"


def test_throttle_leading_edge_then_one_trailing_emit() -> None:
    """spec 9.11 with a fake clock: at most one emit per 100 ms; a burst becomes one trailing emit."""
    now = [0.0]
    emitted: list[float] = []
    throttle = UpdateThrottle(lambda: emitted.append(now[0]), interval=0.1, clock=lambda: now[0])
    throttle.request()  # leading edge: at once
    for t in (0.01, 0.05, 0.09):
        now[0] = t
        throttle.request()  # inside the window: held
    assert emitted == [0.0]
    now[0] = 0.1
    throttle.flush()  # what the trailing timer does when the window closes
    assert emitted == [0.0, 0.1]
    throttle.flush()  # nothing new since: no empty emit
    now[0] = 0.35
    throttle.request()  # a quiet gap: leading edge again
    assert emitted == [0.0, 0.1, 0.35]


async def test_session_environment(ctx: ToolCallContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec 9.7: inherited PI_* removed first, then set from the session context; `AI_AGENT=pi` and
    `PI_CODING_AGENT=true` always, as Pi 1.6.0's bash showed them (its own environment has them)."""
    monkeypatch.setenv("PI_MODEL", "stale")
    monkeypatch.setenv("PI_SESSION_FILE", "stale")
    monkeypatch.setenv("KEEP_ME", "yes")
    rich = ToolCallContext(
        cwd=ctx.cwd,
        model=Model(id="claude-x", name="X", api="anthropic-messages", provider="anthropic"),
        session_id="sess-1",
        session_file=None,
        thinking_level="high",
    )
    monkeypatch.setenv("AI_AGENT", "other")
    names = "PI_(MODEL|PROVIDER|REASONING_LEVEL|SESSION_ID|SESSION_FILE|CODING_AGENT)|AI_AGENT|KEEP_ME"
    command = f"env | grep -E '^({names})=' | sort"
    assert text_of(await run(create_bash_tool(), command, rich)) == (
        "AI_AGENT=pi\nKEEP_ME=yes\nPI_CODING_AGENT=true\nPI_MODEL=claude-x\nPI_PROVIDER=anthropic\n"
        "PI_REASONING_LEVEL=high\nPI_SESSION_ID=sess-1\n"
    )
    hidden = create_bash_tool(expose_session_environment=False)
    assert text_of(await run(hidden, command, rich)) == "AI_AGENT=pi\nKEEP_ME=yes\nPI_CODING_AGENT=true\n"


async def test_daemonised_child_does_not_hold_the_result(ctx: ToolCallContext) -> None:
    """spec 9.9: the shell exited but a background child keeps stdout open; the call still ends.

    Its group stays registered in the session's table, so the daemon can kill it at exit (spec 9.8).
    """
    tables = ProcessTables()  # the daemon's
    processes = tables.new_table()
    result = await run(create_bash_tool(processes=processes), "echo $$; sleep 30 &", ctx)
    pgid = int(text_of(result))
    assert pgid in processes.live()
    members = live_members(pgid)
    assert members
    tables.kill_all()
    await wait_until_dead(members)
    assert live_members(pgid) == []


# --- process helpers shared with the ripgrep tools ----------------------------------------------


async def test_stderr_can_be_kept_apart(tmp_path: Path) -> None:
    """ripgrep callers read stderr separately; the exit code is returned as is."""
    out: list[bytes] = []
    err: list[bytes] = []
    code = await run_process_group(
        ["sh", "-c", "echo out; echo err >&2; exit 2"],
        str(tmp_path),
        None,
        out.append,
        on_stderr=err.append,
        processes=ProcessTable(),
    )
    assert (code, b"".join(out), b"".join(err)) == (2, b"out\n", b"err\n")


async def test_spawn_error_is_an_os_error(tmp_path: Path) -> None:
    """spec 9.6: a missing program is reported, never a crash."""
    with pytest.raises(FileNotFoundError):
        await run_process_group(["/no/such/program"], str(tmp_path), None, lambda _: None, processes=ProcessTable())


async def test_a_failing_sink_kills_the_group_and_surfaces_its_error(tmp_path: Path) -> None:
    """An error raised while handling output ends the run with that error, not a group of one."""

    def sink(_: bytes) -> None:
        raise ValueError("disk full")

    with pytest.raises(ValueError, match="^disk full$"):
        await run_process_group(["sh", "-c", "echo x; sleep 30"], str(tmp_path), None, sink, processes=ProcessTable())
