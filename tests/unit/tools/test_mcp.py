"""MCP servers through the official SDK: a real server over stdio and over HTTP on 127.0.0.1."""

from __future__ import annotations

import os
import signal

import anyio
import pytest

from pi_rpc.agent.types import ToolCallContext, ToolError
from pi_rpc.ai.types import ImageContent, TextContent
from pi_rpc.ai.validation import ToolArgumentsError, validate_tool_arguments
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.mcp import McpServers
from pi_rpc.tools.mcp_config import McpServerConfig, McpServerEntry, servers_from_settings, tool_name
from tests.mcp.server import PIXEL_PNG
from tests.mcp.servers import http_server, server_pids, stdio_config

pytestmark = pytest.mark.anyio


async def call(definition: ToolDefinition, args: dict[str, object]) -> list[TextContent | ImageContent]:
    params = validate_tool_arguments(definition.name, definition.parameters, args)
    result = await definition.execute(params, ToolCallContext(id="c1", cwd="/"))
    return list(result.content)


def by_name(servers: McpServers) -> dict[str, ToolDefinition]:
    return {d.name: d for d in servers.definitions()}


async def test_stdio_tools_are_namespaced_validated_and_keep_text_and_images() -> None:
    servers = McpServers()
    async with anyio.create_task_group() as tasks:
        await servers.start([stdio_config()], tasks)
        tools = by_name(servers)
        assert sorted(tools) == ["mcp__testkit__broken", "mcp__testkit__pixel", "mcp__testkit__shout"]
        assert {d.source for d in tools.values()} == {"mcp:testkit"}
        assert await call(tools["mcp__testkit__shout"], {"text": "hi", "times": "2"}) == [TextContent(text="HI HI")]
        assert await call(tools["mcp__testkit__pixel"], {}) == [
            TextContent(text="a pixel"),
            ImageContent(data=PIXEL_PNG, mime_type="image/png"),
        ]
        with pytest.raises(ToolArgumentsError, match="text"):
            validate_tool_arguments("mcp__testkit__shout", tools["mcp__testkit__shout"].parameters, {"times": 1})
        with pytest.raises(ToolError, match="the gizmo is jammed"):
            await call(tools["mcp__testkit__broken"], {})
        await servers.stop()
        tasks.cancel_scope.cancel()


async def test_a_killed_server_gives_a_clear_error_and_other_servers_keep_working() -> None:
    servers = McpServers()
    async with anyio.create_task_group() as tasks:
        await servers.start([stdio_config("one"), stdio_config("two")], tasks)
        tools = by_name(servers)
        (pid,) = server_pids("one")
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(ToolError) as error:
            await call(tools["mcp__one__shout"], {"text": "hi"})
        assert str(error.value) == (
            'MCP server "one" stopped during the call to shout (Connection closed); '
            "it is started again at the next call"
        )
        assert {s.name: s.status for s in servers.statuses()} == {"one": "failed", "two": "running"}
        assert await call(tools["mcp__two__shout"], {"text": "still"}) == [TextContent(text="STILL")]
        assert await call(tools["mcp__one__shout"], {"text": "back"}) == [TextContent(text="BACK")]
        assert server_pids("one") != [pid]
        await servers.stop()
        tasks.cancel_scope.cancel()


async def test_a_server_that_cannot_start_is_reported_and_does_not_block() -> None:
    servers = McpServers()
    async with anyio.create_task_group() as tasks:
        await servers.start([McpServerConfig(name="ghost", command="/nonexistent/mcp-server"), stdio_config()], tasks)
        (ghost, good) = servers.statuses()
        assert (ghost.name, ghost.status, good.status) == ("ghost", "failed", "running")
        assert ghost.error
        await servers.stop()
        tasks.cancel_scope.cancel()


async def test_streamable_http_on_loopback() -> None:
    with http_server() as (url, _):
        servers = McpServers()
        async with anyio.create_task_group() as tasks:
            await servers.start([McpServerConfig(name="web", url=url, headers={"X-Test": "1"})], tasks)
            tools = by_name(servers)
            assert await call(tools["mcp__web__shout"], {"text": "net"}) == [TextContent(text="NET")]
            await servers.stop()
            tasks.cancel_scope.cancel()


def test_settings_in_the_shape_other_agents_use() -> None:
    entries = {
        "files": McpServerEntry(command="npx", args=["-y", "server"], env={"K": "v"}),
        "web": McpServerEntry(type="http", url="http://127.0.0.1:1/mcp"),
        "gem": McpServerEntry(http_url="http://127.0.0.1:2/mcp"),
        "off": McpServerEntry(command="x", disabled=True),
    }
    assert servers_from_settings(entries) == [
        McpServerConfig(name="files", command="npx", args=["-y", "server"], env={"K": "v"}),
        McpServerConfig(name="web", url="http://127.0.0.1:1/mcp"),
        McpServerConfig(name="gem", url="http://127.0.0.1:2/mcp"),
    ]


def test_tool_names_are_safe_for_every_provider() -> None:
    assert tool_name("my server", "do.it") == "mcp__my_server__do_it"
    assert len(tool_name("s" * 50, "t" * 50)) == 64
