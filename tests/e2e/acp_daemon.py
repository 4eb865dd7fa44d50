"""The daemon in ACP mode over real pipes, driven by the ACP SDK's client side."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Protocol, cast

import acp
import anyio
from acp.client.connection import ClientSideConnection
from acp.connection import StreamDirection, StreamEvent

from .conftest import SCRIPTS, daemon_env

Json = dict[str, Any]


class Editor:
    """A minimal ACP client: records every message the agent sends, in wire order."""

    def __init__(self) -> None:
        self.received: list[Json] = []
        self.sent: list[Json] = []
        self._waiters: list[tuple[Callable[[Json], bool], anyio.Event]] = []

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        pass  # the raw messages (observe) are what the tests read

    def observe(self, event: StreamEvent) -> None:
        if event.direction is not StreamDirection.INCOMING:
            self.sent.append(event.message)
            return
        self.received.append(event.message)
        for predicate, ready in self._waiters:
            if predicate(event.message):
                ready.set()

    async def wait_for(self, predicate: Callable[[Json], bool]) -> None:
        ready = anyio.Event()
        self._waiters.append((predicate, ready))
        if any(predicate(message) for message in self.received):
            ready.set()
        with anyio.fail_after(60):  # a guard against a hang, not a timing assertion
            await ready.wait()

    def updates(self) -> list[Json]:
        return [m["params"]["update"] for m in self.received if m.get("method") == "session/update"]


def daemon_argv(workspace: Path, script: Path = SCRIPTS / "e2e.json") -> list[str]:
    return [
        "-m",
        "pi_rpc",
        "--mode",
        "acp",
        "--cwd",
        str(workspace),
        "--script",
        str(script),
        "--tools",
        "read,bash,edit,write,grep",
    ]


class Observing(Protocol):
    """An ACP client that sees every frame on the connection (the SDK's stream observer)."""

    def observe(self, event: StreamEvent) -> None: ...


@asynccontextmanager
async def spawn_acp(
    editor: Observing, argv: Sequence[str], home: Path, extra_env: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[ClientSideConnection, asyncio.subprocess.Process]]:
    """The daemon (`python` with `argv`) as an ACP agent over real pipes, `editor` its client,
    in an environment with `home` for HOME, no provider of the developer's, and `extra_env`;
    not initialised."""
    async with acp.spawn_agent_process(
        cast(acp.Client, editor),
        sys.executable,
        *argv,
        env={**daemon_env(home), **(extra_env or {})},
        transport_kwargs={"stderr": subprocess.DEVNULL},
        observers=[editor.observe],
    ) as (conn, process):
        yield conn, process


@asynccontextmanager
async def connect(
    workspace: Path,
    home: Path,
    script: Path = SCRIPTS / "e2e.json",
    flags: Sequence[str] = (),
) -> AsyncIterator[tuple[ClientSideConnection, Editor, Any]]:
    editor = Editor()
    async with spawn_acp(editor, [*daemon_argv(workspace, script), *flags], home) as (conn, process):
        init = await conn.initialize(protocol_version=acp.PROTOCOL_VERSION)
        assert init.protocol_version == acp.PROTOCOL_VERSION
        yield conn, editor, process


class RawAgent:
    """The daemon on raw JSON lines, for inputs the SDK's client would never produce."""

    def __init__(self, workspace: Path, home: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, *daemon_argv(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=daemon_env(home),
        )

    def send(self, line: bytes) -> Json:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + b"\n")
        self.proc.stdin.flush()
        return self.read()

    def read(self) -> Json:
        assert self.proc.stdout is not None
        message: Json = json.loads(self.proc.stdout.readline())
        return message

    def close(self) -> int:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        code = self.proc.wait(30)
        self.proc.stdout.close()
        return code
