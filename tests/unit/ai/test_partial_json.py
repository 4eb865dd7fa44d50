"""Property tests for the streaming tool-argument parser (Pi `utils/json-parse.ts`)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.partial_json import parse_streaming_json

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
_objects = st.dictionaries(st.text(max_size=8), _values, max_size=5)


def _texts(obj: dict[str, Any]) -> st.SearchStrategy[str]:
    # Providers stream compact and pretty JSON, escaped and raw non-ASCII alike.
    return st.sampled_from(
        [
            json.dumps(obj),
            json.dumps(obj, ensure_ascii=False),
            json.dumps(obj, indent=2),
            json.dumps(obj, separators=(",", ":"), ensure_ascii=False),
        ]
    )


@settings(max_examples=50, deadline=None)  # each example parses every prefix: quadratic
@given(_objects.flatmap(lambda obj: st.tuples(st.just(obj), _texts(obj))))
def test_every_prefix_parses_to_a_dict_and_the_whole_text_to_the_object(
    case: tuple[dict[str, Any], str],
) -> None:
    obj, text = case
    for end in range(len(text)):
        assert isinstance(parse_streaming_json(text[:end]), dict)
    assert parse_streaming_json(text) == obj


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=6), st.text(max_size=10), min_size=1, max_size=4))
def test_completed_members_of_a_prefix_are_kept(obj: dict[str, str]) -> None:
    """Once a string member is closed and followed by a comma, the partial object shows it."""
    text = json.dumps(obj, ensure_ascii=False)
    first_key = next(iter(obj))
    prefix_end = len(json.dumps({first_key: obj[first_key]}, ensure_ascii=False)) - 1
    assert parse_streaming_json(text[:prefix_end])[first_key] == obj[first_key]


def test_empty_and_blank_input_give_an_empty_object() -> None:
    assert parse_streaming_json("") == {}
    assert parse_streaming_json("   ") == {}


def test_non_object_json_gives_an_empty_object() -> None:
    assert parse_streaming_json("[1, 2]") == {}
    assert parse_streaming_json('"text"') == {}


def test_open_string_is_closed() -> None:
    assert parse_streaming_json('{"path": "src/ma') == {"path": "src/ma"}


def test_dangling_key_is_dropped_not_guessed() -> None:
    assert parse_streaming_json('{"path": "a.txt", "conte') == {"path": "a.txt"}
