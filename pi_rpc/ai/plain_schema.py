"""Checking a value against a plain schema without jsonschema.

Every built-in tool's parameters, and most MCP servers', are objects of typed properties: the
keywords `type`, `properties`, `required`, `items` and `additionalProperties`, with descriptions.
jsonschema would check those too, but importing it costs a daemon 2-3 MB of memory for as long as
it lives, and a tool call that comes before the warm-up about 0.1 s. A schema made of these
keywords alone is checked here, with JSON Schema 2020-12's meaning (jsonschema's default draft);
any other keyword, a `$schema`, or a keyword whose value the metaschema would refuse sends the
schema to jsonschema instead, so a covered schema is one jsonschema accepts and judges the same
way (tests/unit/ai/test_plain_schema.py compares the two).
"""

from __future__ import annotations

from typing import Any, Protocol

from pi_rpc.ai.js_values import matches_type

_TYPES = frozenset(("null", "boolean", "number", "integer", "string", "array", "object"))
_MAX_DEPTH = 64  # deeper schemas go to jsonschema; a walk of a covered one then cannot run away


class SubschemaCheck(Protocol):
    """What tool-argument validation asks of a compiled schema (jsonschema's validators have it):
    does it accept a value, and the same check for one of its subschemas."""

    def is_valid(self, instance: Any) -> bool: ...

    def evolve(self, *, schema: Any) -> SubschemaCheck: ...


class PlainValidator:
    """A compiled plain schema (`covers` said yes)."""

    __slots__ = ("schema",)

    def __init__(self, schema: Any) -> None:
        self.schema = schema

    def is_valid(self, instance: Any) -> bool:
        return _accepts(self.schema, instance)

    def evolve(self, *, schema: Any) -> PlainValidator:
        return PlainValidator(schema)


def covers(schema: Any, depth: int = 0) -> bool:
    """Whether `schema` uses only what `PlainValidator` checks, each keyword well formed."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return False
    for keyword, value in schema.items():
        match keyword:
            case "type":
                names = [value] if isinstance(value, str) else value
                if not (isinstance(names, list) and names and _unique_strings(names) and _TYPES.issuperset(names)):
                    return False
            case "properties":
                if not (isinstance(value, dict) and all(covers(member, depth + 1) for member in value.values())):
                    return False
            case "required":
                if not (isinstance(value, list) and _unique_strings(value)):
                    return False
            case "items" | "additionalProperties":
                if not covers(value, depth + 1):
                    return False
            case "description" | "title":
                if not isinstance(value, str):
                    return False
            case "examples":
                if not isinstance(value, list):
                    return False
            case "default":
                pass
            case _:
                return False
    return True


def _unique_strings(values: list[Any]) -> bool:
    return all(isinstance(value, str) for value in values) and len(set(values)) == len(values)


def _accepts(node: Any, value: Any) -> bool:
    if isinstance(node, bool):
        return node
    types = node.get("type")
    if isinstance(types, str):
        if not matches_type(value, types):
            return False
    elif types is not None and not any(matches_type(value, name) for name in types):
        return False
    if isinstance(value, dict):
        if any(name not in value for name in node.get("required", ())):
            return False
        properties: dict[str, Any] = node.get("properties", {})
        others = node.get("additionalProperties", True)
        for key, member in value.items():
            if key in properties:
                if not _accepts(properties[key], member):
                    return False
            elif others is not True and not _accepts(others, member):
                return False
    elif isinstance(value, list):
        items = node.get("items", True)
        if items is not True and not all(_accepts(items, member) for member in value):
            return False
    return True
