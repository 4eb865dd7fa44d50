"""LSP framing recovers from any one broken frame (protocol/PROTOCOL.md, "Framing"), fed to the
decoder in-process.

Before the fix a single stray byte after a valid frame made the reader drop every later frame: it
resynchronised only at a `Content-Length:` that began a line, and a body ends without one.
"""

from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.modes.framing import FrameError, LspFrameReader, encode_lsp

from .frame_mutations import BETWEEN_FRAMES, frame, mutate, request


def decode(data: bytes, cuts: list[int] = (), max_body: int = 1 << 20) -> list[bytes | FrameError]:  # type: ignore[assignment]
    reader = LspFrameReader(max_body)
    out: list[bytes | FrameError] = []
    start = 0
    for point in sorted({c % (len(data) + 1) for c in cuts}) + [len(data)]:
        out += reader.feed(data[start:point])
        start = point
    return out + reader.finish()


def bodies(frames: list[bytes | FrameError]) -> list[bytes]:
    return [f for f in frames if isinstance(f, bytes)]


@pytest.mark.parametrize("name", sorted(BETWEEN_FRAMES))
def test_every_broken_frame_from_the_issue_costs_nothing_after_it(name: str) -> None:
    frames = decode(frame(1) + BETWEEN_FRAMES[name] + frame(2) + frame(3))
    served = bodies(frames)
    assert served[0] == request(1) and served[-2:] == [request(2), request(3)], name
    assert any(isinstance(f, FrameError) for f in frames), f"{name}: skipped bytes must be reported"


@pytest.mark.parametrize("name", sorted(BETWEEN_FRAMES))
def test_recovery_does_not_depend_on_how_the_bytes_arrive(name: str) -> None:
    data = frame(1) + BETWEEN_FRAMES[name] + frame(2)
    one_by_one = list(range(len(data)))
    assert bodies(decode(data, one_by_one))[-1] == request(2)


def test_each_skipped_range_is_reported_with_its_offsets() -> None:
    first = frame(1)
    frames = decode(first + b"hello" + frame(2))
    (error,) = [f for f in frames if isinstance(f, FrameError)]
    assert f"skipped bytes {len(first)}..{len(first) + 5}" in error.message and "b'hello" in error.message


def test_an_open_skipped_range_is_reported_when_it_starts_and_when_it_ends() -> None:
    reader = LspFrameReader()
    (started,) = reader.feed(b"garbage with no header in sight")
    assert isinstance(started, FrameError) and "skipping to the next Content-Length header" in started.message
    assert reader.feed(b" and more garbage") == []  # one report per range, not one per read
    ended, body = reader.feed(frame(1))
    assert isinstance(ended, FrameError) and "skipped bytes 0..48" in ended.message
    assert body == request(1)


def test_plain_json_is_flagged_as_json_lines() -> None:
    (error,) = LspFrameReader().feed(request(1) + b"\n")
    assert isinstance(error, FrameError) and error.json_lines
    (error,) = LspFrameReader().feed(b"hello\n")
    assert isinstance(error, FrameError) and not error.json_lines


def test_a_length_too_large_by_more_than_a_header_resyncs_inside_the_body() -> None:
    # The next frame's header sits inside the body; JSON cannot contain it, so the body is cut.
    body = request(1)
    data = b"Content-Length: %d\r\n\r\n" % (len(body) + 100) + body + frame(2)
    reader = LspFrameReader()
    frames = reader.feed(data)  # served at once: no waiting for 100 bytes that will never come
    assert isinstance(frames[0], FrameError) and "length was too large" in frames[0].message
    assert frames[1:] == [request(2)]


def test_an_oversized_length_does_not_swallow_the_frames_after_it() -> None:
    frames = decode(b"Content-Length: 999999999999\r\n\r\n{}" + frame(2), max_body=1000)
    assert bodies(frames) == [request(2)]


def test_a_json_body_with_content_length_in_a_string_is_delivered_whole() -> None:
    body = b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"message":"Content-Length: 5\\r\\n"}}'
    assert decode(encode_lsp(body)) == [body]


streams = st.tuples(
    st.integers(0, 3),
    st.integers(1, 4),
    st.randoms(use_true_random=False),
    st.lists(st.integers(min_value=0), max_size=6),
)


Stream = tuple[int, int, random.Random, list[int]]


@settings(max_examples=400, derandomize=True, database=None)
@given(streams)
def test_after_any_one_mutated_frame_every_later_frame_is_served(case: Stream) -> None:
    before, after, rng, cuts = case
    earlier = [request(i) for i in range(before)]
    later = [request(100 + i) for i in range(after)]
    data = b"".join(map(encode_lsp, earlier)) + mutate(frame(50), rng) + b"".join(map(encode_lsp, later))
    served = bodies(decode(data, cuts))
    assert served[: len(earlier)] == earlier
    assert served[-len(later) :] == later


@pytest.mark.parametrize("seed", range(5))
def test_a_stream_of_mutated_frames_is_served_alike_however_the_reads_are_cut(seed: int) -> None:
    # What the daemon's one reader sees of the forty streams of test_wire_framing_daemon.py: on a
    # loaded machine a pipe read returns bytes in other pieces (a write split, two writes joined),
    # and that must never change which frames are served.
    rng = random.Random(seed)
    streams = [mutate(frame(5000 + n), rng) + frame(6000 + n) for n in range(40)]
    data = b"".join(streams)
    whole = bodies(decode(data))
    assert bodies(decode(data, list(range(len(data))))) == whole  # one byte per read
    at_each_write = list(itertools.accumulate(map(len, streams)))
    assert bodies(decode(data, at_each_write)) == whole
    for n in range(40):
        assert request(6000 + n) in whole
