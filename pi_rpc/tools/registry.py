"""All built-in tools, and which of them are registered and active (spec 5)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from functools import partial

from pi_rpc.ai import Wire
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.bash import BashDetails, create_bash_tool
from pi_rpc.tools.edit import EditDetails, create_edit_tool
from pi_rpc.tools.editor_files import FileRouter
from pi_rpc.tools.find import FindDetails, create_find_tool
from pi_rpc.tools.grep import GrepDetails, create_grep_tool
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
DEFAULT_ACTIVE_TOOLS = ("read", "bash", "edit", "write")
# The `details` each built-in tool's results carry (protocol/schema.json publishes them by these
# names, `toolDetails`); write's carry none.
TOOL_DETAILS: dict[str, type[Wire]] = {
    "read": ReadDetails,
    "bash": BashDetails,
    "powershell": BashDetails,
    "edit": EditDetails,
    "grep": GrepDetails,
    "find": FindDetails,
    "ls": LsDetails,
}


class ToolSelection:
    """Spec 5.6 / 5.9: the allowlist narrows the registry itself; the denylist removes names."""

    def __init__(
        self,
        allow: Sequence[str] | None = None,
        exclude: Sequence[str] = (),
        default_tools: Sequence[str] | None = None,
        no_tools: bool = False,
    ) -> None:
        self.allow = list(allow) if allow is not None else None
        self.exclude = list(exclude)
        self.default_tools = list(default_tools) if default_tools is not None else None
        self.no_tools = no_tools

    def allowed(self, name: str) -> bool:
        return (self.allow is None or name in self.allow) and name not in self.exclude

    def registered(self) -> list[str]:
        return [name for name in BUILTIN_TOOLS if self.allowed(name)]

    def initial_active(self) -> list[str]:
        if self.allow is not None:
            wanted = self.allow
        elif self.no_tools:
            wanted = []
        else:
            wanted = self.default_tools if self.default_tools is not None else list(DEFAULT_ACTIVE_TOOLS)
        registered = set(self.registered())
        return [name for name in wanted if name in registered]


def unknown_tool_names(names: Sequence[str]) -> list[str]:
    return [name for name in names if name not in BUILTIN_TOOLS]


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
    return {name: factories.get(name, BUILTIN_TOOLS[name][1])() for name in names}


def tools_help() -> str:
    """The `Built-in Tool Names:` block of --help, exactly as Pi prints it (spec 5.2)."""
    width = max(len(name) for name in BUILTIN_TOOLS)
    lines = ["Built-in Tool Names:"]
    lines += [f"  {name.ljust(width)} - {summary}" for name, (summary, _) in BUILTIN_TOOLS.items()]
    return "\n".join(lines)
