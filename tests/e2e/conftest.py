from __future__ import annotations

import os
import select
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pi_rpc.ai.apis import known_providers
from pi_rpc.demo.rpc_client import DaemonClient

# The loopback model server every provider-facing test here asks for by name.
from .loopback_model import loopback  # noqa: F401 - a fixture

SCRIPTS = Path(__file__).parent / "scripts"
SAMPLE = Path(__file__).parents[2] / "pi_rpc" / "demo" / "workspace"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(SAMPLE, ws)
    return ws


def daemon_env(home: Path | None = None) -> dict[str, str]:
    """The developer's environment minus anything that could pick a real provider."""
    env = dict(os.environ)
    for known in known_providers().values():
        env.pop(known.key_variable, None)
        env.pop(known.base_url_variable, None)
    if home is not None:  # no models.json of the developer's either
        env["HOME"] = str(home)
        env["XDG_CONFIG_HOME"] = str(home / ".config")
        env["XDG_DATA_HOME"] = str(home / ".local" / "share")
    return env


@pytest.fixture
def spawn(workspace: Path, tmp_path: Path) -> Iterator[Callable[..., DaemonClient]]:
    clients: list[DaemonClient] = []
    home = tmp_path / "home"
    home.mkdir()

    def start(*args: str, framing: str = "lsp", script: str | None = "e2e.json") -> DaemonClient:
        argv = ["--cwd", str(workspace), *args]
        if script is not None:
            argv += ["--script", str(SCRIPTS / script)]
        client = DaemonClient(argv, framing=framing, env=daemon_env(home))
        clients.append(client)
        return client

    yield start
    for client in clients:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        client.terminate()


def descendants(pid: int) -> list[int]:
    """Every live descendant of `pid` (children listed by the kernel, recursively), except the
    daemon's tool-process supervisor and the spare keeper it keeps forked for the next command:
    both live as long as the daemon. The keepers of commands (pi_rpc/tools/supervisor.py) and
    their trees are listed."""
    found: list[int] = []
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                children = Path(f"/proc/{current}/task/{tid}/children").read_text().split()
            except OSError:
                continue
            for child in map(int, children):
                if not is_tool_supervisor(child, current) and not is_spare_keeper(child, current):
                    found.append(child)
                pending.append(child)
    return found


def is_spare_keeper(pid: int, parent: int) -> bool:
    """A fork of the supervisor with no child: a keeper still waiting for its command."""
    if not (_runs_supervisor(pid) and _runs_supervisor(parent)):
        return False
    try:
        return all(not Path(f"{task}/children").read_text().split() for task in Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return False


def is_tool_supervisor(pid: int, parent: int) -> bool:
    """Its command line imports the supervisor; a keeper is a fork of it, so its parent's does too."""
    return _runs_supervisor(pid) and not _runs_supervisor(parent)


def _runs_supervisor(pid: int) -> bool:
    try:
        return b"import supervisor" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def watch(pids: list[int]) -> list[int]:
    """pidfds for `pids`: they stay valid across reparenting and tell exactly when each exits."""
    fds = []
    for pid in pids:
        try:
            fds.append(os.pidfd_open(pid))
        except ProcessLookupError:
            continue
    return fds


def still_running(fds: list[int], guard: float = 30.0) -> int:
    """How many watched processes have not exited; waits for each (the guard only stops a hang)."""
    running = 0
    for fd in fds:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        if not poller.poll(guard * 1000):
            running += 1
        os.close(fd)
    return running
