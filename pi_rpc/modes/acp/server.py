"""`pi-rpc --mode acp`: the Agent Client Protocol (Zed and other ACP editors) over stdio.

The official SDK (`agent-client-protocol`) routes and validates the JSON-RPC requests; our
transport feeds it stdin lines and writes its answers to the private protocol fd. End of stdin
or SIGTERM/SIGINT/SIGHUP ends the daemon (`serve`, modes/daemon.py): every run aborted, what the
tools started killed, the connection closed, the output flushed, exit 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import acp
import anyio
import anyio.abc
from acp.agent.connection import AgentSideConnection

from pi_rpc.modes.acp.agent import AcpAgent
from pi_rpc.modes.acp.transport import StdioTransport
from pi_rpc.modes.daemon import daemon_tables, serve
from pi_rpc.modes.editor_requests import DEFAULT_DEADLINES, EditorDeadlines
from pi_rpc.modes.framing import DEFAULT_MAX_MESSAGE_BYTES, encode_jsonl
from pi_rpc.modes.stdio import StdoutSink
from pi_rpc.session import SessionConfig, Step
from pi_rpc.tools import ProcessTables


class AcpDaemon:
    """The ACP front end (`serve` in modes/daemon.py runs it): the SDK's connection reads and routes
    the requests over our transport; `AcpAgent` holds one session per ACP session."""

    def __init__(
        self,
        config: SessionConfig,
        stdin_fd: int = 0,
        stdout_fd: int | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        process_tables: ProcessTables | None = None,
        deadlines: EditorDeadlines = DEFAULT_DEADLINES,
    ) -> None:
        self.config = config
        self.deadlines = deadlines
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.max_message_bytes = max_message_bytes
        self.process_tables = daemon_tables(process_tables, config)

    async def run(self, warm_up: Sequence[Step] = ()) -> None:
        await serve(self, self.process_tables, self.stdout_fd, warm_up)

    def frame(self, body: bytes) -> bytes:
        return encode_jsonl(body)

    async def start(self, tasks: anyio.abc.TaskGroup, sink: StdoutSink, stop: anyio.Event) -> None:
        transport = StdioTransport(self.stdin_fd, sink, self.max_message_bytes)
        self._agent = agent = AcpAgent(
            self.config, tasks, transport.send_now, transport.send_delta, self.process_tables, sink
        )
        agent.deadlines = self.deadlines
        transport.local_methods["session/set_model"] = agent.set_session_model
        # Unstable methods on: session/resume and session/close (those we do not implement stay -32601).
        self._conn = AgentSideConnection(cast(acp.Agent, agent), transport, listening=False, use_unstable_protocol=True)

    async def read(self) -> None:
        await self._conn.listen()  # returns at end of stdin

    async def close(self) -> None:
        await self._agent.close()  # prompts in flight answer `cancelled` while the sink is open

    async def release(self) -> None:
        await self._conn.close()
