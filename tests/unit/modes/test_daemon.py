"""`serve(front_end)`, the one daemon lifecycle, with a front end that records what it is asked to
do: every way out (end of input, the protocol's own `exit`) closes the sessions, then lets go of the
transport, and what the front end wrote reaches the client, framed its way."""

from __future__ import annotations

import os

import anyio
import anyio.abc
import pytest

from pi_rpc.modes.daemon import serve
from pi_rpc.tools.process import ProcessTables

from .recorder import Recorder

pytestmark = pytest.mark.anyio


async def run_with_input(lines: bytes, exit_on: bytes | None = None) -> tuple[list[str], bytes]:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    os.write(stdin_w, lines)
    if exit_on is None:
        os.close(stdin_w)  # end of input, as when the editor goes away
    front_end = Recorder(stdin_r, exit_on)
    try:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            await serve(front_end, ProcessTables(), stdout_w)
        os.close(stdout_w)
        output = b""
        while chunk := os.read(stdout_r, 1 << 16):
            output += chunk
    finally:
        if exit_on is not None:
            os.close(stdin_w)
        os.close(stdin_r)
        os.close(stdout_r)
    return front_end.steps, output


async def test_end_of_input_winds_down_and_everything_written_reaches_the_client() -> None:
    steps, output = await run_with_input(b"one\ntwo\n")
    assert steps == ["start", "read", "end of input", "close", "release"]
    assert output == b"<hello>\n<one>\n<two>\n<closed>\n"


async def test_the_protocols_exit_winds_down_while_input_is_still_open() -> None:
    steps, output = await run_with_input(b"one\nexit\n", exit_on=b"exit")
    assert steps == ["start", "read", "close", "release"]  # the reader is cancelled, not finished
    assert output == b"<hello>\n<one>\n<exit>\n<closed>\n"


async def test_the_warm_up_runs_while_the_daemon_waits_for_input() -> None:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    front_end = Recorder(stdin_r, exit_on=b"exit")
    warmed = anyio.Event()
    try:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(
                    serve, front_end, ProcessTables(), stdout_w, [lambda: front_end.steps.append("warm"), warmed.set]
                )
                await warmed.wait()
                os.write(stdin_w, b"exit\n")
    finally:
        for fd in (stdin_r, stdin_w, stdout_r, stdout_w):
            os.close(fd)
    assert front_end.steps == ["start", "read", "warm", "close", "release"]


async def test_a_daemon_that_ends_before_its_warm_up_ends_at_once() -> None:
    stdin_r, stdin_w = os.pipe()
    stdout_r, stdout_w = os.pipe()
    os.close(stdin_w)  # the editor went away at once
    front_end = Recorder(stdin_r)
    try:
        with anyio.fail_after(30):
            await serve(front_end, ProcessTables(), stdout_w, [lambda: front_end.steps.append("warm")])
    finally:
        for fd in (stdin_r, stdout_r, stdout_w):
            os.close(fd)
    assert front_end.steps == ["start", "read", "end of input", "close", "release"]  # no step ran
