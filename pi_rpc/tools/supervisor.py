"""The per-call supervisor: a tool's whole process tree dies with the daemon, however it dies.

`pi_rpc.tools.process` starts every shell command through `main(LIFELINE_FD, ARGV_FD)` of this
module, in a new `python -I -S` that imports it as the top-level module `supervisor`. LIFELINE_FD
is one end of a socket pair whose other end only the daemon holds; ARGV_FD an anonymous file
holding the command's arguments, NUL-separated. It runs for every shell command, so it starts as
little as it can: no site and no user paths (`-I -S`), cached bytecode (imported, not run as a
script), the standard library only, and the C modules `_signal` and `_ctypes` instead of `signal`
and `ctypes`, whose imports (enum, functools) cost more than the rest of the module together.

The process the daemon started (the "reporter") forks a "keeper" and exits with the command's
exit status, so the daemon sees the command's own exit code as before (128 + n for signal n). The
keeper is a Linux child subreaper (`prctl(PR_SET_CHILD_SUBREAPER)`): every descendant that loses
its parent, including `setsid`, `nohup` and double-forked ones, is reparented to it, so the whole
tree stays below it. The keeper runs the command in its own process group and lives while any
descendant does (a finished command may leave background jobs running, spec 9.9). When the
lifeline reaches end of file (the daemon aborted the call, exited, or was killed with SIGKILL and
the kernel closed its end) it SIGKILLs the command's group and then every descendant it can find,
until none is left, and exits.

Limits: subreapers exist on Linux only; `process.py` runs commands directly elsewhere, so there a
daemon killed with SIGKILL leaves the command's processes running. On Linux no descendant can
leave the tree (the subreaper adopts orphans), but one that runs as another user (a setuid
program) cannot be signalled, and the keeper then waits for it to exit. The cost is one Python
start-up per command (`bench/bench_spawn.py` measures it).
"""

from __future__ import annotations

import _ctypes
import os
import select
import sys

TYPE_CHECKING = False  # importing typing would cost more than this whole script
if TYPE_CHECKING:
    import signal as _signal  # the same names, with stubs
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
    """Subreaper of one command's tree; reports the command's exit status to the reporter."""

    def __init__(self, lifeline: int, status_out: int) -> None:
        self.lifeline = lifeline
        self.status_out: int | None = status_out
        self.command_pid = 0
        self.wake_in, wake_out = os.pipe()
        os.set_blocking(wake_out, False)
        _signal.set_wakeup_fd(wake_out)
        _signal.signal(_signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd hears it
        for signum in _FATAL_SIGNALS:
            _signal.signal(signum, self._on_fatal)

    def start(self, argv: list[str]) -> None:
        self.command_pid = os.fork()
        if self.command_pid == 0:
            _exec_command(argv)
        # Only the command keeps the output pipes: the daemon sees end of file when it is done.
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)
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
                self._report(status)
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

    def _report(self, status: int) -> None:
        if self.status_out is None:
            return
        try:
            os.write(self.status_out, b"%d" % exit_code_of_status(status))
        except OSError:
            pass
        os.close(self.status_out)
        self.status_out = None

    def _on_fatal(self, signum: int, frame: object) -> None:
        self.kill_all()
        os._exit(128 + signum)


def _exec_command(argv: list[str]) -> None:
    """In the forked child: own process group, Python's signal changes undone, then exec."""
    try:
        os.setpgid(0, 0)
        _signal.set_wakeup_fd(-1)
        for signum in (_signal.SIGCHLD, _signal.SIGPIPE, _signal.SIGXFSZ, *_FATAL_SIGNALS):
            _signal.signal(signum, _signal.SIG_DFL)
        os.execvp(argv[0], argv)
    except OSError as exc:
        os.write(2, f"{argv[0]}: {exc.strerror}\n".encode())
        os._exit(127)
    finally:
        os._exit(127)


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


def read_argv(fd: int) -> list[str]:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return [os.fsdecode(arg) for arg in b"".join(chunks).split(b"\0")]


def main(args: list[str]) -> int:
    lifeline = int(args[0])
    argv = read_argv(int(args[1]))
    os.set_inheritable(lifeline, False)  # the command must never hold it
    status_in, status_out = os.pipe()
    if os.fork() == 0:
        os.close(status_in)
        try:
            os.setsid()  # out of the reporter's group, which the daemon may signal
            _become_subreaper()
            keeper = Keeper(lifeline, status_out)
            keeper.start(argv)
            keeper.serve()
        finally:
            os._exit(0)
    # The reporter: the exit status of the command becomes its own.
    os.close(status_out)
    os.close(lifeline)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    report = b""
    while chunk := os.read(status_in, 16):
        report += chunk
    return int(report) if report else 128 + _signal.SIGKILL


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
