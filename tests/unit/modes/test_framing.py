"""Framing readers: property tests over arbitrary chunkings, and every recovery path (spec 18.1)."""

from __future__ import annotations

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from pi_rpc.modes.editor_requests import answered_id
from pi_rpc.modes.framing import (
    FrameError,
    JsonlFrameReader,
    LspFrameReader,
    encode_jsonl,
    encode_lsp,
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
messages = st.lists(st.dictionaries(st.text(max_size=8), json_values, max_size=4), min_size=1, max_size=6)


def feed_in_chunks(reader: LspFrameReader | JsonlFrameReader, data: bytes, cuts: list[int]) -> list[bytes | FrameError]:
    frames: list[bytes | FrameError] = []
    points = sorted({c % (len(data) + 1) for c in cuts})
    start = 0
    for point in [*points, len(data)]:
        frames += reader.feed(data[start:point])
        start = point
    return frames + reader.finish()


@given(messages, st.lists(st.integers(min_value=0), max_size=20))
def test_lsp_round_trip_under_any_chunking(batch: list[dict[str, object]], cuts: list[int]) -> None:
    bodies = [msgspec.json.encode(m) for m in batch]
    frames = feed_in_chunks(LspFrameReader(), b"".join(encode_lsp(b) for b in bodies), cuts)
    assert frames == bodies


@given(messages, st.lists(st.integers(min_value=0), max_size=20))
def test_jsonl_round_trip_under_any_chunking(batch: list[dict[str, object]], cuts: list[int]) -> None:
    bodies = [msgspec.json.encode(m) for m in batch]
    data = b"".join(encode_jsonl(b) for b in bodies)
    frames = feed_in_chunks(JsonlFrameReader(), data, cuts)
    assert [msgspec.json.decode(f) for f in frames if isinstance(f, bytes)] == batch


def test_jsonl_escapes_line_separators_and_keeps_them_inside_strings() -> None:
    """spec 18.1: U+2028/U+2029 are not separators; the daemon escapes them on output."""
    body = msgspec.json.encode({"text": "a\u2028b\u2029c"})
    encoded = encode_jsonl(body)
    assert b"\\u2028" in encoded and "\u2028".encode() not in encoded
    assert msgspec.json.decode(encoded) == {"text": "a\u2028b\u2029c"}
    # Raw separators arriving from a client are not record breaks either.
    assert JsonlFrameReader().feed(body + b"\n") == [body]


def test_jsonl_strips_one_trailing_cr_and_accepts_a_final_unterminated_record() -> None:
    reader = JsonlFrameReader()
    assert reader.feed(b'{"a":1}\r\n\n{"b":2}') == [b'{"a":1}']
    assert reader.finish() == [b'{"b":2}']


def test_lsp_oversized_body_is_skipped_and_the_next_frame_served() -> None:
    reader = LspFrameReader(max_body=10)
    assert reader.feed(b"Content-Length: 25\r\n\r\n" + b"x" * 5) == []  # reported once skipped
    [error, served] = reader.feed(b"x" * 20 + encode_lsp(b"{}"))
    assert isinstance(error, FrameError) and served == b"{}"
    assert "message of 25 bytes exceeds the limit of 10 bytes" in error.message
    assert (error.size, error.head, error.tail) == (25, b"x" * 25, b"x" * 25)


def test_lsp_bad_headers_resync_at_the_next_content_length() -> None:
    reader = LspFrameReader()
    frames = reader.feed(b"garbage line\r\n\r\nmore garbage\r\n" + encode_lsp(b"[1]"))
    assert isinstance(frames[0], FrameError) and frames[-1] == b"[1]"
    frames = reader.feed(b"Content-Length: nope\r\n\r\n" + encode_lsp(b"[2]"))
    assert isinstance(frames[0], FrameError) and frames[-1] == b"[2]"


def test_lsp_accepts_content_type_and_bare_lf_headers() -> None:
    reader = LspFrameReader()
    data = b"Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}"
    assert reader.feed(data) == [b"{}"]
    assert reader.feed(b"Content-Length: 2\n\n[]") == [b"[]"]


def test_lsp_headers_without_end_are_bounded() -> None:
    reader = LspFrameReader()
    frames = reader.feed(b"A" * 20_000)
    assert len(frames) == 1 and isinstance(frames[0], FrameError)
    skipped, body = reader.feed(encode_lsp(b"{}"))
    assert isinstance(skipped, FrameError) and "skipped bytes 0..20000" in skipped.message
    assert body == b"{}"


def test_lsp_truncated_input_is_reported_at_end() -> None:
    reader = LspFrameReader()
    assert reader.feed(b"Content-Length: 10\r\n\r\n{}") == []
    (error,) = reader.finish()
    assert isinstance(error, FrameError)


ids = st.integers(min_value=0, max_value=10**9) | st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=20)


@given(ids, st.booleans(), st.integers(min_value=70, max_value=2000), st.lists(st.integers(min_value=0), max_size=20))
def test_an_oversized_answer_keeps_the_id_of_the_request_it_answers_under_any_chunking(
    msg_id: int | str, id_last: bool, size: int, cuts: list[int]
) -> None:
    """Whether the client puts the id before the result or after it, the reader keeps enough of
    a skipped answer for the waiting request to be found and failed at once."""
    result = {"content": "x" * size}
    answer = (
        {"jsonrpc": "2.0", "result": result, "id": msg_id}
        if id_last
        else {"jsonrpc": "2.0", "id": msg_id, "result": result}
    )
    body = msgspec.json.encode(answer)
    after = msgspec.json.encode({"jsonrpc": "2.0", "method": "next"})
    for reader, data in (
        (JsonlFrameReader(max_body=64), encode_jsonl(body) + encode_jsonl(after)),
        (LspFrameReader(max_body=64), encode_lsp(body) + encode_lsp(after)),
    ):
        [error, served] = feed_in_chunks(reader, data, cuts)
        assert isinstance(error, FrameError) and served == after
        assert error.size == len(body) and f"of {len(body)} bytes exceeds the limit of 64 bytes" in error.message
        assert answered_id(error) == msg_id


def test_a_skipped_message_that_is_no_answer_names_no_request() -> None:
    [error] = JsonlFrameReader(max_body=8).feed(b'{"jsonrpc":"2.0","method":"x","params":{"id":3}}\n')
    assert isinstance(error, FrameError) and answered_id(error) is None
