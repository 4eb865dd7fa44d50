"""An ACP editor in-process: a fake connection that records the agent's updates and answers its
requests, and `acp_agent`, the agent on real sessions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from acp.schema import (
    AllowedOutcome,
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    TextContentBlock,
    ToolCallUpdate,
    WriteTextFileResponse,
)

from pi_rpc.modes.acp.agent import AcpAgent, PromptBlock
from pi_rpc.session.session import SessionConfig

Json = dict[str, Any]


class Editor:
    """What the agent sends (session/update notifications) and a connection it asks through."""

    def __init__(self, choice: str | None = None) -> None:
        self.sent: list[Json] = []
        self.choice = choice
        self.asked: list[ToolCallUpdate] = []
        self._changed = anyio.Event()

    def send(self, message: Json) -> None:
        self.sent.append(message)
        self._changed.set()

    async def wait_for_update(self, kind: str) -> None:
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            while kind not in self.kinds():
                self._changed = anyio.Event()
                await self._changed.wait()

    def updates(self, session_id: str | None = None) -> list[Json]:
        return [
            m["params"]["update"]
            for m in self.sent
            if m["method"] == "session/update" and session_id in (None, m["params"]["sessionId"])
        ]

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates()]

    # the part of acp's AgentSideConnection the agent uses
    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse:
        self.asked.append(tool_call)
        assert self.choice is not None, "the editor was not expected to be asked"
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=self.choice))

    async def read_text_file(self, session_id: str, path: str) -> ReadTextFileResponse:
        raise AssertionError("the editor was not expected to serve a read")

    async def write_text_file(self, session_id: str, path: str, content: str) -> WriteTextFileResponse | None:
        raise AssertionError("the editor was not expected to serve a write")


@asynccontextmanager
async def acp_agent(config: SessionConfig, editor: Editor, *, connected: bool = False) -> AsyncIterator[AcpAgent]:
    async with anyio.create_task_group() as tasks:
        agent = AcpAgent(config, tasks, editor.send)
        if connected:
            agent.on_connect(editor)
        try:
            yield agent
        finally:
            with anyio.CancelScope(shield=True), anyio.fail_after(30):
                await agent.close()
            tasks.cancel_scope.cancel()


def text(value: str) -> list[PromptBlock]:
    return [TextContentBlock(type="text", text=value)]
