"""The tool-argument cases checked against Pi 1.6.0's own validation (pi-ai's validateToolArguments).

`python -m tests.unit.ai.pi_schema_cases > cases.json` writes the cases (schemas and arguments);
`fixtures/record_pi_schema.mjs` runs each through the installed Pi 1.6.0 and writes
`fixtures/pi_schema_validation.json`, which tests/unit/ai/test_pi_schema_parity.py reads. The
schemas are the built-in tools' own (as pi-rpc sends them) and plain JSON schemas of the kinds MCP
servers send; the arguments are hand-picked wrong inputs plus seeded random ones.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from pi_rpc.ai.validation import json_schema_of
from pi_rpc.tools import BUILTIN_TOOLS

# Plain JSON schemas as MCP servers and clients send them (no msgspec Struct behind them).
PLAIN_SCHEMAS: dict[str, dict[str, Any]] = {
    "mcp_search": {
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            "mode": {"type": "string", "enum": ["fast", "deep"]},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
            "strict": {"type": "boolean"},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    "mcp_refs": {
        "$defs": {
            "point": {
                "type": "object",
                "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                "required": ["x", "y"],
            }
        },
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/point"}, "path": {"type": "array", "items": {"$ref": "#/$defs/point"}}},
        "required": ["at"],
    },
    "mcp_union": {
        "type": "object",
        "properties": {
            "action": {
                "anyOf": [
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "copy"}, "to": {"type": "string"}},
                        "required": ["kind", "to"],
                    },
                    {
                        "type": "object",
                        "properties": {"kind": {"const": "delete"}, "force": {"type": "boolean"}},
                        "required": ["kind"],
                    },
                ]
            },
            "target": {
                "anyOf": [{"type": "string", "pattern": "^[a-z]+$"}, {"type": "integer", "exclusiveMinimum": 0}]
            },
            "email": {"type": "string", "format": "email"},
        },
        "required": ["action"],
    },
    "mcp_dangling": {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/missing"}, "b": {"type": "string"}},
        "required": ["b"],
    },
    "mcp_nullable": {
        "type": "object",
        "properties": {
            "name": {"type": ["string", "null"]},
            "count": {"type": ["integer", "null"], "multipleOf": 2},
            "opt": {"type": "string"},
        },
        "required": ["name"],
    },
}

# One required property per JSON type (and type lists): how each raw value converts or fails.
_TYPES: dict[str, Any] = {
    "number": "number",
    "integer": "integer",
    "string": "string",
    "boolean": "boolean",
    "null": "null",
    "object": "object",
    "array": "array",
    "number_or_string": ["number", "string"],
    "boolean_or_number": ["boolean", "number"],
    "null_or_string": ["null", "string"],
}
PLAIN_SCHEMAS |= {
    f"type_{name}": {"type": "object", "properties": {"v": {"type": t}}, "required": ["v"]}
    for name, t in _TYPES.items()
}
_RAW_SCALARS: list[Any] = [
    "12",
    " 12 ",
    "1e3",
    "2.5",
    "",
    "  ",
    "Infinity",
    "NaN",
    "abc",
    "1_000",
    "-0x10",
    "0x10",
    "42.1",
    3.5,
    None,
    True,
    False,
    0,
    1,
    2,
    "true",
    "false",
    "TRUE",
    "1",
    "0",
    "yes",
    "null",
    "undefined",
    [1],
    ["x"],
    {"a": 1},
    "x",
]

_HAND_PICKED: list[tuple[str, Any]] = [
    ("read", {"path": ["a"]}),
    ("read", {}),
    ("read", []),
    ("read", {"path": "a", "offset": "ten"}),
    ("read", {"path": "a", "offset": "10", "limit": "0"}),
    ("read", {"path": None}),
    ("read", {"path": 12, "limit": None}),
    ("edit", {"path": "a"}),
    ("edit", {"path": "a", "edits": [{"oldText": "x"}, {"oldText": 1, "newText": "y"}]}),
    ("edit", {"path": "a", "edits": {"oldText": "x", "newText": "y"}}),
    ("edit", {"path": "a", "edits": "x"}),
    ("bash", {"command": ["ls"]}),
    ("bash", {"command": "ls", "timeout": "x"}),
    ("bash", {"command": "ls", "timeout": True}),
    ("grep", {"pattern": 1, "ignoreCase": "yes"}),
    ("grep", {"pattern": "x", "context": "2", "limit": 2.5}),
    ("find", {}),
    ("ls", {"limit": "many"}),
    ("write", {"path": "a", "content": {"x": 1}}),
    ("mcp_search", {}),
    ("mcp_search", {"query": "", "limit": 0, "mode": "slow", "tags": ["a", 1, "b", "c"], "extra": 1}),
    ("mcp_search", {"query": 5, "limit": "7", "strict": "true", "tags": "one"}),
    ("mcp_search", {"query": None, "limit": 3.5}),
    ("mcp_refs", {"at": {"x": 1}}),
    ("mcp_refs", {"at": {"x": "1", "y": "two"}, "path": [{"x": 1, "y": 2}, {"y": 1}]}),
    ("mcp_refs", {"at": []}),
    ("mcp_union", {"action": {"kind": "move"}}),
    ("mcp_union", {"action": {"kind": "copy", "to": []}}),
    ("mcp_union", {"action": {"to": "x"}, "target": "ABC"}),
    ("mcp_union", {"action": {"kind": "delete", "force": "maybe"}, "target": -1, "email": "nope"}),
    ("mcp_dangling", {"b": "x"}),
    ("mcp_dangling", {"a": 1, "b": "x"}),
    ("mcp_dangling", {"a": 1}),
    ("mcp_nullable", {"name": 3, "count": 3}),
    ("mcp_nullable", {"name": None, "count": None, "opt": None}),
    ("mcp_nullable", {"count": "4"}),
]

_WRONG_VALUES: list[Any] = [None, True, False, 0, -1, 1.5, "", "x", "12", "true", [], ["x"], [1, 2], {}, {"a": 1}]


def _mutations(rng: random.Random, schema: dict[str, Any], count: int) -> list[Any]:
    """Argument objects with random properties replaced, dropped or added."""
    props = list(schema.get("properties", {}))
    cases: list[Any] = []
    for _ in range(count):
        args: dict[str, Any] = {name: rng.choice(_WRONG_VALUES) for name in props if rng.random() < 0.6}
        if rng.random() < 0.2:
            args["unexpected"] = rng.choice(_WRONG_VALUES)
        cases.append(args)
    return cases


def cases(seed: int = 16) -> dict[str, Any]:
    """`schemas` by tool name (the plain ones listed in `plain`) and `cases`: a tool name and arguments."""
    schemas = {name: json_schema_of(create().parameters) for name, (_, create) in BUILTIN_TOOLS.items()}
    schemas |= PLAIN_SCHEMAS
    out = [{"name": name, "args": args} for name, args in _HAND_PICKED]
    out += [{"name": f"type_{name}", "args": {"v": raw}} for name in _TYPES for raw in _RAW_SCALARS]
    rng = random.Random(seed)
    for name, schema in schemas.items():
        if name.startswith("type_"):
            continue
        out += [{"name": name, "args": args} for args in _mutations(rng, schema, 25)]
    return {"plain": sorted(PLAIN_SCHEMAS), "schemas": schemas, "cases": out}


if __name__ == "__main__":
    json.dump(cases(), sys.stdout, indent=1)
