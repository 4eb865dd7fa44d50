"""The walks of tool-argument validation: optional-null removal (spec 3.3.2), TypeBox
conversion for builder schemas (3.4) and AJV-style coercion for every schema (3.5).

Each walk follows one JSON Schema alongside a value the validator owns (a clone of the model's
arguments) and may rewrite it in place; the schema's own local `$ref`s are followed.
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the validator is compiled on the first tool call (pi_rpc/ai/validation.py)
    from pi_rpc.ai.plain_schema import SubschemaCheck

from pi_rpc.ai.js_values import (
    JS_SPACE,
    as_number,
    is_number,
    js_string,
    js_to_number,
    json_equal,
    matches_type,
)

Schema = dict[str, Any]
# Marks where a plain schema's `$ref` named nothing (schema_errors.reject_unresolved_refs): that
# place rejects every value, and counts as a `$ref` still (its optional null is kept).
UNRESOLVED_REF = "x-pi-rpc-unresolved-ref"
_MAX_DEPTH = 200  # guards walks over self-referencing `$ref`s that consume no data


# --- the three walks (3.3.2, 3.4, 3.5) ----------------------------------------------------------


class SchemaWalker:
    """Walks one schema alongside a value it owns, resolving the schema's own `$ref`s."""

    def __init__(self, root: Schema, validator: SubschemaCheck) -> None:
        self.root = root
        self.validator = validator

    def resolve(self, node: Any, depth: int) -> Any:
        while isinstance(node, dict) and isinstance(node.get("$ref"), str) and depth < _MAX_DEPTH:
            target = self._pointer(node["$ref"])
            if target is None:
                return node
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            node = {**target, **siblings} if siblings and isinstance(target, dict) else target
            depth += 1
        return node

    def _pointer(self, ref: str) -> Any:
        return resolve_local_ref(self.root, ref)

    def is_valid(self, node: Any, value: Any) -> bool:
        return bool(self.validator.evolve(schema=node).is_valid(value))

    # 3.3.2 -----------------------------------------------------------------------------------

    def drop_optional_nulls(self, node: Any, value: Any, depth: int) -> Any:
        node = self.resolve(node, depth)
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return value
        for member in node.get("allOf", ()):
            self.drop_optional_nulls(member, value, depth + 1)
        for key in ("anyOf", "oneOf"):
            if key in node:
                member = self._selected_member(node[key], value, depth)
                if member is not None:
                    self.drop_optional_nulls(member, value, depth + 1)
        if isinstance(value, dict) and isinstance(node.get("properties"), dict):
            required = set(node.get("required", ()))
            for name, prop in node["properties"].items():
                if name not in value:
                    continue
                if value[name] is not None:
                    self.drop_optional_nulls(prop, value[name], depth + 1)
                elif name not in required and not _has_ref(prop) and not self._accepts_null(prop, depth):
                    del value[name]
        elif isinstance(value, list):
            for item, item_schema in zip(value, self._item_schemas(node, len(value)), strict=True):
                self.drop_optional_nulls(item_schema, item, depth + 1)
        return value

    def _accepts_null(self, node: Any, depth: int) -> bool:
        node = self.resolve(node, depth)
        if node is True or node == {}:
            return True
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return False
        if node.get("nullable") is True:  # OpenAPI-style schemas from MCP servers
            return True
        types = node.get("type")
        if types is not None:
            return types == "null" or (isinstance(types, list) and "null" in types)
        if "const" in node:
            return node["const"] is None
        if "enum" in node:
            return None in node["enum"]
        members = [*node.get("anyOf", ()), *node.get("oneOf", ())]
        if members:
            return any(self._accepts_null(m, depth + 1) for m in members)
        return not any(key in node for key in ("allOf", "not", "$ref"))

    def _selected_member(self, members: list[Any], value: Any, depth: int) -> Any:
        """The union member a container value is meant for: its type fits, its tag constants match."""
        if not isinstance(value, dict | list):
            return None
        kind = "object" if isinstance(value, dict) else "array"
        for member in members:
            m = self.resolve(member, depth)
            if not isinstance(m, dict):
                continue
            types = m.get("type")
            if types is not None and kind not in (types if isinstance(types, list) else [types]):
                continue
            if isinstance(value, dict) and not self._tags_match(m, value, depth):
                continue
            return m
        return None

    def _tags_match(self, member: Schema, value: dict[str, Any], depth: int) -> bool:
        for name, prop in member.get("properties", {}).items():
            prop = self.resolve(prop, depth)
            if not isinstance(prop, dict):
                continue
            allowed = [prop["const"]] if "const" in prop else prop.get("enum")
            if allowed is not None and len(allowed) == 1 and name in value:
                if not json_equal(value[name], allowed[0]):
                    return False
        return True

    def _item_schemas(self, node: Schema, count: int) -> Iterable[Any]:
        prefix = node.get("prefixItems") or []
        rest = node.get("items", True)
        for index in range(count):
            yield prefix[index] if index < len(prefix) else rest

    def _property_schema(self, node: Schema, name: str) -> Any:
        props = node.get("properties") or {}
        if name in props:
            return props[name]
        for pattern, sub in (node.get("patternProperties") or {}).items():
            if re.search(pattern, name):
                return sub
        extra = node.get("additionalProperties")
        return extra if isinstance(extra, dict) else None

    # 3.4 TypeBox conversion (builder schemas) ----------------------------------------------------

    def convert(self, node: Any, value: Any, depth: int) -> Any:
        """pi-schema's pass 2: the first of `const`, `enum`, `anyOf`, `oneOf`, `allOf`, `type` decides."""
        node = self.resolve(node, depth)
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return value
        if "const" in node:
            return _convert_literal([node["const"]], value)
        if isinstance(node.get("enum"), list):
            return _convert_literal(node["enum"], value)
        for key in ("anyOf", "oneOf"):
            if isinstance(node.get(key), list):
                return self._convert_union(node, node[key], value, depth)
        if isinstance(node.get("allOf"), list):
            for member in node["allOf"]:
                value = self.convert(member, value, depth + 1)
            return self._convert_members(node, value, depth)
        types = node.get("type")
        if types == "object" or (types is None and ("properties" in node or "patternProperties" in node)):
            return self._convert_members(node, value, depth)
        if types == "array" or (types is None and ("items" in node or "prefixItems" in node)):
            return self._convert_array(node, value, depth)
        if isinstance(types, str):  # a type list is left to pass 3
            return _TYPEBOX_SCALAR.get(types, _unchanged)(value)
        return value

    def _convert_union(self, node: Schema, members: list[Any], value: Any, depth: int) -> Any:
        """A value a member accepts stays; else the first member's conversion the whole node accepts.
        Properties the union node itself declares convert into each candidate before the check."""
        if any(self.is_valid(member, value) for member in members):
            return self._convert_members(node, value, depth)
        for member in members:
            candidate = self._convert_members(node, self.convert(member, copy.deepcopy(value), depth + 1), depth)
            if self.is_valid(node, candidate):
                return candidate
        return self._convert_members(node, value, depth)

    def _convert_members(self, node: Schema, value: Any, depth: int) -> Any:
        if not isinstance(value, dict):
            return value
        props = node.get("properties") if isinstance(node.get("properties"), dict) else {}
        patterns = node.get("patternProperties") if isinstance(node.get("patternProperties"), dict) else {}
        extra = node.get("additionalProperties")
        assert isinstance(props, dict) and isinstance(patterns, dict)
        for name in list(value):
            matched = name in props
            if matched:
                value[name] = self.convert(props[name], value[name], depth + 1)
            for pattern, sub in patterns.items():
                if re.search(pattern, name):
                    matched = True
                    value[name] = self.convert(sub, value[name], depth + 1)
            if not matched and isinstance(extra, dict):
                value[name] = self.convert(extra, value[name], depth + 1)
        return value

    def _convert_array(self, node: Schema, value: Any, depth: int) -> Any:
        prefix = node.get("prefixItems") if isinstance(node.get("prefixItems"), list) else None
        if isinstance(node.get("items"), list):  # draft 7's tuple form
            prefix = node["items"]
        if prefix is not None:  # a tuple converts its items and never wraps a single value
            if not isinstance(value, list):
                return value
            rest = None if isinstance(node.get("items"), list) else node.get("items")
            schemas = [prefix[i] if i < len(prefix) else rest for i in range(len(value))]
            return [
                item if s is None else self.convert(s, item, depth + 1) for item, s in zip(value, schemas, strict=True)
            ]
        if "items" not in node:
            return value if isinstance(value, list) else [value]
        items = value if isinstance(value, list) else [value]
        return [self.convert(node["items"], item, depth + 1) for item in items]

    def _first_fit(self, members: list[Any], value: Any, step: Callable[[Any, Any], Any]) -> Any:
        """Union rule (3.4 and 3.5): keep a value some member accepts, else the first fitting try."""
        if any(self.is_valid(member, value) for member in members):
            return value
        for member in members:
            candidate = step(member, copy.deepcopy(value))
            if self.is_valid(member, candidate):
                return candidate
        return value

    # 3.5 AJV-style coercion (every schema) -------------------------------------------------------

    def coerce(self, node: Any, value: Any, depth: int) -> Any:
        node = self.resolve(node, depth)
        if not isinstance(node, dict) or depth > _MAX_DEPTH:
            return value
        for member in node.get("allOf", ()):
            value = self.coerce(member, value, depth + 1)
        for key in ("anyOf", "oneOf"):
            if key in node:
                value = self._first_fit(node[key], value, lambda m, v: self.coerce(m, v, depth + 1))
        if "type" in node:
            value = _ajv_coerce(node["type"], value)
        if isinstance(value, dict):
            for name in list(value):
                sub = self._property_schema(node, name)
                if sub is not None:
                    value[name] = self.coerce(sub, value[name], depth + 1)
        elif isinstance(value, list):
            schemas = self._item_schemas(node, len(value))
            value[:] = [self.coerce(s, item, depth + 1) for item, s in zip(value, schemas, strict=True)]
        return value


def resolve_local_ref(root: Any, ref: str) -> Any:
    """What a local `$ref` (`#/$defs/x`) points at in `root`; None when it names nothing (or is
    not local)."""
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in filter(None, ref[1:].split("/")):
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


def _has_ref(node: Any) -> bool:
    return isinstance(node, dict) and ("$ref" in node or UNRESOLVED_REF in node)


def _unchanged(value: Any) -> Any:
    return value


# --- 3.4 scalar conversions -------------------------------------------------------------------


def _tb_number(value: Any) -> Any:
    if is_number(value):
        return value
    if isinstance(value, bool):
        return int(value)
    if value is None:
        return 0
    if isinstance(value, str):
        if value.lower() in ("true", "false"):
            return int(value.lower() == "true")
        number = js_to_number(value)
        return as_number(number) if math.isfinite(number) else value
    return value


def _tb_integer(value: Any) -> Any:
    number = _tb_number(value)
    if is_number(number) and math.isfinite(number):
        return int(math.trunc(number))
    return number


def _tb_string(value: Any) -> Any:
    if isinstance(value, bool) or is_number(value) or value is None:
        return js_string(value)
    return value


def _tb_boolean(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0"):
        return value.lower() in ("true", "1")
    if is_number(value) and value in (0, 1):
        return value == 1
    if value is None:
        return False
    return value


def _tb_null(value: Any) -> Any:
    if isinstance(value, str) and value.lower() in ("null", "undefined", "", "0"):
        return None
    if value is False or (is_number(value) and value == 0):
        return None
    return value


_TYPEBOX_SCALAR: dict[str, Callable[[Any], Any]] = {
    "number": _tb_number,
    "integer": _tb_integer,
    "string": _tb_string,
    "boolean": _tb_boolean,
    "null": _tb_null,
}


def _convert_literal(allowed: list[Any], value: Any) -> Any:
    """A literal converts only toward its own type, and only when that yields the literal itself."""
    if any(json_equal(value, literal) for literal in allowed):
        return value
    for literal in allowed:
        kind = _literal_type(literal)
        if kind is None:
            continue
        converted = _TYPEBOX_SCALAR[kind](value)
        if json_equal(converted, literal):
            return literal
    return value


def _literal_type(literal: Any) -> str | None:
    if literal is None:
        return "null"
    if isinstance(literal, bool):
        return "boolean"
    if is_number(literal):
        return "number"
    return "string" if isinstance(literal, str) else None


# --- 3.5 scalar coercions ---------------------------------------------------------------------


def _ajv_coerce(types: Any, value: Any) -> Any:
    listed = types if isinstance(types, list) else [types]
    if any(matches_type(value, t) for t in listed if isinstance(t, str)):
        return value
    for type_name in listed:
        coerced = _ajv_one(type_name, value)
        if coerced is not _NO_CHANGE:
            return coerced
    return value


_NO_CHANGE = object()


def _ajv_one(type_name: str, value: Any) -> Any:
    match type_name:
        case "number" | "integer":
            if value is None:
                return 0
            if isinstance(value, bool):
                return int(value)
            if isinstance(value, str) and value.strip(JS_SPACE):
                number = js_to_number(value)
                if math.isfinite(number) and (type_name == "number" or number.is_integer()):
                    return as_number(number)
        case "boolean":
            if value is None:
                return False
            if value in ("true", "false"):
                return value == "true"
            if is_number(value) and value in (0, 1):
                return value == 1
        case "string":
            if value is None:
                return ""
            if isinstance(value, bool) or is_number(value):
                return js_string(value)
        case "null":
            if value == "" or value is False or (is_number(value) and value == 0):
                return None
    return _NO_CHANGE
