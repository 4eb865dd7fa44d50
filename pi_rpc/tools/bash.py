"""The bash tool (spec 9), and the shell-tool core that powershell shares.

A command runs through replaceable `BashOperations` (local by default) in its own process group,
streams its merged output into an OutputAccumulator, and reports throttled snapshots through
on_update. Abort and timeout kill the whole group and end as errors that still carry the output
and the truncation notice. A finished command's result also has `structuredContent` (its output up
to 1 MiB, exit code and wall time, for programs rather than the model); a non-zero exit is that
result marked `isError`, as in Pi 1.6.0.
"""

from __future__ import annotations

import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Annotated, Protocol

import anyio
import msgspec
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError, ToolErrorWithResult, ToolPreview
from pi_rpc.ai import JsonSchemaSampling, TextContent, Wire
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.process import OnExit, ProcessTable, run_process_group, start_supervisor
from pi_rpc.tools.tool_env import AGENT_ENV, PROVIDER_KEY_VARS, without_withheld
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Truncation, format_size

if TYPE_CHECKING:
    from pi_rpc.tools.output import OutputSnapshot

log = logging.getLogger(__name__)

BASH_UPDATE_THROTTLE_SECONDS = 0.1  # spec 9.11
MAX_TIMEOUT_MS = 2_147_483_647  # spec 9.4: the largest timer delay Node accepts
SESSION_ENV_VARS = ("PI_SESSION_ID", "PI_SESSION_FILE", "PI_PROVIDER", "PI_MODEL", "PI_REASONING_LEVEL")
SESSION_ENV_GUIDELINE = "You can inspect PI_* environment variables for current model and session details."
STRUCTURED_OUTPUT_MAX_BYTES = 1024 * 1024  # `structuredContent.output` beyond this keeps its head and tail


class BashParams(msgspec.Struct, kw_only=True):
    command: Annotated[str, Meta(description="Shell command to execute")]
    timeout: Annotated[float, Meta(description="Timeout in seconds (optional, no default timeout)")] | UnsetType = UNSET


class BashOutput(msgspec.Struct, kw_only=True):
    """`structuredContent` of a finished command (Pi's snake_case keys, in Pi's order)."""

    output: str
    truncated: bool
    full_output_path: str | UnsetType = UNSET
    exit_code: int
    wall_time_seconds: float


class ShellExit(msgspec.Struct):
    """When the shell itself exited, for a timeout that only its background processes caused."""

    code: int | None
    after_seconds: float


class BashDetails(Wire):
    """`details` of a bash result or update; both fields absent unless the output was truncated."""

    truncation: Truncation | UnsetType = UNSET
    full_output_path: str | UnsetType = UNSET


OnData = Callable[[bytes], None]


class BashOperations(Protocol):
    """Where a command runs (spec 1.11, 9.14): local by default, replaceable (e.g. SSH).

    Returns the exit code, or None when there is none. Abort and timeout arrive as cancellation
    (the tool enforces `timeout` with a cancel scope; it is passed on for runners that want it).
    Must call on_data on the event-loop thread, and never after returning.
    """

    # `timeout` is Pi's runner contract (informational); the tool's cancel scope enforces it.
    async def exec(
        self,
        command: str,
        cwd: str,
        on_data: OnData,
        timeout: float | None,  # noqa: ASYNC109
        env: Mapping[str, str],
    ) -> int | None: ...


class SpawnContext(msgspec.Struct):
    command: str
    cwd: str
    env: dict[str, str]


SpawnHook = Callable[[SpawnContext], SpawnContext]


# --- local execution ----------------------------------------------------------------------------


def resolve_bash_shell(shell_path: str | None) -> list[str]:
    """Spec 9.5 (Unix): configured shell, else /bin/bash, else bash on PATH, else sh."""
    if shell_path:
        if not os.path.exists(shell_path):
            raise ToolError(f"Custom shell path not found: {shell_path}")
        return [shell_path, "-c"]
    if os.path.exists("/bin/bash"):
        return ["/bin/bash", "-c"]
    return [shutil.which("bash") or "sh", "-c"]


class LocalShellOperations(msgspec.Struct):
    """Runs the command in a local shell, in its own process group (spec 9.6)."""

    shell_name: str = "bash"  # as it appears in "Cannot execute {shell_name} commands."
    shell_path: str | None = None
    resolve_shell: Callable[[str | None], list[str]] = resolve_bash_shell
    command_prefix: str = ""  # shell setup that is not part of the tool's commandPrefix
    # Who owns what a command leaves running: the session's table (by default, one of these
    # operations' own, which nothing kills for them).
    processes: ProcessTable = msgspec.field(default_factory=ProcessTable)

    def prepare(self) -> None:
        """What the first command would start and load: the process supervisor, and the output
        accumulator and the supervisor's module, which the tool's definition leaves to it."""
        from pi_rpc.tools.output import OutputAccumulator  # noqa: F401 - imported for its module
        from pi_rpc.tools.supervisor import fd_bytes  # noqa: F401 - imported for its module

        start_supervisor()

    async def exec(
        self,
        command: str,
        cwd: str,
        on_data: OnData,
        timeout: float | None,  # noqa: ASYNC109
        env: Mapping[str, str],
        *,
        on_exit: OnExit | None = None,
    ) -> int | None:
        argv = [*self.resolve_shell(self.shell_path), f"{self.command_prefix}{command}"]
        # One stat of a local directory: cheaper inline than a worker thread's round trip.
        if not os.path.isdir(cwd):  # noqa: ASYNC240
            raise ToolError(f"Working directory does not exist: {cwd}\nCannot execute {self.shell_name} commands.")
        try:
            return await run_process_group(argv, cwd, env, on_data, processes=self.processes, on_exit=on_exit)
        except OSError as exc:  # e.g. the shell binary vanished: a tool error, never a crash
            raise ToolError(str(exc)) from exc


# --- text of results ----------------------------------------------------------------------------


def truncation_notice(truncation: Truncation, full_output_path: str | None, last_line_bytes: int) -> str:
    """The bracketed pointer to the full output appended to truncated text (spec 9.12)."""
    end = truncation.total_lines
    start = end - truncation.output_lines + 1
    if truncation.last_line_partial:
        return (
            f"\n\n[Showing last {format_size(truncation.output_bytes)} of line {end} "
            f"(line is {format_size(last_line_bytes)}). Full output: {full_output_path}]"
        )
    if truncation.truncated_by == "lines":
        return f"\n\n[Showing lines {start}-{end} of {end}. Full output: {full_output_path}]"
    return (
        f"\n\n[Showing lines {start}-{end} of {end} ({format_size(DEFAULT_MAX_BYTES)} limit). "
        f"Full output: {full_output_path}]"
    )


def format_output(
    snapshot: OutputSnapshot, *, last_line_bytes: int, empty_text: str = "(no output)"
) -> tuple[str, BashDetails | UnsetType]:
    """Result text and details from a snapshot (Pi's formatOutput); reused for user commands."""
    text = snapshot.content or empty_text
    truncation = snapshot.truncation
    if not truncation.truncated:
        return text, UNSET
    details = BashDetails(truncation=truncation, full_output_path=snapshot.full_output_path or UNSET)
    return text + truncation_notice(truncation, snapshot.full_output_path, last_line_bytes), details


def append_status(text: str, status: str) -> str:
    return f"{text}\n\n{status}" if text else status


def format_timeout(seconds: float) -> str:
    """As the model passed it, JS style: 5 -> "5", 1.5 -> "1.5"."""
    return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def validate_timeout(timeout: float | UnsetType) -> float | None:
    """Spec 9.4, checked before anything starts."""
    if isinstance(timeout, UnsetType):
        return None
    if not math.isfinite(timeout) or timeout <= 0:
        raise ToolError("Invalid timeout: must be a finite number of seconds")
    if timeout * 1000 > MAX_TIMEOUT_MS:
        raise ToolError(f"Invalid timeout: maximum is {MAX_TIMEOUT_MS / 1000} seconds")
    return float(timeout)


def session_environment(
    call: ToolCallContext | None, expose: bool, withheld: Collection[str] = PROVIDER_KEY_VARS
) -> dict[str, str]:
    """Spec 9.7: the daemon's environment minus the provider keys (tools/tool_env.py), plus
    `AI_AGENT=pi` and `PI_CODING_AGENT=true` as Pi's own environment has them, with PI_* describing
    this session (or removed)."""
    env = {k: v for k, v in without_withheld(os.environ, withheld).items() if k not in SESSION_ENV_VARS}
    env |= AGENT_ENV
    if not expose or call is None:
        return env
    if call.session_id:
        env["PI_SESSION_ID"] = call.session_id
    if call.session_file:
        env["PI_SESSION_FILE"] = call.session_file
    if call.model is not None:
        env["PI_PROVIDER"] = call.model.provider
        env["PI_MODEL"] = call.model.id
    if call.thinking_level:
        env["PI_REASONING_LEVEL"] = call.thinking_level
    return env


# --- streaming updates --------------------------------------------------------------------------


class UpdateThrottle:
    """At most one update per interval: leading edge at once, else one trailing emit (spec 9.11)."""

    def __init__(
        self,
        emit: Callable[[], None],
        interval: float = BASH_UPDATE_THROTTLE_SECONDS,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self._emit = emit
        self._interval = interval
        self._clock = clock
        self._last = -math.inf
        self._dirty = False
        self._wake = anyio.Event()

    def request(self) -> None:
        self._dirty = True
        if self._clock() - self._last >= self._interval:
            self.flush()
        else:
            self._wake.set()

    def flush(self) -> None:
        if not self._dirty:
            return
        self._dirty = False
        self._last = self._clock()
        self._emit()

    async def run_trailing(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            delay = self._last + self._interval - self._clock()
            if delay > 0:
                await anyio.sleep(delay)
            self.flush()


# --- the shared shell tool ----------------------------------------------------------------------


class ShellToolConfig(msgspec.Struct, frozen=True):
    name: str
    label: str
    shell_name: str  # "bash" / "PowerShell", as in the description
    prompt_snippet: str
    temp_file_prefix: str
    guidelines: list[str] = msgspec.field(default_factory=lambda: [SESSION_ENV_GUIDELINE])

    @property
    def description(self) -> str:
        article = "a bash" if self.shell_name == "bash" else f"a {self.shell_name}"
        return (
            f"Execute {article} command in the current working directory. Returns stdout and stderr. "
            f"Output is truncated to last {DEFAULT_MAX_LINES} lines or {DEFAULT_MAX_BYTES // 1024}KB "
            "(whichever is hit first). If truncated, full output is saved to a temp file. "
            "Optionally provide a timeout in seconds."
        )


BASH_CONFIG = ShellToolConfig(
    name="bash",
    label="bash",
    shell_name="bash",
    prompt_snippet="Execute bash commands (ls, grep, find, etc.)",
    temp_file_prefix="pi-bash",
)


def _update_details(snap: OutputSnapshot) -> BashDetails:
    """`details` of a streamed update: the truncation and log path so far, each absent until set."""
    return BashDetails(
        truncation=snap.truncation if snap.truncation.truncated else UNSET,
        full_output_path=snap.full_output_path or UNSET,
    )


def create_shell_tool_definition(
    config: ShellToolConfig,
    operations: BashOperations,
    *,
    command_prefix: str | None = None,
    expose_session_environment: bool = True,
    spawn_hook: SpawnHook | None = None,
    withheld_env: Collection[str] = PROVIDER_KEY_VARS,
) -> ToolDefinition:
    async def execute(params: BashParams, call: ToolCallContext) -> AgentToolResult:
        from pi_rpc.tools.output import OutputAccumulator  # with the first command, not the definition

        timeout = validate_timeout(params.timeout)
        command = f"{command_prefix}\n{params.command}" if command_prefix else params.command
        spawn = SpawnContext(command, call.cwd, session_environment(call, expose_session_environment, withheld_env))
        if spawn_hook is not None:
            spawn = spawn_hook(msgspec.structs.replace(spawn, env=dict(spawn.env)))
        output = OutputAccumulator(temp_file_prefix=config.temp_file_prefix)

        def emit_update() -> None:
            snap = output.snapshot(persist_if_truncated=True)
            call.on_update(AgentToolResult(content=[TextContent(text=snap.content)], details=_update_details(snap)))

        throttle = UpdateThrottle(emit_update)
        accepting = True

        def on_data(chunk: bytes) -> None:
            if accepting:
                output.append(chunk)
                throttle.request()

        def finish_output() -> OutputSnapshot:
            nonlocal accepting
            accepting = False
            output.finish()
            throttle.flush()
            snap = output.snapshot(persist_if_truncated=True)
            output.close_temp_file()
            return snap

        call.on_update(AgentToolResult(content=[], details=UNSET))
        started = time.monotonic()
        shell_exit: ShellExit | None = None
        try:
            code, timed_out, shell_exit = await _run_with_updates(operations, spawn, timeout, on_data, throttle)
        except anyio.get_cancelled_exc_class():
            # Abort: the last update is the aborted result (see `final_update_on_abort`), so flush
            # what was seen and word it here, where the last line's size is known (no awaits).
            text = ""
            details: BashDetails | UnsetType = UNSET
            try:
                snap = finish_output()
            except Exception:  # e.g. the log file's disk is full: the abort still has to be told
                log.exception("could not flush the output of an aborted %s command", config.name)
            else:
                text, _ = format_output(snap, last_line_bytes=output.last_line_bytes, empty_text="")
                details = _update_details(snap)
            aborted = append_status(text, "Command aborted")
            call.on_update(AgentToolResult(content=[TextContent(text=aborted)], details=details))
            raise
        except Exception:
            # A runner error: flush what was seen (no awaits) and let the error be the result.
            try:
                finish_output()
            except Exception:  # the original error matters more
                log.exception("could not flush the output of a failed %s command", config.name)
            raise

        snap = finish_output()
        if timed_out:
            text, details = format_output(snap, last_line_bytes=output.last_line_bytes, empty_text="")
            assert timeout is not None
            raise ToolErrorWithResult(append_status(text, timeout_status(timeout, shell_exit)), details)
        text, details = format_output(snap, last_line_bytes=output.last_line_bytes)
        if code is None:
            raise ToolErrorWithResult(f"{text}\n\nCommand terminated without an exit code", details)
        full, shortened = output.read_full_output(STRUCTURED_OUTPUT_MAX_BYTES)
        structured = BashOutput(
            output=full,
            truncated=shortened,
            full_output_path=snap.full_output_path if shortened and snap.full_output_path else UNSET,
            exit_code=code,
            wall_time_seconds=_tenths(time.monotonic() - started),
        )
        if code != 0:
            text = f"{text}\n\nCommand exited with code {code}"
        return AgentToolResult(
            content=[TextContent(text=text)],
            details=details,
            structured_content=structured,
            is_error=True if code != 0 else UNSET,
        )

    return ToolDefinition(
        name=config.name,
        label=config.label,
        description=config.description,
        parameters=BashParams,
        execute=execute,
        prompt_snippet=config.prompt_snippet,
        prompt_guidelines=list(config.guidelines) if expose_session_environment else [],
        constrained_sampling=JsonSchemaSampling(strict="prefer"),
        final_update_on_abort=True,
        mutating=True,
        preview=preview_command,
        prepare=operations.prepare if isinstance(operations, LocalShellOperations) else None,
    )


async def preview_command(params: BashParams, call: ToolCallContext) -> ToolPreview:
    first_line = params.command.strip().split("\n", 1)[0]
    return ToolPreview(title=f"Run {first_line}", command=params.command)


def timeout_status(timeout: float, shell_exit: ShellExit | None) -> str:
    """The timeout's line; when the shell had exited before it, what the shell said and when
    (the wait was only for the background processes still writing to its output)."""
    status = f"Command timed out after {format_timeout(timeout)} seconds"
    if shell_exit is None:
        return status
    return (
        f"{status}. The shell exited with code {shell_exit.code} after {format_timeout(shell_exit.after_seconds)} "
        "seconds, but background processes it started kept writing output until the timeout."
    )


def _tenths(seconds: float) -> float:
    """Seconds rounded to a tenth, as Pi reports them (`Math.round(ms / 100) / 10`)."""
    tenths = math.floor(seconds * 10 + 0.5) / 10
    return int(tenths) if tenths.is_integer() else tenths


async def _run_with_updates(
    operations: BashOperations,
    spawn: SpawnContext,
    timeout: float | None,  # noqa: ASYNC109 - enforced here, with a cancel scope
    on_data: OnData,
    throttle: UpdateThrottle,
) -> tuple[int | None, bool, ShellExit | None]:
    """Run the command beside the trailing-update timer; returns (exit code, timed out, and when
    the shell exited if it did before a timeout)."""
    code: int | None = None
    error: Exception | None = None
    started = time.monotonic()
    shell_exit: ShellExit | None = None

    def exited(exit_code: int | None) -> None:
        nonlocal shell_exit
        shell_exit = ShellExit(exit_code, _tenths(time.monotonic() - started))

    async with anyio.create_task_group() as tg:
        tg.start_soon(throttle.run_trailing)
        try:
            with anyio.move_on_after(math.inf if timeout is None else timeout) as deadline:
                if isinstance(operations, LocalShellOperations):  # the one runner that can tell
                    code = await operations.exec(spawn.command, spawn.cwd, on_data, timeout, spawn.env, on_exit=exited)
                else:
                    code = await operations.exec(spawn.command, spawn.cwd, on_data, timeout, spawn.env)
        except Exception as exc:  # re-raised below, unwrapped from the task group's ExceptionGroup
            error = exc
        finally:
            tg.cancel_scope.cancel()
    if error is not None:
        raise error
    return code, deadline.cancelled_caught, shell_exit if deadline.cancelled_caught else None


def create_bash_tool(
    *,
    operations: BashOperations | None = None,
    command_prefix: str | None = None,
    shell_path: str | None = None,
    expose_session_environment: bool = True,
    spawn_hook: SpawnHook | None = None,
    withheld_env: Collection[str] = PROVIDER_KEY_VARS,
    processes: ProcessTable | None = None,
) -> ToolDefinition:
    ops = operations
    if ops is None:
        table = ProcessTable() if processes is None else processes
        ops = LocalShellOperations(shell_name="bash", shell_path=shell_path, processes=table)
    return create_shell_tool_definition(
        BASH_CONFIG,
        ops,
        command_prefix=command_prefix,
        expose_session_environment=expose_session_environment,
        spawn_hook=spawn_hook,
        withheld_env=withheld_env,
    )
