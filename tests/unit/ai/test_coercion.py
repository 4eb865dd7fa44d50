"""Argument conversion as pi-schema does it (Pi 1.5.0 onwards): TypeBox's rules (spec 3.4), then
AJV-style coercion (spec 3.5), for builder and plain JSON schemas alike, seen through
`validate_tool_arguments` (spec 19.4)."""

from __future__ import annotations

from typing import Any, Literal

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec import UNSET, UnsetType

from pi_rpc.ai.validation import validate_tool_arguments

from .helpers import error_lines, validation_error

_text = st.text(max_size=8)


class Scalars(msgspec.Struct, kw_only=True):
    """One required field per JSON type: required `null`s are kept, so conversions show."""

    number: float
    integer: int
    string: str
    boolean: bool
    nothing: None
    numbers: list[float]


_VALID_SCALARS: dict[str, Any] = {
    "number": 0.5,
    "integer": 0,
    "string": "",
    "boolean": False,
    "nothing": None,
    "numbers": [],
}


def _scalars(**override: Any) -> Scalars:
    result: Scalars = validate_tool_arguments("t", Scalars, {**_VALID_SCALARS, **override})
    return result


def _scalar_errors(**override: Any) -> list[str]:
    return error_lines(validation_error("t", Scalars, {**_VALID_SCALARS, **override}))


class Choice(msgspec.Struct, kw_only=True):
    mode: Literal["fast", "slow"]
    level: Literal[1, 2] = 1
    value: float | str = ""
    label: str | None = None
    timeout: float | UnsetType = UNSET


# --- 3.4 TypeBox conversion (builder schemas) -----------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (" 12 ", 12),
        ("", 0),
        ("0x10", 16),
        ("1e3", 1000),
        ("2.5", 2.5),
        ("true", 1),
        ("FALSE", 0),
        (True, 1),
        (False, 0),
        (None, 0),
    ],
)
def test_typebox_number_conversion(raw: Any, expected: float) -> None:
    """spec 3.4 number: JS `+s` semantics; booleans and null become numbers."""
    assert _scalars(number=raw).number == expected


@pytest.mark.parametrize("raw", ["Infinity", "NaN", "abc", "1_000", "-0x10"])
def test_typebox_number_conversion_leaves_non_numeric_strings(raw: str) -> None:
    """spec 3.4 number: `"Infinity"`/`"NaN"`/`"abc"` are unchanged, so the check fails."""
    assert _scalar_errors(number=raw) == ["  - number: expected number, got string"]


@pytest.mark.parametrize(
    ("raw", "expected"), [("3.5", 3), (3.7, 3), ("-3.5", -3), (-3.7, -3), ("12", 12), (4.0, 4), (True, 1)]
)
def test_typebox_integer_truncates_toward_zero(raw: Any, expected: int) -> None:
    """spec 3.4 integer: as number, then truncated toward zero."""
    result = _scalars(integer=raw).integer
    assert result == expected and type(result) is int


@pytest.mark.parametrize(
    ("raw", "expected"),
    [(12.5, "12.5"), (12, "12"), (False, "false"), (True, "true"), (None, "null"), (1e21, "1e+21")],
)
def test_typebox_string_conversion(raw: Any, expected: str) -> None:
    """spec 3.4 string: numbers and booleans become their JS string; null becomes "null"."""
    assert _scalars(string=raw).string == expected


def test_typebox_string_leaves_arrays_and_objects() -> None:
    """spec 3.4 string: arrays/objects unchanged."""
    assert _scalar_errors(string=[1]) == ["  - string: expected string, got array"]
    assert _scalar_errors(string={"a": 1}) == ["  - string: expected string, got object"]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("true", True),
        ("TRUE", True),
        ("False", False),
        ("1", True),
        ("0", False),
        (1, True),
        (0, False),
        (None, False),
    ],
)
def test_typebox_boolean_conversion(raw: Any, expected: bool) -> None:
    """spec 3.4 boolean."""
    assert _scalars(boolean=raw).boolean is expected


@pytest.mark.parametrize(("raw", "got"), [("yes", "string"), (2, "integer"), ("2", "string")])
def test_typebox_boolean_leaves_other_values(raw: Any, got: str) -> None:
    """spec 3.4 boolean: anything else unchanged (e.g. "yes")."""
    assert _scalar_errors(boolean=raw) == [f"  - boolean: expected boolean, got {got}"]


@pytest.mark.parametrize("raw", ["null", "NULL", "undefined", "Undefined", "", "0", 0, False])
def test_typebox_null_conversion(raw: Any) -> None:
    """spec 3.4 null."""
    assert _scalars(nothing=raw).nothing is None


def test_typebox_null_leaves_other_values() -> None:
    assert _scalar_errors(nothing="x") == ["  - nothing: expected null, got string"]


@pytest.mark.parametrize(("raw", "expected"), [("1", [1.0]), (5, [5.0]), (["2", 3], [2.0, 3.0]), ({"a": 1}, None)])
def test_typebox_array_wraps_then_converts_items(raw: Any, expected: list[float] | None) -> None:
    """spec 3.4 array: a non-array is wrapped `[v]`, then items converted ("1" -> [1])."""
    if expected is None:
        assert _scalar_errors(numbers=raw) == ["  - numbers.0: expected number, got object"]
    else:
        assert _scalars(numbers=raw).numbers == expected


@pytest.mark.parametrize(("raw", "expected"), [(True, 1.0), ("5", "5"), (2.5, 2.5), (False, 0.0)])
def test_typebox_union_keeps_valid_members_else_tries_each(raw: Any, expected: Any) -> None:
    """spec 3.4 union: number|string with true -> 1, with "5" -> "5"."""
    value = validate_tool_arguments("t", Choice, {"mode": "fast", "value": raw}).value
    assert value == expected and type(value) is type(expected)


def test_typebox_literal_converts_only_toward_its_own_value() -> None:
    """spec 3.4 literal: "2" becomes the literal 2; a non-member stays and fails the enum."""
    assert validate_tool_arguments("t", Choice, {"mode": "slow", "level": "2"}).level == 2
    assert error_lines(validation_error("t", Choice, {"mode": "medium"})) == [
        '  - mode: expected one of ["fast","slow"]'
    ]


# --- 3.5 AJV-style coercion (plain JSON Schema tools) ---------------------------------------------


def _one(type_: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": {"type": type_}}, "required": ["v"]}


@pytest.mark.parametrize(
    ("type_", "raw", "expected"),
    [
        ("number", "12", 12),
        ("number", "", 0),
        ("integer", "42.1", 42),
        ("integer", 3.5, 3),
        ("boolean", "TRUE", True),
        ("boolean", "1", True),
        ("string", None, "null"),
        ("null", "null", None),
        ("array", "x", ["x"]),
    ],
)
def test_plain_schemas_get_typebox_conversion(type_: Any, raw: Any, expected: Any) -> None:
    """spec 3.4, 19.4: since Pi 1.5.0 a plain schema converts as a builder one does (Pi 1.6.0's answers)."""
    result = validate_tool_arguments("t", _one(type_), {"v": raw})
    assert result == {"v": expected} and type(result["v"]) is type(expected)


@pytest.mark.parametrize(
    ("type_", "raw", "expected"),
    [
        (["number", "string"], "1", "1"),
        (["boolean", "number"], "1", 1),
        (["null", "string"], 5, "5"),
        (["integer", "null"], "", None),
    ],
)
def test_type_lists_get_ajv_coercion(type_: Any, raw: Any, expected: Any) -> None:
    """spec 3.5: a type list is left by the conversion to AJV-style coercion; a value of one of the types stays."""
    result = validate_tool_arguments("t", _one(type_), {"v": raw})
    assert result == {"v": expected} and type(result["v"]) is type(expected)


@pytest.mark.parametrize(
    ("type_", "raw", "message"),
    [
        ("number", "Infinity", "expected number, got string"),
        ("number", "abc", "expected number, got string"),
        ("string", [1], "expected string, got array"),
        ("object", "x", "expected object, got string"),
        (["boolean", "number"], "", "expected boolean or number, got string"),
    ],
)
def test_conversion_refusals(type_: Any, raw: Any, message: str) -> None:
    """spec 3.4-3.6: what neither pass converts fails with pi-schema's message (Pi 1.6.0's answers)."""
    assert error_lines(validation_error("t", _one(type_), {"v": raw})) == [f"  - v: {message}"]


def test_ajv_unions_nested_objects_and_additional_properties() -> None:
    """spec 3.5: anyOf keeps a valid value, else the first coerced member that validates; then recurse."""
    schema = {
        "type": "object",
        "properties": {
            "either": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "kept": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "both": {"allOf": [{"type": "number"}, {"minimum": 1}]},
            "list": {"type": "array", "items": {"type": "integer"}},
            "env": {"type": "object", "additionalProperties": {"type": "string"}},
        },
    }
    args = {"either": "7", "kept": "7", "both": "3", "list": ["1", 2], "env": {"A": 1, "B": True}}
    assert validate_tool_arguments("t", schema, args) == {
        "either": 7,
        "kept": "7",
        "both": 3,
        "list": [1, 2],
        "env": {"A": "1", "B": "true"},
    }


def test_dict_schema_tool_returns_a_dict_without_defaults() -> None:
    """spec 19.4: a plain JSON schema's arguments come back as a coerced dict, its defaults not filled in."""
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 10}},
        "required": ["query"],
    }
    assert validate_tool_arguments("search", schema, {"query": 5}) == {"query": "5"}


_choice = st.builds(
    Choice,
    mode=st.sampled_from(["fast", "slow"]),
    level=st.sampled_from([1, 2]),
    value=st.floats(allow_nan=False, allow_infinity=False) | _text,
    label=st.none() | _text,
    timeout=st.floats(allow_nan=False, allow_infinity=False) | st.just(UNSET),
)
_scalar_params = st.builds(
    Scalars,
    nothing=st.none(),
    number=st.floats(allow_nan=False, allow_infinity=False),
    integer=st.integers(),
    string=_text,
    boolean=st.booleans(),
    numbers=st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=3),
)


@settings(max_examples=80, deadline=None)
@given(st.one_of(_choice, _scalar_params))
def test_valid_arguments_are_not_converted(params: msgspec.Struct) -> None:
    """spec 3.4: conversion applies only when a value does not already have the target type."""
    args = msgspec.to_builtins(params)
    assert validate_tool_arguments("t", type(params), args) == params
