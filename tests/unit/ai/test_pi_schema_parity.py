"""Tool-argument validation answers as Pi 1.6.0's does, case by case (spec 3.3-3.6).

The expected answers were recorded from Pi 1.6.0 itself: `fixtures/pi_schema_validation.json`
holds, for each schema and arguments of `pi_schema_cases.py`, what `@earendil-works/pi-ai` 1.6.0's
`validateToolArguments` returned or threw (`fixtures/record_pi_schema.mjs` re-records them). The
built-in tools are checked through their msgspec parameters, the plain schemas as MCP tools are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.validation import ToolArgumentsError, json_schema_of, validate_tool_arguments
from pi_rpc.tools import BUILTIN_TOOLS

_RECORDED = json.loads((Path(__file__).parent / "fixtures" / "pi_schema_validation.json").read_text())
_CASES: list[dict[str, Any]] = _RECORDED["cases"]


def _parameters(name: str) -> type[msgspec.Struct] | dict[str, Any]:
    if name in _RECORDED["plain"]:
        schema: dict[str, Any] = _RECORDED["schemas"][name]
        return schema
    parameters = BUILTIN_TOOLS[name][1]().parameters
    assert not isinstance(parameters, dict)
    return parameters


def test_the_recorded_schemas_are_the_ones_pi_rpc_sends() -> None:
    """A changed built-in schema needs the answers re-recorded, or the comparison means nothing."""
    for name in BUILTIN_TOOLS:
        assert json_schema_of(_parameters(name)) == _RECORDED["schemas"][name], name


@pytest.mark.parametrize("case", _CASES, ids=[f"{i}-{c['name']}" for i, c in enumerate(_CASES)])
def test_validation_answers_as_pi_1_6_0(case: dict[str, Any]) -> None:
    parameters = _parameters(case["name"])
    expected = case["pi"]
    try:
        value = validate_tool_arguments(case["name"], parameters, case["args"])
    except ToolArgumentsError as exc:
        assert not expected["ok"], f"Pi accepts these arguments as {expected['value']!r}"
        assert str(exc) == expected["message"]
        return
    assert expected["ok"], f"Pi rejects these arguments:\n{expected['message']}"
    if isinstance(parameters, dict):
        assert value == expected["value"]


# pi-schema's messages: a type mismatch names both types, a field is missing or unknown, a bound is
# written `expected >= 1`, a string `expected at least 1 characters`, a union's tag `expected one of [...]`.
_LINE = re.compile(
    r"  - (root|[^:\n]+): (expected [a-z]+( or [a-z]+)*, got (null|boolean|integer|number|string|array|object)"
    r"|missing|unknown field|expected (>=|<=|>|<) -?[0-9.e+]+|expected one of \[.*\]|expected at (least|most) .+)"
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from([0.5, -1.5, 2.25, 1e21]) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def _arguments_for(name: str) -> st.SearchStrategy[Any]:
    keys = list(_RECORDED["schemas"][name].get("properties", {}))
    return st.dictionaries(st.sampled_from([*keys, "extra"]), _JSON, max_size=4) | _JSON


@settings(max_examples=150, derandomize=True, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(_RECORDED["schemas"])))
def test_every_rejection_is_written_in_pi_schema_words(data: st.DataObject, name: str) -> None:
    args = data.draw(_arguments_for(name))
    try:
        validate_tool_arguments(name, _parameters(name), args)
    except ToolArgumentsError as exc:
        head, _, received = str(exc).partition("\n\nReceived arguments:\n")
        title, *lines = head.split("\n")
        assert title == f'Validation failed for tool "{name}":'
        assert lines, "at least one reason"
        for line in lines:
            assert _LINE.fullmatch(line), line
        assert json.loads(received) == args
