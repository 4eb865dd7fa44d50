"""Spawning tool processes in their own process group, and killing the whole group (spec 9.6-9.9).

Used by bash/powershell and by the ripgrep-backed tools. A child never inherits the daemon's
stdin (that is the JSON-RPC wire). Abort, timeout and errors SIGKILL the whole group at once, so
background grandchildren (`sleep 30 &`) die too; anyio alone would only kill the direct child.
Groups left running after a normal exit (daemonised descendants) stay registered in the caller's
`ProcessTable` (one per session), so closing the session kills them; the daemon makes every
session's table in its `ProcessTables`, and its exit kills every table's, as Pi does with its
tracked detached children. No table is module state: whoever runs a command names the table.

On Linux a command runs below a keeper (`supervisor.py`, a child subreaper) that holds a socket to
the daemon, its lifeline. Abort, timeout and daemon exit close the daemon's end, and so does the
kernel when the daemon is killed with SIGKILL: the keeper then kills the whole tree, `setsid`,
`nohup` and double-forked descendants included. Keepers are forked ahead of need by one supervisor
process that the daemon starts on first use and keeps for its life, so a call costs one
`posix_spawn`, not a Python start-up nor a fork; the daemon holds the spare keeper's request socket
and sends the command's output pipes and lifeline straight to it by SCM_RIGHTS (no other process
woken on the way), asks for the next spare once the call is over, and reads the output while the
pid is still on the way. Elsewhere commands run directly in their own process group, and a daemon
killed with SIGKILL leaves them running.
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
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import anyio
import anyio.abc

from pi_rpc.tools.tool_env import helper_process_env

log = logging.getLogger(__name__)

# Spec 9.9: after the shell exits, wait this long without output before giving up on
# descendants that still hold the pipe open.
EXIT_SILENCE_SECONDS = 0.1

# How long an abort waits for the supervisor to confirm that the whole tree is gone.
KILL_CONFIRM_SECONDS = 5.0
# How long a call waits for its keeper to report the command's pid; past it the call fails, and
# closing the lifeline makes a late keeper kill what it started.
START_SECONDS = 30.0

SUPERVISOR_DIR = str(Path(__file__).parent)
# Imported, not run as a script: a script is compiled on every start, a module loads its cached
# bytecode. The directory goes last on the path, so it shadows nothing of the standard library.
_SUPERVISOR_BOOT = (
    "import sys; sys.path.append(sys.argv[1]); import supervisor; sys.exit(supervisor.main(sys.argv[2:]))"
)
# The exit code reported when a keeper vanished without reporting one (it was killed).
_LOST_STATUS = 128 + signal.SIGKILL
# A command's output pipe holds this much (Linux's default is 64 KiB, and the unprivileged limit
# /proc/sys/fs/pipe-max-size is 1 MiB by default), and one read takes as much: a fast writer then
# blocks, and wakes us, a sixteenth as often (200 MB of output: 3,000 wake-ups instead of 48,000).
PIPE_BYTES = 1 << 20
_READ_BYTES = PIPE_BYTES
# Once a command has written STREAM_BYTES, each read waits COALESCE_SECONDS first, unless the last
# one found the pipe half full. A reader that reads as soon as data is there is woken by nearly
# every write, and `fold` (like most stdio writers) writes 4 KiB at a time: 200 MB of it took
# 2,000-10,000 reads, 30,000 when the reader did nothing else, each an event-loop round and a
# context switch. Waiting lets the pipe fill: 200 MB now takes 500-700 reads. Output still reaches
# the tool within a few milliseconds (its updates are 100 ms apart), and a short output, all of it
# read before STREAM_BYTES, never waits.
STREAM_BYTES = 1 << 16
COALESCE_SECONDS = 0.002
# A real file is needed (not a zip): the supervisor is imported by a bare `python -I -S`.
SUPERVISED = (
    sys.platform == "linux"
    and bool(sys.executable)
    and hasattr(os, "memfd_create")
    and os.path.isfile(os.path.join(SUPERVISOR_DIR, "supervisor.py"))
)

OnChunk = Callable[[bytes], None]
# Told the exit code the moment the program exits (what it left running may still be writing).
OnExit = Callable[[int | None], None]


class ProcessTable:
    """The process groups one owner's tools started that may still be running.

    A session holds one and hands it to its shell and ripgrep tools, so closing the session kills
    its own leftovers (daemonised descendants) and nothing of another session's. Each group maps
    to the lifeline of its keeper (None for a group spawned directly). A daemon makes its
    sessions' tables in its `ProcessTables`, whose `kill_all` its way out calls. A table dropped
    by its owner kills what it holds: nobody could later, and its lifelines would stay open.
    """

    def __init__(self) -> None:
        self._groups: dict[int, socket.socket | None] = {}
        weakref.finalize(self, _kill_groups, self._groups)

    def register(self, pgid: int, lifeline: socket.socket | None = None) -> None:
        """Track a group until it ends or is killed (for callers that spawn processes themselves)."""
        # Drop groups that ended on their own, so a reused pid is never killed later.
        for old, old_lifeline in list(self._groups.items()):
            if old_lifeline is None and not _group_exists(old):
                del self._groups[old]
            elif old_lifeline is not None and _supervisor_gone(old_lifeline):
                old_lifeline.close()
                del self._groups[old]
        self._groups[pgid] = lifeline

    def forget(self, pgid: int) -> None:
        """Stop tracking a group whose end the caller handles itself (its lifeline stays open)."""
        self._groups.pop(pgid, None)

    def kill(self, pgid: int) -> None:
        """SIGKILL the group led by pgid, no grace period (spec 9.8); the pid alone if that fails.

        A supervised group's lifeline is closed too, so its keeper kills what left the group.
        """
        _kill_tracked(self._groups, pgid)

    def kill_all(self) -> None:
        """Kill every group of this table that may still be running (its owner is closing)."""
        _kill_groups(self._groups)

    def live(self) -> frozenset[int]:
        return frozenset(pgid for pgid in self._groups if _group_exists(pgid))


class ProcessTables:
    """One daemon's process tables, one per session: the composition root makes this, each
    session's table is made here (`new_table`), and every way out of the daemon kills them all
    (`kill_all`: what a session that could not close in time left, too).

    Weak: a table its session dropped has killed what it held as it went (see ProcessTable), and
    leaves this set with it.
    """

    def __init__(self, tables: Iterable[ProcessTable] = ()) -> None:
        self._tables: weakref.WeakSet[ProcessTable] = weakref.WeakSet(tables)

    def new_table(self) -> ProcessTable:
        table = ProcessTable()
        self._tables.add(table)
        return table

    def kill_all(self) -> None:
        """Kill every group of every table that may still be running (the daemon is exiting)."""
        for table in list(self._tables):
            table.kill_all()

    def stop_supervisor(self) -> None:
        """After `kill_all`, at the daemon's exit: the supervisor and its keepers exit and are
        reaped before this returns (bounded), so none is alive once the daemon's exit is seen."""
        stop_supervisor()


def _kill_tracked(groups: dict[int, socket.socket | None], pgid: int) -> None:
    lifeline = groups.pop(pgid, None)
    if lifeline is not None:
        lifeline.close()
    _kill_group(pgid)


def _kill_groups(groups: dict[int, socket.socket | None]) -> None:
    for pgid in list(groups):
        _kill_tracked(groups, pgid)


def _group_exists(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    except PermissionError:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


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


async def run_process_group(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str] | None,
    on_chunk: OnChunk,
    *,
    on_stderr: OnChunk | None = None,
    processes: ProcessTable,
    on_exit: OnExit | None = None,
) -> int | None:
    """Run argv in a new process group with stdin at /dev/null and return its exit code.

    stdout and stderr are merged in arrival order into on_chunk, unless on_stderr is given, in
    which case stderr is delivered there separately (ripgrep's error messages). Raises OSError
    if the program cannot be started. On any exceptional exit (cancellation included) the whole
    process group is killed before the exception propagates, and on Linux every other process
    the command started too (see the module docstring). Groups that outlive the call stay in
    `processes` (the caller's table: its session's). `on_exit` hears the exit code as soon as the
    program exits, before the output of what it left running has ended.
    """
    if SUPERVISED:
        return await _run_supervised(argv, cwd, env, on_chunk, on_stderr, processes, on_exit)
    # Shielded: an abort landing mid-spawn would make asyncio kill only the direct child and
    # orphan the rest of the group; once we hold the pid, the handler below kills the group.
    with anyio.CancelScope(shield=True):
        proc = await anyio.open_process(
            list(argv),
            cwd=cwd,
            env=helper_process_env() if env is None else env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if on_stderr is not None else subprocess.STDOUT,
            start_new_session=os.name != "nt",
        )
    pgid = proc.pid
    async with proc:  # closing reaps the child, shielded
        try:
            processes.register(pgid)
            code = await _collect(proc, on_chunk, on_stderr, on_exit)
        except BaseException as exc:
            processes.kill(pgid)  # before anyio's close, which would kill the direct child only
            _reraise_single(exc)
            raise
    if not _group_exists(pgid):
        processes.forget(pgid)
    return code


async def _run_supervised(
    argv: Sequence[str],
    cwd: str,
    env: Mapping[str, str] | None,
    on_chunk: OnChunk,
    on_stderr: OnChunk | None,
    table: ProcessTable,
    on_exit: OnExit | None,
) -> int:
    _check_program(argv[0], cwd, env)
    request = _request_file(argv, cwd, helper_process_env() if env is None else env)
    outputs = [_output_pipe() for _ in range(2 if on_stderr is not None else 1)]
    ours, theirs = socket.socketpair()
    try:
        _supervisor.send([theirs.fileno(), request, *(w for _, w in outputs)])
    except BaseException:
        ours.close()
        for r, _ in outputs:
            os.close(r)
        raise
    finally:
        theirs.close()  # from here on only the keeper holds its end
        os.close(request)
        for _, w in outputs:
            os.close(w)
    ours.setblocking(False)
    readers = [r for r, _ in outputs]
    for fd in readers:
        os.set_blocking(fd, False)
    lines = _Lines(ours)
    try:
        code = await _collect_supervised(readers, lines, on_chunk, on_stderr, table, argv[0], on_exit)
    except BaseException as exc:
        # The lifeline is unregistered first, so that _end_supervision (not table.kill) closes
        # it: one kill, then one wait for the keeper to confirm the tree is gone. Without a pid
        # yet, the keeper's own kill on end of file is the only one.
        pgid = lines.pid if lines.pid is not None else lines.pid_if_ready()
        if pgid is not None:
            table.forget(pgid)
            _kill_group(pgid)
        await _end_supervision(ours)
        _reraise_single(exc)
        raise
    finally:
        for fd in readers:
            os.close(fd)
        _supervisor.replenish()  # the next call's spare, forked now that this call's work is done
    if lines.pid is None:
        ours.close()  # the command never started: no group for the table to hold
    return code


class _Supervisor:
    """The daemon's one supervisor process, started on first use and again if it died, and the
    spare keepers it forked for the daemon's next commands (their request sockets, which it sends
    over the control socket: one at its start, one more each time the daemon asks)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._spares: list[socket.socket] = []  # request sockets of idle spare keepers
        self._asked = 0  # spares the supervisor owes us: made at its start, or asked for

    def send(self, fds: list[int]) -> None:
        """Hand one command's descriptors to a spare keeper, else to the supervisor, which forks a
        keeper for it (a retry starts a new supervisor)."""
        # The supervisor's own module (with its ctypes) is loaded by the first command, not by
        # the daemon's start.
        from pi_rpc.tools.supervisor import fd_bytes

        message = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd_bytes(fds))]
        with self._lock:
            for attempt in (1, 2):
                control = self._running()
                self._receive_spares(control)
                while self._spares:
                    spare = self._spares.pop()
                    try:
                        spare.sendmsg([b"run"], message)
                        return
                    except OSError:
                        pass  # it died (killed from outside): the next, or the supervisor
                    finally:
                        spare.close()  # its keeper holds the only end now
                try:
                    control.sendmsg([b"run"], message)
                    return
                except OSError:
                    self._stop()
                    if attempt == 2:
                        raise

    def replenish(self) -> None:
        """After a call: ask for the next call's spare keeper unless one is there or on its way.
        Asked here, not when the command starts, its fork does not compete with the command's."""
        with self._lock:
            control = self._control
            if control is None:
                return
            self._receive_spares(control)
            if self._spares or self._asked:
                return
            try:
                control.sendmsg([b"spare"])
                self._asked += 1
            except OSError:
                pass  # the supervisor is gone: the next call starts another

    def _receive_spares(self, control: socket.socket) -> None:
        """Take the spares' request sockets the supervisor has sent, without waiting."""
        from pi_rpc.tools.supervisor import received_fds

        while True:
            try:
                message, fds = received_fds(control, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # the next send finds out
            if not message:
                return  # end of file (the supervisor left): the next send finds out
            self._asked = max(self._asked - 1, 0)  # one spare came (its socket with it, unless cut off)
            self._spares.extend(socket.socket(fileno=fd) for fd in fds)

    def start(self) -> None:
        with self._lock:
            self._running()

    def _running(self) -> socket.socket:
        if self._proc is not None and self._proc.poll() is not None:
            self._stop()
        if self._control is None:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            try:
                # Its stdout is not ours: in the daemon, fd 1 is the protocol's. No key in its
                # environment: its keepers are forked from it, and a command can read theirs in
                # /proc/<pid>/environ; a command's own environment comes with its request.
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", "-S", "-c", _SUPERVISOR_BOOT, SUPERVISOR_DIR, str(theirs.fileno())],
                    cwd="/",
                    env=helper_process_env(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    start_new_session=True,
                    pass_fds=(theirs.fileno(),),
                )
            except BaseException:
                ours.close()
                raise
            finally:
                theirs.close()
            self._control = ours
            self._asked = 1  # the supervisor forks a spare as it starts
        return self._control

    def _stop(self) -> None:
        if self._control is not None:
            self._receive_spares(self._control)  # read first: closing on unread data is a reset
        for spare in self._spares:
            spare.close()  # end of file: an idle spare exits (so does one whose request was in flight)
        self._spares, self._asked = [], 0
        if self._control is not None:
            self._control.close()  # end of file: the supervisor exits (keepers live on)
            self._control = None
        if self._proc is not None:
            try:
                self._proc.wait(1)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
            self._proc = None


# Process state on purpose: the supervisor is a child of this OS process (the subreaper that its
# keepers' lifelines lead back to), one for the daemon's life whatever its sessions, and it holds
# no command of any session (each command's lifeline is in its session's table).
_supervisor = _Supervisor()


def stop_supervisor() -> None:
    """At the daemon's exit: close the supervisor's control socket and wait (bounded) until it has
    exited, its spare keeper and every other keeper reaped, so nothing of ours outlives the daemon."""
    with _supervisor._lock:
        _supervisor._stop()


def start_supervisor() -> None:
    """Start the supervisor (which forks its spare keeper) now, not at the first command: a fresh
    daemon readies itself so while it waits for its first prompt."""
    if SUPERVISED:
        _supervisor.start()


def _output_pipe() -> tuple[int, int]:
    import fcntl  # Linux only, as the supervisor is

    read_end, write_end = os.pipe()
    try:
        fcntl.fcntl(write_end, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass  # over a lowered pipe-max-size, or the user's pipe quota: the default size works too
    return read_end, write_end


def _request_file(argv: Sequence[str], cwd: str, env: Mapping[str, str]) -> int:
    """The command in an anonymous file, NUL-separated: cwd, argc, argv, then `KEY=VALUE` items.

    Not on a command line: there it would show in `ps` (and in anything that looks for the
    command by its text), and a large command could exceed the size limit.
    """
    fields = [
        os.fsencode(cwd),
        b"%d" % len(argv),
        *(os.fsencode(arg) for arg in argv),
        *(os.fsencode(f"{key}={value}") for key, value in env.items()),
    ]
    if any(b"\0" in field for field in fields):
        raise ValueError("embedded null byte")  # what a direct spawn raises
    data = b"\0".join(fields)
    fd = os.memfd_create("pi-rpc-command")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class _Lines:
    """Lines the keeper writes on the lifeline: the command's pid, then `=<exit code>` (only the
    latter if the command could not start: its error is then in the output)."""

    def __init__(self, lifeline: socket.socket) -> None:
        self.lifeline = lifeline
        self.buffer = b""
        self.pid: int | None = None

    async def read_line(self) -> bytes | None:
        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.lifeline)
            if not self._receive():
                return None  # the keeper is gone
        return self._take_line()

    async def read_status(self, table: ProcessTable, program: str) -> int:
        """The exit code; on the way, the pid, registered in the table with the lifeline."""
        line: bytes | None = None
        with anyio.move_on_after(START_SECONDS) as starting:
            line = await self.read_line()
        if starting.cancelled_caught or line is None:
            raise OSError(errno.ECHILD, "the tool-process supervisor could not start the command", program)
        if not line.startswith(b"="):
            self.pid = int(line)
            table.register(self.pid, self.lifeline)
            line = await self.read_line()
        return int(line[1:]) if line is not None and line.startswith(b"=") else _LOST_STATUS

    def pid_if_ready(self) -> int | None:
        """The pid if it has arrived but was not read yet (an abort came first)."""
        self._receive()
        line = self.buffer.partition(b"\n")[0] if b"\n" in self.buffer else b""
        return int(line) if line and not line.startswith(b"=") else None

    def _receive(self) -> bool:
        """Take what has arrived, without waiting; False once the keeper has closed its end."""
        try:
            chunk = self.lifeline.recv(64)
        except BlockingIOError:
            return True
        except OSError:
            return False
        self.buffer += chunk
        return chunk != b""

    def _take_line(self) -> bytes:
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


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


def _reraise_single(exc: BaseException) -> None:
    """A sink or pipe error inside a task group is raised as itself, not as a group of one."""
    leaf = _single_error(exc) if isinstance(exc, BaseExceptionGroup) else None
    if leaf is not None:
        raise leaf from None


def _single_error(exc: BaseException) -> Exception | None:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc if isinstance(exc, Exception) and not isinstance(exc, BaseExceptionGroup) else None


async def _collect(
    proc: anyio.abc.Process, on_chunk: OnChunk, on_stderr: OnChunk | None, on_exit: OnExit | None
) -> int | None:
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
        if on_exit is not None:
            on_exit(exit_code_of(returncode))
        await _await_output_end(done, activity)
        # Descendants still hold the pipe: stop reading, leave them running (Pi does too).
        tg.cancel_scope.cancel()
    return exit_code_of(returncode)


async def _pump_fd(fd: int, sink: OnChunk, activity: list[int]) -> None:
    import fcntl  # Linux only, as the supervisor is
    import termios

    full_enough = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ) // 2
    waiting = bytearray(4)  # FIONREAD's answer: how many bytes the pipe holds
    streamed = 0
    coalesce = False
    while True:
        if coalesce:
            await anyio.sleep(COALESCE_SECONDS)
        else:
            await anyio.wait_readable(fd)
        # A read takes what the pipe holds, asked for by its size: os.read allocates what it is
        # asked for, and 1 MiB each time is memory malloc maps afresh, every page of it a new page
        # fault (~100 per 400 KiB read, twice the cost of the copy). Same-sized blocks it reuses.
        fcntl.ioctl(fd, termios.FIONREAD, waiting)
        try:
            chunk = os.read(fd, int.from_bytes(waiting, sys.byteorder) or _READ_BYTES)
        except BlockingIOError:
            coalesce = False
            continue
        if not chunk:
            return
        activity[0] += 1
        sink(chunk)
        streamed += len(chunk)
        # A writer that filled half the pipe while we were away may be blocked on it: no wait.
        coalesce = streamed >= STREAM_BYTES and len(chunk) < full_enough


async def _collect_supervised(
    readers: list[int],
    lines: _Lines,
    on_chunk: OnChunk,
    on_stderr: OnChunk | None,
    table: ProcessTable,
    program: str,
    on_exit: OnExit | None,
) -> int:
    """Output and exit code together: reading starts at once, not after the pid's round trip."""
    activity = [0]
    done = anyio.Event()

    async def read_all() -> None:
        async with anyio.create_task_group() as pumps:
            pumps.start_soon(_pump_fd, readers[0], on_chunk, activity)
            if on_stderr is not None:
                pumps.start_soon(_pump_fd, readers[1], on_stderr, activity)
        done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_all)
        code = await lines.read_status(table, program)
        if on_exit is not None:
            on_exit(code)
        await _await_output_end(done, activity)
        # Descendants still hold the pipe: stop reading, leave them running (Pi does too).
        tg.cancel_scope.cancel()
    return code
