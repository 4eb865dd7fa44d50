"""Pi's MCP configuration files: `~/.pi/agent/mcp.json` and a trusted project's `.pi/mcp.json`.

Both hold `{"mcpServers": {name: entry}}` in the shape Pi 1.6.0 (pi-mcp `validateMcpServerConfig`)
checks: stdio (`command`, `args`, `env`, `cwd`) or streamable HTTP (`url`, `headers`, `oauth`),
`type` optional (`stdio`, `http`, `streamable-http`; `sse` refused), and for both `enabled`,
`description`, `timeout`, `exposure`, `toolExposure`; beside `mcpServers`, `autoEnableCodemode`
(default true: the `codemode` tool is activated for servers with `codemode` exposure; a project's
value wins over the global one). Server names are `[A-Za-z0-9_-]+`; two
that differ only in `-`/`_` clash. An invalid entry is reported in Pi's words and skipped, the
others still load. A project entry replaces the global one of its name; a project entry without
`command`, `url` or `type` only overrides `enabled`, `exposure` and `toolExposure` of the global
one, keeping its credentials. `${NAME}` in `env` and `headers` values is the environment's
variable, and a value that starts with `!` is the output of that shell command, as in Pi; a
leading `~/` of `command`, an argument or `cwd` is the home folder, and a relative `cwd` is the
session's folder.

Where they stand among pi-rpc's other sources (session/configuration/factory.py): settings.json `mcpServers`
first, then these files (a name here wins over the settings'), then what a client passes (which
wins over both). OAuth sign-in and `auth` providers are not supported: such a server is still
started, without the token. The `pi-rpc mcp` command (commands/mcp.py) lists and adds entries.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any, Literal, cast

import msgspec

from pi_rpc.ai import pi_agent_dir
from pi_rpc.tools.mcp_config import EXPOSURES, Exposure, McpServerConfig

MCP_FILE = "mcp.json"
SERVER_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
OVERRIDE_KEYS = ("enabled", "exposure", "toolExposure")
_EXPOSURE_ALIASES = {"codemode-deferred": "codemode"}  # Pi's older name, still accepted
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
COMMAND_SECONDS = 10.0  # a `!command` value that takes longer is an error, not a hang

Scope = Literal["global", "project"]


class McpFileServer(msgspec.Struct, frozen=True):
    """One server as the files define it: its config, and where it came from."""

    config: McpServerConfig
    enabled: bool
    source: Path
    scope: Scope
    override: Path | None = None  # the project file that overrode its enabled/exposure


class McpFiles(msgspec.Struct):
    servers: list[McpFileServer] = msgspec.field(default_factory=list)
    errors: list[str] = msgspec.field(default_factory=list)
    # The project's file when it exists and the folder is not trusted: it is not read.
    ignored_project_file: Path | None = None
    # `autoEnableCodemode`, the project's when it says, else the global file's (Pi's default: true).
    auto_enable_codemode: bool = True

    def enabled_configs(self) -> list[McpServerConfig]:
        return [server.config for server in self.servers if server.enabled]


def global_mcp_file() -> Path:
    """Pi's own file (`$PI_CODING_AGENT_DIR/mcp.json`, else `~/.pi/agent/mcp.json`), shared with Pi."""
    return pi_agent_dir() / MCP_FILE


def project_mcp_file(cwd: str) -> Path:
    return Path(cwd) / ".pi" / MCP_FILE


def load_mcp_files(cwd: str, trusted: bool) -> McpFiles:
    """The global file, then the project's when `trusted` (else only noted as ignored)."""
    files = McpFiles()
    raw: dict[str, tuple[dict[str, Any], Path, Scope, Path | None]] = {}
    _read(global_mcp_file(), "global", raw, files)
    project = project_mcp_file(cwd)
    if trusted:
        _read(project, "project", raw, files)
    elif project.is_file():
        files.ignored_project_file = project
    for name, (entry, source, scope, override) in raw.items():
        config = server_config(name, entry, cwd)
        if isinstance(config, str):
            files.errors.append(f"{source}: {config}")
        else:
            files.servers.append(McpFileServer(config, entry.get("enabled") is not False, source, scope, override))
    return files


def _read(
    path: Path, scope: Scope, raw: dict[str, tuple[dict[str, Any], Path, Scope, Path | None]], files: McpFiles
) -> None:
    errors = files.errors
    data = _read_file(path, errors)
    auto_enable = data.get("autoEnableCodemode")
    if isinstance(auto_enable, bool):
        files.auto_enable_codemode = auto_enable
    elif auto_enable is not None:
        errors.append(f"{path}: autoEnableCodemode must be a boolean")
    servers: dict[str, Any] = data.get("mcpServers", {})
    for name, value in servers.items():
        if scope == "project" and isinstance(value, dict) and _is_override(value):
            base = raw.get(name)
            extra = [key for key in value if key not in OVERRIDE_KEYS]
            if base is None:
                errors.append(f'{path}: server "{name}" needs "command" or "url", or a global server to override')
            elif extra:
                errors.append(f'{path}: server "{name}": an override can only set {", ".join(OVERRIDE_KEYS)}')
            else:
                raw[name] = ({**base[0], **value}, base[1], base[2], path)
            continue
        error = validate_entry(name, value)
        if error is not None:
            errors.append(f"{path}: {error}")
            continue
        clash = next((other for other in raw if other != name and _namespace(other) == _namespace(name)), None)
        if clash is not None:
            errors.append(f'{path}: server "{name}" conflicts with "{clash}"')
            continue
        if scope == "project" and "url" in value and "auth" in value:
            errors.append(f'{path}: server "{name}": auth is only allowed in the global mcp.json')
            continue
        raw[name] = (cast(dict[str, Any], value), path, scope, None)


def _read_file(path: Path, errors: list[str]) -> dict[str, Any]:
    """A file's top level, its `mcpServers` an object (empty when the file is missing or broken,
    which goes into `errors`)."""
    if not path.is_file():
        return {}
    try:
        data = msgspec.json.decode(path.read_bytes().removeprefix(b"\xef\xbb\xbf"))
    except (OSError, msgspec.DecodeError) as exc:
        errors.append(f"{path}: {exc}")
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        errors.append(f'{path}: expected an object with an "mcpServers" object')
        return {}
    return cast(dict[str, Any], data)


def _is_override(entry: dict[str, Any]) -> bool:
    return "command" not in entry and "url" not in entry and "type" not in entry


def _namespace(server: str) -> str:
    return server.replace("-", "_")


def _strings(value: object) -> bool:
    return isinstance(value, dict) and all(isinstance(item, str) for item in value.values())


def validate_entry(name: str, entry: object) -> str | None:
    """Pi's checks of one `mcpServers` entry, in its order and words; None when it is valid."""
    if not SERVER_NAME.match(name):
        return f'invalid server name "{name}" (use letters, digits, "_" and "-")'
    if not isinstance(entry, dict):
        return f'server "{name}" must be an object'
    error = _base_error(entry) or _kind_error(name, entry) or _exposure_error(entry)
    if error is not None:
        return error if error.startswith("server ") else f'server "{name}": {error}'
    return None


def _base_error(entry: dict[str, Any]) -> str | None:
    enabled, timeout, description = entry.get("enabled"), entry.get("timeout"), entry.get("description")
    if enabled is not None and not isinstance(enabled, bool):
        return "enabled must be a boolean"
    if description is not None and not isinstance(description, str):
        return "description must be a string"
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0):
        return "timeout must be a positive number of seconds"
    return None


def _kind_error(name: str, entry: dict[str, Any]) -> str | None:
    kind, url, command = entry.get("type"), entry.get("url"), entry.get("command")
    if kind == "sse":
        return f'server "{name}": legacy SSE transport is not supported; use the streamable HTTP URL'
    if isinstance(url, str) and kind in (None, "http", "streamable-http"):
        if not re.match(r"^https?://[^/\s]+", url):
            return "url must be an http or https URL"
        if "headers" in entry and not _strings(entry["headers"]):
            return "headers must map names to strings"
        if "oauth" in entry and not isinstance(entry["oauth"], dict):
            return "oauth must be an object"
        return None
    if isinstance(command, str) and kind in (None, "stdio"):
        args = entry.get("args")
        if args is not None and not (isinstance(args, list) and all(isinstance(arg, str) for arg in args)):
            return "args must be an array of strings"
        if "env" in entry and not _strings(entry["env"]):
            return "env must map names to strings"
        if "cwd" in entry and not isinstance(entry["cwd"], str):
            return "cwd must be a string"
        return None
    return f'server "{name}" needs either "command" (stdio) or "url" (streamable HTTP)'


def _exposure_error(entry: dict[str, Any]) -> str | None:
    names = ", ".join(f'"{value}"' for value in EXPOSURES)
    exposure = _EXPOSURE_ALIASES.get(str(entry.get("exposure")), entry.get("exposure"))
    if exposure is not None and exposure not in EXPOSURES:
        return f"exposure must be one of {names}"
    per_tool = entry.get("toolExposure")
    if per_tool is None:
        return None
    if not isinstance(per_tool, dict):
        return "toolExposure must map tool names to exposures"
    for tool, value in per_tool.items():
        if _EXPOSURE_ALIASES.get(str(value), value) not in EXPOSURES:
            return f'toolExposure "{tool}" must be one of {names}'
    return None


def server_config(name: str, entry: dict[str, Any], cwd: str) -> McpServerConfig | str:
    """A valid entry as the config tools/mcp.py starts (Pi's default exposure, `codemode`;
    values resolved); the error of an invalid one (a project override is checked merged)."""
    error = validate_entry(name, entry)
    if error is not None:
        return error
    try:
        env = {key: resolve_value(value) for key, value in entry.get("env", {}).items()}
        headers = {key: resolve_value(value) for key, value in entry.get("headers", {}).items()}
    except ValueError as exc:
        return f'server "{name}": {exc}'
    url = entry.get("url") if isinstance(entry.get("url"), str) else None
    folder = entry.get("cwd")
    return McpServerConfig(
        name=name,
        command=None if url is not None else _home(entry["command"]),
        args=[] if url is not None else [_home(arg) for arg in entry.get("args", [])],
        env={} if url is not None else env,
        cwd=None if url is not None or folder is None else str(Path(cwd) / _home(folder)),
        url=url,
        headers=headers if url is not None else {},
        exposure=_exposure(entry.get("exposure", "codemode")),
        tool_exposure={tool: _exposure(value) for tool, value in entry.get("toolExposure", {}).items()},
        description=entry.get("description"),
        timeout=float(entry["timeout"]) if "timeout" in entry else None,
    )


def _exposure(value: str) -> Exposure:
    return cast(Exposure, _EXPOSURE_ALIASES.get(value, value))


def _home(value: str) -> str:
    return str(Path.home() / value[2:]) if value.startswith("~/") else value


def resolve_value(value: str) -> str:
    """`${NAME}` is the variable (empty when unset); a value that starts with `!` is the stripped
    output of that shell command, as Pi resolves `env` and `headers`. Raises ValueError when the
    command fails."""
    if value.startswith("!"):
        try:
            done = subprocess.run(
                value[1:], shell=True, capture_output=True, text=True, timeout=COMMAND_SECONDS, check=True
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ValueError(f"the command of a value failed: {value[1:]!r}") from exc
        return done.stdout.strip()
    return _VARIABLE.sub(lambda match: os.environ.get(match.group(1), ""), value)


def add_server(path: Path, name: str, entry: dict[str, Any]) -> bool:
    """Add `name` to the `mcpServers` of `path` (made when missing), replacing an entry of that
    name and keeping everything else and the file's indentation; written atomically (a temp file
    beside it, then renamed). Returns whether an entry was replaced. Raises ValueError for a file
    that is not an object with an `mcpServers` object, OSError when it cannot be written."""
    text = path.read_text(encoding="utf-8-sig") if path.is_file() else None
    try:
        data = {} if text is None else msgspec.json.decode(text)
    except msgspec.DecodeError as exc:
        raise ValueError(f"{path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        raise ValueError(f'{path}: expected an object with an "mcpServers" object')
    servers = data.setdefault("mcpServers", {})
    replaced = name in servers
    servers[name] = entry
    indent = re.search(r"^([ \t]+)\S", text or "", re.MULTILINE)
    width = len(indent.group(1).expandtabs(4)) if indent else 2
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # it may carry credentials
    with os.fdopen(fd, "wb") as out:
        out.write(msgspec.json.format(msgspec.json.encode(data), indent=width) + b"\n")
    os.replace(temporary, path)
    return replaced
