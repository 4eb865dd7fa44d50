"""Pi's `tool_search` (tools/tool_search.py, tools/tool_ranking.py): the rankings Pi 1.6.0's
`Bm25Ranker` gave for the same tools and queries (run with Pi's own module), its tool text, and
a session whose deferred MCP server's tools it loads for the next model call."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from pi_rpc.agent.types import ToolCallContext, ToolError
from pi_rpc.ai.types import TextContent
from pi_rpc.session.configuration.config import PersistenceConfig, SessionConfig, ToolsConfig
from pi_rpc.session.session import AgentSession
from pi_rpc.tools.tool_ranking import rank, search_document, tokenize
from pi_rpc.tools.tool_search import TOOL_SEARCH_DESCRIPTION, Searchable, tool_search_definition
from tests.mcp.servers import stdio_config

TOOLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "mcp__gh__search_issues",
        "Search issues in a repository",
        {"type": "object", "properties": {"query": {"type": "string", "description": "GitHub search syntax"}}},
    ),
    ("mcp__gh__get_issue", "Get one issue by number", {"type": "object", "properties": {"number": {"type": "number"}}}),
    (
        "mcp__fs__readFile",
        "Read a file's contents",
        {"type": "object", "properties": {"path": {"type": "string", "description": "The file path"}}},
    ),
    ("mcp__web__fetch", "Fetch a web page and return issues found", {"type": "object", "properties": {}}),
]
DOCUMENTS = [search_document(n, d, p, f"{'__'.join(n.split('__')[:2])} tools ") for n, d, p in TOOLS]


@pytest.mark.parametrize(
    ("query", "pi_ranking"),
    [  # what Pi 1.6.0's Bm25Ranker answered
        ("issue", ["mcp__gh__get_issue", "mcp__gh__search_issues", "mcp__web__fetch"]),
        ("read file", ["mcp__fs__readFile"]),
        ("get_issue", ["mcp__gh__get_issue", "mcp__gh__search_issues", "mcp__web__fetch"]),
        ("search github issues", ["mcp__gh__search_issues", "mcp__gh__get_issue", "mcp__web__fetch"]),
        ("fetch", ["mcp__web__fetch"]),
        ("tools", ["mcp__gh__search_issues", "mcp__gh__get_issue", "mcp__fs__readFile", "mcp__web__fetch"]),
    ],
)
def test_rankings_are_pi_s(query: str, pi_ranking: list[str]) -> None:
    assert rank(query, DOCUMENTS, 8) == pi_ranking


def test_words_split_at_identifier_boundaries_without_stop_words_and_plurals() -> None:
    assert tokenize("getHTTPResponse of the searches_issues") == ["get", "http", "response", "search", "issue"]


async def run(definition: Any, params: dict[str, Any]) -> str:
    result = await definition.execute(params, ToolCallContext(id="c", cwd="/"))
    (block,) = result.content
    assert isinstance(block, TextContent)
    return block.text


@pytest.mark.anyio
async def test_the_tool_loads_the_matches_and_says_so_in_pi_s_words() -> None:
    loaded: list[str] = []
    found = [Searchable(document, description) for document, (_, description, _) in zip(DOCUMENTS, TOOLS, strict=True)]
    tool = tool_search_definition(lambda: found, loaded.extend)
    assert tool.name == "tool_search" and tool.description.startswith("# Tool discovery\n\nSearches over deferred")
    assert tool.description == TOOL_SEARCH_DESCRIPTION
    assert await run(tool, {"query": "read file"}) == (
        "Loaded 1 tool. They are available from your next call:\n- mcp__fs__readFile: Read a file's contents"
    )
    assert loaded == ["mcp__fs__readFile"]
    assert await run(tool, {"query": "zebra"}) == "No matching tools found."
    with pytest.raises(ToolError, match="^query must not be empty$"):
        await run(tool, {"query": " "})
    with pytest.raises(ToolError, match="^limit must be a positive integer$"):
        await run(tool, {"query": "x", "limit": 1.5})


@pytest.mark.anyio
async def test_a_deferred_servers_tools_wait_for_tool_search_and_the_prompt_lists_the_server(tmp_path: Path) -> None:
    server = stdio_config()
    server.exposure, server.description, server.tool_exposure = (
        "deferred",
        "Loud echoes\nsecond line",
        {"pixel": "hidden"},
    )
    config = SessionConfig(
        cwd=str(tmp_path), tools=ToolsConfig(mcp_servers=[server]), persistence=PersistenceConfig(persist=False)
    )
    async with anyio.create_task_group() as tasks:
        session = AgentSession(config, tasks)
        await session.start_mcp_servers()
        infos = {info.name: info.active for info in session.tool_infos()}
        assert infos["tool_search"] is True and infos["mcp__testkit__shout"] is False
        assert "mcp__testkit__pixel" not in infos  # hidden
        assert session.system_prompt.endswith(
            "<mcp_servers>\nMCP servers whose tools are not declared to you. Load the tools of `tool_search` "
            "servers with `tool_search`.\n- mcp__testkit (tool_search): Loud echoes\n</mcp_servers>"
        )
        text = await run(session._definitions["tool_search"], {"query": "shout"})
        assert text.startswith("Loaded 1 tool. They are available from your next call:\n- mcp__testkit__shout")
        assert "mcp__testkit__shout" in session.active_tools
        await session.close()
        tasks.cancel_scope.cancel()
