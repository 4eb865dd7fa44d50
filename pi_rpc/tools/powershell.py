"""The powershell tool (spec 9.15): bash's implementation with a PowerShell runner. Off by default."""

from __future__ import annotations

import shutil
from collections.abc import Collection

from pi_rpc.agent import ToolError
from pi_rpc.tools.base import ToolDefinition
from pi_rpc.tools.bash import (
    BashOperations,
    LocalShellOperations,
    ShellToolConfig,
    SpawnHook,
    create_shell_tool_definition,
)
from pi_rpc.tools.process import ProcessTable
from pi_rpc.tools.tool_env import PROVIDER_KEY_VARS

# Without it Windows PowerShell writes the console code page, not UTF-8.
UTF8_OUTPUT_PREFIX = "try { [Console]::OutputEncoding=[System.Text.Encoding]::UTF8 } catch {}\n"
POWERSHELL_ARGS = ["-NoProfile", "-NonInteractive", "-ExecutionPolicy", "Bypass", "-Command"]

POWERSHELL_CONFIG = ShellToolConfig(
    name="powershell",
    label="powershell",
    shell_name="PowerShell",
    prompt_snippet="Execute PowerShell commands",
    temp_file_prefix="pi-powershell",
)


def resolve_powershell(shell_path: str | None) -> list[str]:
    """pwsh preferred over Windows PowerShell; a clear error where neither exists."""
    if shell_path:
        if shutil.which(shell_path) is None:
            raise ToolError(f"Custom shell path not found: {shell_path}")
        return [shell_path, *POWERSHELL_ARGS]
    for name in ("pwsh", "pwsh.exe", "powershell.exe"):
        found = shutil.which(name)
        if found is not None:
            return [found, *POWERSHELL_ARGS]
    raise ToolError("PowerShell not found: install pwsh (PowerShell 7) or configure a shell path")


def create_powershell_tool(
    *,
    operations: BashOperations | None = None,
    shell_path: str | None = None,
    expose_session_environment: bool = True,
    spawn_hook: SpawnHook | None = None,
    withheld_env: Collection[str] = PROVIDER_KEY_VARS,
    processes: ProcessTable | None = None,
) -> ToolDefinition:
    ops = operations
    if ops is None:
        ops = LocalShellOperations(
            shell_name="PowerShell",
            shell_path=shell_path,
            resolve_shell=resolve_powershell,
            command_prefix=UTF8_OUTPUT_PREFIX,
            processes=ProcessTable() if processes is None else processes,
        )
    return create_shell_tool_definition(
        POWERSHELL_CONFIG,
        ops,
        expose_session_environment=expose_session_environment,
        spawn_hook=spawn_hook,
        withheld_env=withheld_env,
    )
