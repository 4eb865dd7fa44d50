"""Constrained sampling: strict JSON schemas and grammar tools (spec 4.3, 4.4, 4.5)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_rpc.ai.strict_schema import (
    ConstrainedSamplingError,
    GrammarTool,
    StrictSchemaError,
    grammar_input_properties,
    make_strict_json_schema,
    resolve_grammar_sampling,
    resolve_json_schema_strict,
    schema_allows_null,
    tool_parameters,
)
from pi_rpc.ai.types import GrammarSampling, GrammarVariants, JsonSchemaSampling, Tool

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "description": "Path to the file to read"},
        "offset": {"type": "integer", "minimum": 1},
        "limit": {"type": "integer"},
    },
    "required": ["path"],
}


def _tool(parameters: dict[str, Any], strict: str | None = "prefer", name: str = "read") -> Tool:
    tool = Tool(name=name, description="d", parameters=parameters)
    if strict is not None:
        tool.constrained_sampling = JsonSchemaSampling(strict=strict)  # type: ignore[arg-type]
    return tool


# --- 4.4 makeStrictJsonSchema -------------------------------------------------------------------


def test_optional_properties_become_nullable_and_required() -> None:
    """spec 4.4: optional -> anyOf [schema, null]; required = all names; additionalProperties false."""
    strict = make_strict_json_schema(READ_SCHEMA)
    assert strict == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Path to the file to read"},
            "offset": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]},
            "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        },
        "required": ["path", "offset", "limit"],
        "additionalProperties": False,
    }


def test_input_schema_is_not_modified() -> None:
    """spec 4.4: the rewrite works on a deep copy."""
    original = copy.deepcopy(READ_SCHEMA)
    make_strict_json_schema(READ_SCHEMA)
    assert READ_SCHEMA == original


def test_nested_objects_and_array_items_are_made_strict() -> None:
    """spec 4.4: every object node, including array items (the edit tool's `edits`)."""
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string"},
            "edits": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "oldText": {"type": "string"},
                        "newText": {"type": "string"},
                        "note": {"type": "string"},
                    },
                    "required": ["oldText", "newText"],
                },
            },
        },
        "required": ["path", "edits"],
    }
    items = make_strict_json_schema(schema)["properties"]["edits"]["items"]
    assert items["required"] == ["oldText", "newText", "note"]
    assert items["additionalProperties"] is False
    assert items["properties"]["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}


def test_optional_property_that_already_accepts_null_is_left_alone() -> None:
    """spec 4.4: only properties whose schema does not already allow null are wrapped."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"]},
            "b": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "c": {"enum": ["x", None]},
            "d": {"const": None},
        },
    }
    strict = make_strict_json_schema(schema)
    assert strict["properties"] == schema["properties"]
    assert strict["required"] == ["a", "b", "c", "d"]


def test_object_without_properties_gets_empty_required() -> None:
    """spec 4.4: an object node gets required = [] and additionalProperties false."""
    assert make_strict_json_schema({"type": "object"}) == {
        "type": "object",
        "required": [],
        "additionalProperties": False,
    }


@pytest.mark.parametrize(
    ("schema", "reason"),
    [
        ({"type": "string"}, "root schema must have type object"),
        (True, "root schema must have type object"),
        ({"type": "object", "properties": {"a": True}}, "boolean schemas are unsupported"),
        ({"type": "object", "$defs": {}}, "$defs schemas are unsupported"),
        ({"type": "object", "properties": {"a": {"$ref": "#/x"}}}, "$ref schemas are unsupported"),
        (
            {"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}},
            "oneOf schemas are unsupported",
        ),
        ({"type": "object", "properties": {"a": {"allOf": []}}}, "allOf schemas are unsupported"),
        ({"type": "object", "patternProperties": {}}, "patternProperties schemas are unsupported"),
        (
            {"type": "object", "properties": {"a": {"type": "string", "not": {}}}},
            "not schemas are unsupported",
        ),
        ({"type": "object", "properties": {"a": {"if": {}}}}, "if schemas are unsupported"),
        (
            {"type": "object", "properties": {"a": {"type": "array", "prefixItems": []}}},
            "prefixItems schemas are unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}},
            "tuple schemas are unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "object"}, {"type": "string"}]}}},
            "object and array unions are unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"anyOf": [{"type": "array"}]}}},
            "object and array unions are unsupported",
        ),
        ({"type": "object", "properties": {"a": {"anyOf": []}}}, "anyOf must contain at least one schema"),
        ({"properties": {"a": {"type": "string"}}}, "properties require type object"),
        (
            {"type": "object", "additionalProperties": True},
            "schema-valued or true additionalProperties is unsupported",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            "schema-valued or true additionalProperties is unsupported",
        ),
        (
            {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
            "required contains an unknown property",
        ),
    ],
)
def test_unsupported_schemas_are_rejected_with_a_reason(schema: Any, reason: str) -> None:
    """spec 4.4: the rejected keywords and shapes, each with its reason."""
    with pytest.raises(StrictSchemaError) as caught:
        make_strict_json_schema(schema)
    assert caught.value.reason == reason


def test_additional_properties_false_is_accepted() -> None:
    """spec 4.4: `additionalProperties: false` is the one allowed value."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": False}
    assert make_strict_json_schema(schema)["additionalProperties"] is False


def test_scalar_any_of_members_are_accepted() -> None:
    """spec 4.4: anyOf over scalars (e.g. number | string) is fine."""
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "number"}, {"type": "string"}]}},
        "required": ["v"],
    }
    assert make_strict_json_schema(schema)["properties"]["v"] == schema["properties"]["v"]


def test_schema_allows_null() -> None:
    """spec 4.4: what counts as already accepting null."""
    assert schema_allows_null({"type": "null"})
    assert schema_allows_null({"anyOf": [{"type": "integer"}, {"anyOf": [{"type": "null"}]}]})
    assert not schema_allows_null({"type": "string"})
    assert not schema_allows_null(True)


_leaf = st.sampled_from([{"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "number"}])


def _objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    props = st.dictionaries(st.text("abcdefgh", min_size=1, max_size=4), children, max_size=4)
    return props.flatmap(
        lambda p: st.lists(st.sampled_from(sorted(p)) if p else st.nothing(), unique=True).map(
            lambda req: {"type": "object", "properties": p, "required": req}
        )
    )


_schemas = st.recursive(
    _leaf, lambda inner: _objects(inner) | inner.map(lambda s: {"type": "array", "items": s}), max_leaves=12
)


def _object_nodes(node: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    if isinstance(node, dict):
        if node.get("type") == "object":
            found.append(node)
        for value in node.get("properties", {}).values():
            found += _object_nodes(value)
        if "items" in node:
            found += _object_nodes(node["items"])
        for variant in node.get("anyOf", []):
            found += _object_nodes(variant)
    return found


@given(_objects(_schemas))
def test_every_object_node_ends_fully_required_and_closed(schema: dict[str, Any]) -> None:
    """spec 4.4 (property): every object node lists all properties as required and is closed; the
    originally-optional ones accept null; the input is untouched."""
    before = copy.deepcopy(schema)
    strict = make_strict_json_schema(schema)
    assert schema == before
    for node in _object_nodes(strict):
        assert node["required"] == list(node.get("properties", {}))
        assert node["additionalProperties"] is False
    for name, _prop in schema["properties"].items():
        if name not in schema["required"]:
            assert schema_allows_null(strict["properties"][name])


# --- 4.3 resolution -----------------------------------------------------------------------------


def test_no_json_schema_config_is_not_strict() -> None:
    """spec 4.3: no json_schema config -> undefined (None), even where strict is supported."""
    assert resolve_json_schema_strict(_tool(READ_SCHEMA, strict=None), True) is None


def test_supported_and_strictable_is_strict() -> None:
    """spec 4.3: provider supports strict and the schema can be made strict -> true."""
    assert resolve_json_schema_strict(_tool(READ_SCHEMA, "prefer"), True) is True
    assert resolve_json_schema_strict(_tool(READ_SCHEMA, "require"), True) is True


def test_prefer_falls_back_silently() -> None:
    """spec 4.3: prefer -> non-strict when the schema can't be made strict or strict is unsupported."""
    bad = {"type": "object", "properties": {"a": {"$ref": "#/x"}}}
    assert resolve_json_schema_strict(_tool(bad, "prefer"), True) is None
    assert resolve_json_schema_strict(_tool(READ_SCHEMA, "prefer"), False) is None


def test_require_with_unstrictable_schema_fails_with_the_reason() -> None:
    """spec 4.3: require + schema that cannot be made strict -> the exact message."""
    bad = {"type": "object", "properties": {"a": {"$ref": "#/x"}}}
    with pytest.raises(ConstrainedSamplingError) as caught:
        resolve_json_schema_strict(_tool(bad, "require", name="edit"), True)
    assert (
        str(caught.value) == 'Tool "edit" requires JSON-schema constrained sampling, but $ref schemas are unsupported.'
    )


def test_require_without_provider_support_fails() -> None:
    """spec 4.3: require + provider without strict tools -> the exact message."""
    with pytest.raises(ConstrainedSamplingError) as caught:
        resolve_json_schema_strict(_tool(READ_SCHEMA, "require", name="bash"), False)
    assert str(caught.value) == (
        'Tool "bash" requires JSON-schema constrained sampling, but strict tools are unsupported.'
    )


def test_tool_parameters_sends_the_strict_rewrite_only_when_strict() -> None:
    """spec 4.3/4.4: the declared schema is rewritten only for strict tools."""
    tool = _tool(READ_SCHEMA)
    assert tool_parameters(tool, None) is READ_SCHEMA
    assert tool_parameters(tool, True)["additionalProperties"] is False


# --- 4.5 grammar ----------------------------------------------------------------------------------

PATCH_SCHEMA = {"type": "object", "properties": {"patch": {"type": "string"}}, "required": ["patch"]}


def _grammar_tool(lark: str | None = None, regex: str | None = None, schema: dict[str, Any] | None = None) -> Tool:
    variants = GrammarVariants()
    if lark is not None:
        variants.openai_lark = lark
    if regex is not None:
        variants.openai_regex = regex
    return Tool(
        name="apply_patch",
        description="d",
        parameters=schema or PATCH_SCHEMA,
        constrained_sampling=GrammarSampling(variants=variants),
    )


def test_grammar_unused_when_provider_lacks_grammar_tools() -> None:
    """spec 4.5: used only if the provider supports grammar tools."""
    assert resolve_grammar_sampling(_grammar_tool(lark="start: /x/"), False) is None
    assert resolve_grammar_sampling(_tool(READ_SCHEMA), True) is None


def test_lark_preferred_over_regex() -> None:
    """spec 4.5: Lark preferred over regex; the input property is the one required string."""
    both = resolve_grammar_sampling(_grammar_tool(lark="start: /x/", regex="x+"), True)
    assert both == GrammarTool(syntax="lark", definition="start: /x/", input_property="patch")
    only_regex = resolve_grammar_sampling(_grammar_tool(regex="x+", lark="  "), True)
    assert only_regex == GrammarTool(syntax="regex", definition="x+", input_property="patch")
    assert grammar_input_properties([_grammar_tool(regex="x+"), _tool(READ_SCHEMA)], True) == {"apply_patch": "patch"}


@pytest.mark.parametrize(
    ("tool", "reason"),
    [
        (_grammar_tool(), "no supported grammar variant was provided"),
        (
            _grammar_tool(lark="s", schema={"type": "string"}),
            "grammar constrained sampling requires an object parameter schema",
        ),
        (
            _grammar_tool(lark="s", schema={"type": "object", "properties": {"a": {"type": "string"}}}),
            "grammar constrained sampling requires exactly one required string property",
        ),
        (
            _grammar_tool(lark="s", schema={"type": "object", "properties": {}, "required": ["a"]}),
            "grammar constrained sampling requires a properties entry for a",
        ),
        (
            _grammar_tool(
                lark="s",
                schema={"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            ),
            "grammar constrained sampling property a must have type string",
        ),
    ],
)
def test_grammar_errors(tool: Tool, reason: str) -> None:
    """spec 4.5: `Tool "{name}" cannot use grammar constrained sampling: {reason}.`"""
    with pytest.raises(ConstrainedSamplingError) as caught:
        resolve_grammar_sampling(tool, True)
    assert str(caught.value) == f'Tool "apply_patch" cannot use grammar constrained sampling: {reason}.'


def test_nulls_the_strict_schema_invites_are_dropped_by_validation() -> None:
    """spec 4.4 + 3.3.2: under strict sampling the model sends null for an omitted optional
    property; validation against the declared (non-strict) schema treats it as omitted."""
    from pi_rpc.ai.validation import validate_tool_arguments

    strict = make_strict_json_schema(READ_SCHEMA)
    assert strict["required"] == ["path", "offset", "limit"]
    sent = {"path": "a.txt", "offset": None, "limit": 5}
    assert validate_tool_arguments("read", READ_SCHEMA, sent) == {"path": "a.txt", "limit": 5}
