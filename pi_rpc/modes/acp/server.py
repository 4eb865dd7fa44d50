"""`pi-rpc --mode acp`: the Agent Client Protocol (Zed and other ACP editors) over stdio.

The official SDK (`agent-client-protocol`) routes and validates the JSON-RPC requests; our
transport feeds it stdin lines and writes its answers to the private protocol fd. End of stdin
or SIGTERM/SIGINT/SIGHUP aborts every run, kills what the tools started, flushes, and exits 0.
"""

from __future__ import annotations

import logging
from typing import cast

import acp
import anyio
from acp.agent.connection import AgentSideConnection

from pi_rpc.ai.clients import close_shared_clients
from pi_rpc.modes.acp.agent import AcpAgent
from pi_rpc.modes.acp.transport import StdioTransport
from pi_rpc.modes.framing import DEFAULT_MAX_MESSAGE_BYTES, encode_jsonl
from pi_rpc.modes.stdio import EXIT_ABORT_SECONDS, StdoutSink, claim_stdout, watch_signals
from pi_rpc.session.session import SessionConfig
from pi_rpc.tools.process import kill_all_process_groups

_log = logging.getLogger(__name__)


class AcpDaemon:
    def __init__(
        self,
        config: SessionConfig,
        stdin_fd: int = 0,
        stdout_fd: int | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.config = config
        self.stdin_fd = stdin_fd
        self.stdout_fd = stdout_fd
        self.max_message_bytes = max_message_bytes
        self._stop = anyio.Event()

    async def run(self) -> None:
        out_fd = self.stdout_fd if self.stdout_fd is not None else claim_stdout()
        sink = StdoutSink(out_fd, encode_jsonl)
        await sink.open()
        transport = StdioTransport(self.stdin_fd, sink, self.max_message_bytes)
        async with anyio.create_task_group() as tasks:
            agent = AcpAgent(self.config, tasks, transport.send_now, transport.send_delta)
            transport.local_methods["session/set_model"] = agent.set_session_model
            # Unstable methods on: session/resume and session/close (those we do not implement stay -32601).
            conn = AgentSideConnection(cast(acp.Agent, agent), transport, listening=False, use_unstable_protocol=True)
            tasks.start_soon(self._serve, conn)
            tasks.start_soon(watch_signals, self._stop)
            await self._stop.wait()
            with anyio.move_on_after(EXIT_ABORT_SECONDS, shield=True):
                await agent.close()  # prompts in flight answer `cancelled` while the sink is open
            kill_all_process_groups()
            await close_shared_clients()
            with anyio.move_on_after(2, shield=True):
                await conn.close()
                await sink.drain()
            tasks.cancel_scope.cancel("daemon exiting")

    async def _serve(self, conn: AgentSideConnection) -> None:
        try:
            await conn.listen()  # returns at end of stdin
        finally:
            self._stop.set()
