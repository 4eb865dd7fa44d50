"""The daemon exits after its helpers (modes/daemon.py `wind_down`): once stdin closes, at the
moment a client sees the daemon's exit, neither the tool supervisor nor any keeper of it is alive,
not even as a zombie (a client or test that checks "nothing left" then finds nothing)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import daemon_env
from tests.reliability.procs import poll
from tests.reliability.stream_watch import read_jsonl_until

pytestmark = pytest.mark.e2e

SCRIPT = {
    "replies": [{"turns": [[{"toolCall": {"name": "bash", "arguments": {"command": "echo ran"}}}], [{"text": "ok"}]]}]
}


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _descendants(pid: int) -> list[int]:
    """Every process below `pid` (the supervisor is in a session of its own, still our child)."""
    found: list[int] = []
    for child in _children(pid):
        found += [child, *_descendants(child)]
    return found


@pytest.mark.parametrize("mode", ["jsonrpc", "pi", "acp"])
def test_at_the_daemons_exit_no_helper_of_it_is_alive(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT))
    argv = ["--cwd", str(tmp_path), "--script", str(script), "--framing", "jsonl"]
    argv = {"jsonrpc": argv, "pi": [*argv[:4], "--mode", "rpc"], "acp": [*argv[:4], "--mode", "acp"]}[mode]
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_rpc", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=daemon_env(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        # The warm-up starts the supervisor and its spare keeper a moment after the start.
        assert poll(lambda: len(_descendants(proc.pid)) >= 2)
        helpers = _descendants(proc.pid)
        if mode == "jsonrpc":  # a command run too: its keeper is reaped, the next spare is ready
            proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"message":"go"}}\n')
            proc.stdin.flush()
            read_jsonl_until(proc.stdout.fileno(), b'"id":1,', bytearray())
            helpers += _descendants(proc.pid)
        proc.stdin.close()
        assert proc.wait(60) == 0
        alive = [pid for pid in set(helpers) if Path(f"/proc/{pid}").exists()]
    finally:
        proc.stdout.close()
    assert alive == []
