"""One daemon lifecycle for every front end: `serve(front_end)`.

`serve` owns what every mode did alike: claim stdout (the protocol keeps a private fd, modes/stdio.py),
open the non-blocking sink, run one task group, read stdin until it ends, watch for SIGTERM/SIGINT/
SIGHUP, and on the first way out (end of input, a signal, or the front end's own `exit`) wind down:
close the sessions (their runs aborted, their MCP servers stopped), kill every process group a tool
started (through the daemon's `ProcessTables`, which holds each session's table), flush the output,
and stop the tool supervisor, reaping it and its keepers (so when the daemon's exit is seen, no
helper of it is alive), each step bounded in time. The HTTP pool the sessions' requests share and
the process tables are the composition root's (pi_rpc/cli.py); the pool is closed once `serve` returns.

A front end (`FrontEnd`) says only what is its own: how a message is framed on stdout, what it sets
up once the output is open, how it reads its input, and how it closes. The modes fill that in
differently, and the skeleton does not pretend otherwise:

- jsonrpc and pi read stdin with `read_frames` (modes/stdio.py) and dispatch each frame themselves;
  jsonrpc starts the MCP servers in the background (`initialize` waits for them), pi before it
  reads (Pi's protocol cannot announce tools that appear later).
- acp reads through the ACP SDK's connection over our transport, holds one session per ACP session
  (closing them all is `close`), and lets go of the connection before the last flush (`release`).
- lsp reads through pygls' own reader loop, and may replace its session when it follows the
  editor's workspace root, so `close` closes the session it holds at the end.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import anyio
import anyio.abc

from pi_rpc.agent import all_agents_idle
from pi_rpc.modes.stack_dumps import dump_tasks_on_sigusr2
from pi_rpc.modes.stdio import EXIT_ABORT_SECONDS, StdoutSink, claim_stdout, watch_signals
from pi_rpc.session import WARM_UP_AFTER_S, SessionConfig, Step, run_warm_up
from pi_rpc.tools import ProcessTables

# How long the last flush (and the front end's `release`) may take before the daemon exits anyway.
EXIT_FLUSH_SECONDS = 2.0


class FrontEnd(Protocol):
    """One wire protocol over the daemon's lifecycle (see the module docstring for each mode's).

    The smallest real one is Pi mode's `PiDaemon` (modes/pi/server.py); its shape, cut down:

        class LineDaemon:  # one JSON line in, one out
            def __init__(self, config: SessionConfig, tables: ProcessTables) -> None:
                self.config, self.tables = config, tables  # config: cli.py's, from open_folder

            def frame(self, body: bytes) -> bytes:
                return encode_jsonl(body)

            async def start(self, tasks, sink, stop) -> None:
                self.tasks = tasks
                self.session = AgentSession(self.config, tasks)  # its runs live in `tasks`
                self.session.subscribe(lambda event: sink.send(msgspec.json.encode(event)), sink.wait_for_room)
                await self.session.start_mcp_servers()

            async def read(self) -> None:
                await read_frames(0, JsonlFrameReader(DEFAULT_MAX_MESSAGE_BYTES), self.on_frame)

            def on_frame(self, frame: Frame) -> None:  # a command: session.prompt, .abort, .state …
                if not isinstance(frame, FrameError):
                    self.tasks.start_soon(self.session.prompt, json.loads(frame)["message"])

            async def close(self) -> None:
                await self.session.close()

            async def release(self) -> None:
                pass

        await serve(LineDaemon(config, tables), tables)
    """

    def frame(self, body: bytes) -> bytes:
        """One encoded message as it goes on stdout (LSP headers, a JSON line, or as it is)."""
        ...

    async def start(self, tasks: anyio.abc.TaskGroup, sink: StdoutSink, stop: anyio.Event) -> None:
        """Set up the sessions and the dispatch; runs before any input is read. `stop.set()` ends
        the daemon (a protocol's `exit`)."""
        ...

    async def read(self) -> None:
        """Read and dispatch the input; return at its end (the daemon then winds down)."""
        ...

    async def close(self) -> None:
        """Abort every run and close every session (bounded by `serve`)."""
        ...

    async def release(self) -> None:
        """Let go of the transport, before the output's last flush."""
        ...


def daemon_tables(given: ProcessTables | None, config: SessionConfig) -> ProcessTables:
    """A daemon's process tables: those the composition root made (`config`'s table among them),
    else a set of its own holding `config`'s (a daemon a test builds)."""
    return given if given is not None else ProcessTables([config.tools.processes])


async def serve(
    front_end: FrontEnd, processes: ProcessTables, stdout_fd: int | None = None, warm_up: Sequence[Step] = ()
) -> None:
    """Run `front_end` on stdin and stdout (or `stdout_fd`, left as it is) until a way out, which
    kills what its sessions' tools left running (`processes`, the tables of its sessions); a
    moment after the start, the `warm_up` steps ready the first prompt, out of any run's way
    (session/warm_up.py)."""
    out_fd = stdout_fd if stdout_fd is not None else claim_stdout()
    sink = StdoutSink(out_fd, front_end.frame)
    await sink.open()
    stop = anyio.Event()
    async with anyio.create_task_group() as tasks:
        await front_end.start(tasks, sink, stop)
        tasks.start_soon(_read_until_end, front_end, stop)
        tasks.start_soon(watch_signals, stop)
        tasks.start_soon(dump_tasks_on_sigusr2)
        if warm_up:
            tasks.start_soon(run_warm_up, warm_up, WARM_UP_AFTER_S, all_agents_idle, sink.wait_written)
        await stop.wait()
        await wind_down(front_end, sink, processes)
        tasks.cancel_scope.cancel("daemon exiting")


async def _read_until_end(front_end: FrontEnd, stop: anyio.Event) -> None:
    try:
        await front_end.read()
    finally:
        stop.set()


async def wind_down(front_end: FrontEnd, sink: StdoutSink, processes: ProcessTables) -> None:
    """Every way out: close the sessions, kill every process group their tools started (a session
    that did not close in time leaves them to this), flush the output."""
    with anyio.move_on_after(EXIT_ABORT_SECONDS, shield=True):
        await front_end.close()
    processes.kill_all()
    with anyio.move_on_after(EXIT_FLUSH_SECONDS, shield=True):
        await front_end.release()
        await sink.drain()
    # Last, so the daemon's exit is seen only once its helpers are gone: the tool supervisor and
    # its keepers exit and are reaped here (bounded by the supervisor's own wait).
    with anyio.CancelScope(shield=True):
        await anyio.to_thread.run_sync(processes.stop_supervisor)
