"""Truncation helpers (spec 7)."""

from __future__ import annotations

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.tools.truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    GREP_MAX_LINE_LENGTH,
    Truncation,
    format_size,
    split_lines,
    truncate_head,
    truncate_line,
    truncate_tail,
)


def test_constants() -> None:
    """spec 7.1"""
    assert (DEFAULT_MAX_LINES, DEFAULT_MAX_BYTES, GREP_MAX_LINE_LENGTH) == (2000, 51200, 500)


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0B"),
        (1023, "1023B"),
        (1024, "1.0KB"),
        (1536, "1.5KB"),
        (1280, "1.3KB"),  # JS toFixed rounds the exact half up
        (51200, "50.0KB"),
        (1048575, "1024.0KB"),
        (1048576, "1.0MB"),
        (200 * 1024 * 1024, "200.0MB"),
    ],
)
def test_format_size(n: int, text: str) -> None:
    """spec 7.2"""
    assert format_size(n) == text


@pytest.mark.parametrize(
    ("text", "lines"),
    [("", 0), ("a", 1), ("a\n", 1), ("a\nb", 2), ("a\nb\n", 2), ("a\n\n", 2), ("\n", 1)],
)
def test_target_line_counting(text: str, lines: int) -> None:
    """spec 7.4: empty is 0 lines, one trailing newline adds no line."""
    assert len(split_lines(text)) == lines
    assert truncate_head(text)[1].total_lines == lines
    assert truncate_tail(text)[1].total_lines == lines


def test_wire_field_names() -> None:
    """spec 7.3: every field present, camelCase on the wire."""
    _, record = truncate_tail("x\n" * 3, max_lines=2)
    assert list(msgspec.to_builtins(record)) == [
        "truncated",
        "truncatedBy",
        "totalLines",
        "totalBytes",
        "outputLines",
        "outputBytes",
        "lastLinePartial",
        "firstLineExceedsLimit",
        "maxLines",
        "maxBytes",
    ]
    assert msgspec.to_builtins(truncate_head("ok")[1])["truncatedBy"] is None


def test_untruncated_content_is_unchanged() -> None:
    """spec 7.5: trailing newline kept."""
    content, record = truncate_head("a\nb\n")
    assert content == "a\nb\n"
    assert (record.truncated, record.output_lines, record.output_bytes) == (False, 2, 4)


def test_head_by_lines() -> None:
    """spec 7.6"""
    text = "".join(f"line {i}\n" for i in range(1, 11))
    content, record = truncate_head(text, max_lines=3)
    assert content == "line 1\nline 2\nline 3"
    assert record.truncated_by == "lines"
    assert (record.total_lines, record.output_lines, record.output_bytes) == (10, 3, len(content))


def test_head_by_bytes() -> None:
    """spec 7.6: a line that would push the total over the limit is not taken."""
    content, record = truncate_head("aaaa\nbbbb\ncccc", max_bytes=10)
    assert content == "aaaa\nbbbb"
    assert (record.truncated_by, record.output_bytes) == ("bytes", 9)


def test_head_first_line_exceeds_limit() -> None:
    """spec 7.6"""
    content, record = truncate_head("x" * 100 + "\nshort", max_bytes=50)
    assert content == ""
    assert record.first_line_exceeds_limit and record.truncated_by == "bytes"
    assert (record.output_lines, record.output_bytes) == (0, 0)


def test_tail_by_lines() -> None:
    """spec 7.7"""
    text = "".join(f"line {i}\n" for i in range(1, 11))
    content, record = truncate_tail(text, max_lines=3)
    assert content == "line 8\nline 9\nline 10"
    assert (record.truncated_by, record.output_lines) == ("lines", 3)


def test_tail_partial_last_line_cuts_on_character_boundary() -> None:
    """spec 7.7: the only case that returns a partial line; never starts mid-character."""
    content, record = truncate_tail("head\n" + "€" * 10, max_bytes=10)
    assert content == "€€€"  # 9 bytes: a 10th byte would start inside a euro sign
    assert record.last_line_partial and record.truncated_by == "bytes"
    assert (record.output_lines, record.output_bytes) == (1, 9)


def test_truncate_line() -> None:
    """spec 7.8"""
    assert truncate_line("a" * 500) == ("a" * 500, False)
    assert truncate_line("a" * 501) == ("a" * 500 + "... [truncated]", True)
    assert truncate_line("abcdef", 3) == ("abc... [truncated]", True)


# --- properties -----------------------------------------------------------------------------------

texts = st.text(
    alphabet=st.sampled_from(["a", "b", "\n", "é", "€", "😀", " "]),
    max_size=400,
)
limits = st.tuples(st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=200))


def _check_common(text: str, content: str, record: Truncation, max_lines: int, max_bytes: int) -> None:
    data = content.encode("utf-8")  # would fail on a lone surrogate from a split sequence
    assert record.total_bytes == len(text.encode("utf-8"))
    assert record.total_lines == len(split_lines(text))
    if not record.truncated:
        assert content == text and record.truncated_by is None
        assert (record.output_lines, record.output_bytes) == (record.total_lines, record.total_bytes)
        return
    assert record.truncated_by in ("lines", "bytes")
    assert len(data) <= max_bytes
    assert record.output_bytes == len(data)
    assert record.output_lines <= max_lines
    # Output lines are joined without a trailing newline, so a plain split recovers them.
    assert record.output_lines == (len(content.split("\n")) if content or record.output_lines else 0)


@settings(max_examples=300, deadline=None)
@given(texts, limits)
def test_head_properties(text: str, lim: tuple[int, int]) -> None:
    """spec 7.5-7.6: never over either limit, counts match, output is a prefix of whole lines."""
    max_lines, max_bytes = lim
    content, record = truncate_head(text, max_lines=max_lines, max_bytes=max_bytes)
    _check_common(text, content, record, max_lines, max_bytes)
    if record.truncated:
        assert not record.last_line_partial
        assert split_lines(text)[: record.output_lines] == (content.split("\n") if record.output_lines else [])


@settings(max_examples=300, deadline=None)
@given(texts, limits)
def test_tail_properties(text: str, lim: tuple[int, int]) -> None:
    """spec 7.5, 7.7: never over either limit, counts match, UTF-8 never split."""
    max_lines, max_bytes = lim
    content, record = truncate_tail(text, max_lines=max_lines, max_bytes=max_bytes)
    _check_common(text, content, record, max_lines, max_bytes)
    if record.truncated:
        lines = split_lines(text)
        if record.last_line_partial:
            assert record.output_lines == 1 and lines[-1].endswith(content)
        elif record.output_lines:
            assert content.split("\n") == lines[-record.output_lines :]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=700), st.integers(min_value=1, max_value=600))
def test_line_properties(line: str, max_chars: int) -> None:
    """spec 7.8"""
    text, cut = truncate_line(line, max_chars)
    assert cut == (len(line) > max_chars)
    assert text == (line[:max_chars] + "... [truncated]" if cut else line)
