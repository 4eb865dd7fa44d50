"""A daemon killed in the middle of an atomic write leaves no temporary file
(tools/pending_writes.py).

The write's temporary file (as big as the file) sits beside its target in the workspace until
the rename. A process that is SIGKILLed while writing a 24 MB file stalls in its fsync, so the
kill lands mid-write every time; the next daemon's start-up must remove the leftover, and the
target keeps its old content.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from pi_rpc.tools.pending_writes import PendingWrites, is_our_temp_name, temp_name
from tests.e2e.conftest import daemon_env

pytestmark = pytest.mark.e2e

BIG = 24 * 1024 * 1024

# Runs the real write_file_atomic; its fsync never returns, so the process is killed mid-write.
WRITER = textwrap.dedent("""
    import os, sys, time, anyio
    from pi_rpc.tools import fs

    def stalled_fsync(fd):
        print("writing", flush=True)
        time.sleep(3600)

    fs.os.fsync = stalled_fsync
    anyio.run(fs.write_file_atomic, sys.argv[1], b"x" * int(sys.argv[2]))
""")


def leftovers(workspace: Path) -> list[str]:
    return sorted(p.name for p in workspace.rglob("*") if p.name.endswith(".tmp"))


def test_the_next_daemon_removes_a_killed_writes_temp_file(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    target = workspace / "src" / "big.txt"
    target.write_text("old content\n")
    env = daemon_env(tmp_path / "home")

    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(target), str(BIG)], env=env, stdout=subprocess.PIPE)
    assert writer.stdout is not None and writer.stdout.readline() == b"writing\n"
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait()
    writer.stdout.close()
    (left,) = leftovers(workspace)  # the crash state: a full-size temp file in the workspace
    assert (workspace / "src" / left).stat().st_size == BIG

    with DaemonClient(["--cwd", str(workspace), "--no-session"], env=env) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        assert client.close() == 0
    assert leftovers(workspace) == []
    assert target.read_text() == "old content\n"
    assert any("removed 1 temporary file" in line for line in client.stderr_lines)


def test_the_sweep_spares_live_writers_and_files_not_ours(tmp_path: Path) -> None:
    journals, workspace = tmp_path / "journals", tmp_path / "ws"
    workspace.mkdir()
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        live_temp = workspace / temp_name("a.txt", "0123456789ab")
        dead_temp = workspace / temp_name("b.txt", "ba9876543210")
        not_ours = workspace / "notes.tmp"
        for path in (live_temp, dead_temp, not_ours):
            path.write_text("x")
        PendingWrites(journals, live.pid).begin(str(live_temp))
        dead_journal = PendingWrites(journals, dead.pid)
        dead_journal.begin(str(dead_temp))
        dead_journal.begin(str(not_ours))

        assert PendingWrites(journals).sweep_stale() == 1
        assert sorted(p.name for p in workspace.iterdir()) == sorted([live_temp.name, not_ours.name])
        assert sorted(p.name for p in journals.iterdir()) == [str(live.pid)]
        assert is_our_temp_name(live_temp.name) and not is_our_temp_name(not_ours.name)
    finally:
        live.kill()
        live.wait()
