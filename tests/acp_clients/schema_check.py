"""Every agent message checked against the ACP JSON Schema that the npm SDK ships, closed-world.

The schema leaves objects open; here every object schema with `properties` gets
`unevaluatedProperties: false`, so a field the schema does not define fails. A definition used
as a mix-in (`allOf` beside the user's own `properties`) stays open, and the node that mixes it
in is closed instead: `unevaluatedProperties` sees through `allOf`, `$ref` and `oneOf`.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema

SCHEMA = Path(__file__).parent / "node_modules" / "@agentclientprotocol" / "sdk" / "schema" / "v1" / "schema.json"
Json = dict[str, Any]


def _mixins(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        if "properties" in node:
            for part in node.get("allOf", []):
                ref = part.get("$ref", "") if isinstance(part, dict) else ""
                if ref.startswith("#/$defs/"):
                    found.add(ref.removeprefix("#/$defs/"))
        for value in node.values():
            _mixins(value, found)
    elif isinstance(node, list):
        for value in node:
            _mixins(value, found)


def _close(node: Any, is_mixin: bool = False) -> None:
    """Close `node` and what it contains. The alternatives and mix-ins of a node that has its own
    `properties` stay open: that node, closed, sees what they evaluate."""
    if isinstance(node, dict):
        has_properties = "properties" in node
        if (
            has_properties
            and not is_mixin
            and "additionalProperties" not in node
            and "unevaluatedProperties" not in node
        ):
            node["unevaluatedProperties"] = False
        for key, value in node.items():
            if key in ("allOf", "anyOf", "oneOf") and has_properties and isinstance(value, list):
                for branch in value:
                    _close(branch, is_mixin=True)
            elif key == "properties":
                for schema in value.values():
                    _close(schema)
            else:
                _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


def closed_schema() -> Json:
    schema: Json = copy.deepcopy(json.loads(SCHEMA.read_text()))
    mixins: set[str] = set()
    _mixins(schema, mixins)
    for name, definition in schema["$defs"].items():
        _close(definition, is_mixin=name in mixins)
    return schema


# What each agent message must be, by method: the params of its requests and notifications,
# and the result it answers a client's request with.
AGENT_PARAMS = {
    "session/update": "SessionNotification",
    "session/request_permission": "RequestPermissionRequest",
    "fs/read_text_file": "ReadTextFileRequest",
    "fs/write_text_file": "WriteTextFileRequest",
}
AGENT_RESULTS = {
    "initialize": "InitializeResponse",
    "authenticate": "AuthenticateResponse",
    "session/new": "NewSessionResponse",
    "session/load": "LoadSessionResponse",
    "session/list": "ListSessionsResponse",
    "session/resume": "ResumeSessionResponse",
    "session/close": "CloseSessionResponse",
    "session/set_mode": "SetSessionModeResponse",
    "session/set_config_option": "SetSessionConfigOptionResponse",
    "session/prompt": "PromptResponse",
}


class AgentMessages:
    """Validates what the agent sends, given the methods of the client's requests by id."""

    def __init__(self) -> None:
        defs = closed_schema()["$defs"]
        names = {*AGENT_PARAMS.values(), *AGENT_RESULTS.values(), "Error"}
        self._validators = {
            name: jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": defs}) for name in names
        }

    def problems(self, message: Json, client_methods: dict[Any, str]) -> list[str]:
        if message.get("jsonrpc") != "2.0":
            return ['"jsonrpc" is not "2.0"']
        if "method" in message:
            name = AGENT_PARAMS.get(message["method"])
            value, allowed = message.get("params"), {"jsonrpc", "method", "params", "id"}
        elif "error" in message:
            name, value, allowed = "Error", message["error"], {"jsonrpc", "id", "error"}
        else:
            name = AGENT_RESULTS.get(client_methods.get(message.get("id"), ""))
            value, allowed = message.get("result"), {"jsonrpc", "id", "result"}
        if name is None:
            return [f"no schema for {json.dumps(message)[:200]}"]
        extra = [f"unknown member {key!r}" for key in set(message) - allowed]
        return extra + [
            f"{name} {list(error.absolute_path)}: {error.message}"
            for error in self._validators[name].iter_errors(value)
        ]
