"""Spawning tool processes in their own process group, and killing the whole group (spec 9.6-9.9).

Used by bash/powershell and by the ripgrep-backed tools. A child never inherits the daemon's
stdin (that is the JSON-RPC wire). Abort, timeout and errors SIGKILL the whole group at once, so
background grandchildren (`sleep 30 &`) die too; anyio alone would only kill the direct child.
Groups left running after a normal exit (daemonised descendants) stay registered so the daemon can
kill them when it exits, as Pi does with its tracked detached children.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence

import anyio
import anyio.abc

log = logging.getLogger(__name__)

# Spec 9.9: after the shell exits, wait this long without output before giving up on
# descendants that still hold the pipe open.
EXIT_SILENCE_SECONDS = 0.1

OnChunk = Callable[[bytes], None]

_live_groups: set[int] = set()


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_process_group(pid: int) -> None:
    """SIGKILL the group led by pid, no grace period (spec 9.8); the pid alone if that fails."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _live_groups.discard(pid)


def kill_all_process_groups() -> None:
    """Kill every group a tool started that may still be running (daemon shutdown)."""
    for pgid in list(_live_groups):
        kill_process_group(pgid)


def live_process_groups() -> frozenset[int]:
    return frozenset(pgid for pgid in _live_groups if _group_exists(pgid))


def register_process_group(pgid: int) -> None:
    """Track a group for kill_all_process_groups (for callers that spawn processes themselves)."""
    # Drop groups that ended on their own, so a reused pid is never killed later.
    for old in [g for g in _live_groups if not _group_exists(g)]:
        _live_groups.discard(old)
    _live_groups.add(pgid)


def exit_code_of(returncode: int) -> int:
    """A signal death is reported the shell way, 128 + signal number (spec 9.13)."""
    return 128 - returncode if returncode < 0 else returncode


async def _pump(stream: anyio.abc.ByteReceiveStream, sink: OnChunk, activity: list[int]) -> None:
    async for chunk in stream:
        activity[0] += 1
        sink(chunk)


async def _await_output_end(done: anyio.Event, activity: list[int]) -> None:
    """Return at EOF, or once the still-open pipes stayed silent for EXIT_SILENCE_SECONDS."""
    while not done.is_set():
        seen = activity[0]
        with anyio.move_on_after(EXIT_SILENCE_SECONDS):
            await done.wait()
        if activity[0] == seen:
            return


async def run_process_group(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str] | None,
    on_chunk: OnChunk,
    *,
    on_stderr: OnChunk | None = None,
) -> int | None:
    """Run argv in a new session with stdin at /dev/null and return its exit code.

    stdout and stderr are merged in arrival order into on_chunk, unless on_stderr is given, in
    which case stderr is delivered there separately (ripgrep's error messages). Raises OSError
    if the program cannot be started. On any exceptional exit (cancellation included) the whole
    process group is killed before the exception propagates.
    """
    # Shielded: an abort landing mid-spawn would make asyncio kill only the direct child and
    # orphan the rest of the group; once we hold the pid, the handler below kills the group.
    with anyio.CancelScope(shield=True):
        proc = await anyio.open_process(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if on_stderr is not None else subprocess.STDOUT,
            start_new_session=os.name != "nt",
        )
    pid = proc.pid
    register_process_group(pid)
    async with proc:  # closing reaps the child, shielded
        try:
            code = await _collect(proc, on_chunk, on_stderr)
        except BaseException as exc:
            # Before anyio's close, which would kill the direct child only.
            kill_process_group(pid)
            leaf = _single_error(exc) if isinstance(exc, BaseExceptionGroup) else None
            if leaf is not None:
                raise leaf from None  # a sink or pipe error, not an ExceptionGroup of one
            raise
    if not _group_exists(pid):
        _live_groups.discard(pid)
    return code


def _single_error(exc: BaseException) -> Exception | None:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, Exception) and not isinstance(exc, BaseExceptionGroup) else None


async def _collect(proc: anyio.abc.Process, on_chunk: OnChunk, on_stderr: OnChunk | None) -> int | None:
    activity = [0]
    done = anyio.Event()
    stdout = proc.stdout
    assert stdout is not None

    async def read_all() -> None:
        async with anyio.create_task_group() as readers:
            readers.start_soon(_pump, stdout, on_chunk, activity)
            if on_stderr is not None and proc.stderr is not None:
                readers.start_soon(_pump, proc.stderr, on_stderr, activity)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_all)
        returncode = await proc.wait()
        await _await_output_end(done, activity)
        # Descendants still hold the pipe: stop reading, leave them running (Pi does too).
        tg.cancel_scope.cancel()
    return exit_code_of(returncode)
