"""All built-in tools, and which of them are registered and active (spec 5)."""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from functools import partial
from typing import Literal

from pi_rpc.ai import Wire
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.bash import BashDetails, create_bash_tool
from pi_rpc.tools.codemode import create_codemode_tool
from pi_rpc.tools.edit import EditDetails, create_edit_tool
from pi_rpc.tools.editor_files import FileRouter
from pi_rpc.tools.find import FindDetails, create_find_tool
from pi_rpc.tools.grep import GrepDetails, create_grep_tool
from pi_rpc.tools.hunks import HunkDetails
from pi_rpc.tools.ls import LsDetails, create_ls_tool
from pi_rpc.tools.powershell import create_powershell_tool
from pi_rpc.tools.process import ProcessTable
from pi_rpc.tools.read import ReadDetails, create_read_tool
from pi_rpc.tools.tool_env import PROVIDER_KEY_VARS
from pi_rpc.tools.write import create_write_tool

# Order and one-line summaries of `pi --help` (spec 5.2).
BUILTIN_TOOLS: dict[str, tuple[str, Callable[[], ToolDefinition]]] = {
    "read": ("Read file contents", create_read_tool),
    "bash": ("Execute bash commands", create_bash_tool),
    "powershell": ("Execute PowerShell commands on Windows", create_powershell_tool),
    "edit": ("Edit files with find/replace", create_edit_tool),
    "write": ("Write files (creates/overwrites)", create_write_tool),
    "grep": ("Search file contents (read-only, off by default)", create_grep_tool),
    "find": ("Find files by glob pattern (read-only, off by default)", create_find_tool),
    "ls": ("List directory contents (read-only, off by default)", create_ls_tool),
}
# Tools Pi ships as built-in extensions: registered but inactive, and not in --help's list
# (`--tools +codemode` activates one).
EXTENSION_TOOLS: dict[str, Callable[[], ToolDefinition]] = {"codemode": create_codemode_tool}
DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")
# The `details` each built-in tool's results carry (protocol/schema.json publishes them by these
# names, `toolDetails`); write's carry none.
TOOL_DETAILS: dict[str, type[Wire]] = {
    "read": ReadDetails,
    "bash": BashDetails,
    "powershell": BashDetails,
    "edit": EditDetails,
    "write": HunkDetails,  # only when the user kept some hunks of an overwrite; else none
    "grep": GrepDetails,
    "find": FindDetails,
    "ls": LsDetails,
}


NoTools = Literal["all", "builtin"]  # Pi's -nt (every tool), -nbt (the built-in ones)


def is_tool_modifier(entry: str) -> bool:
    """A `--tools` entry that edits the default set (`+name`, `-name`) rather than naming a tool."""
    return entry.startswith(("+", "-"))


def tool_list_error(entries: Sequence[str]) -> str | None:
    """What is wrong with a `--tools` list, in Pi 1.6.0's words (settings-manager.js
    `getToolListError`): an allowlist of names and patterns, or only `+name`/`-name` entries."""
    modifiers = [entry for entry in entries if is_tool_modifier(entry)]
    if not modifiers:
        return None
    if len(modifiers) < len(entries):
        return "tool names cannot be mixed with +name or -name entries"
    pattern = next((entry for entry in modifiers if "*" in entry), None)
    if pattern is not None:
        return f"+name and -name entries take exact tool names, not patterns: {pattern}"
    return None


def apply_tool_modifiers(base: Sequence[str], entries: Sequence[str]) -> list[str]:
    """`base` with each `+name` added and each `-name` removed, in order (Pi's `applyToolModifiers`)."""
    tools = list(base)
    for entry in entries:
        if not is_tool_modifier(entry):
            continue
        name = entry[1:]
        if entry.startswith("+") and name and name not in tools:
            tools.append(name)
        elif entry.startswith("-") and name in tools:
            tools.remove(name)
    return tools


def tool_name_matcher(entries: Sequence[str]) -> Callable[[str], bool]:
    """Whether a tool name is one of `entries`, each an exact name or a pattern whose `*` matches
    anything (Pi's `createToolNameMatcher`)."""
    exact = {entry for entry in entries if "*" not in entry}
    patterns = [
        re.compile("^" + ".*".join(re.escape(part) for part in entry.split("*")) + "$", re.DOTALL)
        for entry in entries
        if "*" in entry
    ]
    return lambda name: name in exact or any(pattern.match(name) for pattern in patterns)


MCP_PREFIX = "mcp__"  # an MCP server's tools are named mcp__<server>__<tool> (mcp_config.py)


def is_mcp_tool_name(name: str) -> bool:
    return name.startswith(MCP_PREFIX)


class ToolSelection:
    """Which tools exist and which start active, as Pi 1.6.0 reads `--tools`, `--exclude-tools`,
    `-nt` and `-nbt` (sdk.js `createAgentSession`, agent-session.js `_isAllowedTool` and
    `_refreshToolRegistry`). `--tools` is either an allowlist of names and `*` patterns (only
    what it matches exists, and all of that starts active; MCP tools stay, inactive, unless an
    entry starts with `mcp__`) or only `+name`/`-name` edits of the default set (every tool
    exists). `--exclude-tools` names or patterns remove tools, MCP ones included."""

    def __init__(
        self,
        tools: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        default_tools: Sequence[str] | None = None,
        no_tools: NoTools | None = None,
    ) -> None:
        defaults = [] if no_tools else list(default_tools if default_tools is not None else DEFAULT_ACTIVE_TOOLS)
        modifiers = list(tools) if tools is not None and any(is_tool_modifier(entry) for entry in tools) else None
        selected = apply_tool_modifiers(defaults, modifiers) if modifiers is not None else tools
        if modifiers is not None:
            allow = selected if no_tools == "all" else None
        else:
            allow = list(tools) if tools is not None else ([] if no_tools == "all" else None)
        self.allow = allow
        self._allowed = tool_name_matcher(allow) if allow is not None else None
        # An empty allowlist (-nt) or one naming an MCP tool decides about MCP tools too.
        self._allow_filters_mcp = allow is not None and (not allow or any(e.startswith(MCP_PREFIX) for e in allow))
        self._excluded = tool_name_matcher(exclude)
        self._wanted = list(selected if selected is not None else defaults)

    def allowed(self, name: str) -> bool:
        """The tool exists (is registered)."""
        if self._excluded(name):
            return False
        if self._allowed is None or self._allowed(name):
            return True
        return not self._allow_filters_mcp and is_mcp_tool_name(name)

    def registered(self) -> list[str]:
        return [name for name in [*BUILTIN_TOOLS, *EXTENSION_TOOLS] if self.allowed(name)]

    def initial_active(self) -> list[str]:
        registered = self.registered()
        wanted = [name for name in self._wanted if name in registered]
        if self._allowed is not None:  # naming or matching a tool activates it
            wanted += [name for name in registered if self._allowed(name)]
        return list(dict.fromkeys(wanted))

    def mcp_tool_state(self, name: str) -> bool | None:
        """An MCP server's tool: None when it does not exist, else whether it starts active (an
        allowlist that keeps MCP tools without matching them leaves them inactive)."""
        if not self.allowed(name):
            return None
        return self._allowed is None or self._allowed(name)


def unknown_tool_names(entries: Sequence[str]) -> list[str]:
    """The `--tools`/`--exclude-tools` entries that can name no tool: an exact name (or a `+`/`-`
    edit's) that is no built-in tool, or a pattern that matches none; `mcp__` ones may name a
    server's tool, which is known only once the server runs."""
    unknown = []
    for entry in entries:
        name = entry[1:] if is_tool_modifier(entry) else entry
        if not name or name.startswith(MCP_PREFIX):
            continue
        matches = tool_name_matcher([name])
        if not any(matches(tool) for tool in [*BUILTIN_TOOLS, *EXTENSION_TOOLS]):
            unknown.append(entry)
    return unknown


# The tools that start shells, and so take the environment variables their children must not see.
_SHELL_TOOLS = {"bash": create_bash_tool, "powershell": create_powershell_tool}
# The tools that run ripgrep.
_RIPGREP_TOOLS: dict[str, Callable[..., ToolDefinition]] = {"grep": create_grep_tool, "find": create_find_tool}


def create_tool_definitions(
    names: Sequence[str],
    files: FileRouter | None = None,
    *,
    withheld_env: Collection[str] = PROVIDER_KEY_VARS,
    processes: ProcessTable | None = None,
) -> dict[str, ToolDefinition]:
    """The named built-in tools; with a router, read/edit/write go through it (editor buffers).
    What the shell and ripgrep tools start belongs to `processes` (the session's table; without
    one, a table the tools share)."""
    table = ProcessTable() if processes is None else processes
    factories: dict[str, Callable[[], ToolDefinition]] = {
        name: partial(create, withheld_env=withheld_env, processes=table) for name, create in _SHELL_TOOLS.items()
    }
    factories |= {name: partial(create, processes=table) for name, create in _RIPGREP_TOOLS.items()}
    if files is not None:
        factories |= {
            "read": lambda: create_read_tool(operations=files.read_operations()),
            "edit": lambda: create_edit_tool(operations=files.edit_operations()),
            "write": lambda: create_write_tool(operations=files.write_operations()),
        }
    builtin = {name: create for name, (_, create) in BUILTIN_TOOLS.items()} | EXTENSION_TOOLS
    return {name: factories.get(name, builtin[name])() for name in names}


def tools_help() -> str:
    """The `Built-in Tool Names:` block of --help, exactly as Pi prints it (spec 5.2)."""
    width = max(len(name) for name in BUILTIN_TOOLS)
    lines = ["Built-in Tool Names:"]
    lines += [f"  {name.ljust(width)} - {summary}" for name, (summary, _) in BUILTIN_TOOLS.items()]
    return "\n".join(lines)
