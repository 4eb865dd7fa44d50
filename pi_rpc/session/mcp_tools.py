"""How a session's MCP servers' tools join its registry, by their exposure (tools/mcp_config.py).

`direct` tools are registered and active (unless `--tools`/`-xt` say otherwise: the config's
`mcp_tool_state`). `codemode` ones (Pi's default) and `deferred` ones are registered with the
tool exposure `deferred`, as in Pi 1.6.0: not active, so not declared, and callable from codemode
scripts from the start; Pi's `tool_search` (tools/tool_search.py) loads either kind for the
model's next call. `tool_search` is registered and activated when some tool is `deferred`, the
`codemode` tool activated when some tool is `codemode` (when `--tools`/`-xt` leave it registered
and mcp.json's `autoEnableCodemode` is not false). `hidden` ones are never registered
(tools/mcp.py leaves them out). A client's own servers' direct tools start active whatever the
allowlist says, as before. The `mcp_servers` prompt section lists the servers with deferred or
codemode tools (tools/mcp_prompt.py).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol

import msgspec

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
    (both changed in place; `config.tools.mcp_tool_state` says what `--tools`/`-xt` allow); then,
    as Pi 1.6.0's MCP extension does, activate what reaches the undeclared ones: `codemode` for
    `codemode` exposure (unless mcp.json's `autoEnableCodemode` is false), `tool_search` for
    `deferred`, which later loads into `tools`' active set; a warning when neither reaches them."""
    from pi_rpc.tools import TOOL_SEARCH_TOOL_NAME, tool_search_definition

    exposures = mcp.exposures()
    for definition in mcp.definitions():
        if definition.name in definitions or (state := config.tools.mcp_tool_state(definition.name)) is None:
            continue
        definitions[definition.name] = definition
        if definition.exposure == "direct" and (state or definition.source.removeprefix("mcp:") in client_servers):
            active.append(definition.name)
    registered = {exposures.get(name) for name in definitions}
    codemode = CODEMODE_TOOL_NAME in definitions
    if "codemode" in registered and codemode and config.tools.auto_enable_codemode and CODEMODE_TOOL_NAME not in active:
        active.append(CODEMODE_TOOL_NAME)
    if "deferred" in registered and TOOL_SEARCH_TOOL_NAME not in definitions:
        definitions[TOOL_SEARCH_TOOL_NAME] = tool_search_definition(
            lambda: _searchable(mcp, definitions, tools.active_tools),
            lambda names: tools.set_active_tools([*tools.active_tools, *names]),
        )
        active.append(TOOL_SEARCH_TOOL_NAME)
    undeclared = any(tool.exposure == "deferred" and name not in active for name, tool in definitions.items())
    if undeclared and CODEMODE_TOOL_NAME not in active and TOOL_SEARCH_TOOL_NAME not in active:
        # Pi 1.6.0's words; once per session, as Pi warns once per session.
        turned_off = "codemode" in registered and codemode and not config.tools.auto_enable_codemode
        _log.warning(
            "MCP tools are only reachable from the codemode or tool_search tool, but neither is active%s; "
            "they cannot be called.",
            " (autoEnableCodemode is false)" if turned_off else "",
        )


def callable_tools(definitions: dict[str, ToolDefinition], active: Sequence[str]) -> list[AgentTool]:
    """What a run can call, as Pi 1.6.0's `_getCallableTools`: the active tools (a `deferred` one
    active, loaded by `tool_search` or chosen by the client, is declared to the model like a direct
    one), then every registered `deferred` tool not active, which only codemode scripts call."""
    tools: list[AgentTool] = [_declared(definitions[name]) for name in active]
    scripts_only = [tool for name, tool in definitions.items() if tool.exposure == "deferred" and name not in active]
    return [*tools, *scripts_only]


def _declared(tool: ToolDefinition) -> AgentTool:
    return msgspec.structs.replace(tool, exposure="direct") if tool.exposure == "deferred" else tool


def _searchable(mcp: McpServers, definitions: dict[str, ToolDefinition], active: list[str]) -> list[Searchable]:
    """The undeclared tools (`codemode` and `deferred` exposure) not active yet, each found also by
    its server's namespace text: Pi's `tool_search` loads either."""
    from pi_rpc.tools import Searchable, mcp_namespace, search_document

    namespaces = {
        f"mcp:{name}": " ".join([mcp_namespace(name), c.config.description or "", c.instructions or ""])
        for name, c in mcp.connections.items()
    }
    return [
        Searchable(search_document(d.name, d.description, d.parameters, namespaces.get(d.source, "")), d.description)
        for name, d in definitions.items()
        if d.exposure == "deferred" and name not in active
    ]


def mcp_prompt_sections(mcp: McpServers | None) -> dict[str, str]:
    """`{"mcp_servers": …}` when some server has deferred tools, else nothing."""
    if mcp is None:
        return {}
    from pi_rpc.tools import MCP_SERVERS_SECTION, ListedServer, render_servers_section

    servers = [ListedServer(c.config, c.instructions) for c in mcp.connections.values()]
    section = render_servers_section(servers)
    return {MCP_SERVERS_SECTION: section} if section else {}
