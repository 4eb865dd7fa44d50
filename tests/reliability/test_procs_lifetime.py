"""Nothing a tool started outlives the daemon, however the daemon ends (spec 9.8;
protocol/PROTOCOL.md, "Lifecycle", step 4).

The daemon runs as a subprocess over real pipes. Its bash tool starts a foreground `sleep`, a
background job, a `nohup` job, a `setsid` job and a double fork, each with a unique marker as its
argv[0], so they are found in /proc wherever they were reparented to, and never confused with
another test's processes. Every way the daemon can end must leave none of them running.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient

from ..e2e.conftest import SAMPLE, daemon_env
from .procs import KINDS, marked, poll, tree_command

pytestmark = [pytest.mark.e2e, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")]


class Run:
    """A daemon whose scripted model runs `tree_command` on the prompt "procs"."""

    def __init__(self, tmp_path: Path, *, foreground: bool) -> None:
        self.marker = f"pi-procs-{uuid.uuid4().hex[:12]}"
        self.expected = len(KINDS) + (1 if foreground else 0)
        command = tree_command(self.marker, foreground=foreground)
        script = tmp_path / "procs.json"
        call = {"toolCall": {"name": "bash", "arguments": {"command": command}}}
        script.write_text(json.dumps({"replies": [{"match": "^procs", "turns": [[call], [{"text": "done"}]]}]}))
        workspace = tmp_path / "ws"
        shutil.copytree(SAMPLE, workspace)
        home = tmp_path / "home"
        home.mkdir()
        self.client = DaemonClient(["--cwd", str(workspace), "--script", str(script)], env=daemon_env(home))

    def start_tools(self) -> int:
        """Send the prompt; return its id once every marked process is running."""
        prompt_id = self.client.request_nowait("prompt", {"message": "procs"})
        self.client.wait_for_event(
            lambda e: e["type"] == "tool_execution_update" and "started" in str(e["partialResult"]["content"])
        )
        assert poll(lambda: len(marked(self.marker)) == self.expected), marked(self.marker)
        return prompt_id

    def survivors(self) -> list[int]:
        poll(lambda: not marked(self.marker))
        return marked(self.marker)


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[Callable[..., Run]]:
    started: list[Run] = []

    def make(*, foreground: bool = True) -> Run:
        place = tmp_path / f"run{len(started)}"
        place.mkdir()
        run = Run(place, foreground=foreground)
        started.append(run)
        return run

    yield make
    for run in started:
        for pid in marked(run.marker):  # never leave a failed test's processes behind
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if run.client.proc.poll() is None:
            run.client.proc.kill()
            run.client.proc.wait()
        run.client.terminate()


def supervisors_of(daemon: int) -> list[int]:
    """The daemon's tool-process supervisor (pi_rpc/tools/supervisor.py), among its children."""
    children = Path(f"/proc/{daemon}/task/{daemon}/children").read_text().split()
    found = []
    for child in map(int, children):
        try:
            if b"import supervisor" in Path(f"/proc/{child}/cmdline").read_bytes():
                found.append(child)
        except OSError:
            continue
    return found


def exited(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0] == b"Z"
    except OSError:
        return True


def test_kill_9_of_the_daemon_mid_command_leaves_no_process(runs: Callable[..., Run]) -> None:
    run = runs()
    run.start_tools()
    supervisors = supervisors_of(run.client.proc.pid)
    assert len(supervisors) == 1  # one for the daemon's life, not one per command
    run.client.proc.kill()
    run.client.proc.wait()
    assert run.survivors() == []
    assert poll(lambda: exited(supervisors[0]))  # its control socket closed with the daemon


def test_kill_9_after_the_command_ended_kills_what_it_left_running(runs: Callable[..., Run]) -> None:
    """The shell exited and the call finished; its background processes still die with the daemon."""
    run = runs(foreground=False)
    prompt_id = run.start_tools()
    assert run.client.result(prompt_id)["stopReason"] == "stop"
    assert len(marked(run.marker)) == len(KINDS)  # a finished call leaves them running (spec 9.9)
    run.client.proc.kill()
    run.client.proc.wait()
    assert run.survivors() == []


def test_abort_kills_every_process_the_command_started(runs: Callable[..., Run]) -> None:
    run = runs()
    prompt_id = run.start_tools()
    assert run.client.request("abort") is None
    assert run.client.result(prompt_id)["stopReason"] == "aborted"
    assert run.survivors() == []
    assert run.client.close() == 0


def test_stdin_eof_kills_every_process_the_command_started(runs: Callable[..., Run]) -> None:
    run = runs()
    run.start_tools()
    assert run.client.close() == 0
    assert run.survivors() == []


@pytest.mark.parametrize("how", ["exit", "sigterm"])
def test_clean_shutdown_kills_every_process_the_command_started(runs: Callable[..., Run], how: str) -> None:
    run = runs()
    run.start_tools()
    if how == "exit":
        run.client.notify("exit")
    else:
        run.client.proc.send_signal(signal.SIGTERM)
    assert run.client.proc.wait(60) == 0
    assert run.survivors() == []
