"""MCP tool servers (the official `mcp` SDK's client) as tool definitions, for every mode.

Servers are configured as in tools/mcp_config.py. This module is imported only when a session
starts a server: the SDK takes seconds to import, and a daemon without servers never pays it.
Each server lives in a task of its
own that holds the SDK's client open until the session closes it; its tools become
`mcp__<server>__<tool>` definitions (named as Pi names them, `McpServers` keeping the names
unique) with the server's JSON Schema (validated by the plain-JSON-Schema branch of
`ai/validation.py`), except those whose exposure is `hidden`. A server that fails to start, or
dies later, never blocks the session: its start is bounded, its failure is recorded, and a call
to one of its tools ends as a tool error that names the server. A result's text over 20 KB is
cut in the middle as Pi cuts it (tools/mcp_output.py).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import httpx2
import msgspec
from mcp import Client
from mcp.client import Transport
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, CallToolResult, EmbeddedResource, ResourceLink, TextResourceContents
from mcp.types import ImageContent as McpImage
from mcp.types import TextContent as McpText
from mcp.types import Tool as McpTool

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError
from pi_rpc.ai import ImageContent, TextContent, ToolResultContent
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.mcp_config import (
    Exposure,
    McpServerConfig,
    McpServerStatus,
    Status,
    tool_exposure,
    tool_name,
)
from pi_rpc.tools.mcp_output import limit_mcp_content

_log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 15.0  # a server that has not listed its tools by then is reported failed
STOP_TIMEOUT_SECONDS = 5.0
MAX_RESTARTS = 3
HTTP_TIMEOUT_SECONDS = 30.0
HTTP_READ_TIMEOUT_SECONDS = 300.0  # a tool may take minutes before its answer starts


class McpConnection(msgspec.Struct, eq=False):
    """One server, held open by its own task (the SDK's client must be entered and left there).
    A server that dies is started again at the next call of one of its tools, a few times."""

    config: McpServerConfig
    status: Status = "starting"
    error: str | None = None
    tools: list[McpTool] = msgspec.field(default_factory=list)
    names: dict[str, str] = msgspec.field(default_factory=dict)  # the server's tool name -> the model's
    instructions: str | None = None  # what the server said in `initialize`, for the prompt section
    restarts: int = 0
    _client: Client | None = None
    _tasks: anyio.abc.TaskGroup | None = None
    _ready: anyio.Event = msgspec.field(default_factory=anyio.Event)
    _stop: anyio.Event = msgspec.field(default_factory=anyio.Event)
    _done: anyio.Event = msgspec.field(default_factory=anyio.Event)
    _scope: anyio.CancelScope = msgspec.field(default_factory=anyio.CancelScope)

    async def start(self, tasks: anyio.abc.TaskGroup, start_seconds: float = START_TIMEOUT_SECONDS) -> None:
        """Start the server and wait, bounded, until it has listed its tools or failed."""
        self._tasks = tasks
        tasks.start_soon(self._keep)
        with anyio.move_on_after(start_seconds):
            await self._ready.wait()
        if not self._ready.is_set():
            self._fail(f"did not answer within {start_seconds:g} s")
            self._scope.cancel("MCP server start timed out")

    async def wait_started(self, start_seconds: float = START_TIMEOUT_SECONDS) -> None:
        with anyio.move_on_after(start_seconds):
            await self._ready.wait()

    async def stop(self) -> None:
        """Close the client (the SDK ends a stdio server: stdin closed, then its process group)."""
        self._stop.set()
        with anyio.move_on_after(STOP_TIMEOUT_SECONDS, shield=True):
            await self._done.wait()
        if not self._done.is_set():
            self._scope.cancel("MCP server stop timed out")
        if self.status != "failed":
            self.status = "stopped"

    async def call(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        if self.status == "failed" and self._tasks is not None and self.restarts < MAX_RESTARTS:
            await self._restart(self._tasks)
        client = self._client
        if client is None or self.status != "running":
            raise ToolError(f'MCP server "{self.config.name}" is not running: {self.error or self.status}')
        try:
            return await client.call_tool(name, arguments, read_timeout_seconds=self.config.timeout)
        except Exception as exc:  # the SDK raises its own errors, and transport errors, as they come
            reason = _describe(exc)
            if _connection_lost(exc):
                self._fail(reason)
                self._stop.set()  # leave the client: the SDK reaps what is left of the server
                raise ToolError(
                    f'MCP server "{self.config.name}" stopped during the call to {name} '
                    f"({reason}); it is started again at the next call"
                ) from exc
            raise ToolError(f'MCP server "{self.config.name}" failed the call to {name}: {reason}') from exc

    def status_report(self) -> McpServerStatus:
        return McpServerStatus(
            name=self.config.name,
            status=self.status,
            tools=[self.names[tool.name] for tool in self.tools if tool.name in self.names],
            error=self.error,
        )

    async def _restart(self, tasks: anyio.abc.TaskGroup) -> None:
        with anyio.move_on_after(STOP_TIMEOUT_SECONDS):
            await self._done.wait()
        self.restarts += 1
        self.status, self.error = "starting", None
        self._ready, self._stop, self._done = anyio.Event(), anyio.Event(), anyio.Event()
        self._scope = anyio.CancelScope()
        await self.start(tasks)

    async def _keep(self) -> None:
        with self._scope:
            try:
                async with Client(_target(self.config)) as client:
                    listed = await client.list_tools()
                    # The tools are fixed at the first start: the session registered those.
                    self.tools = self.tools or list(listed.tools)
                    self.instructions = self.instructions or client.instructions
                    self._client, self.status = client, "running"
                    self._ready.set()
                    await self._stop.wait()
                    self._client = None
            except Exception as exc:  # a broken server is reported, never raised into the session
                self._fail(_describe(exc))
            finally:
                self._client = None
                self._ready.set()
                self._done.set()

    def _fail(self, reason: str) -> None:
        if self.status in ("starting", "running"):
            _log.warning('MCP server "%s" failed: %s', self.config.name, reason)
            self.status, self.error = "failed", reason


class McpServers:
    """A session's MCP servers: started together (each bounded), their tools as definitions."""

    def __init__(self) -> None:
        self.connections: dict[str, McpConnection] = {}

    async def start(
        self,
        configs: Sequence[McpServerConfig],
        tasks: anyio.abc.TaskGroup,
        start_seconds: float = START_TIMEOUT_SECONDS,
    ) -> list[McpConnection]:
        """Start the servers not already running under the same name; returns the new ones."""
        wanted = {c.name: c for c in configs}
        fresh = [McpConnection(config) for config in wanted.values() if config.name not in self.connections]
        # Already being started by an earlier call: wait for those too, so the caller sees their tools.
        starting = [self.connections[name] for name in wanted if name in self.connections]
        for connection in fresh:
            self.connections[connection.config.name] = connection
        async with anyio.create_task_group() as group:
            for connection in fresh:
                group.start_soon(connection.start, tasks, start_seconds)
            for connection in starting:
                group.start_soon(connection.wait_started, start_seconds)
        for connection in fresh:
            self._name_tools(connection)
        return fresh

    def _name_tools(self, connection: McpConnection) -> None:
        """Pi's names for a server's tools: when two of its tools sanitise to one name, both get
        the hash suffix (so which keeps the plain name does not depend on the order), and so does a
        tool whose name another server's tool holds already."""
        server = connection.config.name
        owners = {
            name: (other.config.name, tool) for other in self.connections.values() for tool, name in other.names.items()
        }
        plain = [tool_name(server, tool.name) for tool in connection.tools]
        for tool in connection.tools:
            owner = (server, tool.name)

            def taken(candidate: str, owner: tuple[str, str] = owner) -> bool:
                held = owners.get(candidate)
                return (held is not None and held != owner) or plain.count(candidate) > 1

            name = tool_name(server, tool.name, taken)
            owners[name] = owner
            connection.names[tool.name] = name

    def definitions(self) -> list[ToolDefinition]:
        """Every reachable tool (not `hidden`), of every server, in their order."""
        return [definition for connection in self.connections.values() for definition in tool_definitions(connection)]

    def exposures(self) -> dict[str, Exposure]:
        """Each tool's exposure, by the model's name."""
        return {
            connection.names[tool.name]: tool_exposure(connection.config, tool.name)
            for connection in self.connections.values()
            for tool in connection.tools
            if tool.name in connection.names
        }

    def statuses(self) -> list[McpServerStatus]:
        return [connection.status_report() for connection in self.connections.values()]

    async def stop(self) -> None:
        async with anyio.create_task_group() as stopping:
            for connection in self.connections.values():
                stopping.start_soon(connection.stop)


def tool_definitions(connection: McpConnection) -> list[ToolDefinition]:
    definitions = []
    for tool in connection.tools:
        exposure = tool_exposure(connection.config, tool.name)
        if exposure != "hidden":
            name = connection.names.get(tool.name) or tool_name(connection.config.name, tool.name)
            definitions.append(_definition(connection, tool, name, declared_at_once=exposure == "direct"))
    return definitions


def _definition(connection: McpConnection, tool: McpTool, name: str, *, declared_at_once: bool) -> ToolDefinition:
    server = connection.config.name

    async def execute(params: Any, call: ToolCallContext) -> AgentToolResult:
        return tool_result(await connection.call(tool.name, params if isinstance(params, dict) else {}))

    read_only = tool.annotations is not None and tool.annotations.read_only_hint is True
    return ToolDefinition(
        name=name,
        label=tool.title or tool.name,
        description=tool.description or f"{tool.name} (from the MCP server {server})",
        parameters=dict(tool.input_schema),
        execute=execute,
        source=f"mcp:{server}",
        # Unknown effects: approval policies ask, unless the server says the tool only reads.
        mutating=not read_only,
        # Pi 1.6.0 gives a server's `codemode` and `deferred` tools its tools' `deferred` exposure:
        # callable from codemode scripts (which find them with `searchTools()`) from the start, and
        # declared to the model only once active (`tool_search` loads them).
        exposure="direct" if declared_at_once else "deferred",
    )


def tool_result(result: CallToolResult) -> AgentToolResult:
    """Text and images as they are; other blocks (audio, resources) as a line of text each; text
    over 20 KB cut in the middle (Pi's cap). A result marked isError is a tool error carrying the
    server's text."""
    content: list[ToolResultContent] = []
    for block in result.content:
        if isinstance(block, McpText):
            content.append(TextContent(text=block.text))
        elif isinstance(block, McpImage):
            content.append(ImageContent(data=block.data, mime_type=block.mime_type))
        elif isinstance(block, EmbeddedResource) and isinstance(block.resource, TextResourceContents):
            resource = block.resource
            content.append(TextContent(text=f'<resource uri="{resource.uri}">\n{resource.text}\n</resource>'))
        elif isinstance(block, ResourceLink):
            content.append(TextContent(text=f"[resource {block.uri}]"))
        else:
            content.append(TextContent(text=f"[{block.type} content omitted]"))
    if not content and result.structured_content is not None:
        content.append(TextContent(text=msgspec.json.encode(result.structured_content).decode()))
    content = limit_mcp_content(content)
    if result.is_error:
        raise ToolError("\n".join(b.text for b in content if isinstance(b, TextContent)) or "The tool failed")
    return AgentToolResult(content=content)


def _target(config: McpServerConfig) -> StdioServerParameters | str | Transport:
    if config.url is not None:
        return _http_with_headers(config.url, config.headers) if config.headers else config.url
    if config.command is None:
        raise ValueError(f'MCP server "{config.name}" has neither a command nor a url')
    # The SDK starts it in a process group of its own, with pipes for stdin and stdout (never
    # ours: our stdout is the wire) and our stderr for its logs.
    return StdioServerParameters(command=config.command, args=config.args, env=config.env or None, cwd=config.cwd)


@asynccontextmanager
async def _http_with_headers(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    """Streamable HTTP with headers (e.g. Authorization) on every request, the client ours to close."""
    timeout = httpx2.Timeout(HTTP_TIMEOUT_SECONDS, read=HTTP_READ_TIMEOUT_SECONDS)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def _connection_lost(exc: BaseException) -> bool:
    if isinstance(exc, MCPError):
        return exc.code == CONNECTION_CLOSED
    return isinstance(exc, OSError | anyio.ClosedResourceError | anyio.BrokenResourceError | httpx2.TransportError)


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an error (the SDK wraps transport errors in groups)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = exc.error.message if isinstance(exc, MCPError) else str(exc) or type(exc).__name__
    return text if len(text) < 500 else text[:499] + "…"
