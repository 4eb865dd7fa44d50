"""Generate protocol/schema.json from the wire Structs: `python -m pi_rpc.modes.jsonrpc.schema [PATH]`.

The schema is derived, never edited: tests regenerate it and fail when the committed file differs.
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

DEFAULT_PATH = Path(__file__).resolve().parents[3] / "protocol" / "schema.json"


def build_schema() -> dict[str, Any]:
    types: list[Any] = []
    for params, result in [*METHODS.values(), *SERVER_REQUESTS.values()]:
        types.append(params)
        if result is not None:
            types.append(result)
    types += list(CLIENT_NOTIFICATIONS.values()) + list(SERVER_NOTIFICATIONS.values())
    schemas, components = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    by_type = dict(zip(types, schemas, strict=True))

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
        "$defs": components,
    }


def render() -> bytes:
    return msgspec.json.format(msgspec.json.encode(build_schema()), indent=2) + b"\n"


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0]) if args else DEFAULT_PATH
    path.write_bytes(render())


if __name__ == "__main__":
    main()
