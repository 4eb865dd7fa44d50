"""The built-in tools' public names: the tool registry (`create_tool_definitions`, the default
set), `ToolDefinition`, the editor-file router, MCP servers, the few helpers the session uses, and
the edit tool's own way of applying edits and diffing (for the front ends that show a whole file).

Other layers and the front ends import these from here (`from pi_rpc.tools import ToolDefinition`);
the modules behind them are the layer's own. Nothing is loaded until a name is first used
(`pi_rpc/lazy_exports.py`), so importing this package does not start the MCP SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_rpc.lazy_exports import lazy_exports

if TYPE_CHECKING:
    from pi_rpc.tools.base import ToolDefinition
    from pi_rpc.tools.bash import LocalShellOperations, session_environment
    from pi_rpc.tools.codemode import CODEMODE_TOOL_NAME
    from pi_rpc.tools.edit_diff import (
        Edit,
        apply_edits_to_normalized_content,
        generate_unified_patch,
        normalize_to_lf,
        strip_bom,
    )
    from pi_rpc.tools.editor_files import EditorFiles, EditorRequestError, FileRouter
    from pi_rpc.tools.hunks import all_rejected_text
    from pi_rpc.tools.mcp import McpServers
    from pi_rpc.tools.mcp_config import (
        EXPOSURES,
        McpServerConfig,
        McpServerEntry,
        McpServerStatus,
        servers_from_settings,
        tool_exposure,
    )
    from pi_rpc.tools.mcp_files import add_server, global_mcp_file, load_mcp_files, project_mcp_file, validate_entry
    from pi_rpc.tools.mcp_prompt import MCP_SERVERS_SECTION, ListedServer, mcp_namespace, render_servers_section
    from pi_rpc.tools.output import OutputAccumulator
    from pi_rpc.tools.paths import real_path, resolve_to_cwd
    from pi_rpc.tools.pending_writes import sweep_stale_temp_files
    from pi_rpc.tools.process import ProcessTable, ProcessTables
    from pi_rpc.tools.read import local_read_operations
    from pi_rpc.tools.registry import (
        BUILTIN_TOOLS,
        DEFAULT_ACTIVE_TOOLS,
        TOOL_DETAILS,
        NoTools,
        ToolSelection,
        create_tool_definitions,
        tool_list_error,
        tools_help,
        unknown_tool_names,
    )
    from pi_rpc.tools.ripgrep import locate_rg, wheel_rg
    from pi_rpc.tools.tool_env import PROVIDER_KEY_VARS
    from pi_rpc.tools.tool_ranking import search_document
    from pi_rpc.tools.tool_search import TOOL_SEARCH_TOOL_NAME, Searchable, tool_search_definition
    from pi_rpc.tools.truncate import truncate_chars
    from pi_rpc.tools.write import local_write_operations

__all__ = [
    "BUILTIN_TOOLS",
    "DEFAULT_ACTIVE_TOOLS",
    "Edit",
    "EditorFiles",
    "EditorRequestError",
    "FileRouter",
    "LocalShellOperations",
    "McpServerConfig",
    "McpServerEntry",
    "McpServerStatus",
    "McpServers",
    "OutputAccumulator",
    "PROVIDER_KEY_VARS",
    "TOOL_DETAILS",
    "ProcessTable",
    "ProcessTables",
    "ToolDefinition",
    "NoTools",
    "ToolSelection",
    "tool_list_error",
    "apply_edits_to_normalized_content",
    "create_tool_definitions",
    "generate_unified_patch",
    "local_read_operations",
    "local_write_operations",
    "locate_rg",
    "normalize_to_lf",
    "real_path",
    "resolve_to_cwd",
    "servers_from_settings",
    "session_environment",
    "strip_bom",
    "sweep_stale_temp_files",
    "tools_help",
    "truncate_chars",
    "unknown_tool_names",
    "wheel_rg",
    "EXPOSURES",
    "tool_exposure",
    "add_server",
    "global_mcp_file",
    "load_mcp_files",
    "project_mcp_file",
    "validate_entry",
    "MCP_SERVERS_SECTION",
    "ListedServer",
    "mcp_namespace",
    "render_servers_section",
    "search_document",
    "TOOL_SEARCH_TOOL_NAME",
    "CODEMODE_TOOL_NAME",
    "Searchable",
    "tool_search_definition",
    "all_rejected_text",
]

if not TYPE_CHECKING:  # for mypy the imports above are the names, so a misspelt one stays an error
    __getattr__, __dir__ = lazy_exports(__name__, __all__)
