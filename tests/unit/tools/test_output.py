"""OutputAccumulator (spec 10)."""

from __future__ import annotations

import os
import re
import stat

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.tools.bash import format_output
from pi_rpc.tools.output import OutputAccumulator, OutputSnapshot
from pi_rpc.tools.process import ProcessTable, run_process_group
from pi_rpc.tools.truncate import DEFAULT_MAX_BYTES, truncate_tail


def test_character_split_across_chunks_decodes() -> None:
    """spec 10.2: the euro sign E2 82 AC split 1+2 bytes."""
    acc = OutputAccumulator()
    acc.append(b"price: \xe2")
    acc.append(b"\x82\xac\n")
    acc.finish()
    snap = acc.snapshot()
    assert snap.content == "price: €\n"
    assert snap.truncation.total_bytes == len("price: €\n".encode())
    assert not snap.truncation.truncated and snap.full_output_path is None


def test_line_counters() -> None:
    """spec 10.3: a trailing newline adds no line; the open line's bytes are tracked."""
    acc = OutputAccumulator()
    acc.append(b"a\nbb\n")
    assert acc.total_lines == 2
    acc.append(b"cc")
    acc.append(b"c")
    assert (acc.total_lines, acc.last_line_bytes) == (3, 3)
    acc.append(b"\n")
    assert (acc.total_lines, acc.last_line_bytes) == (3, 3)  # "ccc" is still the last line
    acc.append(b"\n")
    assert (acc.total_lines, acc.last_line_bytes) == (4, 0)


def test_append_after_finish_fails() -> None:
    """spec 10.7"""
    acc = OutputAccumulator()
    acc.finish()
    acc.finish()  # idempotent
    with pytest.raises(RuntimeError, match="^Cannot append to a finished output accumulator$"):
        acc.append(b"x")


def test_small_output_needs_no_temp_file() -> None:
    """spec 10.5: no file while within both limits."""
    acc = OutputAccumulator(temp_file_prefix="pi-bash")
    acc.append(b"x" * DEFAULT_MAX_BYTES)
    acc.finish()
    assert acc.full_output_path is None


def test_4000_lines(tmp_path: os.PathLike[str]) -> None:
    """spec 10.8 (test-pinned)."""
    acc = OutputAccumulator(temp_file_prefix="pi-bash", temp_dir=os.fspath(tmp_path))
    data = "".join(f"line-{i:04d}\n" for i in range(1, 4001)).encode()
    for start in range(0, len(data), 999):  # chunks that end mid-line
        acc.append(data[start : start + 999])
    acc.finish()
    snap = acc.snapshot()
    acc.close_temp_file()
    assert snap.truncation.total_lines == 4000
    assert snap.truncation.output_lines == 2000
    assert snap.truncation.truncated_by == "lines"
    assert snap.content.startswith("line-2001\n") and snap.content.endswith("line-4000")
    text, _ = format_output(snap, last_line_bytes=acc.last_line_bytes)
    assert text.endswith(f"\n\n[Showing lines 2001-4000 of 4000. Full output: {snap.full_output_path}]")
    assert snap.full_output_path is not None
    with open(snap.full_output_path, "rb") as f:
        assert f.read() == data
    os.unlink(snap.full_output_path)


def test_temp_file_name_mode_and_raw_bytes(tmp_path: os.PathLike[str]) -> None:
    """spec 10.5: {tmpdir}/{prefix}-{16 hex}.log, mode 0600, the raw bytes (invalid UTF-8 kept)."""
    acc = OutputAccumulator(temp_file_prefix="pi-bash", temp_dir=os.fspath(tmp_path), max_bytes=10)
    acc.append(b"\xff\xfe abc")
    assert acc.full_output_path is None
    acc.append(b" more bytes\n")
    path = acc.full_output_path
    assert path is not None
    assert re.fullmatch(r"pi-bash-[0-9a-f]{16}\.log", os.path.basename(path))
    assert os.path.dirname(path) == os.fspath(tmp_path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    acc.append(b"tail")
    acc.finish()
    acc.close_temp_file()
    with open(path, "rb") as f:
        assert f.read() == b"\xff\xfe abc more bytes\ntail"


def test_persist_if_truncated_creates_the_file(tmp_path: os.PathLike[str]) -> None:
    """spec 10.5: a snapshot that asks to persist a truncated result gets a path."""
    acc = OutputAccumulator(temp_dir=os.fspath(tmp_path), max_lines=1)
    acc.append(b"a\nb\n")
    snap = acc.snapshot(persist_if_truncated=True)
    acc.close_temp_file()
    assert snap.truncation.truncated and snap.full_output_path is not None
    assert snap.content == "b"


def test_long_single_line_is_kept_partially(tmp_path: os.PathLike[str]) -> None:
    """spec 10.4, 9.12: a line larger than the limit: its end is shown, with the line's size."""
    acc = OutputAccumulator(temp_dir=os.fspath(tmp_path))
    for _ in range(40):
        acc.append(("€" * 1000).encode())  # 120 000 bytes, no newline: the tail gets trimmed
    acc.finish()
    snap = acc.snapshot()
    acc.close_temp_file()
    t = snap.truncation
    assert t.last_line_partial and t.truncated_by == "bytes" and t.output_lines == 1
    assert snap.content == "€" * (DEFAULT_MAX_BYTES // 3)
    assert acc.last_line_bytes == 120_000
    text, _ = format_output(snap, last_line_bytes=acc.last_line_bytes)
    assert text.endswith(f"\n\n[Showing last 50.0KB of line 1 (line is 117.2KB). Full output: {snap.full_output_path}]")


def test_trimmed_tail_drops_the_partial_first_line(tmp_path: os.PathLike[str]) -> None:
    """spec 10.4: after a cut inside a line, snapshots start at the next whole line."""
    acc = OutputAccumulator(max_bytes=10, max_lines=100, temp_dir=os.fspath(tmp_path))
    acc.append(b"0123456789" * 5 + b"\nab\ncd\n")
    snap = acc.snapshot()
    acc.close_temp_file()
    assert snap.content == "ab\ncd"
    assert (snap.truncation.total_lines, snap.truncation.output_lines) == (3, 2)
    assert snap.truncation.output_bytes == 5


def test_huge_last_line_ending_in_newline_is_shown(tmp_path: os.PathLike[str]) -> None:
    """spec 9.12: the line's real size, even when a newline ends it (Pi would say 0B, show "")."""
    acc = OutputAccumulator(temp_dir=os.fspath(tmp_path))
    acc.append(b"first\n" + b"y" * 300_000 + b"\n")
    acc.finish()
    snap = acc.snapshot()
    acc.close_temp_file()
    assert snap.content == "y" * DEFAULT_MAX_BYTES
    assert snap.truncation.last_line_partial and acc.last_line_bytes == 300_000
    text, _ = format_output(snap, last_line_bytes=acc.last_line_bytes)
    assert text.endswith(f"[Showing last 50.0KB of line 2 (line is 293.0KB). Full output: {snap.full_output_path}]")


def _fed_in_chunks(
    data: bytes, cuts: list[int], max_lines: int, max_bytes: int
) -> tuple[OutputAccumulator, OutputSnapshot]:
    """`data` appended in pieces of the `cuts` sizes (the rest at once), finished, and its snapshot."""
    acc = OutputAccumulator(max_lines=max_lines, max_bytes=max_bytes)
    pos = 0
    for size in cuts:
        acc.append(data[pos : pos + size])
        pos += size
    acc.append(data[pos:])
    acc.finish()
    snap = acc.snapshot()
    acc.close_temp_file()
    return acc, snap


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(["x", "\n", "é", "€", "😀"]), max_size=300),
    st.lists(st.integers(min_value=1, max_value=40), max_size=40),
    st.integers(min_value=1, max_value=6),
    # A rolling tail of 2 x maxBytes must hold a 4-byte character: real limits are 50 KB.
    st.integers(min_value=4, max_value=24),
)
def test_any_chunking_matches_one_shot_truncation(text: str, cuts: list[int], max_lines: int, max_bytes: int) -> None:
    """spec 10.2-10.6: however the bytes are chunked, snapshots equal truncate_tail of the whole."""
    data = text.encode()
    acc, snap = _fed_in_chunks(data, cuts, max_lines, max_bytes)
    expected_last = len(text.rstrip("\n").rsplit("\n", 1)[-1].encode()) if text.rstrip("\n") else 0
    if text.endswith("\n\n"):
        expected_last = 0  # the last line is empty
    assert acc.last_line_bytes == expected_last
    if snap.full_output_path is not None:
        with open(snap.full_output_path, "rb") as f:
            assert f.read() == data
        os.unlink(snap.full_output_path)
    expected, record = truncate_tail(text, max_lines=max_lines, max_bytes=max_bytes)
    assert snap.content == expected
    got = snap.truncation
    if len(data) <= 4 * max_bytes:  # never trimmed; after a trim Pi's fallback reason applies
        assert got.truncated_by == record.truncated_by
    assert (got.truncated, got.total_lines, got.total_bytes) == (
        record.truncated,
        record.total_lines,
        record.total_bytes,
    )
    assert (got.output_lines, got.output_bytes, got.last_line_partial) == (
        record.output_lines,
        record.output_bytes,
        record.last_line_partial,
    )
    assert acc.retained_bytes <= 4 * max(2 * max_bytes, 1) + max_bytes + 40


@settings(max_examples=200, deadline=None)
@given(
    # Valid characters, bytes that are never valid, and characters cut short.
    st.lists(
        st.sampled_from([b"x", b"\n", "é".encode(), b"\xff", b"\x80", b"\xe2\x82", b"\xf0\x9f\x98"]), max_size=120
    ),
    st.lists(st.integers(min_value=1, max_value=40), max_size=40),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=4, max_value=24),
)
def test_invalid_utf8_in_any_chunking_matches_one_shot_decoding(
    pieces: list[bytes], cuts: list[int], max_lines: int, max_bytes: int
) -> None:
    """spec 10.2-10.6: ASCII chunks are counted undecoded and the tail is decoded only for a
    snapshot; with bytes that are not UTF-8 anywhere (one U+FFFD each, three bytes), the result is
    still truncate_tail of the whole output decoded at once."""
    data = b"".join(pieces)
    acc, snap = _fed_in_chunks(data, cuts, max_lines, max_bytes)
    if snap.full_output_path is not None:
        os.unlink(snap.full_output_path)
    text = data.decode("utf-8", errors="replace")
    expected, record = truncate_tail(text, max_lines=max_lines, max_bytes=max_bytes)
    got = snap.truncation
    assert (got.truncated, got.total_lines, got.total_bytes) == (
        record.truncated,
        record.total_lines,
        record.total_bytes,
    )
    assert (snap.content, got.output_lines, got.output_bytes) == (expected, record.output_lines, record.output_bytes)
    assert got.last_line_partial == record.last_line_partial
    if len(data) <= 4 * max_bytes:  # never trimmed; after a trim Pi's fallback reason applies
        assert got.truncated_by == record.truncated_by
    assert acc.retained_bytes <= 4 * max(2 * max_bytes, 4) + max_bytes + 40


def size_of(path: str) -> int:
    return os.stat(path).st_size


@pytest.mark.anyio
async def test_200_mb_keeps_memory_bounded_and_logs_everything(tmp_path: os.PathLike[str]) -> None:
    """spec 10.4-10.5: 200 MB from a real process; retained memory stays near 4 x 50 KB."""
    total = 200 * 1024 * 1024
    acc = OutputAccumulator(temp_file_prefix="pi-bash", temp_dir=os.fspath(tmp_path))
    peak = 0

    def sink(chunk: bytes) -> None:
        nonlocal peak
        acc.append(chunk)
        peak = max(peak, acc.retained_bytes)

    code = await run_process_group(
        ["sh", "-c", f"yes 'some output line' | head -c {total}"], os.getcwd(), None, sink, processes=ProcessTable()
    )
    acc.finish()
    snap = acc.snapshot()
    acc.close_temp_file()
    assert code == 0
    # The rolling tail is trimmed back to 2 x maxBytes whenever it passes 4 x maxBytes.
    assert peak <= 4 * DEFAULT_MAX_BYTES + 65536 * 2
    assert acc.raw_bytes == total
    assert snap.full_output_path is not None
    assert size_of(snap.full_output_path) == total
    assert snap.truncation.total_lines == total // len("some output line\n") + 1
    assert snap.truncation.truncated_by == "lines"
    os.unlink(snap.full_output_path)
