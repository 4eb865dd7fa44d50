"""ACP `mcpServers` (session/new, session/load) as our MCP server configs (tools/mcp_config.py).

Stdio and streamable HTTP are supported (`mcpCapabilities.http`); SSE and ACP-tunnelled servers
are not advertised, and one sent all the same is reported rather than started.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from acp.schema import AcpMcpServer, HttpMcpServer, McpServerStdio, SseMcpServer

from pi_rpc.tools import McpServerConfig, McpServerStatus

_log = logging.getLogger(__name__)

# What `mcpServers` may hold (the SDK's union in `session/new` and `session/load`).
McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio


def server_configs(servers: Sequence[McpServer] | None) -> tuple[list[McpServerConfig], list[McpServerStatus]]:
    """The servers we can start, and a failed status for each we cannot."""
    configs: list[McpServerConfig] = []
    refused: list[McpServerStatus] = []
    for server in servers or ():
        if isinstance(server, McpServerStdio):
            configs.append(
                McpServerConfig(
                    name=server.name,
                    command=server.command,
                    args=list(server.args),
                    env={var.name: var.value for var in server.env},
                )
            )
        elif isinstance(server, HttpMcpServer):
            configs.append(
                McpServerConfig(
                    name=server.name, url=server.url, headers={header.name: header.value for header in server.headers}
                )
            )
        else:
            _log.warning('MCP server "%s": transport %s is not supported', server.name, server.type)
            error = f"transport {server.type} is not supported"
            refused.append(McpServerStatus(name=server.name, status="failed", error=error))
    return configs, refused


def status_meta(statuses: Sequence[McpServerStatus]) -> dict[str, Any] | None:
    """How each server fared, under `_meta` of the session/new or session/load response."""
    if not statuses:
        return None
    return {
        "piRpc": {
            "mcpServers": [
                {"name": s.name, "status": s.status, "tools": s.tools, **({"error": s.error} if s.error else {})}
                for s in statuses
            ]
        }
    }
