"""Output truncation shared by read (head), bash (tail) and grep (line), spec 7.

Two independent limits, whichever is hit first: `DEFAULT_MAX_LINES` lines and `DEFAULT_MAX_BYTES`
UTF-8 bytes. Only whole lines are kept, except when the last line alone is larger than the byte
limit in `truncate_tail` (its end is kept, cut on a character boundary). The content is returned
beside the `Truncation` record, not inside it, so `details.truncation` never repeats the output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import ROUND_HALF_UP, Decimal, localcontext
from typing import Literal, NamedTuple

from pi_rpc.ai import Wire

DEFAULT_MAX_LINES = 2000
DEFAULT_MAX_BYTES = 51200  # 50 * 1024
GREP_MAX_LINE_LENGTH = 500  # characters

TruncatedBy = Literal["lines", "bytes"]


class Truncation(Wire):
    """Spec 7.3: what was cut, travelling in `details.truncation` (camelCase on the wire)."""

    truncated: bool
    truncated_by: TruncatedBy | None
    total_lines: int
    total_bytes: int
    output_lines: int
    output_bytes: int
    last_line_partial: bool
    first_line_exceeds_limit: bool
    max_lines: int
    max_bytes: int


def format_size(n: int) -> str:
    """Spec 7.2, with JS `toFixed(1)` rounding (half away from zero on the exact value)."""
    if n < 1024:
        return f"{n}B"
    unit, divisor = ("KB", 1024) if n < 1024 * 1024 else ("MB", 1024 * 1024)
    with localcontext() as decimal_ctx:
        # n / 2**k has a finite decimal expansion: enough digits make the quotient exact.
        decimal_ctx.prec = 60
        value = (Decimal(n) / Decimal(divisor)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return f"{value}{unit}"


def split_lines(text: str) -> list[str]:
    """Pi's line counting (spec 7.4): "" is 0 lines, one trailing newline adds no empty line."""
    if not text:
        return []
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    return lines


def _byte_len(text: str) -> int:
    # Output is mostly ASCII; counting is then free, encoding would copy the whole line.
    # surrogatepass: a lone surrogate (an undecodable byte kept by Python) must not crash counting.
    return len(text) if text.isascii() else len(text.encode("utf-8", errors="surrogatepass"))


class _Kept(NamedTuple):
    """What one direction kept of a text that is over a limit."""

    content: str
    lines: int
    size: int
    by: TruncatedBy | None
    last_line_partial: bool = False
    first_line_exceeds_limit: bool = False


def _truncate(
    text: str, max_lines: int, max_bytes: int, keep: Callable[[list[str], int], _Kept]
) -> tuple[str, Truncation]:
    """The part both directions share: count, return untouched text that fits, else ask `keep`
    (given the lines and the total byte size) what survives."""
    lines = split_lines(text)
    total_bytes = _byte_len(text)
    truncated = len(lines) > max_lines or total_bytes > max_bytes
    kept = keep(lines, total_bytes) if truncated else _Kept(text, len(lines), total_bytes, None)
    return kept.content, Truncation(
        truncated=truncated,
        truncated_by=kept.by,
        total_lines=len(lines),
        total_bytes=total_bytes,
        output_lines=kept.lines,
        output_bytes=kept.size,
        last_line_partial=kept.last_line_partial,
        first_line_exceeds_limit=kept.first_line_exceeds_limit,
        max_lines=max_lines,
        max_bytes=max_bytes,
    )


def _collect(lines: Iterable[str], max_lines: int, max_bytes: int) -> tuple[list[str], int, TruncatedBy | None]:
    """Take whole lines in the given order while both limits hold; say which limit stopped it."""
    taken: list[str] = []
    size = 0
    for line in lines:
        if len(taken) >= max_lines:
            return taken, size, "lines"
        cost = _byte_len(line) + (1 if taken else 0)  # the joining newline
        if size + cost > max_bytes:
            return taken, size, "bytes"
        taken.append(line)
        size += cost
    return taken, size, None


def _stopped_by(limit: TruncatedBy | None, total_bytes: int, max_bytes: int) -> TruncatedBy:
    # Every line fitted: only the dropped trailing newline pushed the total over the byte limit.
    if limit is None:
        return "bytes" if total_bytes > max_bytes else "lines"
    return limit


def truncate_head(
    text: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[str, Truncation]:
    """Keep the beginning, whole lines only (spec 7.6); used by read."""

    def keep(lines: list[str], total_bytes: int) -> _Kept:
        if lines and _byte_len(lines[0]) > max_bytes:
            return _Kept("", 0, 0, "bytes", first_line_exceeds_limit=True)
        taken, size, limit = _collect(lines, max_lines, max_bytes)
        return _Kept("\n".join(taken), len(taken), size, _stopped_by(limit, total_bytes, max_bytes))

    return _truncate(text, max_lines, max_bytes, keep)


def utf8_tail(data: bytes, max_bytes: int) -> bytes:
    """The last <= max_bytes bytes, moved forward so they never start on a continuation byte."""
    start = max(len(data) - max_bytes, 0)
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


def truncate_tail(
    text: str, *, max_lines: int = DEFAULT_MAX_LINES, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[str, Truncation]:
    """Keep the end, whole lines except an oversized last line (spec 7.7); used by bash."""

    def keep(lines: list[str], total_bytes: int) -> _Kept:
        last = lines[-1].encode("utf-8") if lines else b""
        if len(last) > max_bytes and max_lines > 0:
            kept = utf8_tail(last, max_bytes)
            return _Kept(kept.decode("utf-8"), 1, len(kept), "bytes", last_line_partial=True)
        taken, size, limit = _collect(reversed(lines), max_lines, max_bytes)
        return _Kept("\n".join(reversed(taken)), len(taken), size, _stopped_by(limit, total_bytes, max_bytes))

    return _truncate(text, max_lines, max_bytes, keep)


def truncate_chars(text: str, max_chars: int) -> str:
    """Spec 16.5: the first max_chars code points of a text, then how many more were cut (Pi's
    compaction shows a tool result to its summariser so)."""
    if len(text) <= max_chars:
        return text
    return f"{text[:max_chars]}\n\n[... {len(text) - max_chars} more characters truncated]"


def truncate_line(line: str, max_chars: int = GREP_MAX_LINE_LENGTH) -> tuple[str, bool]:
    """Spec 7.8: cut one long line (grep matches) to max_chars code points plus a marker."""
    if len(line) <= max_chars:
        return line, False
    return f"{line[:max_chars]}... [truncated]", True
