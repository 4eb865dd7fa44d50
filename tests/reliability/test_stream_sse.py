"""The bounded SSE reader (pi_rpc/ai/sse.py): any split of the bytes gives the same events, line
endings are only CR, LF and CRLF (never U+2028), and the line bound holds wherever it is crossed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai.sse import SSEEventDecoder, SSELineSplitter, SSELineTooLong

BODY = (
    "event: a\ndata: first\u2028still first\r\n\r\n: keep-alive\r\ndata: two\rdata: lines\r\r"
    "id: 7\nretry: 10\ndata: é and 中\n\ndata:no space\n\n"
).encode()


def events(chunks: list[bytes], limit: int = 1 << 20) -> list[tuple[str, str, str, int | None]]:
    splitter, decoder, found = SSELineSplitter(limit), SSEEventDecoder(), []
    for chunk in chunks:
        for line in splitter.feed(chunk):
            sse = decoder.decode(line)
            if sse is not None:
                found.append((sse.event, sse.data, sse.id, sse.retry))
    return found


EXPECTED = [
    ("a", "first\u2028still first", "", None),
    ("message", "two\nlines", "", None),
    ("message", "é and 中", "7", 10),
    ("message", "no space", "7", None),
]


def test_events_of_the_whole_body() -> None:
    assert events([BODY]) == EXPECTED


@settings(max_examples=200)
@given(st.lists(st.integers(min_value=0, max_value=len(BODY)), max_size=12))
def test_any_split_gives_the_same_events(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(BODY)]
    assert events([BODY[a:b] for a, b in zip(points, points[1:], strict=False)]) == EXPECTED


@settings(max_examples=100)
@given(st.integers(min_value=1, max_value=64), st.integers(min_value=1, max_value=40))
def test_a_line_over_the_bound_raises_wherever_the_chunks_fall(piece: int, limit: int) -> None:
    line = b"data: " + b"x" * (limit + 1)
    with pytest.raises(SSELineTooLong):
        events([line[i : i + piece] for i in range(0, len(line), piece)] + [b"\n\n"], limit)


def test_a_line_at_the_bound_passes() -> None:
    line = b"data: " + b"x" * 10
    assert events([line, b"\n\n"], limit=len(line)) == [("message", "x" * 10, "", None)]
