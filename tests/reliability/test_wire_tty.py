"""`pi-rpc --framing jsonl` started by hand in a terminal (protocol/PROTOCOL.md, "Framing"), driven
through a real pty.

Before the fix the writer's pipe transport set O_NONBLOCK on the terminal's open file, which stdin
shares; stdin's read then failed with EAGAIN, that was taken for end of input, and the daemon
exited at once, silently, leaving the terminal non-blocking for the next program.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import termios
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_rpc.modes.framing import JsonlFrameReader
from pi_rpc.modes.stdio import _read_chunk
from tests.e2e.conftest import daemon_env

pytestmark = pytest.mark.e2e

GUARD = 30.0  # only stops a hang; nothing here is timed


class Terminal:
    """The daemon with a pty as stdin and stdout, as a shell would start it; echo off."""

    def __init__(self, workspace: Path, home: Path, *, nonblocking_before: bool = False) -> None:
        self.master, self.slave = os.openpty()
        attrs = termios.tcgetattr(self.slave)
        attrs[3] &= ~termios.ECHO
        termios.tcsetattr(self.slave, termios.TCSANOW, attrs)
        if nonblocking_before:
            os.set_blocking(self.slave, False)  # as another program on the same terminal might leave it
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_rpc", "--framing", "jsonl", "--cwd", str(workspace)],
            stdin=self.slave,
            stdout=self.slave,
            stderr=subprocess.PIPE,
            env=daemon_env(home),
        )
        self.reader = JsonlFrameReader()

    def type_line(self, message: dict[str, Any]) -> None:
        os.write(self.master, msgspec.json.encode(message) + b"\n")

    def response(self, msg_id: int) -> dict[str, Any] | None:
        """The response to `msg_id`, or None when the daemon exits (or the guard passes) first."""
        while True:
            ready, _, _ = select.select([self.master], [], [], GUARD)
            if not ready:
                return None
            try:
                chunk = os.read(self.master, 1 << 16)
            except OSError:  # EIO: no process holds the terminal any more
                return None
            for frame in self.reader.feed(chunk):
                if isinstance(frame, bytes):
                    message = msgspec.json.decode(frame)
                    if message.get("id") == msg_id:
                        return dict(message)

    def end_of_input(self) -> int:
        os.write(self.master, b"\x04")  # Ctrl-D at the start of a line
        return self.proc.wait(GUARD)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stderr is not None
        self.proc.stderr.close()
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def terminal(workspace: Path, tmp_path: Path) -> Iterator[Any]:
    opened: list[Terminal] = []
    home = tmp_path / "home"
    home.mkdir()

    def start(**kwargs: bool) -> Terminal:
        opened.append(Terminal(workspace, home, **kwargs))
        return opened[-1]

    yield start
    for term in opened:
        term.close()


def test_started_in_a_terminal_the_daemon_serves_and_leaves_the_terminal_blocking(terminal: Any) -> None:
    term = terminal()
    for msg_id in (1, 2):  # one after the other, as typed: the second read failed
        term.type_line({"jsonrpc": "2.0", "id": msg_id, "method": "state"})
        response = term.response(msg_id)
        assert response is not None and response["result"]["isStreaming"] is False, f"no answer to request {msg_id}"
    assert os.get_blocking(term.slave), "the daemon made the shared terminal non-blocking"
    assert term.end_of_input() == 0
    assert os.get_blocking(term.slave)


def test_a_terminal_left_non_blocking_by_another_program_is_not_end_of_input(terminal: Any) -> None:
    term = terminal(nonblocking_before=True)
    for msg_id in (1, 2):
        term.type_line({"jsonrpc": "2.0", "id": msg_id, "method": "state"})
        response = term.response(msg_id)
        assert response is not None and "result" in response, f"no answer to request {msg_id}"
    assert term.end_of_input() == 0


def test_reading_a_non_blocking_pipe_waits_for_data_instead_of_reporting_eof() -> None:
    read_end, write_end = os.pipe()
    os.set_blocking(read_end, False)
    writer = threading.Timer(0.2, os.write, (write_end, b"late"))
    writer.start()
    try:
        assert _read_chunk(read_end) == b"late"
    finally:
        writer.join()
        os.close(write_end)
    assert _read_chunk(read_end) == b""  # a real end of input still is one
    os.close(read_end)
