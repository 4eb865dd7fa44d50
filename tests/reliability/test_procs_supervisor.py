"""`run_process_group` below its supervisor, in process: what abort kills, what a call returns.

The daemon-level tests (kill -9, exit, stdin EOF) are in test_procs_lifetime.py; these drive the
spawn path directly, so a failure points at the supervisor rather than at the daemon.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import uuid
from functools import partial
from pathlib import Path

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.tools import process
from pi_rpc.tools.process import PIPE_BYTES, SUPERVISED, ProcessTable, ProcessTables, run_process_group

from .leftovers import kill_leftovers
from .procs import KINDS, marked, poll_async, tree_command

pytestmark = [pytest.mark.anyio, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")]


def new_marker() -> str:
    return f"pi-procs-{uuid.uuid4().hex[:12]}"


async def test_abort_kills_setsid_nohup_and_double_forked_descendants(tmp_path: Path) -> None:
    """Before the supervisor, abort killed the command's group only: setsid and nohup jobs lived on."""
    marker = new_marker()
    output: list[bytes] = []
    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    partial(run_process_group, processes=ProcessTable()),
                    ["/bin/bash", "-c", tree_command(marker, foreground=True)],
                    str(tmp_path),
                    None,
                    output.append,
                )
                assert await poll_async(lambda: len(marked(marker)) == len(KINDS) + 1)
                scope.cancel()
        assert await poll_async(lambda: not marked(marker))
        assert marked(marker) == []
        assert b"".join(output) == b"started\n"
    finally:
        kill_leftovers(marker)


async def test_a_finished_command_leaves_its_jobs_until_the_daemon_exits(tmp_path: Path) -> None:
    """spec 9.9: background jobs outlive the call (not the daemon); exit kills every kind of them."""
    marker = new_marker()
    tables = ProcessTables()  # the daemon's: its sessions' tables are made there
    session_table = tables.new_table()  # held, as a session holds its own
    try:
        code = await run_process_group(
            ["/bin/bash", "-c", tree_command(marker, foreground=False)],
            str(tmp_path),
            None,
            lambda _: None,
            processes=session_table,
        )
        assert code == 0
        assert await poll_async(lambda: len(marked(marker)) == len(KINDS))
        tables.kill_all()  # what every way out of the daemon calls
        assert await poll_async(lambda: not marked(marker))
        assert marked(marker) == []
    finally:
        kill_leftovers(marker)


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_the_supervisor_leaves_when_the_last_descendant_does(tmp_path: Path) -> None:
    """A background job that ends by itself takes its supervisor with it: none accumulate."""
    marker = new_marker()
    output: list[bytes] = []
    command = f"echo $PPID; (exec -a {marker} sleep 0.3) &"
    processes = ProcessTable()  # held: the job must end by itself, not with a dropped table
    assert (
        await run_process_group(["/bin/bash", "-c", command], str(tmp_path), None, output.append, processes=processes)
        == 0
    )
    keeper = int(b"".join(output))  # the shell's parent is the supervisor that watches the tree
    assert keeper != os.getpid()
    try:
        watched = os.pidfd_open(keeper)
    except ProcessLookupError:
        return  # gone already
    try:
        assert await poll_async(lambda: not marked(marker) and select.select([watched], [], [], 0)[0] != [])
    finally:
        os.close(watched)


async def test_the_command_line_of_the_supervisor_does_not_repeat_the_command() -> None:
    """Only the command's own process shows its text in `ps` (and to tests that search for it)."""
    marker = new_marker()
    output: list[bytes] = []
    command = f"cat /proc/$PPID/cmdline; echo {marker}"
    assert await run_process_group(["/bin/sh", "-c", command], "/", None, output.append, processes=ProcessTable()) == 0
    keeper_cmdline, _, rest = b"".join(output).rpartition(b"\0")
    assert marker.encode() not in keeper_cmdline
    assert rest.endswith(marker.encode() + b"\n")


@settings(max_examples=12)
@given(code=st.integers(min_value=0, max_value=255))
async def test_the_exit_code_is_the_commands_own(tmp_path_factory: pytest.TempPathFactory, code: int) -> None:
    assert (
        await run_process_group(["/bin/sh", "-c", f"exit {code}"], "/", None, lambda _: None, processes=ProcessTable())
        == code
    )


@pytest.mark.parametrize("signum", [1, 2, 9, 15])
async def test_a_signal_death_is_128_plus_the_signal(signum: int) -> None:
    assert (
        await run_process_group(
            ["/bin/sh", "-c", f"kill -{signum} $$"], "/", None, lambda _: None, processes=ProcessTable()
        )
        == 128 + signum
    )


async def test_commands_get_default_signal_handling() -> None:
    """Python ignores SIGPIPE; the command must not: `yes | head -1` ends quietly."""
    output: list[bytes] = []
    assert (
        await run_process_group(
            ["/bin/bash", "-c", "yes | head -1; trap -p"], "/", None, output.append, processes=ProcessTable()
        )
        == 0
    )
    assert b"".join(output) == b"y\n"


@pytest.mark.skipif(not SUPERVISED, reason="the supervisor runs on Linux only")
async def test_signals_the_daemon_inherited_ignored_are_at_their_default_in_the_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A daemon started as a background job (or a suite run so: `make test &`, a CI runner) has
    SIGINT and SIGQUIT ignored, one under nohup SIGHUP; its commands must not inherit that."""
    inherited = (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGUSR1)
    before = {signum: signal.signal(signum, signal.SIG_IGN) for signum in inherited}
    supervisor = process._Supervisor()
    try:
        supervisor.start()  # a new supervisor, started while the daemon ignores them
    finally:
        for signum, handler in before.items():
            signal.signal(signum, handler)
    monkeypatch.setattr(process, "_supervisor", supervisor)
    output: list[bytes] = []
    try:
        code = await run_process_group(
            ["/bin/bash", "-c", "trap -p; grep SigIgn /proc/self/status"],
            "/",
            None,
            output.append,
            processes=ProcessTable(),
        )
    finally:
        supervisor._stop()
    assert code == 0
    ignored = int(b"".join(output).split(b"SigIgn:")[1], 16)
    assert b"trap --" not in b"".join(output)
    assert [signum for signum in inherited if ignored & (1 << (signum - 1))] == []


async def test_stdin_is_empty_and_stderr_merges_in_order() -> None:
    output: list[bytes] = []
    command = "cat; echo out; echo err >&2; echo out2"
    assert await run_process_group(["/bin/sh", "-c", command], "/", None, output.append, processes=ProcessTable()) == 0
    assert b"".join(output) == b"out\nerr\nout2\n"


async def test_the_command_holds_no_descriptor_of_the_supervisor() -> None:
    """Only stdin, stdout and stderr reach the command; the lifeline would keep it watched forever."""
    output: list[bytes] = []
    assert (
        await run_process_group(
            ["/bin/sh", "-c", "ls /proc/self/fd"], "/", None, output.append, processes=ProcessTable()
        )
        == 0
    )
    fds = sorted(int(fd) for fd in b"".join(output).split())
    assert fds[:3] == [0, 1, 2]
    assert len(fds) == 4  # the 4th is the directory `ls` itself opened


async def test_a_relative_program_is_found_in_the_commands_directory(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho ran in $PWD\n")
    script.chmod(0o755)
    output: list[bytes] = []
    assert await run_process_group(["./run.sh"], str(tmp_path), None, output.append, processes=ProcessTable()) == 0
    assert b"".join(output) == f"ran in {tmp_path}\n".encode()


async def test_a_program_that_cannot_run_is_the_os_error_of_a_direct_spawn(tmp_path: Path) -> None:
    (tmp_path / "plain.txt").write_text("not a program\n")
    with pytest.raises(PermissionError):
        await run_process_group(["./plain.txt"], str(tmp_path), None, lambda _: None, processes=ProcessTable())
    with pytest.raises(FileNotFoundError, match="No such file or directory: 'no-such-program-here'"):
        await run_process_group(["no-such-program-here"], str(tmp_path), None, lambda _: None, processes=ProcessTable())


async def _keeper_parent() -> int:
    """The parent of the keeper that watched this call: the process that forked it."""
    output: list[bytes] = []
    assert (
        await run_process_group(
            ["/bin/sh", "-c", "cat /proc/$PPID/stat"], "/", None, output.append, processes=ProcessTable()
        )
        == 0
    )
    return int(b"".join(output).rpartition(b")")[2].split()[1])


def _gone(pid: int) -> bool:
    """Exited (a zombie until its parent reaps it) or reaped."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rpartition(b")")[2].split()[0] == b"Z"
    except OSError:
        return True


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_one_supervisor_forks_the_keeper_of_every_call() -> None:
    """A call costs a fork of the daemon's one supervisor, not a Python start-up (before, each
    call started its own supervisor, which exited with the command)."""
    first, second = await _keeper_parent(), await _keeper_parent()
    assert first == second != os.getpid()
    assert os.path.exists(f"/proc/{first}")  # noqa: ASYNC240 - it outlives the calls


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_a_dead_supervisor_is_replaced_on_the_next_call() -> None:
    old = await _keeper_parent()
    os.kill(old, 9)
    assert await poll_async(lambda: _gone(old))
    new = await _keeper_parent()
    assert new != old
    output: list[bytes] = []
    assert (
        await run_process_group(["/bin/sh", "-c", "echo fine"], "/", None, output.append, processes=ProcessTable()) == 0
    )
    assert b"".join(output) == b"fine\n"


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_when_an_abort_returns_no_process_of_the_command_is_left(tmp_path: Path) -> None:
    """The abort's one wait is for the keeper's word that the whole tree is reaped: nothing to poll
    for afterwards, escaped descendants included (a guard for the abort's latency work)."""
    marker = new_marker()
    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    partial(run_process_group, processes=ProcessTable()),
                    ["/bin/bash", "-c", tree_command(marker, foreground=True)],
                    str(tmp_path),
                    None,
                    lambda _: None,
                )
                assert await poll_async(lambda: len(marked(marker)) == len(KINDS) + 1)
                scope.cancel()
        assert marked(marker) == []
    finally:
        kill_leftovers(marker)


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_the_command_writes_into_a_large_pipe() -> None:
    """With Linux's 64 KiB pipe a fast writer blocked, and woke the daemon, every 64 KiB: 200 MB of
    output took three times as long as the command alone."""
    probe = "import fcntl; print(fcntl.fcntl(1, fcntl.F_GETPIPE_SZ))"
    output: list[bytes] = []
    assert (
        await run_process_group([sys.executable, "-c", probe], "/", None, output.append, processes=ProcessTable()) == 0
    )
    assert int(b"".join(output)) == PIPE_BYTES


# 50 MB written 4 KiB at a time, as stdio writers (here `fold`) write: the shape of a big output.
FOLDED_COMMAND = "head -c 50000000 /dev/zero | tr '\\0' x | fold -w 100"
FOLDED_BYTES = 50_000_000 + 499_999  # the x's and a newline between each 100 of them


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_a_streaming_command_is_read_in_few_large_chunks() -> None:
    """A reader that read as soon as the pipe had data was woken by each 4 KiB write: 200 MB took
    20,000-50,000 reads. Streaming output is now read at most once per COALESCE_SECONDS, or when
    the pipe was found half full, so the reads are bounded by the time the output took (a count
    bound, not a timing one: the slower the machine, the more reads are allowed)."""
    sizes: list[int] = []
    started = anyio.current_time()
    code = await run_process_group(
        ["/bin/sh", "-c", FOLDED_COMMAND], "/", None, lambda chunk: sizes.append(len(chunk)), processes=ProcessTable()
    )
    elapsed = anyio.current_time() - started
    assert code == 0 and sum(sizes) == FOLDED_BYTES
    before_streaming = process.STREAM_BYTES // 4096 + 1
    after_full_reads = 2 * FOLDED_BYTES // (PIPE_BYTES // 2) + 2
    assert len(sizes) <= before_streaming + after_full_reads + elapsed / process.COALESCE_SECONDS


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_reading_a_big_output_does_not_fault_in_fresh_memory_per_read() -> None:
    """Each os.read asked for the whole 1 MiB pipe, which malloc mapped afresh: every page a read
    filled was a page fault, ~60,000 for 200 MB, costing more than the copy. A read now asks for
    what the pipe holds, and same-sized blocks are reused."""
    import resource

    received = [0]

    def sink(chunk: bytes) -> None:
        received[0] += len(chunk)

    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    await run_process_group(["/bin/sh", "-c", FOLDED_COMMAND], "/", None, sink, processes=ProcessTable())
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
    assert received[0] == FOLDED_BYTES
    assert faults < FOLDED_BYTES // 16384  # 3,000 pages, 12 MB; it was 11,000


async def test_an_abort_while_output_streams_kills_the_writer(tmp_path: Path) -> None:
    """Streaming output is read after a short wait (COALESCE_SECONDS): an abort landing in that
    wait still ends the call with the writer gone."""
    marker = new_marker()
    received = [0]

    def sink(chunk: bytes) -> None:
        received[0] += len(chunk)

    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(
                    partial(run_process_group, processes=ProcessTable()),
                    ["/bin/bash", "-c", f"exec -a {marker} yes streaming"],
                    str(tmp_path),
                    None,
                    sink,
                )
                assert await poll_async(lambda: received[0] > 4 * process.STREAM_BYTES)
                scope.cancel()
        assert marked(marker) == []
    finally:
        kill_leftovers(marker)


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children", "rb") as listing:
            found.update(int(child) for child in listing.read().split())
    return found


async def _keeper_of_a_call() -> int:
    output: list[bytes] = []
    assert (
        await run_process_group(["/bin/sh", "-c", "echo $PPID"], "/", None, output.append, processes=ProcessTable())
        == 0
    )
    return int(b"".join(output))


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_the_keeper_of_the_next_call_is_ready_before_the_call() -> None:
    """A call hands its command to a keeper forked beforehand: it pays one spawn, not two forks."""
    supervisor = await _keeper_parent()
    first = await _keeper_of_a_call()
    assert await poll_async(lambda: _gone(first) and bool(_children(supervisor) - {first}))
    waiting = _children(supervisor) - {first}
    assert await _keeper_of_a_call() in waiting


async def test_a_directory_that_is_gone_is_the_commands_error(tmp_path: Path) -> None:
    """The keeper cannot enter the directory: the call still returns, with the shell's 127."""
    output: list[bytes] = []
    missing = tmp_path / "removed"
    assert (
        await run_process_group(
            ["/bin/sh", "-c", "echo ran"], str(missing), None, output.append, processes=ProcessTable()
        )
        == 127
    )
    assert b"".join(output) == b"/bin/sh: No such file or directory\n"


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_the_spare_keeper_of_a_dead_supervisor_goes_at_the_next_call() -> None:
    """A keeper waiting for a command must not outlive its supervisor by more than the daemon's
    next look: the daemon holds its request socket and drops it when it finds the supervisor gone
    (the spare then leaves); the call is served all the same."""
    supervisor = await _keeper_parent()
    assert await poll_async(lambda: bool(_children(supervisor)))
    spares = _children(supervisor)
    os.kill(supervisor, 9)
    assert await poll_async(lambda: _gone(supervisor))  # (a call sent as it dies is lost with it)
    output: list[bytes] = []
    assert (
        await run_process_group(["/bin/sh", "-c", "echo fine"], "/", None, output.append, processes=ProcessTable()) == 0
    )
    assert b"".join(output) == b"fine\n"
    assert await poll_async(lambda: all(_gone(spare) for spare in spares))


@pytest.mark.skipif(not SUPERVISED, reason="Linux only")
async def test_a_call_goes_to_the_spare_keeper_without_waking_the_supervisor() -> None:
    """The daemon holds the spare's request socket and sends the command there: the call does not
    wait for the supervisor to be scheduled (it handed every command on, one more process woken
    on the way; a stopped supervisor held every call until its 30 s start timeout)."""
    supervisor = await _keeper_parent()
    first = await _keeper_of_a_call()
    assert await poll_async(lambda: _gone(first) and bool(_children(supervisor) - {first}))
    os.kill(supervisor, signal.SIGSTOP)
    try:
        with anyio.fail_after(10):  # a guard against the old hang, not a timing assertion
            keeper = await _keeper_of_a_call()
    finally:
        os.kill(supervisor, signal.SIGCONT)
    assert keeper != first
