"""Tool-argument validation (spec 1.3, 3.3-3.6, 19.4)."""

from __future__ import annotations

import copy
import json
from typing import Annotated, Any, Literal

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET, Meta, UnsetType

from pi_rpc.ai.validation import json_schema_of, validate_tool_arguments

from .helpers import error_lines, validation_error

# --- test Structs (builder schemas) ---------------------------------------------------------------


class ReadParams(msgspec.Struct, rename="camel", kw_only=True):
    """Python-side docstring that must not reach the model."""

    path: Annotated[str, Meta(description="Path to the file to read (relative or absolute)")]
    offset: Annotated[float, Meta(description="Line number to start reading from")] | UnsetType = UNSET
    limit: Annotated[int, Meta(ge=1, description="Maximum number of lines")] | UnsetType = UNSET


class Edit(msgspec.Struct, rename="camel", kw_only=True):
    old_text: Annotated[str, Meta(description="Exact text to replace")]
    new_text: Annotated[str, Meta(description="Replacement text")]
    note: str | UnsetType = UNSET


class EditParams(msgspec.Struct, rename="camel", kw_only=True):
    path: str
    edits: Annotated[list[Edit], Meta(description="Edits to apply")]
    first: Edit | UnsetType = UNSET


class Pick(msgspec.Struct, kw_only=True):
    mode: Literal["fast", "slow"]
    label: str | None = None


class Defaults(msgspec.Struct, rename="camel", kw_only=True):
    command: str
    max_lines: int = 2000
    follow: bool = False


class Strict(msgspec.Struct, forbid_unknown_fields=True):
    name: str


# --- schema export (spec 1.3) ------------------------------------------------------------------


def test_struct_schema_is_a_flat_object_with_descriptions_and_required() -> None:
    """spec 1.3: the schema sent to the model; optional fields carry no null branch."""
    assert json_schema_of(ReadParams) == {
        "type": "object",
        "properties": {
            "path": {"description": "Path to the file to read (relative or absolute)", "type": "string"},
            "offset": {"description": "Line number to start reading from", "type": "number"},
            "limit": {"description": "Maximum number of lines", "type": "integer", "minimum": 1},
        },
        "required": ["path"],
    }


def test_nested_structs_are_inlined_without_refs() -> None:
    """spec 1.3: providers get a self-contained schema (lists of Structs, nested Structs)."""
    schema = json_schema_of(EditParams)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    item = schema["properties"]["edits"]["items"]
    assert item["properties"]["oldText"] == {"description": "Exact text to replace", "type": "string"}
    assert item["required"] == ["oldText", "newText"]
    assert schema["properties"]["first"]["required"] == ["oldText", "newText"]
    assert schema["required"] == ["path", "edits"]


def test_struct_schema_is_cached_and_dict_schema_returned_as_is() -> None:
    assert json_schema_of(EditParams) is json_schema_of(EditParams)
    plain = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert json_schema_of(plain) is plain


# --- 3.4 conversion inside nested Structs -------------------------------------------------------


def test_typebox_nested_objects_and_lists_are_converted() -> None:
    """spec 3.4 object: declared properties convert recursively; unknown ones stay."""
    result = validate_tool_arguments(
        "edit",
        EditParams,
        {
            "path": 7,
            "edits": [{"oldText": 1, "newText": False, "extra": 5}],
            "first": {"oldText": 2, "newText": "x"},
        },
    )
    assert result == EditParams(
        path="7", edits=[Edit(old_text="1", new_text="false")], first=Edit(old_text="2", new_text="x")
    )


# --- 3.3.2 optional-null normalisation ------------------------------------------------------------


def test_optional_null_is_deleted() -> None:
    """spec 3.3.2: null means omitted for an optional property that does not accept null."""
    assert validate_tool_arguments("read", ReadParams, {"path": "a", "offset": None, "limit": None}) == ReadParams(
        path="a"
    )


def test_required_null_is_kept_then_fails() -> None:
    """spec 3.3.2: a required null is kept; a literal has no null conversion, so the check fails."""
    assert error_lines(validation_error("t", Pick, {"mode": None})) == ['  - mode: expected one of ["fast","slow"]']
    schema = {"type": "object", "properties": {"where": {"type": "object"}}, "required": ["where"]}
    assert error_lines(validation_error("t", schema, {"where": None})) == ["  - where: expected object, got null"]


def test_nullable_declared_property_keeps_null() -> None:
    """spec 3.3.2: a property whose schema accepts null keeps it."""
    assert validate_tool_arguments("t", Pick, {"mode": "fast", "label": None}).label is None
    schema = {"type": "object", "properties": {"label": {"type": ["string", "null"]}}}
    assert validate_tool_arguments("t", schema, {"label": None}) == {"label": None}


def test_null_normalisation_walks_nested_objects_and_arrays() -> None:
    """spec 3.3.2: arrays recurse into items, objects into properties."""
    result = validate_tool_arguments(
        "edit",
        EditParams,
        {"path": "f", "edits": [{"oldText": "a", "newText": "b", "note": None}], "first": None},
    )
    assert result == EditParams(path="f", edits=[Edit(old_text="a", new_text="b")])
    schema = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
                },
            },
            "pair": {
                "type": "array",
                "prefixItems": [{"type": "object", "properties": {"z": {"type": "string"}}}],
            },
        },
    }
    args = {"items": [{"x": None, "y": 1}, {"x": 2}], "pair": [{"z": None}]}
    assert validate_tool_arguments("t", schema, args) == {"items": [{"y": 1}, {"x": 2}], "pair": [{}]}


class Move(msgspec.Struct, tag_field="kind", tag="move", kw_only=True):
    to: str
    force: bool | UnsetType = UNSET


class Copy(msgspec.Struct, tag_field="kind", tag="copy", kw_only=True):
    to: str
    count: int | UnsetType = UNSET


class Action(msgspec.Struct, kw_only=True):
    action: Move | Copy


def test_null_normalisation_descends_into_the_selected_union_member() -> None:
    """spec 3.3.2, pi-rpc's refinement: the walk follows the anyOf member the value's tag selects."""
    result = validate_tool_arguments("t", Action, {"action": {"kind": "copy", "to": "b", "count": None}})
    assert result == Action(action=Copy(to="b"))
    schema = {
        "type": "object",
        "properties": {
            "opt": {
                "anyOf": [
                    {"type": "object", "properties": {"n": {"type": "integer"}}},
                    {"type": "null"},
                ]
            }
        },
    }
    assert validate_tool_arguments("t", schema, {"opt": {"n": None}}) == {"opt": {}}
    assert validate_tool_arguments("t", schema, {"opt": None}) == {"opt": None}


def test_tagged_union_error_names_the_selected_member_field() -> None:
    """spec 3.6: a union of objects is blamed on the member declaring most of the value's keys, then
    the one whose first error is deepest (msgspec's tags are one-value enums, not pi-schema's `const`
    tags). Pi 1.6.0 answers these two lines for this schema and value."""
    lines = error_lines(validation_error("t", Action, {"action": {"kind": "move", "to": []}}))
    assert lines == ['  - action.kind: expected one of ["copy"]', "  - action.to: expected string, got array"]


def test_null_normalisation_keeps_ref_properties() -> None:
    """spec 3.3.2: a `$ref` property schema keeps its null (and then fails here)."""
    schema = {
        "$defs": {"Point": {"type": "object"}},
        "type": "object",
        "properties": {"at": {"$ref": "#/$defs/Point"}},
    }
    assert error_lines(validation_error("t", schema, {"at": None})) == ["  - at: expected object, got null"]


# --- plain JSON Schema tools -------------------------------------------------------------------


def test_dict_schema_with_refs_and_draft07() -> None:
    schema = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "definitions": {"Count": {"type": "integer", "minimum": 1}},
        "type": "object",
        "properties": {"count": {"$ref": "#/definitions/Count"}},
    }
    assert validate_tool_arguments("t", schema, {"count": "3"}) == {"count": 3}
    assert error_lines(validation_error("t", schema, {"count": "0"})) == ["  - count: expected >= 1"]


# --- defaults, extras ------------------------------------------------------------------------------


def test_struct_defaults_are_applied() -> None:
    assert validate_tool_arguments("bash", Defaults, {"command": "ls"}) == Defaults(
        command="ls", max_lines=2000, follow=False
    )


def test_extra_properties_are_allowed_by_default() -> None:
    """spec 3.3.5: extra properties pass unless additionalProperties is false."""
    assert validate_tool_arguments("read", ReadParams, {"path": "a", "bogus": 1}) == ReadParams(path="a")
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    assert validate_tool_arguments("t", schema, {"q": "x", "bogus": 1}) == {"q": "x", "bogus": 1}


def test_additional_properties_false_rejects_extras() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "additionalProperties": False}
    assert error_lines(validation_error("t", schema, {"q": "x", "bogus": 1, "more": 2})) == [
        "  - bogus: unknown field",
        "  - more: unknown field",
    ]
    assert error_lines(validation_error("t", Strict, {"name": "x", "bogus": 1})) == ["  - bogus: unknown field"]


# --- 3.6 error message layout ------------------------------------------------------------------


def test_error_message_one_error() -> None:
    """spec 3.6: header, one line per error, blank line, received arguments."""
    assert validation_error("read", ReadParams, {"path": ["x"]}) == (
        'Validation failed for tool "read":\n'
        "  - path: expected string, got array\n"
        "\n"
        "Received arguments:\n"
        "{\n"
        '  "path": [\n'
        '    "x"\n'
        "  ]\n"
        "}"
    )


def test_error_message_missing_required_at_root() -> None:
    """spec 3.6: each missing property is its own line, at the property."""
    assert validation_error("edit", EditParams, {}) == (
        'Validation failed for tool "edit":\n  - path: missing\n  - edits: missing\n\nReceived arguments:\n{}'
    )


def test_error_message_several_errors_and_nested_paths() -> None:
    """spec 3.6: all errors reported; nested path like `edits.0.newText`."""
    args = {"path": "f", "edits": [{"oldText": "a"}, {"oldText": [], "newText": "b"}], "limit": 0}
    message = validation_error("edit", EditParams, args)
    assert error_lines(message) == [
        "  - edits.0.newText: missing",
        "  - edits.1.oldText: expected string, got array",
    ]
    assert message.endswith("Received arguments:\n" + json.dumps(args, indent=2))
    several = validation_error("read", ReadParams, {"path": {}, "limit": 0, "offset": "x"})
    assert error_lines(several) == [
        "  - path: expected string, got object",
        "  - offset: expected number, got string",
        "  - limit: expected >= 1",
    ]


def test_error_message_root_type_and_empty_array() -> None:
    assert validation_error("read", ReadParams, []) == (
        'Validation failed for tool "read":\n  - root: expected object, got array\n\nReceived arguments:\n[]'
    )


def test_received_arguments_are_the_original_with_non_ascii_kept() -> None:
    """spec 3.6: ORIGINAL arguments (before conversion), JSON.stringify(x, null, 2) style."""
    args: dict[str, Any] = {
        "path": [],
        "edits": [],
        "first": None,
        "offset": 3.0,
        "mode": "naïve ✓",
        "big": 1e21,
        "empty": {},
    }
    message = validation_error("edit", EditParams, args)
    assert message.split("Received arguments:\n")[1] == (
        "{\n"
        '  "path": [],\n'
        '  "edits": [],\n'
        '  "first": null,\n'
        '  "offset": 3,\n'
        '  "mode": "naïve ✓",\n'
        '  "big": 1e+21,\n'
        '  "empty": {}\n'
        "}"
    )


def test_union_failure_is_reported_readably() -> None:
    """spec 3.6: a union reports the member the value was meant for; of scalar members, the first."""
    lines = error_lines(validation_error("edit", EditParams, {"path": "f", "edits": [], "first": {"oldText": "a"}}))
    assert lines == ["  - first.newText: missing"]
    schema = {"type": "object", "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}}
    assert error_lines(validation_error("t", schema, {"v": "x"})) == ["  - v: expected integer, got string"]


# --- immutability and idempotence ----------------------------------------------------------------


def test_input_object_is_not_mutated() -> None:
    """spec 3.3.1: the caller's object is never modified."""
    args = {"path": 5, "edits": {"oldText": 1, "newText": 2, "note": None}, "first": None}
    before = copy.deepcopy(args)
    validate_tool_arguments("edit", EditParams, args)
    assert args == before
    schema = {"type": "object", "properties": {"n": {"type": "number"}, "o": {"type": "string"}}}
    plain = {"n": "1", "o": None}
    validate_tool_arguments("t", schema, plain)
    assert plain == {"n": "1", "o": None}


_text = st.text(max_size=8)
_json_scalar = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | _text
_edits = st.builds(Edit, old_text=_text, new_text=_text, note=_text | st.just(UNSET))
_edit_params = st.builds(EditParams, path=_text, edits=st.lists(_edits, max_size=3), first=_edits | st.just(UNSET))


@settings(max_examples=80, deadline=None)
@given(_edit_params)
def test_valid_struct_arguments_come_back_unchanged(params: msgspec.Struct) -> None:
    """spec 3.3: conversion and coercion are no-ops on arguments that are already valid."""
    args = msgspec.to_builtins(params)
    assert validate_tool_arguments("t", type(params), args) == params


_PLAIN = {
    "type": "object",
    "properties": {
        "s": {"type": "string"},
        "n": {"type": "number"},
        "i": {"type": "integer"},
        "b": {"type": "boolean"},
        "maybe": {"type": ["string", "null"]},
        "any": {},
        "tags": {"type": "array", "items": {"type": "string"}},
        "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
    },
}
_plain_args = st.fixed_dictionaries(
    {},
    optional={
        "s": _text,
        "n": st.integers() | st.floats(allow_nan=False, allow_infinity=False),
        "i": st.integers(),
        "b": st.booleans(),
        "maybe": st.none() | _text,
        "any": st.recursive(_json_scalar, lambda inner: st.lists(inner, max_size=3), max_leaves=5),
        "tags": st.lists(_text, max_size=3),
        "either": _text | st.integers(),
        "extra": _json_scalar,
    },
)


@settings(max_examples=80, deadline=None)
@given(_plain_args)
def test_valid_plain_arguments_come_back_unchanged(args: dict[str, Any]) -> None:
    """spec 3.3 / 3.5: coercion leaves values that already match their schema."""
    result = validate_tool_arguments("t", _PLAIN, args)
    assert result == args and result is not args


class Tree(msgspec.Struct):
    name: str
    kids: list[Tree] = []


def test_recursive_struct_keeps_only_the_cycle_as_a_ref() -> None:
    schema = json_schema_of(Tree)
    assert schema["properties"]["kids"]["items"] == {"$ref": "#/$defs/Tree"}
    assert "$ref" not in json.dumps(schema["$defs"]["Tree"]["properties"]["name"])
    result = validate_tool_arguments("t", Tree, {"name": 1, "kids": [{"name": 2, "kids": None}]})
    assert result == Tree(name="1", kids=[Tree(name="2")])
