"""Pi 1.6.0's `tool_search` tool: finds the tools not declared to the model (MCP servers' with
`deferred` exposure) and loads the matches, so they are declared from the model's next call.

Its name, description, parameters and result text are Pi's, word for word, so a model tuned on
Pi's prompt uses it the same way. Ranking is tools/tool_ranking.py's. The session decides what is
searchable and what loading does (session/mcp_tools.py): loaded tools join the active set, which
the next request declares (and the transcript records as any tool change).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from pi_rpc.agent import AgentToolResult, ToolCallContext, ToolError
from pi_rpc.ai import TextContent
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.tool_ranking import SearchDocument, rank

TOOL_SEARCH_TOOL_NAME = "tool_search"
DEFAULT_TOOL_SEARCH_LIMIT = 8

TOOL_SEARCH_DESCRIPTION = (
    "# Tool discovery\n\nSearches over deferred tool metadata with BM25 and exposes matching tools for the next "
    "model call.\n\nSome of the tools, such as tools of MCP servers, may not have been provided to you upfront, and "
    f"you should use this tool (`{TOOL_SEARCH_TOOL_NAME}`) to search for the required tools. For MCP tool "
    f"discovery, always use `{TOOL_SEARCH_TOOL_NAME}`."
)
TOOL_SEARCH_SNIPPET = "Search for tools that are not loaded yet and load the matches"

TOOL_SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Search query for deferred tools."},
        "limit": {
            "type": "number",
            "description": f"Maximum number of tools to return. Defaults to {DEFAULT_TOOL_SEARCH_LIMIT}.",
        },
    },
    "required": ["query"],
}


class Searchable(msgspec.Struct, frozen=True):
    """A tool `tool_search` may load: how it is found, and the description its line shows."""

    document: SearchDocument
    description: str


def tool_search_definition(
    searchable: Callable[[], list[Searchable]], load: Callable[[list[str]], object]
) -> ToolDefinition:
    """`searchable` lists the tools not active yet that may be loaded; `load` activates names."""

    async def execute(params: Any, call: ToolCallContext) -> AgentToolResult:
        query = str(params.get("query", ""))
        if query.strip() == "":
            raise ToolError("query must not be empty")
        limit = params.get("limit", DEFAULT_TOOL_SEARCH_LIMIT)
        if isinstance(limit, bool) or not isinstance(limit, int | float) or limit != int(limit) or limit <= 0:
            raise ToolError("limit must be a positive integer")
        candidates = {tool.document.name: tool for tool in searchable()}
        names = rank(query, [tool.document for tool in candidates.values()], int(limit))
        if names:
            load(names)
        return AgentToolResult(content=[TextContent(text=result_text(candidates, names))], details={"loaded": names})

    return ToolDefinition(
        name=TOOL_SEARCH_TOOL_NAME,
        label=TOOL_SEARCH_TOOL_NAME,
        description=TOOL_SEARCH_DESCRIPTION,
        parameters=TOOL_SEARCH_PARAMETERS,
        execute=execute,
        prompt_snippet=TOOL_SEARCH_SNIPPET,
    )


def result_text(candidates: dict[str, Searchable], names: list[str]) -> str:
    if not names:
        return "No matching tools found."
    lines = [f"- {name}: {(candidates[name].description.strip().splitlines() or [''])[0]}" for name in names]
    plural = "" if len(names) == 1 else "s"
    return f"Loaded {len(names)} tool{plural}. They are available from your next call:\n" + "\n".join(lines)
