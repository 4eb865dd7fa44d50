"""Generate protocol/schema.json from the wire Structs: `python -m pi_rpc.modes.jsonrpc.schema [PATH]`.

The schema is derived, never edited: tests regenerate it and fail when the committed file differs.

A tool result's `details` is `Any` in its Structs (AgentToolResult in agent/, ToolResultMessage in
ai/: neither layer may name the tools' types); here, above both, it is described: the built-in
tools' `…Details` Structs under `$defs`, which one by tool name under `toolDetails`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import msgspec

from pi_rpc.modes.jsonrpc.protocol import (
    CLIENT_NOTIFICATIONS,
    METHODS,
    PROTOCOL_VERSION,
    SERVER_NOTIFICATIONS,
    SERVER_REQUESTS,
)
from pi_rpc.tools import TOOL_DETAILS

DEFAULT_PATH = Path(__file__).resolve().parents[3] / "protocol" / "schema.json"
REF = "#/$defs/{name}"
# The wire Structs whose `details` is a tool result's.
RESULTS_WITH_DETAILS = ("AgentToolResult", "ToolResultMessage")
DETAILS = "ToolResultDetails"


def build_schema() -> dict[str, Any]:
    types: list[Any] = []
    for params, result in [*METHODS.values(), *SERVER_REQUESTS.values()]:
        types.append(params)
        if result is not None:
            types.append(result)
    types += list(CLIENT_NOTIFICATIONS.values()) + list(SERVER_NOTIFICATIONS.values())
    details = list(dict.fromkeys(TOOL_DETAILS.values()))
    schemas, components = msgspec.json.schema_components([*types, *details], ref_template=REF)
    by_type = dict(zip(types, schemas[: len(types)], strict=True))
    by_type |= dict(zip(details, schemas[len(types) :], strict=True))
    components[DETAILS] = _details_schema([by_type[d] for d in details])
    for name in RESULTS_WITH_DETAILS:
        properties = components[name]["properties"]
        if properties["details"] != {}:
            raise ValueError(f"{name}.details has a type of its own now: describe it there, not here")
        properties["details"] = {"$ref": REF.format(name=DETAILS)}

    def describe(params: Any, result: Any | None) -> dict[str, Any]:
        entry = {"params": by_type[params]}
        entry["result"] = by_type[result] if result is not None else {"type": "null"}
        return entry

    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "pi-rpc wire protocol",
        "protocolVersion": PROTOCOL_VERSION,
        "methods": {name: describe(p, r) for name, (p, r) in METHODS.items()},
        "clientNotifications": {name: {"params": by_type[p]} for name, p in CLIENT_NOTIFICATIONS.items()},
        "serverNotifications": {name: {"params": by_type[p]} for name, p in SERVER_NOTIFICATIONS.items()},
        "serverRequests": {name: describe(p, r) for name, (p, r) in SERVER_REQUESTS.items()},
        "toolDetails": {name: by_type[d] for name, d in TOOL_DETAILS.items()},
        "$defs": components,
    }


def _details_schema(builtin: list[dict[str, Any]]) -> dict[str, Any]:
    names = ", ".join(f"{name}: {d.__name__}" for name, d in TOOL_DETAILS.items())
    return {
        "title": DETAILS,
        "description": (
            "What a tool reports beside its content, for editors and logs (the model never sees "
            f"it). Which one is the tool's by its name, as `toolDetails` lists: {names} (write's "
            "only when the user kept some hunks of an overwrite; otherwise absent). An error "
            "result carries {} (a failed or aborted bash call its "
            "BashDetails). Other tools' (an MCP server's) may be any object."
        ),
        "anyOf": [*builtin, {"type": "object", "additionalProperties": True}],
    }


def render() -> bytes:
    return msgspec.json.format(msgspec.json.encode(build_schema()), indent=2) + b"\n"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    path.write_bytes(render())


if __name__ == "__main__":
    main()
