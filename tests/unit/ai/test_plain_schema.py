"""Plain schemas are checked without jsonschema (pi_rpc/ai/plain_schema.py), and judged exactly
as jsonschema's 2020-12 validator judges them: a covered schema is one jsonschema accepts, each
value gets the same verdict, and a schema with anything more goes to jsonschema."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.plain_schema import PlainValidator, covers
from pi_rpc.tools.registry import BUILTIN_TOOLS, EXTENSION_TOOLS
from pi_rpc.tools.tool_search import TOOL_SEARCH_PARAMETERS

from .helpers import error_lines, validation_error

_NAMES = ("a", "b", "c")  # few property names, so values and schemas meet on them
_TYPE_NAMES = ("null", "boolean", "number", "integer", "string", "array", "object")

_json: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.sampled_from([0.0, 1.0, 2.5, -1.5, 1e300])
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(_NAMES), inner, max_size=3),
    max_leaves=12,
)


def _type_keyword() -> st.SearchStrategy[str | list[str]]:
    return st.sampled_from(_TYPE_NAMES) | st.lists(st.sampled_from(_TYPE_NAMES), min_size=1, max_size=3, unique=True)


def _extend(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "type": _type_keyword(),
            "properties": st.dictionaries(st.sampled_from(_NAMES), inner, max_size=3),
            "required": st.lists(st.sampled_from(_NAMES), max_size=3, unique=True),
            "items": inner,
            "additionalProperties": inner,
            "description": st.text(max_size=5),
            "title": st.text(max_size=5),
            "default": _json,
            "examples": st.lists(_json, max_size=2),
        },
    )


_schemas: st.SearchStrategy[Any] = st.recursive(st.booleans() | _extend(st.booleans()), _extend, max_leaves=8)


def _judge(schema: Any) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)  # a covered schema is a valid one
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


@settings(max_examples=400)
@given(_schemas, st.lists(_json, min_size=1, max_size=6))
def test_a_covered_schema_judges_every_value_as_jsonschema_does(schema: Any, values: list[Any]) -> None:
    assert covers(schema)
    judge, plain = _judge(schema), PlainValidator(schema)
    for value in values:
        assert plain.is_valid(value) == judge.is_valid(value), (schema, value)


@settings(max_examples=200)
@given(_schemas.filter(lambda s: isinstance(s, dict) and isinstance(s.get("properties"), dict)), _json)
def test_a_subschema_is_judged_as_jsonschema_judges_it(schema: dict[str, Any], value: Any) -> None:
    """The argument walks ask about one property's schema at a time (`evolve`)."""
    judge, plain = _judge(schema), PlainValidator(schema)
    for member in schema["properties"].values():
        assert plain.evolve(schema=member).is_valid(value) == judge.evolve(schema=member).is_valid(value)


# Keywords with a meaning of their own: each sends the schema to jsonschema, wherever it appears.
_OTHER_KEYWORDS: list[tuple[str, Any]] = [
    ("enum", ["x"]),
    ("const", 1),
    ("minimum", 0),
    ("maxLength", 2),
    ("pattern", "^a"),
    ("format", "date-time"),
    ("minItems", 1),
    ("prefixItems", [{"type": "string"}]),
    ("patternProperties", {"^a": {}}),
    ("anyOf", [{"type": "string"}]),
    ("not", {}),
    ("$ref", "#/$defs/x"),
    ("$schema", "http://json-schema.org/draft-07/schema#"),
    ("x-custom", True),
]


@pytest.mark.parametrize(("keyword", "value"), _OTHER_KEYWORDS, ids=[k for k, _ in _OTHER_KEYWORDS])
def test_any_other_keyword_goes_to_jsonschema(keyword: str, value: Any) -> None:
    assert not covers({"type": "object", keyword: value})
    assert not covers({"type": "object", "properties": {"a": {"type": "array", "items": {keyword: value}}}})


# Keyword values the 2020-12 metaschema refuses: jsonschema reports the schema (and the tool's
# arguments then go unchecked, as Pi does), so these are not plain schemas either.
_MALFORMED: list[dict[str, Any]] = [
    {"type": "str"},
    {"type": []},
    {"type": ["string", "string"]},
    {"required": ["a", "a"]},
    {"required": "a"},
    {"properties": {"a": "string"}},
    {"items": [{"type": "string"}]},
    {"description": 5},
    {"examples": "x"},
]


@pytest.mark.parametrize("schema", _MALFORMED, ids=[json.dumps(s) for s in _MALFORMED])
def test_a_schema_the_metaschema_refuses_is_not_covered(schema: dict[str, Any]) -> None:
    assert not covers(schema)
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema(schema)


def test_every_built_in_tools_schema_is_plain() -> None:
    from pi_rpc.ai.validation import json_schema_of

    tools = [create() for _, create in BUILTIN_TOOLS.values()] + [create() for create in EXTENSION_TOOLS.values()]
    for tool in tools:
        assert covers(json_schema_of(tool.parameters)), tool.name
    assert covers(TOOL_SEARCH_PARAMETERS)


def test_a_rejected_call_reads_the_same_either_way() -> None:
    """pi-schema's wording comes from the walk, whichever validator answers it."""
    plain = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    assert covers(plain)
    other = {**plain, "x-custom": True}  # the same check, through jsonschema
    for args in ({"path": ["a"]}, {}, {"path": {"x": 1}}):
        assert error_lines(validation_error("read", plain, args)) == error_lines(validation_error("read", other, args))
    assert error_lines(validation_error("read", plain, {"path": ["a"]})) == ["  - path: expected string, got array"]


# Run in a fresh interpreter: the test process has long imported jsonschema.
_PROBE = """
import json, sys
from pi_rpc.ai.validation import ToolArgumentsError, validate_tool_arguments
from pi_rpc.tools.registry import BUILTIN_TOOLS

def outcome(tool, args):
    try:
        validate_tool_arguments(tool.name, tool.parameters, args)
        return "ok"
    except ToolArgumentsError as exc:
        return str(exc).splitlines()[1]

read = BUILTIN_TOOLS["read"][1]()
bash = BUILTIN_TOOLS["bash"][1]()
edit = BUILTIN_TOOLS["edit"][1]()
seen = [
    outcome(read, {"path": "a.txt", "offset": "3"}),
    outcome(bash, {"command": ["ls"]}),
    outcome(edit, {"path": "a", "edits": [{"oldText": "x"}]}),
]
plain_only = "jsonschema" not in sys.modules
enum = {"type": "object", "properties": {"mode": {"enum": ["fast", "slow"]}}}
try:
    validate_tool_arguments("mcp_tool", enum, {"mode": "medium"})
except ToolArgumentsError as exc:
    seen.append(str(exc).splitlines()[1])
print(json.dumps({"seen": seen, "plain_only": plain_only, "then": "jsonschema" in sys.modules}))
"""


def test_the_built_in_tools_are_checked_without_importing_jsonschema() -> None:
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60)
    report = json.loads(done.stdout)
    assert report == {
        "seen": [
            "ok",  # "3" is converted to 3
            "  - command: expected string, got array",
            "  - edits.0.newText: missing",
            '  - mode: expected one of ["fast","slow"]',
        ],
        "plain_only": True,
        "then": True,  # an enum is jsonschema's to check
    }
