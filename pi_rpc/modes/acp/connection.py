"""What this agent asks of the editor through the ACP SDK's connection.

The SDK hands the agent an `acp.agent.connection.AgentSideConnection` (`AcpAgent.on_connect`),
which speaks the whole of the SDK's `acp.Client` protocol. These are the requests pi-rpc sends
through it, with the arguments it passes, so anything that answers them (the SDK's connection, a
test's editor) can stand in:

    class Editor:
        async def request_permission(self, session_id: str, tool_call: ToolCallUpdate,
                                     options: list[PermissionOption]) -> RequestPermissionResponse: ...
"""

from __future__ import annotations

from typing import Protocol

from acp.schema import (
    PermissionOption,
    ReadTextFileResponse,
    RequestPermissionResponse,
    ToolCallUpdate,
    WriteTextFileResponse,
)


class PermissionAsker(Protocol):
    """`session/request_permission`: a tool call's approval, or a pick among choices (rewind.py)."""

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption]
    ) -> RequestPermissionResponse: ...


class ClientConnection(PermissionAsker, Protocol):
    """Everything a session asks of the editor: permissions, and the files it serves
    (`fs/read_text_file`, `fs/write_text_file`, when it advertised them)."""

    async def read_text_file(self, session_id: str, path: str) -> ReadTextFileResponse: ...

    async def write_text_file(self, session_id: str, path: str, content: str) -> WriteTextFileResponse | None: ...
