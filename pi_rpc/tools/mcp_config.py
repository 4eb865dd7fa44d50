"""MCP server configuration: what settings, Pi's `mcp.json` and clients hand over, how tools are named.

A server is configured the way users already write it for other agents (`settings.json`
`mcpServers`: `command`/`args`/`env` for stdio, `url`/`headers` for streamable HTTP), in Pi's
`mcp.json` files (tools/mcp_files.py, which adds Pi's `exposure`, `toolExposure`, `description`
and `timeout`), or by a client (ACP `mcpServers`, JSON-RPC `initialize`). The SDK-backed client
is tools/mcp.py.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from typing import Literal

import msgspec

# Pi's rule (pi-mcp `createMcpToolName`): everything but [A-Za-z0-9_] becomes `_`, so the name is
# also an identifier; providers allow at most 64 characters.
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_]")
MAX_TOOL_NAME = 64
_HASH_CHARS = 8

# How a server's tools reach the model, as Pi 1.6.0 names it. `codemode` is Pi's default: only
# codemode scripts call them (session/mcp_tools.py).
Exposure = Literal["codemode", "deferred", "direct", "hidden"]
EXPOSURES: tuple[Exposure, ...] = ("codemode", "deferred", "direct", "hidden")


class McpServerConfig(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """One MCP server: `command` (stdio) or `url` (streamable HTTP)."""

    name: str
    command: str | None = None
    args: list[str] = msgspec.field(default_factory=list)
    env: dict[str, str] = msgspec.field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    # Pi's fields (its `mcp.json`; a client may send them too): how the tools reach the model,
    # per tool by exact name or `*` pattern; a one-line summary for the `mcp_servers` prompt
    # section and tool search; a per-call time limit in seconds.
    exposure: Exposure = "direct"
    tool_exposure: dict[str, Exposure] = msgspec.field(default_factory=dict)
    description: str | None = None
    timeout: float | None = None


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


def tool_name(server: str, tool: str, is_taken: Callable[[str], bool] = lambda name: False) -> str:
    """`mcp__<server>__<tool>` as Pi names it: sanitised, and when longer than 64 characters or
    `is_taken` by another MCP tool (`a-b` and `a_b` both give `a_b`), cut and suffixed with the
    first 8 hex digits of the SHA-256 of `server NUL tool`."""
    name = _NAME_UNSAFE.sub("_", f"mcp__{server}__{tool}")
    if len(name) <= MAX_TOOL_NAME and not is_taken(name):
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:_HASH_CHARS]
    return f"{name[: MAX_TOOL_NAME - _HASH_CHARS - 1]}_{digest}"


def _pattern(pattern: str) -> re.Pattern[str]:
    return re.compile("^" + ".*".join(re.escape(part) for part in pattern.split("*")) + "$")


def tool_exposure(config: McpServerConfig, tool: str) -> Exposure:
    """A tool's exposure as Pi picks it: its exact `toolExposure` entry, else the first `*`
    pattern that matches, else the server's `exposure`."""
    overrides = config.tool_exposure
    if tool in overrides:
        return overrides[tool]
    for pattern, exposure in overrides.items():
        if "*" in pattern and _pattern(pattern).match(tool):
            return exposure
    return config.exposure


Status = Literal["starting", "running", "failed", "stopped"]


class McpServerStatus(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """What a client sees of one server: its tools (namespaced), or why it has none."""

    name: str
    status: Status
    tools: list[str] = msgspec.field(default_factory=list)
    error: str | None = None
