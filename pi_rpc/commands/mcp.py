"""`pi-rpc mcp list` and `pi-rpc mcp add`, as Pi 1.6.0's `pi mcp list` / `pi mcp add`, on the
same files (tools/mcp_files.py: `~/.pi/agent/mcp.json`, `-l` the project's `.pi/mcp.json`).

`list` connects every enabled server of the files and of settings.json `mcpServers` the way a
session would (trust-gated for the folder), prints each one's state and tools, its exposure, the
file it comes from and whether that folder is trusted, then the files' errors; it exits 1 when an
entry is invalid or an enabled server did not connect. `add` writes one entry in Pi's format
(atomically, keeping the rest of the file), after Pi's checks of it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

import anyio
import msgspec

from pi_rpc.session import SettingsError, decide_trust, load_settings, workspace_settings, workspace_settings_path
from pi_rpc.tools import (
    EXPOSURES,
    McpServerConfig,
    add_server,
    global_mcp_file,
    load_mcp_files,
    project_mcp_file,
    servers_from_settings,
    tool_exposure,
    validate_entry,
)

PROG = "pi-rpc mcp"


class Report(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """One server as `list --json` prints it (Pi's fields, with `trusted` for a project's)."""

    name: str
    scope: str  # global, project, or settings
    source: str
    enabled: bool
    exposure: str
    transport: str
    state: str = "disabled"
    tools: list[str] = msgspec.field(default_factory=list)
    tool_exposure: dict[str, str] = msgspec.field(default_factory=dict)
    override: str | None = None
    trusted: bool | None = None
    error: str | None = None


class Listing(msgspec.Struct):
    reports: list[Report] = msgspec.field(default_factory=list)
    configs: dict[str, McpServerConfig] = msgspec.field(default_factory=dict)
    errors: list[str] = msgspec.field(default_factory=list)
    note: str | None = None


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        sys.stdout.write(_HELP)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "list":
        return _list(rest)
    if command == "add":
        return _add(rest)
    sys.stderr.write(f'Unknown mcp command "{command}".\nUse "{PROG} --help" for usage.\n')
    return 1


_HELP = f"""Usage:
  {PROG} add <server> [options] -- <command> [args...]
  {PROG} add <server> [options] --url <url>
  {PROG} list [--json] [--cwd DIR]

Configure and check MCP servers without starting a session, in Pi's files:
{global_mcp_file()} and, in trusted folders, .pi/mcp.json.

Options for add:
  -l, --local             Use .pi/mcp.json in the current folder instead of the global file
  --url <url>             Streamable HTTP server URL (instead of a command)
  --env <KEY=VALUE>       Environment variable for a stdio server (repeatable)
  --cwd <dir>             Working directory for a stdio server
  --header <KEY=VALUE>    HTTP header (repeatable)
  --bearer-token-env-var <NAME>
                          Send "Authorization: Bearer ${{NAME}}"
  --exposure <mode>       codemode (default; direct in pi-rpc), deferred, direct, or hidden
  --description <text>    What the server offers, shown in the system prompt
"""


def _list(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog=f"{PROG} list", description="Connect every enabled server and report it.")
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.add_argument("--cwd", default=os.getcwd(), help="the folder whose servers to list (default: .)")
    args = parser.parse_args(list(argv))
    cwd = os.path.abspath(args.cwd)
    try:
        listing = collect(cwd)
    except SettingsError as exc:
        sys.stderr.write(f"{PROG}: {exc}\n")
        return 2
    anyio.run(_connect, listing)
    failed = bool(listing.errors) or any(r.enabled and r.state != "connected" for r in listing.reports)
    if args.json:
        data = {
            "servers": listing.reports,
            "errors": listing.errors,
            **({"note": listing.note} if listing.note else {}),
        }
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(data), indent=2).decode() + "\n")
    else:
        sys.stdout.write(render(listing))
    return 1 if failed else 0


def collect(cwd: str) -> Listing:
    """The servers a session in `cwd` would start, with where each comes from (a later source's
    name replaces an earlier's, as in session/configuration/factory.py); not connected yet."""
    user = load_settings()
    default = user.default_project_trust if isinstance(user.default_project_trust, str) else None
    trust = decide_trust(cwd, None, default)
    listing = Listing()
    settings = workspace_settings(user, cwd, trust.trusted).settings
    for config in servers_from_settings(settings.mcp_servers):
        listing.configs[config.name] = config
        listing.reports.append(_report(config, "settings", "settings.json mcpServers", True, None))
    files = load_mcp_files(cwd, trust.trusted)
    for server in files.servers:
        listing.reports = [r for r in listing.reports if r.name != server.config.name]
        trusted = trust.trusted if server.scope == "project" else None
        report = _report(server.config, server.scope, str(server.source), server.enabled, trusted)
        report.override = str(server.override) if server.override else None
        listing.reports.append(report)
        listing.configs[server.config.name] = server.config
    listing.errors = files.errors
    if files.ignored_project_file is not None:
        listing.note = (
            f"{files.ignored_project_file} is ignored because the folder is not trusted "
            f"(start pi-rpc with --approve, or trust it for good: pi-rpc trust {shlex.quote(cwd)})."
        )
    elif not trust.trusted and workspace_settings_path(cwd).is_file() and settings.mcp_servers:
        listing.note = f"{workspace_settings_path(cwd)}'s mcpServers are ignored: the folder is not trusted."
    return listing


def _report(config: McpServerConfig, scope: str, source: str, enabled: bool, trusted: bool | None) -> Report:
    transport = config.url or shlex.join([config.command or "", *config.args])
    return Report(
        name=config.name,
        scope=scope,
        source=source,
        enabled=enabled,
        exposure=config.exposure,
        transport=transport,
        trusted=trusted,
    )


async def _connect(listing: Listing) -> None:
    """Start the enabled servers together, as a session does, record what each did, stop them."""
    from pi_rpc.tools import McpServers

    enabled = [listing.configs[r.name] for r in listing.reports if r.enabled and r.name in listing.configs]
    if not enabled:
        return
    servers = McpServers()
    async with anyio.create_task_group() as tasks:
        await servers.start(enabled, tasks)
        for report in listing.reports:
            connection = servers.connections.get(report.name)
            if connection is None:
                continue
            report.state = "connected" if connection.status == "running" else connection.status
            report.tools = [tool.name for tool in connection.tools]
            report.tool_exposure = {
                tool: exposure
                for tool in report.tools
                if (exposure := tool_exposure(connection.config, tool)) != connection.config.exposure
            }
            report.error = connection.error
        await servers.stop()
        tasks.cancel_scope.cancel()


def render(listing: Listing) -> str:
    lines: list[str] = []
    if not listing.reports and not listing.errors:
        lines.append(f"No MCP servers configured. Add them to {global_mcp_file()} or .pi/mcp.json.")
    for report in listing.reports:
        count = len(report.tools)
        state = f"connected, {count} tool{'' if count == 1 else 's'}" if report.state == "connected" else report.state
        lines.append(f"{report.name}: {state} ({report.exposure}, {report.scope})")
        lines.append(f"  {report.transport}")
        trust = "" if report.trusted is None else (", trusted" if report.trusted else ", not trusted")
        lines.append(f"  from {report.source}{trust}")
        if report.override:
            lines.append(f"  project override: {report.override}")
        if report.tools:
            tools = [f"{t} [{report.tool_exposure[t]}]" if t in report.tool_exposure else t for t in report.tools]
            lines.append(f"  tools: {', '.join(tools)}")
        if report.error:
            lines.append("  " + report.error.replace("\n", "\n  "))
    lines += [f"config error: {error}" for error in listing.errors]
    if listing.note:
        lines.append(listing.note)
    return "".join(f"{line}\n" for line in lines)


def _pairs(option: str, pairs: Sequence[str]) -> dict[str, str]:
    record: dict[str, str] = {}
    for pair in pairs:
        key, separator, value = pair.partition("=")
        if not separator or not key:
            raise ValueError(f'--{option} expects KEY=VALUE, got "{pair}".')
        record[key] = value
    return record


def _add(argv: Sequence[str]) -> int:
    split = argv.index("--") if "--" in argv else len(argv)
    before, command = list(argv[:split]), list(argv[split + 1 :])
    parser = argparse.ArgumentParser(prog=f"{PROG} add", description="Add or replace a server in mcp.json.")
    parser.add_argument("name")
    parser.add_argument("-l", "--local", action="store_true")
    parser.add_argument("--url")
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--cwd")
    parser.add_argument("--header", action="append", default=[])
    parser.add_argument("--bearer-token-env-var")
    parser.add_argument("--exposure", choices=[*EXPOSURES, "codemode-deferred"])
    parser.add_argument("--description")
    args = parser.parse_args(before)
    usage = f"Usage: {PROG} add <server> [options] (--url <url> | -- <command> [args...])\n"
    if (args.url is None) == (not command):
        sys.stderr.write(usage)
        return 1
    misplaced = [o for o, v in (("header", args.header), ("bearer-token-env-var", args.bearer_token_env_var)) if v]
    if args.url is None and misplaced:
        sys.stderr.write(f"--{misplaced[0]} only applies to HTTP servers (--url).\n")
        return 1
    if args.url is not None and (args.env or args.cwd):
        sys.stderr.write(f"--{'env' if args.env else 'cwd'} only applies to stdio servers.\n")
        return 1
    try:
        entry = _entry(args, command)
    except ValueError as exc:
        sys.stderr.write(f"{exc}\n")
        return 1
    error = validate_entry(args.name, entry)
    if error is not None:
        sys.stderr.write(f"{error}\n")
        return 1
    path = project_mcp_file(os.getcwd()) if args.local else global_mcp_file()
    scope = "project" if args.local else "global"
    try:
        replaced = add_server(path, args.name, entry)
    except (ValueError, OSError) as exc:
        sys.stderr.write(f"Could not update {path}: {exc}\n")
        return 1
    sys.stdout.write(f'{"Replaced" if replaced else "Added"} {scope} MCP server "{args.name}" in {path}.\n')
    if args.local and not _trusted(os.getcwd()):
        sys.stdout.write(
            f"The folder is not trusted, so {path} is ignored until you trust it: "
            f"pi-rpc trust {shlex.quote(os.getcwd())}\n"
        )
    sys.stdout.write(f"Check it with: {PROG} list\n")
    return 0


def _entry(args: argparse.Namespace, command: list[str]) -> dict[str, Any]:
    """The entry in Pi's shape: only the fields given."""
    entry: dict[str, Any]
    if args.url is not None:
        headers = _pairs("header", args.header)
        if args.bearer_token_env_var is not None:
            headers["Authorization"] = f"Bearer ${{{args.bearer_token_env_var}}}"
        entry = {"url": args.url, **({"headers": headers} if headers else {})}
    else:
        env = _pairs("env", args.env)
        entry = {"command": command[0], **({"args": command[1:]} if command[1:] else {})}
        entry |= {"env": env} if env else {}
        entry |= {"cwd": args.cwd} if args.cwd is not None else {}
    optional = {"exposure": args.exposure, "description": args.description}
    return entry | {key: value for key, value in optional.items() if value is not None}


def _trusted(cwd: str) -> bool:
    try:
        user = load_settings()
    except SettingsError:
        return False
    default = user.default_project_trust if isinstance(user.default_project_trust, str) else None
    return decide_trust(cwd, None, default).trusted
