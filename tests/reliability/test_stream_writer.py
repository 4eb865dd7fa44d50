"""The protocol writer (pi_rpc/modes/writer.py) over a real pipe that the client reads in fits and
starts: whatever the interleaving, every message arrives once and in order, the deltas of a block
arrive with their text exactly, and while the client is behind the deltas merge instead of
piling up one frame each."""

from __future__ import annotations

import json
import os
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.modes.framing import encode_jsonl
from pi_rpc.modes.writer import HIGH_WATER, StdoutSink

pytestmark = pytest.mark.anyio


def _encoder(key: str) -> Any:
    return lambda text: json.dumps({"k": key, "t": text}).encode()


async def _read_available(fd: int, into: bytearray) -> None:
    await anyio.lowlevel.checkpoint()  # let the writer's callbacks run
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            return
        into += chunk
        await anyio.lowlevel.checkpoint()


Step = tuple[str, str]  # ("delta", key) | ("message", "") | ("read", "")


async def _run(steps: list[Step], piece: str) -> tuple[list[dict[str, Any]], int, int]:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    sink = StdoutSink(write_fd, encode_jsonl)
    await sink.open()
    received = bytearray()
    sent = 0
    most_behind = 0
    try:
        for number, (kind, key) in enumerate(steps):
            if kind == "delta":
                sink.send_delta(key, f"{key}{number}{piece}|", _encoder(key))
                sent += 1
            elif kind == "message":
                sink.send_lazy(lambda number=number: json.dumps({"m": number}).encode())  # type: ignore[misc]
                sent += 1
            else:
                await _read_available(read_fd, received)
            most_behind = max(most_behind, sink.backlog())
        with anyio.fail_after(30):  # a guard against a hang, not a timing assertion
            while sink.backlog():
                await _read_available(read_fd, received)
                await anyio.lowlevel.checkpoint()
            await _read_available(read_fd, received)
    finally:
        os.close(read_fd)
        os.close(write_fd)
    return [json.loads(line) for line in received.splitlines()], sent, most_behind


def _expected(steps: list[Step], piece: str) -> list[tuple[str, str]]:
    """What the client must see, merged: per block the text of each run of deltas, and each
    message, in the order sent."""
    out: list[tuple[str, str]] = []
    for number, (kind, key) in enumerate(steps):
        if kind == "delta":
            out.append((key, f"{key}{number}{piece}|"))
        elif kind == "message":
            out.append(("m", str(number)))
    return out


def _flatten(frames: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Frames back into one entry per original delta (split at the `|` each delta ends with)."""
    out: list[tuple[str, str]] = []
    carry: dict[str, str] = {}
    for frame in frames:
        if "m" in frame:
            out.append(("m", str(frame["m"])))
            continue
        text = carry.pop(frame["k"], "") + frame["t"]
        *whole, rest = text.split("|")
        out += [(frame["k"], part + "|") for part in whole]
        if rest:
            carry[frame["k"]] = rest
    assert not carry
    return out


@settings(max_examples=40)
@given(
    st.lists(st.sampled_from([("delta", "a"), ("delta", "b"), ("message", ""), ("read", "")]), max_size=60),
    st.integers(min_value=0, max_value=70_000),
)
async def test_any_interleaving_arrives_whole_and_in_order(steps: list[Step], size: int) -> None:
    frames, _, _ = await _run(steps, "x" * size)
    assert _flatten(frames) == _expected(steps, "x" * size)


async def test_a_client_that_stops_reading_gets_merged_deltas_not_a_frame_each() -> None:
    steps: list[Step] = [("delta", "a")] * 20_000 + [("message", "")] + [("delta", "a")] * 20_000
    piece = "y" * 200  # 8 MB of text in all, far past the high-water mark
    frames, sent, most_behind = await _run(steps, piece)
    assert _flatten(frames) == _expected(steps, piece)
    # One frame per delta only until HIGH_WATER bytes wait in the pipe; behind that, pending
    # deltas merged into a few frames per MiB (40 001 frames without the queue).
    assert len(frames) < HIGH_WATER // len(piece) + 100 < sent / 5
    # And what waited was the text itself, not a framed copy of every delta.
    text_size = sum(len(f"a{i}{piece}|") for i, (kind, _) in enumerate(steps) if kind == "delta")
    assert most_behind <= text_size + 2 * HIGH_WATER


async def test_a_burst_of_messages_leaves_in_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    """A turn emits its events in bursts between two awaits; each write to the pipe wakes the
    client, so a burst is one system call (it was one per message), whole and in order."""
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    writes: list[int] = []
    real_write, real_writev = os.write, os.writev

    def counting_write(fd: int, data: Any) -> int:
        if fd == write_fd:
            writes.append(1)
        return real_write(fd, data)

    def counting_writev(fd: int, buffers: Any) -> int:
        if fd == write_fd:
            writes.append(len(buffers))
        return real_writev(fd, buffers)

    monkeypatch.setattr(os, "write", counting_write)
    monkeypatch.setattr(os, "writev", counting_writev)
    sink = StdoutSink(write_fd, encode_jsonl)
    await sink.open()
    try:
        for number in range(5):
            sink.send(json.dumps({"m": number}).encode())
        sink.send_delta("a", "x", _encoder("a"))
        received = bytearray()
        await _read_available(read_fd, received)
        assert len(writes) == 1
        lines = [json.loads(line) for line in received.decode().splitlines()]
        assert lines == [{"m": n} for n in range(5)] + [{"k": "a", "t": "x"}]
    finally:
        os.close(read_fd)
        os.close(write_fd)
