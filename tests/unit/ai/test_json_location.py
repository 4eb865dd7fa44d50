"""Lines of config errors: a JSON path and a decode error's byte offset become the line
a user opens, whatever the document looks like."""

from __future__ import annotations

import copy
import re
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.json_location import describe_decode_error, line_and_column, line_of_path

MARKER = "\u2603-the-value-looked-for"

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8)
)
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def _paths(value: Any, prefix: str = "$") -> list[str]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            if key and all(c not in key for c in ".[]`"):  # msgspec paths cannot name these unambiguously
                found += _paths(item, f"{prefix}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, f"{prefix}[{index}]")
    return found


def _replace(value: Any, path: str, replacement: Any) -> Any:
    parts = [int(i) if i else k for i, k in re.findall(r"\[(\d+)\]|\.([^.\[\]]+)", path[1:])]
    if not parts:
        return replacement
    root = copy.deepcopy(value)
    target = root
    for part in parts[:-1]:
        target = target[part]
    target[parts[-1]] = replacement
    return root


@settings(max_examples=150, deadline=None)
@given(_documents.filter(lambda d: isinstance(d, dict | list)), st.data())
def test_the_line_of_a_path_is_where_its_value_starts(document: Any, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_paths(document)))
    indent = data.draw(st.sampled_from([0, 2, 4]))
    raw = msgspec.json.format(msgspec.json.encode(document), indent=indent)
    # Oracle: everything before the value serialises the same when the value is swapped for a marker.
    marked = msgspec.json.format(msgspec.json.encode(_replace(document, path, MARKER)), indent=indent)
    expected = marked[: marked.index(MARKER.encode())].count(b"\n") + 1
    assert line_of_path(raw, path) == expected


def test_a_missing_path_or_a_broken_document_has_no_line() -> None:
    assert line_of_path(b'{"a": [1, 2]}', "a[5]") is None
    assert line_of_path(b'{"a": [1, 2]}', "b") is None
    assert line_of_path(b'{"a": [1, ', "a[1]") is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{\n  "a": 1,\n}', "line 3, column 1: JSON is malformed: trailing comma in object"),
        (b'{\n  "\xc3\xa9": @\n}', "line 2, column 8: JSON is malformed: invalid character"),
    ],
)
def test_decode_errors_name_line_and_column(raw: bytes, expected: str) -> None:
    with pytest.raises(msgspec.DecodeError) as caught:
        msgspec.json.decode(raw)
    assert describe_decode_error(raw, caught.value) == expected


def test_columns_count_characters() -> None:
    assert line_and_column("é\néé!".encode(), len("é\néé".encode())) == (2, 3)
