"""Pi's RPC mode in-process: commands in, responses and events out, over memory streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pi_rpc.modes.pi.server import PiDaemon
from pi_rpc.session.session import SessionConfig

from .pipes import Json, LinePeer, serve_over_pipes


class Pi:
    def __init__(self, peer: LinePeer) -> None:
        self.peer = peer

    async def call(self, command: Json) -> Json:
        start = len(self.peer.lines)
        self.peer.send(command)
        return await self.peer.wait_for(
            lambda line: line.get("type") == "response" and line.get("id") == command.get("id"), start
        )

    async def data(self, command: Json) -> Any:
        response = await self.call(command)
        assert response["success"] is True, response
        return response.get("data")

    async def event(self, kind: str) -> Json:
        return await self.peer.wait_for(lambda line: line.get("type") == kind)

    def types(self) -> list[str]:
        return [line["type"] for line in self.peer.lines]


@asynccontextmanager
async def pi_mode(config: SessionConfig) -> AsyncIterator[Pi]:
    async with serve_over_pipes(lambda stdin, stdout: PiDaemon(config, stdin_fd=stdin, stdout_fd=stdout)) as peer:
        yield Pi(peer)
