"""Spawning tool processes in their own process group, and killing the whole group (spec 9.6-9.9).

Used by bash/powershell and by the ripgrep-backed tools. A child never inherits the daemon's
stdin (that is the JSON-RPC wire). Abort, timeout and errors SIGKILL the whole group at once, so
background grandchildren (`sleep 30 &`) die too; anyio alone would only kill the direct child.
Groups left running after a normal exit (daemonised descendants) stay registered so the daemon can
kill them when it exits, as Pi does with its tracked detached children.

On Linux a command runs below a per-call supervisor (`supervisor.py`, a child subreaper) that holds
a socket to the daemon, its lifeline. Abort, timeout and daemon exit close the daemon's end, and
so does the kernel when the daemon is killed with SIGKILL: the supervisor then kills the whole
tree, `setsid`, `nohup` and double-forked descendants included. Elsewhere commands run directly
in their own process group, and a daemon killed with SIGKILL leaves them running.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import anyio.abc

log = logging.getLogger(__name__)

# Spec 9.9: after the shell exits, wait this long without output before giving up on
# descendants that still hold the pipe open.
EXIT_SILENCE_SECONDS = 0.1

# How long an abort waits for the supervisor to confirm that the whole tree is gone.
KILL_CONFIRM_SECONDS = 5.0

SUPERVISOR_DIR = str(Path(__file__).parent)
# Imported, not run as a script: a script is compiled on every start, a module loads its cached
# bytecode. The directory goes last on the path, so it shadows nothing of the standard library.
_SUPERVISOR_BOOT = (
    "import sys; sys.path.append(sys.argv[1]); import supervisor; sys.exit(supervisor.main(sys.argv[2:]))"
)
# A real file is needed (not a zip): the supervisor is imported by a bare `python -I -S`.
SUPERVISED = (sys.platform == "linux" and bool(sys.executable) and hasattr(os, "memfd_create")
              and os.path.isfile(os.path.join(SUPERVISOR_DIR, "supervisor.py")))

OnChunk = Callable[[bytes], None]

# Process group -> the lifeline of its supervisor (None for a group spawned directly).
_live_groups: dict[int, socket.socket | None] = {}


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def kill_process_group(pid: int) -> None:
    """SIGKILL the group led by pid, no grace period (spec 9.8); the pid alone if that fails.

    A supervised group's lifeline is closed too, so its supervisor kills what left the group.
    """
    lifeline = _live_groups.pop(pid, None)
    if lifeline is not None:
        lifeline.close()
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kill_all_process_groups() -> None:
    """Kill every group a tool started that may still be running (daemon shutdown)."""
    for pgid in list(_live_groups):
        kill_process_group(pgid)


def live_process_groups() -> frozenset[int]:
    return frozenset(pgid for pgid in _live_groups if _group_exists(pgid))


def register_process_group(pgid: int, lifeline: socket.socket | None = None) -> None:
    """Track a group for kill_all_process_groups (for callers that spawn processes themselves)."""
    # Drop groups that ended on their own, so a reused pid is never killed later.
    for old, old_lifeline in list(_live_groups.items()):
        if old_lifeline is None and not _group_exists(old):
            del _live_groups[old]
        elif old_lifeline is not None and _supervisor_gone(old_lifeline):
            old_lifeline.close()
            del _live_groups[old]
    _live_groups[pgid] = lifeline


def _supervisor_gone(lifeline: socket.socket) -> bool:
    """True once the supervisor closed its end: every process it watched is gone."""
    try:
        return lifeline.recv(64, socket.MSG_DONTWAIT | socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


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


@dataclass
class _Spawned:
    proc: anyio.abc.Process
    lifeline: socket.socket | None  # our end; None when the command runs unsupervised


async def run_process_group(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str] | None,
    on_chunk: OnChunk,
    *,
    on_stderr: OnChunk | None = None,
) -> int | None:
    """Run argv in a new process group with stdin at /dev/null and return its exit code.

    stdout and stderr are merged in arrival order into on_chunk, unless on_stderr is given, in
    which case stderr is delivered there separately (ripgrep's error messages). Raises OSError
    if the program cannot be started. On any exceptional exit (cancellation included) the whole
    process group is killed before the exception propagates, and on Linux every other process
    the command started too (see the module docstring).
    """
    # Shielded: an abort landing mid-spawn would make asyncio kill only the direct child and
    # orphan the rest of the group; once we hold the pid, the handler below kills the group.
    with anyio.CancelScope(shield=True):
        spawned = await _spawn(argv, cwd, env, separate_stderr=on_stderr is not None)
    proc, lifeline = spawned.proc, spawned.lifeline
    pgid = proc.pid
    async with proc:  # closing reaps the child, shielded
        try:
            if lifeline is not None:
                pgid = await _read_command_pid(lifeline) or pgid
            register_process_group(pgid, lifeline)
            code = await _collect(proc, on_chunk, on_stderr)
        except BaseException as exc:
            # Before anyio's close, which would kill the direct child only. The lifeline is
            # unregistered first, so that _end_supervision (not kill_process_group) closes it.
            _live_groups.pop(pgid, None)
            kill_process_group(pgid)
            if lifeline is not None:
                await _end_supervision(lifeline)
            leaf = _single_error(exc) if isinstance(exc, BaseExceptionGroup) else None
            if leaf is not None:
                raise leaf from None  # a sink or pipe error, not an ExceptionGroup of one
            raise
    if lifeline is None and not _group_exists(pgid):
        _live_groups.pop(pgid, None)
    return code


async def _spawn(
    argv: Sequence[str], cwd: str, env: Mapping[str, str] | None, *, separate_stderr: bool
) -> _Spawned:
    stderr = subprocess.PIPE if separate_stderr else subprocess.STDOUT
    if not SUPERVISED:
        proc = await anyio.open_process(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=stderr, start_new_session=os.name != "nt",
        )
        return _Spawned(proc, None)
    _check_program(argv[0], cwd, env)
    argv_fd = _argv_file(argv)
    ours, theirs = socket.socketpair()
    try:
        proc = await anyio.open_process(
            [sys.executable, "-I", "-S", "-c", _SUPERVISOR_BOOT, SUPERVISOR_DIR, str(theirs.fileno()),
             str(argv_fd)],
            cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
            start_new_session=True, pass_fds=(theirs.fileno(), argv_fd),
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()  # from here on only the supervisor holds its end
        os.close(argv_fd)
    ours.setblocking(False)
    return _Spawned(proc, ours)


def _argv_file(argv: Sequence[str]) -> int:
    """The command's arguments in an anonymous file, NUL-separated, for the supervisor to read.

    Not on the supervisor's command line: there they would show twice in `ps` (and in anything
    that looks for the command by its text), and a large command could exceed the size limit.
    """
    data = b"\0".join(os.fsencode(arg) for arg in argv)
    if data.count(b"\0") != len(argv) - 1:
        raise ValueError("embedded null byte")  # what a direct spawn raises
    fd = os.memfd_create("pi-rpc-argv")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _check_program(program: str, cwd: str, env: Mapping[str, str] | None) -> None:
    """The OSError a direct spawn would raise for a missing program (the supervisor can't)."""
    # A relative path is relative to the command's directory, not to ours.
    located = os.path.join(cwd, program) if os.sep in program else program
    search_path = (os.environ if env is None else env).get("PATH", os.defpath)
    if shutil.which(located, path=search_path) is not None:
        return
    if os.sep in program and os.path.exists(located):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


async def _read_command_pid(lifeline: socket.socket) -> int | None:
    """The command's pid (its group id), which the supervisor sends once it has started it."""
    line = b""
    while not line.endswith(b"\n"):
        await anyio.wait_readable(lifeline)
        try:
            chunk = lifeline.recv(64)
        except BlockingIOError:
            continue
        if not chunk:
            return None  # the supervisor is gone already
        line += chunk
    return int(line)


async def _end_supervision(lifeline: socket.socket) -> None:
    """Tell the supervisor to kill everything, and wait (bounded) until it has."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(KILL_CONFIRM_SECONDS):
        try:
            lifeline.shutdown(socket.SHUT_WR)  # end of file for the supervisor
            while True:
                await anyio.wait_readable(lifeline)
                try:
                    if lifeline.recv(64) == b"":
                        break  # it exited: nothing it watched is left
                except BlockingIOError:
                    continue
        except OSError:
            pass
    lifeline.close()


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
