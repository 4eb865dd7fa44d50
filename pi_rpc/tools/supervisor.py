"""The tool-process supervisor: a tool's whole process tree dies with the daemon, however it dies.

`pi_rpc.tools.process` starts this module once per daemon, as `main([CONTROL_FD])` in a
`python -I -S` that imports it as the top-level module `supervisor` (no site, no user paths, the
standard library only). CONTROL_FD is a SOCK_SEQPACKET socket whose other end only the daemon
holds. The supervisor forks "keepers" ahead of need: a spare keeper waits for one command on its
own request socket, whose other end the supervisor hands to the daemon over the control socket
(`spare`, by SCM_RIGHTS) before forking it, and another when the daemon asks (`spare`). For each
command the daemon sends one message to a spare, carrying by SCM_RIGHTS a LIFELINE socket (one end
of a fresh pair, the other end the daemon's), an anonymous file with the request (cwd, argv and
environment, NUL-separated) and the write ends of the output pipes: the keeper runs that one
command (`posix_spawn`). So a call costs one spawn, not an interpreter start nor a fork, and wakes
no other process on its way to the command; the next spare is forked once the daemon asks, after
the call. A daemon that holds no spare (two commands at once) sends the command to the supervisor
instead (`run`), which forks a keeper for it. Every descriptor a keeper holds is close-on-exec; the
command gets only its stdin (/dev/null), stdout and stderr. A spare leaves without a command when
the other end of its request socket closes: the daemon dropped it (it found the supervisor gone,
or it is leaving) or exited, however it exited.

The keeper is a Linux child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`) in its own session: every
descendant that loses its parent, including `setsid`, `nohup` and double-forked ones, is
reparented to it, so the command's whole tree stays below it. It runs the command in its own
process group, writes the command's pid (`"<pid>\n"`) and later its exit status as a shell reports
it (`"=<code>\n"`, 128 + n for signal n; only `"=127\n"` if the command could not start, its
error then written to the output) on the lifeline, and lives while any descendant does (a
finished command may leave background jobs running, spec 9.9). When the lifeline reaches end of
file (the daemon aborted the call, exited, or was killed with SIGKILL and the kernel closed its
end) it SIGKILLs the command's group and then every descendant it can find, until none is left,
and exits; the daemon sees the lifeline close. The supervisor itself exits when the control socket
closes; keepers do not depend on it, each watches its own lifeline.

Limits: subreapers exist on Linux only; `process.py` runs commands directly elsewhere, so there a
daemon killed with SIGKILL leaves the command's processes running. On Linux no descendant can
leave the tree (the subreaper adopts orphans), but one that runs as another user (a setuid
program) cannot be signalled, and the keeper then waits for it to exit.
"""

from __future__ import annotations

import _ctypes
import os
import select
import socket
import sys

TYPE_CHECKING = False  # importing typing would cost more than this whole script
if TYPE_CHECKING:
    import signal as _signal  # the same names, with stubs
    from collections.abc import Callable
else:
    import _signal

PR_SET_CHILD_SUBREAPER = 36  # <linux/prctl.h>
_FATAL_SIGNALS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)


def exit_code_of_status(status: int) -> int:
    """A wait status as a shell reports it: the exit code, or 128 + n for signal n."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def children_of(pid: int) -> list[int]:
    """The live children of `pid`, as the kernel lists them (CONFIG_PROC_CHILDREN), else by ppid."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as listing:
                found.extend(int(child) for child in listing.read().split())
        except FileNotFoundError:
            return _children_by_ppid(pid)
        except OSError:
            continue
    return found


def _children_by_ppid(pid: int) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if len(fields) > 1 and int(fields[1]) == pid:
            found.append(int(name))
    return found


def descendants_of(pid: int) -> list[int]:
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children_of(pending.pop()):
            found.append(child)
            pending.append(child)
    return found


def _kill(pid: int, *, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, _signal.SIGKILL)
    except OSError:
        pass  # already gone, or (a group) has no members left


class Keeper:
    """Subreaper of one command's tree; reports the command's pid and exit status on the lifeline.

    Made in a spare keeper before its command arrives, so a call pays for neither the fork nor this.
    """

    def __init__(self) -> None:
        self.lifeline = -1  # set when the command arrives
        self.reported = False
        self.command_pid = 0
        self.wake_in, wake_out = os.pipe()
        os.set_blocking(wake_out, False)
        _signal.set_wakeup_fd(wake_out)
        _signal.signal(_signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd hears it
        for signum in _FATAL_SIGNALS:
            _signal.signal(signum, self._on_fatal)

    def start(self, lifeline: int, request: Request, outputs: list[int]) -> None:
        """Spawn the command and report its pid; if it cannot start, its error and code 127."""
        self.lifeline = lifeline
        try:
            self.command_pid = _spawn_command(request, outputs)
        except OSError as exc:
            name = request.argv[0].decode(errors="replace") if request.argv else "?"
            try:
                os.write(outputs[-1], f"{name}: {exc.strerror}\n".encode())
            except OSError:
                pass
            self._report_code(127)
            return
        finally:
            # Only the command keeps the output pipes: the daemon sees end of file when it is done.
            for fd in outputs:
                os.close(fd)
        try:
            os.write(self.lifeline, b"%d\n" % self.command_pid)
        except OSError:
            self.kill_all()

    def serve(self) -> None:
        """Reap until no descendant is left, or kill them all once the lifeline closes."""
        while self.reap():
            ready, _, _ = select.select([self.lifeline, self.wake_in], [], [])
            if self.lifeline in ready:
                try:
                    data = os.read(self.lifeline, 64)
                except OSError:
                    data = b""
                if not data:
                    self.kill_all()
                    # Closed now, not by our exit: the daemon's wait ends without our teardown.
                    os.close(self.lifeline)
                    return
            if self.wake_in in ready:
                os.read(self.wake_in, 4096)

    def reap(self, *, block: bool = False) -> bool:
        """Collect exited children; False once none is left."""
        while True:
            try:
                pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
            except ChildProcessError:
                return False
            except InterruptedError:
                continue
            if pid == 0:
                return True
            if pid == self.command_pid:
                self._report_code(exit_code_of_status(status))
            if block:
                return True

    def kill_all(self) -> None:
        """SIGKILL the command's group, then every descendant left, until there are none."""
        if self.command_pid > 0:  # killpg(0) would be our own group
            _kill(self.command_pid, group=True)
        while True:
            for pid in descendants_of(os.getpid()):
                _kill(pid)
            if not self.reap(block=True):
                return

    def _report_code(self, code: int) -> None:
        if self.reported:
            return
        self.reported = True
        try:
            os.write(self.lifeline, b"=%d\n" % code)
        except OSError:
            pass

    def _on_fatal(self, signum: int, frame: object) -> None:
        self.kill_all()
        os._exit(128 + signum)


class Request:
    """One command: where it runs, its arguments and its whole environment."""

    def __init__(self, data: bytes) -> None:
        fields = data.split(b"\0")
        self.cwd = fields[0]
        argc = int(fields[1])
        self.argv = fields[2 : 2 + argc]
        self.env = dict(item.partition(b"=")[::2] for item in fields[2 + argc :] if item)


# Every signal the command gets at its default, as Pi's spawn (libuv) gives it: exec leaves an
# ignored signal ignored, and besides SIGPIPE and SIGXFSZ (which Python ignores) the daemon may have
# inherited SIGINT and SIGQUIT ignored (started as a background job) or SIGHUP (nohup).
_DEFAULT_SIGNALS = tuple(sorted(_signal.valid_signals() - {_signal.SIGKILL, _signal.SIGSTOP}))


def _spawn_command(request: Request, outputs: list[int]) -> int:
    """Start the command with stdin empty, the output pipes as stdout/stderr, in its own process
    group, with default signal handling and nothing else inherited (every other descriptor of the
    keeper is close-on-exec). posix_spawn, not fork + exec: glibc's vfork-style clone copies no
    page table, which halves the cost of a start.
    """
    os.chdir(request.cwd)  # the keeper runs this one command, so its own directory is the command's
    # posix_spawnp searches the caller's PATH, as execvpe searched the command's environment.
    if b"PATH" in request.env:
        os.environb[b"PATH"] = request.env[b"PATH"]
    else:
        os.environb.pop(b"PATH", None)
    return os.posix_spawnp(
        request.argv[0],
        request.argv,
        request.env,
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_DUP2, outputs[0], 1),
            (os.POSIX_SPAWN_DUP2, outputs[-1], 2),
        ],
        setpgroup=0,
        setsigdef=_DEFAULT_SIGNALS,
        setsigmask=(),
    )


class _CFunction(_ctypes.CFuncPtr):
    _flags_ = _ctypes.FUNCFLAG_CDECL
    _restype_ = None  # unused: a failure only means there is no subreaper


def _become_subreaper() -> None:
    """Best effort: without it (old kernels, seccomp) the keeper still kills what stays below it."""
    try:
        libc = _ctypes.dlopen(None)  # type: ignore[arg-type]  # None: the symbols already loaded
        prctl = _CFunction(_ctypes.dlsym(libc, "prctl"))
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def received_fds(sock: socket.socket, flags: int = 0) -> tuple[bytes, list[int]]:
    """One message and the descriptors it carried, each close-on-exec as it arrives (the daemon's
    receiver uses this too)."""
    message, ancillary, _, _ = sock.recvmsg(16, socket.CMSG_SPACE(4 * 4), socket.MSG_CMSG_CLOEXEC | flags)
    fds: list[int] = []
    for level, kind, data in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(int.from_bytes(data[i : i + 4], sys.byteorder) for i in range(0, len(data) - 3, 4))
    return message, fds


def run_spare(requests: socket.socket) -> None:
    """In a child of the supervisor: a keeper made ready before its command (never returns).

    It waits for one command's descriptors on `requests`, and leaves when the other end closes.
    """
    try:
        os.setsid()  # out of the supervisor's group and session
        _become_subreaper()
        keeper = Keeper()
        _, fds = received_fds(requests)
        requests.close()
        if len(fds) < 3:
            return
        lifeline, request_fd, outputs = fds[0], fds[1], fds[2:]
        try:
            request = Request(read_all(request_fd))
        except (OSError, ValueError):
            return  # closing the lifeline unanswered tells the daemon the command did not start
        keeper.start(lifeline, request, outputs)
        keeper.serve()
    finally:
        os._exit(0)


def main(args: list[str]) -> int:
    """Serve the daemon's requests until it closes the control socket."""
    control = socket.socket(fileno=int(args[0]))
    wake_in, wake_out = os.pipe()
    os.set_blocking(wake_out, False)
    _signal.set_wakeup_fd(wake_out)
    _signal.signal(_signal.SIGCHLD, lambda *_: None)
    ours = (control.fileno(), wake_in, wake_out)
    _give_spare(control, ours)
    while True:
        ready, _, _ = select.select([control.fileno(), wake_in], [], [])
        if wake_in in ready:
            os.read(wake_in, 4096)
            _reap_keepers()
        if control.fileno() not in ready:
            continue
        try:
            message, fds = received_fds(control)
        except OSError:  # reset: the daemon closed its end before reading a spare we sent
            message, fds = b"", []
        if not message:
            # The daemon is leaving (its spares' request sockets close with it): every keeper is
            # reaped before we exit, so a daemon that waits for us leaves nothing behind once it has.
            _reap_keepers_until_gone(wake_in)
            return 0
        if message == b"spare":
            _give_spare(control, ours)
        elif len(fds) >= 3:
            _run_in_new_keeper(fds, ours)
        for fd in fds:
            os.close(fd)


def _fork_keeper(closing: tuple[int, ...], before_fork: Callable[[socket.socket], bool]) -> socket.socket | None:
    """Fork a keeper that waits for its command on a request socket; our end of it, None if
    `before_fork(our end)` said no or the fork failed."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    pid = -1
    try:
        if before_fork(ours):
            pid = os.fork()
    except OSError:
        pass
    if pid == 0:
        _signal.set_wakeup_fd(-1)
        for fd in closing:
            os.close(fd)
        ours.close()
        run_spare(theirs)
    theirs.close()
    if pid < 0:
        ours.close()
        return None
    return ours


def _give_spare(control: socket.socket, closing: tuple[int, ...]) -> None:
    """A spare keeper for the daemon: its request socket sent over `control`, then the fork (so a
    spare alive is one the daemon can use at once). After a fork that failed, the daemon's send to
    the socket it got fails, and it sends its command here."""

    def send(requests: socket.socket) -> bool:
        try:
            control.sendmsg([b"spare"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd_bytes([requests.fileno()]))])
        except OSError:
            return False  # the daemon is gone: the control socket's end of file ends us
        return True

    requests = _fork_keeper(closing, send)
    if requests is not None:
        requests.close()  # only the daemon holds it now


def _run_in_new_keeper(fds: list[int], closing: tuple[int, ...]) -> None:
    """A command the daemon had no spare for: handed to a keeper forked for it."""
    requests = _fork_keeper(closing, lambda _: True)
    if requests is None:
        return  # the daemon sees its lifeline close unanswered
    try:
        requests.sendmsg([b"run"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fd_bytes(fds))])
    except OSError:
        pass  # the keeper died at once (killed from outside): the same
    finally:
        requests.close()


def fd_bytes(fds: list[int]) -> bytes:
    """Descriptors as an SCM_RIGHTS message carries them (the daemon's sender uses this too)."""
    return b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)


# How long the supervisor waits, once the daemon leaves, for its keepers to exit: a keeper whose
# lifeline closed kills its command's tree first (one that cannot be signalled keeps it waiting).
_LAST_REAP_SECONDS = 0.5


def _reap_keepers_until_gone(wake_in: int) -> None:
    """Reap every keeper (SIGCHLD wakes `wake_in`), for at most `_LAST_REAP_SECONDS`."""
    waited = 0.0
    while waited < _LAST_REAP_SECONDS:
        try:
            while True:
                pid, _ = os.waitpid(-1, os.WNOHANG)
                if pid == 0:
                    break
        except ChildProcessError:
            return  # none left
        except InterruptedError:
            continue
        ready, _, _ = select.select([wake_in], [], [], 0.05)
        waited += 0.05  # woken early or not: the wait stays bounded
        if ready:
            os.read(wake_in, 4096)


def _reap_keepers() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        except InterruptedError:
            continue
        if pid == 0:
            return


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
