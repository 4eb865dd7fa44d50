"""How a session's MCP servers' tools join its registry, by their exposure (tools/mcp_config.py).

`direct` tools are registered and active (unless `--tools`/`-xt` say otherwise: the config's
`mcp_tool_state`); `deferred` ones are registered but inactive, and Pi's `tool_search`
(tools/tool_search.py) is registered and activated with them, to load them for the model's next
call; `codemode` ones (Pi's default) are registered, never active nor declared, and called from
codemode scripts, the `codemode` tool being activated for them as Pi 1.6.0 activates it (when
`--tools`/`-xt` leave it registered); `hidden` ones are never registered (tools/mcp.py leaves them
out). A client's own servers' direct tools start active whatever the allowlist says, as before.
The `mcp_servers` prompt section lists the servers with deferred or codemode tools
(tools/mcp_prompt.py).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol

from pi_rpc.agent import AgentTool
from pi_rpc.tools import CODEMODE_TOOL_NAME, ToolDefinition

if TYPE_CHECKING:
    from pi_rpc.session.configuration.config import SessionConfig
    from pi_rpc.tools import McpServers, Searchable

# What only MCP servers' tools need (tool_search and its ranking, the servers' prompt section) is
# imported with the first server, as the SDK is (tools/mcp.py), not by every session.

_log = logging.getLogger(__name__)


class ActiveTools(Protocol):
    """The session's active set, as `tool_search` reads and extends it."""

    @property
    def active_tools(self) -> list[str]: ...

    def set_active_tools(self, names: Sequence[str]) -> list[str]: ...


def register_mcp_tools(
    mcp: McpServers,
    definitions: dict[str, ToolDefinition],
    active: list[str],
    config: SessionConfig,
    client_servers: Collection[str],
    tools: ActiveTools,
) -> None:
    """Add the servers' tools not registered yet to `definitions` and, by exposure, to `active`
    (both changed in place; `config.tools.mcp_tool_state` says what `--tools`/`-xt` allow); `tool_search`
    later loads into `tools`' active set."""
    from pi_rpc.tools import TOOL_SEARCH_TOOL_NAME, tool_search_definition

    exposures = mcp.exposures()
    deferred = False
    for definition in mcp.definitions():
        if definition.name in definitions or (state := config.tools.mcp_tool_state(definition.name)) is None:
            continue
        definitions[definition.name] = definition
        if exposures.get(definition.name) == "deferred":
            deferred = True
        elif definition.exposure == "direct" and (state or definition.source.removeprefix("mcp:") in client_servers):
            active.append(definition.name)
    if any(tool.exposure != "direct" for tool in definitions.values()) and CODEMODE_TOOL_NAME not in active:
        if CODEMODE_TOOL_NAME in definitions:
            active.append(CODEMODE_TOOL_NAME)
        else:
            _log.warning(
                "MCP tools are only reachable from the codemode tool, which --tools/--exclude-tools left out; "
                "they cannot be called"
            )
    if deferred and TOOL_SEARCH_TOOL_NAME not in definitions:
        definitions[TOOL_SEARCH_TOOL_NAME] = tool_search_definition(
            lambda: _searchable(mcp, definitions, tools.active_tools),
            lambda names: tools.set_active_tools([*tools.active_tools, *names]),
        )
        active.append(TOOL_SEARCH_TOOL_NAME)


def callable_tools(definitions: dict[str, ToolDefinition], active: Sequence[str]) -> list[AgentTool]:
    """What a run can call: the active tools, then every registered tool only codemode scripts call
    (declared or not, as Pi 1.6.0's `_getCallableTools`); the loop declares only the direct ones."""
    scripts_only = [tool for name, tool in definitions.items() if tool.exposure != "direct" and name not in active]
    tools: list[AgentTool] = [definitions[name] for name in active]
    return [*tools, *scripts_only]


def _searchable(mcp: McpServers, definitions: dict[str, ToolDefinition], active: list[str]) -> list[Searchable]:
    """The deferred tools not active yet, each found also by its server's namespace text."""
    from pi_rpc.tools import Searchable, mcp_namespace, search_document

    exposures = mcp.exposures()
    namespaces = {
        f"mcp:{name}": " ".join([mcp_namespace(name), c.config.description or "", c.instructions or ""])
        for name, c in mcp.connections.items()
    }
    return [
        Searchable(search_document(d.name, d.description, d.parameters, namespaces.get(d.source, "")), d.description)
        for name, d in definitions.items()
        if exposures.get(name) == "deferred" and name not in active
    ]


def mcp_prompt_sections(mcp: McpServers | None) -> dict[str, str]:
    """`{"mcp_servers": …}` when some server has deferred tools, else nothing."""
    if mcp is None:
        return {}
    from pi_rpc.tools import MCP_SERVERS_SECTION, ListedServer, render_servers_section

    servers = [ListedServer(c.config, c.instructions) for c in mcp.connections.values()]
    section = render_servers_section(servers)
    return {MCP_SERVERS_SECTION: section} if section else {}
