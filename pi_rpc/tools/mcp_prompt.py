"""The `mcp_servers` section of the system prompt, as Pi 1.6.0 writes it: the servers whose tools
are not declared to the model, how their tools are reached, and a line about each.

A server is listed when some of its tools are reached indirectly (`deferred`: through
`tool_search`; `codemode`: from codemode scripts). Its line is its namespace
(`mcp__<server>`, `-` as `_`), the way in, and the first line of its configured `description`,
else of the instructions it sent in `initialize`. Descriptions are cut to 250 characters, and to
fit the whole section in 4096; when even the bare lines do not fit, the last servers are counted
in a closing line instead. session/system_prompt.py renders it as `<mcp_servers>…</mcp_servers>`.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from pi_rpc.tools.mcp_config import McpServerConfig

MCP_SERVERS_SECTION = "mcp_servers"
MAX_SERVER_DESCRIPTION_CHARS = 250
MAX_SERVERS_SECTION_CHARS = 4096


class ListedServer(msgspec.Struct, frozen=True):
    config: McpServerConfig
    instructions: str | None = None


def mcp_namespace(server: str) -> str:
    return f"mcp__{server.replace('-', '_')}"


def server_summary(description: str | None, instructions: str | None) -> str:
    """The first line of the description, else of the instructions; empty with neither."""
    text = (description or "").strip() or (instructions or "").strip()
    return text.split("\n", 1)[0].strip()


def _reach(config: McpServerConfig) -> str | None:
    exposures = {config.exposure, *config.tool_exposure.values()}
    if "codemode" in exposures:
        return "codemode"
    return "tool_search" if "deferred" in exposures else None


def _intro(reaches: set[str]) -> str:
    intro = "MCP servers whose tools are not declared to you."
    if "codemode" in reaches:
        intro += " Call the tools of `codemode` servers from codemode scripts."
    if "tool_search" in reaches:
        intro += " Load the tools of `tool_search` servers with `tool_search`."
    return intro


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return "" if limit <= 1 else text[: limit - 1].rstrip() + "…"


def render_servers_section(servers: Sequence[ListedServer]) -> str | None:
    """The section's text, or None when no server has indirect tools."""
    listed = sorted(
        ((server, reach) for server in servers if (reach := _reach(server.config)) is not None),
        key=lambda pair: pair[0].config.name,
    )
    if not listed:
        return None
    intro = _intro({reach for _, reach in listed})
    heads = [f"- {mcp_namespace(server.config.name)} ({reach})" for server, reach in listed]

    def omitted(count: int) -> list[str]:
        plural = "" if count == 1 else "s"
        return [f"- … {count} more server{plural}; find their tools with searchTools()"] if count > 0 else []

    def size(kept: int) -> int:
        return len("\n".join([intro, *heads[:kept], *omitted(len(listed) - kept)]))

    kept = len(listed)
    while kept > 0 and size(kept) > MAX_SERVERS_SECTION_CHARS:
        kept -= 1
    # Each description also takes a ": " separator.
    room = 0 if kept == 0 else min(MAX_SERVER_DESCRIPTION_CHARS, (MAX_SERVERS_SECTION_CHARS - size(kept)) // kept - 2)
    lines = []
    for (server, _), head in zip(listed[:kept], heads, strict=False):
        summary = _cut(server_summary(server.config.description, server.instructions), room) if room > 0 else ""
        lines.append(f"{head}: {summary}" if summary else head)
    return "\n".join([intro, *lines, *omitted(len(listed) - kept)])
