"""The JSON-RPC front end in-process: the real Rpc and handlers over one AgentSession, with the
test as the editor. Requests enter where the daemon's reader hands them on (`Rpc.handle`, or the
daemon's dispatch for the checks it makes first); every body the daemon would write is decoded here."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import msgspec

from pi_rpc.modes.jsonrpc import handlers
from pi_rpc.modes.jsonrpc.client_requests import ClientRequests
from pi_rpc.modes.jsonrpc.rpc import Rpc
from pi_rpc.modes.jsonrpc.server import Daemon
from pi_rpc.session.session import AgentSession, SessionConfig

Json = dict[str, Any]


class RpcError(Exception):
    def __init__(self, error: Json) -> None:
        super().__init__(error["message"])
        self.code: int = error["code"]
        self.message: str = error["message"]


class Editor:
    """Sends requests, receives every message the daemon writes, answers its requests."""

    def __init__(self, config: SessionConfig, session: AgentSession, tasks: anyio.abc.TaskGroup) -> None:
        self.received: list[Json] = []
        self._changed = anyio.Event()
        self._ids = itertools.count(1)
        self.rpc = Rpc(self, tasks)
        self.client = ClientRequests(self)
        self.session = session
        self.shutdowns = 0
        self.exits = 0
        self.daemon = Daemon(config)
        self.daemon._client = self.client  # what Daemon.run sets up before its reader starts

        def on_shutdown() -> None:
            self.shutdowns += 1

        def on_exit() -> None:
            self.exits += 1

        handlers.register(self.rpc, session, self.client, on_shutdown=on_shutdown, on_exit=on_exit)

    # the daemon's side: BodySink
    def send(self, body: bytes) -> None:
        self.received.append(msgspec.json.decode(body))
        self._changed.set()

    # the editor's side
    def request_nowait(self, method: str, params: Json | None = None) -> int:
        msg_id = next(self._ids)
        message: Json = {"jsonrpc": "2.0", "id": msg_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send_raw(msgspec.json.encode(message))
        return msg_id

    async def request(self, method: str, params: Json | None = None) -> Any:
        return await self.result(self.request_nowait(method, params))

    def notify(self, method: str, params: Json | None = None) -> None:
        self.send_raw(msgspec.json.encode({"jsonrpc": "2.0", "method": method, "params": params}))

    def send_raw(self, frame: bytes) -> None:
        """A frame as the reader passes it to the daemon's dispatch: unchecked bytes. Every message
        goes this way, so the daemon's checks and its `$/cancelRequest` handling apply."""
        self.daemon._dispatch(self.rpc, frame)

    async def response(self, msg_id: Any) -> Json:
        return await self.wait_for(lambda m: m.get("id") == msg_id and ("result" in m or "error" in m))

    async def result(self, msg_id: Any) -> Any:
        reply = await self.response(msg_id)
        if "error" in reply:
            raise RpcError(reply["error"])
        return reply["result"]

    async def server_request(self, method: str) -> Json:
        return await self.wait_for(lambda m: m.get("method") == method and "id" in m)

    def answer(self, request: Json, result: Any) -> None:
        self.client.resolve({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async def wait_for(self, predicate: Callable[[Json], bool]) -> Json:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            while True:
                found = next((m for m in self.received if predicate(m)), None)
                if found is not None:
                    return found
                self._changed = anyio.Event()
                await self._changed.wait()


@asynccontextmanager
async def jsonrpc_editor(config: SessionConfig) -> AsyncIterator[Editor]:
    async with anyio.create_task_group() as tasks:
        session = AgentSession(config, tasks)
        editor = Editor(config, session, tasks)
        try:
            yield editor
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(30):
                await session.abort()
            tasks.cancel_scope.cancel()
