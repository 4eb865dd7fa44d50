"""`pi-rpc tools`: the built-in tools, which a new session starts with active (after
settings.json `defaultTools`), and the ripgrep binary grep and find use."""

from __future__ import annotations

import argparse
import sys

from msgspec import UNSET

from pi_rpc.session import SettingsError, load_settings, resolve_default_tools
from pi_rpc.tools import BUILTIN_TOOLS, DEFAULT_ACTIVE_TOOLS, ToolSelection, locate_rg


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="pi-rpc tools",
        description="List the built-in tools. Active ones are offered to the model from the start; "
        "the others can be switched on by a client (tools/setActive) or with --tools.",
    )
    parser.parse_args(argv)
    try:
        settings = load_settings()
        defaults = None if settings.default_tools is UNSET else resolve_default_tools(settings.default_tools)
    except SettingsError as exc:
        sys.stderr.write(f"pi-rpc: {exc}\n")
        return 2
    active = ToolSelection(default_tools=defaults).initial_active()
    width = max(len(name) for name in BUILTIN_TOOLS)
    lines = [f"  {'TOOL'.ljust(width)}  ACTIVE  WHAT IT DOES"]
    for name, (summary, _) in BUILTIN_TOOLS.items():
        lines.append(f"  {name.ljust(width)}  {'yes' if name in active else 'no':6}  {summary}")
    lines.append("")
    origin = "settings.json defaultTools" if defaults is not None else "the built-in default"
    lines.append(f"Active at start ({origin}): {', '.join(active) or 'none'}")
    if defaults is not None and list(DEFAULT_ACTIVE_TOOLS) != active:
        lines.append(f"Built-in default: {', '.join(DEFAULT_ACTIVE_TOOLS)}")
    rg = locate_rg()
    lines.append(
        f"grep and find run ripgrep: {rg}"
        if rg
        else "grep and find need ripgrep, which is missing: reinstall pi-rpc (it pins the ripgrep wheel)"
    )
    sys.stdout.write("\n".join(lines) + "\n")
    sys.stdout.flush()
    return 0
