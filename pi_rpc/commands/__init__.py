"""`pi-rpc <subcommand>`: the commands a user runs in a terminal, beside the daemon itself.

Each is a module with `main(argv) -> int` (the exit status), imported only when asked for, so
the daemon's start-up pays nothing for them.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

# name -> (one line for --help, module holding its main)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "models": ("list the models pi-rpc can use now and which one it starts on", "pi_rpc.commands.models"),
    "tools": ("list the built-in tools and which are active", "pi_rpc.commands.tools"),
    "doctor": (
        "check the installation, configuration and keys (--live: a one-token request)",
        "pi_rpc.commands.doctor",
    ),
    "protocol": ("print the wire protocol (PROTOCOL.md); --schema: its JSON Schema", "pi_rpc.commands.protocol"),
    "demo": ("run the guided demo in this terminal", "pi_rpc.commands.demo"),
    "mcp": ("list (connecting each) or add MCP servers in Pi's mcp.json files", "pi_rpc.commands.mcp"),
    "trust": ("trust a folder (--no, --forget, --show): its own settings and resources apply", "pi_rpc.commands.trust"),
}


def subcommands_help() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = ["Subcommands:"]
    lines += [f"  pi-rpc {name.ljust(width)}  {summary}" for name, (summary, _) in SUBCOMMANDS.items()]
    return "\n".join(lines)


def run_subcommand(name: str, argv: Sequence[str]) -> int:
    module = importlib.import_module(SUBCOMMANDS[name][1])
    status: int = module.main(list(argv))
    return status
