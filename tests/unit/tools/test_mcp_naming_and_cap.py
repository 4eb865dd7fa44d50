"""Pi's MCP tool names (pi-mcp `createMcpToolName`) and its 20 KB cap on a result's text
(`limitMcpContent`), pure and through the real test server."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import anyio
import pytest

from pi_rpc.agent.types import ToolCallContext
from pi_rpc.ai.types import ImageContent, TextContent
from pi_rpc.tools.mcp import McpServers
from pi_rpc.tools.mcp_config import tool_name
from pi_rpc.tools.mcp_output import MCP_OUTPUT_MAX_BYTES, limit_mcp_content
from tests.mcp.servers import stdio_config


def test_every_character_but_letters_digits_and_underscore_becomes_underscore() -> None:
    assert tool_name("dev-radius", "get.weather now") == "mcp__dev_radius__get_weather_now"


def test_a_long_or_taken_name_is_cut_and_hashed() -> None:
    digest = hashlib.sha256(b"srv\0" + b"t" * 80).hexdigest()[:8]
    long = tool_name("srv", "t" * 80)
    assert len(long) == 64 and long == f"mcp__srv__{'t' * 45}_{digest}"
    taken = tool_name("a", "b", lambda name: name == "mcp__a__b")
    assert taken == f"mcp__a__b_{hashlib.sha256(b'a' + bytes([0]) + b'b').hexdigest()[:8]}"


def test_text_within_20_kb_is_kept_whole() -> None:
    content: list[TextContent | ImageContent] = [TextContent(text="x" * MCP_OUTPUT_MAX_BYTES)]
    assert limit_mcp_content(content) == content


def test_longer_text_keeps_its_ends_around_pi_s_marker_and_is_saved_whole() -> None:
    text = "é" * 15_000  # 30 000 bytes: the cut must fall between characters
    image = ImageContent(data="AAAA", mime_type="image/png")
    first, *rest = limit_mcp_content([TextContent(text=text), image])
    assert rest == [image] and isinstance(first, TextContent)
    match = re.fullmatch(
        r"Warning: truncated output \(original token count: 7500\)\nTotal output lines: 1\n\n"
        r"(é+)…(\d+) chars truncated…(é+)\n\n\[Full output: (\S+) \(read it with offset/limit\)\]",
        first.text,
    )
    assert match is not None
    assert len(match[1]) == 5120 and len(match[3]) == 5120 and int(match[2]) == 15_000 - 10_240
    assert Path(match[4]).read_text() == text
    Path(match[4]).unlink()


@pytest.mark.anyio
async def test_the_real_servers_colliding_names_are_hashed_and_a_flood_is_cut() -> None:
    servers = McpServers()
    async with anyio.create_task_group() as tasks:
        await servers.start([stdio_config(extra=True)], tasks)
        tools = {definition.name: definition for definition in servers.definitions()}
        weather = sorted(name for name in tools if name.startswith("mcp__testkit__weather_now"))
        assert len(weather) == 2 and all(re.fullmatch(r"mcp__testkit__weather_now_[0-9a-f]{8}", n) for n in weather)
        (status,) = servers.statuses()
        assert sorted(status.tools) == sorted(tools)
        result = await tools["mcp__testkit__flood"].execute({"size": 50_000}, ToolCallContext(id="c", cwd="/"))
        (block,) = result.content
        assert isinstance(block, TextContent) and block.text.startswith("Warning: truncated output")
        assert "chars truncated…" in block.text and block.text.split("\n\n[Full output: ")[0].endswith("END")
        await anyio.Path(block.text.rsplit("[Full output: ", 1)[1].split(" ")[0]).unlink()
        await servers.stop()
        tasks.cancel_scope.cancel()
