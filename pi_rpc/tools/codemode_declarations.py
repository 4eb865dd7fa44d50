"""How a codemode script sees a tool: a TypeScript declaration of `tools.<name>(args)` rendered
from its JSON Schema, as Pi 1.6.0's codemode renders it (objects with their properties sorted by
name, one line unless a property has a description or a constraint, which become `//` comments),
so the listing a model reads matches Pi's. A tool without an output schema resolves to a string.
"""

from __future__ import annotations

import json
import re
from typing import Any

INDENT = "  "
IDENTIFIER = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*$")
MAX_REF_EXPANSIONS = 32
LINES = re.compile(r"\r\n|\r|\n|\u2028|\u2029")


def script_identifier(name: str) -> str:
    """A tool name as scripts write it: characters not valid in a JavaScript identifier become `_`."""
    ident = "".join(
        char if re.match(r"[A-Za-z_$]" if index == 0 else r"[A-Za-z0-9_$]", char) else "_"
        for index, char in enumerate(name)
    )
    return ident or "_"


def tool_sample(name: str, description: str, parameters: dict[str, Any], output: dict[str, Any] | None = None) -> str:
    """The description and the `declare const tools: { … }` block (Pi's renderToolSample)."""
    resolves = "string" if output is None else schema_to_type(output)
    signature = f"{script_identifier(name)}(args: {schema_to_type(parameters)}): Promise<{resolves}>;"
    declaration = f"declare const tools: {{ {signature} }};"
    return f"{description.strip()}\n\ncodemode tool declaration:\n```ts\n{declaration}\n```"


def schema_to_type(schema: Any) -> str:
    return _type(schema, schema, set(), [0])


def _union(types: list[str]) -> str:
    unique = list(dict.fromkeys(types))
    if "unknown" in unique:
        return "unknown"
    return " | ".join(unique) if unique else "never"


def _resolve(ref: str, root: Any) -> Any:
    if ref != "#" and not ref.startswith("#/"):
        return None
    current = root
    for segment in filter(None, ref[2:].split("/")):
        key = segment.replace("~1", "/").replace("~0", "~")
        if not isinstance(current, dict) or key not in current:
            return None
        current = current[key]
    return current if isinstance(current, dict | bool) else None


def _type(schema: Any, root: Any, resolving: set[str], expansions: list[int]) -> str:
    if schema is True:
        return "unknown"
    if schema is False:
        return "never"
    if not isinstance(schema, dict):
        return "unknown"
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = _resolve(ref, root)
        if ref in resolving or expansions[0] >= MAX_REF_EXPANSIONS or target is None:
            return "unknown"
        expansions[0] += 1
        resolving.add(ref)
        try:
            return _type(target, root, resolving, expansions)
        finally:
            resolving.discard(ref)
    if "const" in schema:
        return json.dumps(schema["const"])
    if isinstance(schema.get("enum"), list):
        return _union([json.dumps(value) for value in schema["enum"]])
    variants = schema.get("anyOf") if isinstance(schema.get("anyOf"), list) else schema.get("oneOf")
    if isinstance(variants, list):
        return _union([_type(variant, root, resolving, expansions) for variant in variants])
    kind = schema.get("type")
    if isinstance(kind, list):
        return _union([_type({**schema, "type": entry}, root, resolving, expansions) for entry in kind])
    simple = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean", "null": "null"}
    if kind in simple:
        return simple[kind]
    if kind == "array" or (kind is None and "items" in schema):
        items = schema.get("items")
        return f"Array<{_type(items, root, resolving, expansions)}>" if isinstance(items, dict) else "unknown[]"
    if kind == "object" or (kind is None and ("properties" in schema or "required" in schema)):
        return _object(schema, root, resolving, expansions)
    return "unknown"


def _tags(prop: Any) -> str:
    if not isinstance(prop, dict):
        return ""
    tags = ["@integer"] if prop.get("type") == "integer" else []
    for keyword in ("minimum", "maximum", "minLength", "maxLength", "pattern", "format"):
        value = prop.get(keyword)
        if isinstance(value, int | float | str) and not isinstance(value, bool):
            tags.append(f"@{keyword} {value}")
    if prop.get("default") is not None:
        tags.append(f"@default {json.dumps(prop['default'])}")
    return " ".join(tags)


def _object(schema: dict[str, Any], root: Any, resolving: set[str], expansions: list[int]) -> str:
    properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
    assert isinstance(properties, dict)
    required = set(schema.get("required") or [])
    names = sorted(properties)
    members = [
        f"{name if IDENTIFIER.match(name) else json.dumps(name)}{'' if name in required else '?'}: "
        f"{_type(properties[name], root, resolving, expansions)};"
        for name in names
    ]
    additional = schema.get("additionalProperties")
    if additional is not None and additional is not False:
        members.append(
            f"[key: string]: {'unknown' if additional is True else _type(additional, root, resolving, expansions)};"
        )
    elif additional is None and not names:
        members.append("[key: string]: unknown;")
    comments = []
    for name in names:
        prop = properties[name]
        description = prop.get("description", "") if isinstance(prop, dict) else ""
        lines = [line.strip() for line in LINES.split(description.strip() if isinstance(description, str) else "")]
        lines = [line for line in lines if line]
        tags = _tags(prop)
        comments.append([*lines, tags] if tags else lines)
    if not any(comments):
        return f"{{ {' '.join(members)} }}"
    out = ["{"]
    for comment, member in zip(comments, members, strict=False):
        out += [f"{INDENT}// {line}" for line in comment]
        out.append(INDENT + member.replace("\n", "\n" + INDENT))
    out += [INDENT + member for member in members[len(names) :]]
    out.append("}")
    return "\n".join(out)


def describe_output(name: str, schema: dict[str, Any] | None) -> str:
    """What a call resolves to, in the words Pi appends to a declared tool's description: `a
    string`, the field names of an object, or the type when it fits on one line."""
    if schema is None:
        return "a string"
    rendered = schema_to_type(schema)
    if rendered == "string":
        return "a string"
    fields = _fields(schema, 1) or _union_fields(schema)
    if fields:
        return f"`{fields}`"
    if "\n" not in rendered:
        return f"`{rendered}`"
    return f"a value; `await describeTool({json.dumps(name)})` shows its type"


def _fields(schema: Any, depth: int) -> str | None:
    if not isinstance(schema, dict) or schema.get("type") != "object" or not isinstance(schema.get("properties"), dict):
        return None
    required = set(schema.get("required") or [])
    parts = []
    for name, field in schema["properties"].items():
        nested = (
            json.dumps(field["const"])
            if isinstance(field, dict) and "const" in field
            else (_fields(field, depth - 1) if depth > 0 else None)
        )
        parts.append(f"{name}{'' if name in required else '?'}{f': {nested}' if nested else ''}")
    return f"{{ {', '.join(parts)} }}"


def _union_fields(schema: dict[str, Any]) -> str | None:
    variants = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(variants, list) or not variants:
        return None
    described = [_fields(variant, 0) for variant in variants]
    return " | ".join(d for d in described if d) if all(described) else None
