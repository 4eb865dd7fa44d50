"""MCP server configuration: what settings and clients hand over, and how tools are named.

A server is configured the way users already write it for other agents (`settings.json`
`mcpServers`: `command`/`args`/`env` for stdio, `url`/`headers` for streamable HTTP), or by a
client (ACP `mcpServers`, JSON-RPC `initialize`). The SDK-backed client is tools/mcp.py.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Literal

import msgspec

# Provider tool names allow [A-Za-z0-9_-] and at most 64 characters.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
MAX_TOOL_NAME = 64


class McpServerConfig(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """One MCP server: `command` (stdio) or `url` (streamable HTTP)."""

    name: str
    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)


class McpServerEntry(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """A `settings.json` `mcpServers` value (the shape Claude Code, Cursor and Gemini CLI read);
    `type` ("stdio", "http", "streamable-http") is optional and implied by command or url."""

    type: str | None = None
    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    http_url: str | None = None  # Gemini CLI's name for a streamable HTTP endpoint
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    disabled: bool = False


def servers_from_settings(entries: Mapping[str, McpServerEntry]) -> list[McpServerConfig]:
    """`mcpServers` from settings as server configs; disabled entries are left out."""
    return [
        McpServerConfig(
            name=name,
            command=entry.command,
            args=entry.args,
            env=entry.env,
            cwd=entry.cwd,
            url=entry.url or entry.http_url,
            headers=entry.headers,
        )
        for name, entry in entries.items()
        if not entry.disabled
    ]


def tool_name(server: str, tool: str) -> str:
    """`mcp__<server>__<tool>` (Claude Code's convention), made safe for every provider."""
    name = f"mcp__{_NAME_UNSAFE.sub('_', server)}__{_NAME_UNSAFE.sub('_', tool)}"
    return name[:MAX_TOOL_NAME]


Status = Literal["starting", "running", "failed", "stopped"]


class McpServerStatus(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """What a client sees of one server: its tools (namespaced), or why it has none."""

    name: str
    status: Status
    tools: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
