"""JS value semantics that validation reproduces (spec 3.4 number/string, 3.6 stringify)."""

from __future__ import annotations

import math

import pytest

from pi_rpc.ai.js_values import js_number_string, js_to_number, json_stringify


@pytest.mark.parametrize(
    ("number", "text"),
    [(12.5, "12.5"), (100.0, "100"), (-0.0, "0"), (1e21, "1e+21"), (1e-7, "1e-7"), (0.000001, "0.000001"),
     (123456789012345680000.0, "123456789012345680000"), (1.5e-10, "1.5e-10"), (2**53, "9007199254740992")],
)  # fmt: skip
def test_js_number_string(number: float, text: str) -> None:
    """spec 3.4 string: numbers print as JS `String(n)` does."""
    assert js_number_string(number) == text


@pytest.mark.parametrize(
    ("text", "number"),
    [(" 12 ", 12.0), ("", 0.0), ("\u00a012\ufeff", 12.0), ("0x10", 16.0), ("0b11", 3.0), ("0o17", 15.0),
     ("1e3", 1000.0), (".5", 0.5), ("5.", 5.0), ("-Infinity", -math.inf)],
)  # fmt: skip
def test_js_to_number(text: str, number: float) -> None:
    """spec 3.4 number: JS `+s`."""
    assert js_to_number(text) == number


@pytest.mark.parametrize("text", ["abc", "1_000", "-0x10", "infinity", "1e", ".", "0x"])
def test_js_to_number_nan(text: str) -> None:
    assert math.isnan(js_to_number(text))


def test_json_stringify_matches_node_layout() -> None:
    """spec 3.6: JSON.stringify(x, null, 2): empties inline, non-ASCII kept, floats as JS numbers."""
    value = {"a": [], "b": {}, "c": [1.0, 2.5, None, True], "d": {"é": "✓\n"}}
    assert json_stringify(value) == (
        '{\n  "a": [],\n  "b": {},\n  "c": [\n    1,\n    2.5,\n    null,\n    true\n  ],\n'
        '  "d": {\n    "é": "✓\\n"\n  }\n}'
    )
