"""Matching and diffing for the edit tool (spec 11.5-11.8).

Edits are matched against one LF-normalised original: exactly first, then in a "fuzzy" view
(NFKC, trailing whitespace stripped, typographic quotes, dashes and spaces made ASCII). When any
edit needs the fuzzy view, all of them are matched in it, and only the lines the replacements touch
are taken from the fuzzy text; every other line keeps its original bytes.

The line diff is difflib's (no autojunk), grouped like jsdiff's `diffLines`; on ambiguous inputs
the grouping can differ from jsdiff's Myers implementation (spec 19.5).
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from collections.abc import Sequence
from typing import Literal, Protocol

import msgspec

from pi_rpc.agent import ToolError

_SINGLE_QUOTES = re.compile("[\u2018\u2019\u201a\u201b]")
_DOUBLE_QUOTES = re.compile("[\u201c\u201d\u201e\u201f]")
_DASHES = re.compile("[\u2010-\u2015\u2212]")
_SPACES = re.compile("[\u00a0\u2002-\u200a\u202f\u205f\u3000]")
_LINES_WITH_ENDINGS = re.compile(r"[^\n]*\n|[^\n]+")


LineEnding = Literal["\r\n", "\n"]


class EditLike(Protocol):
    @property
    def old_text(self) -> str: ...

    @property
    def new_text(self) -> str: ...


class Edit(msgspec.Struct, frozen=True):
    old_text: str
    new_text: str


# --- line endings and BOM ------------------------------------------------------------------------


def detect_line_ending(content: str) -> LineEnding:
    """CRLF when the first line feed is part of a CRLF, else LF (spec 11.5 step 3)."""
    lf = content.find("\n")
    if lf == -1:
        return "\n"
    return "\r\n" if lf > 0 and content[lf - 1] == "\r" else "\n"


def restore_line_endings(text: str, ending: LineEnding) -> str:
    """LF-normalised `text` in `ending` throughout (for a text no original line ending maps onto)."""
    return text.replace("\n", "\r\n") if ending == "\r\n" else text


def normalize_to_lf(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def strip_bom(content: str) -> tuple[str, str]:
    """(bom, text): the model never includes the invisible U+FEFF in oldText."""
    return ("\ufeff", content[1:]) if content.startswith("\ufeff") else ("", content)


def normalize_for_fuzzy_match(text: str) -> str:
    """Spec 11.6: the view in which near-misses (trailing spaces, smart quotes, dashes) match."""
    text = unicodedata.normalize("NFKC", text)
    text = "\n".join(line.rstrip() for line in text.split("\n"))
    text = _SINGLE_QUOTES.sub("'", text)
    text = _DOUBLE_QUOTES.sub('"', text)
    text = _DASHES.sub("-", text)
    return _SPACES.sub(" ", text)


# --- applying edits ------------------------------------------------------------------------------


class _Match(msgspec.Struct):
    index: int  # position of the edit in the call
    start: int
    length: int
    new_text: str

    @property
    def end(self) -> int:
        return self.start + self.length


def _splice(content: str, matches: Sequence[_Match], offset: int = 0) -> str:
    """Replace from last to first so earlier offsets stay valid."""
    for match in sorted(matches, key=lambda m: m.start, reverse=True):
        start = match.start - offset
        content = content[:start] + match.new_text + content[start + match.length :]
    return content


def _line_spans(content: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    position = 0
    for line in _LINES_WITH_ENDINGS.findall(content):
        spans.append((position, position + len(line)))
        position += len(line)
    return spans


def _touched_lines(spans: list[tuple[int, int]], match: _Match) -> tuple[int, int]:
    """Half-open range of the lines a replacement covers."""
    first = next((i for i, (start, end) in enumerate(spans) if start <= match.start < end), -1)
    if first == -1:
        raise ValueError("Replacement range is outside the base content.")
    last = first
    while last < len(spans) and spans[last][1] < match.end:
        last += 1
    if last >= len(spans):
        raise ValueError("Replacement range is outside the base content.")
    return first, last + 1


def _widened_to_lines(content: str, fuzzy: str, matches: list[_Match]) -> list[_Match]:
    """Fuzzy-space matches as replacements of whole lines of `content` (spec 11.6): the lines a
    match touches are rewritten from the fuzzy text, every other line is the original's."""
    original_spans = _line_spans(content)
    spans = _line_spans(fuzzy)
    if len(original_spans) != len(spans):
        raise ValueError("Cannot preserve unchanged lines because the base content has a different line count.")
    groups: list[tuple[int, int, list[_Match]]] = []
    for match in sorted(matches, key=lambda m: m.start):
        first, last = _touched_lines(spans, match)
        if groups and first < groups[-1][1]:
            start, end, members = groups[-1]
            groups[-1] = (start, max(end, last), [*members, match])
        else:
            groups.append((first, last, [match]))
    widened: list[_Match] = []
    for first, last, members in groups:
        block_start, block_end = spans[first][0], spans[last - 1][1]
        start, end = original_spans[first][0], original_spans[last - 1][1]
        text = _splice(fuzzy[block_start:block_end], members, block_start)
        widened.append(_Match(members[0].index, start, end - start, text))
    return widened


def apply_replacements_to_original(original: str, replacements: Sequence[_Match]) -> str:
    """Replacements found in `normalize_to_lf(original)` applied to `original` itself: text outside
    them keeps its bytes and line endings (a mixed CRLF/LF file stays mixed), and the line breaks of
    a new text take the ending of the line where its replacement starts (Pi 1.5.1)."""
    # The n-th CRLF's LF, at original position p, is at p - n once normalised.
    normalised_lfs = [m.start() - n for n, m in enumerate(re.finditer("\r\n", original))]

    def to_original(offset: int) -> int:
        return offset + bisect.bisect_left(normalised_lfs, offset)

    parts: list[str] = []

    def push(part: str) -> None:
        if not part:
            return
        # A CR before the seam and an LF after it would fuse into one CRLF: keep them two breaks.
        if parts and parts[-1].endswith("\r") and part.startswith("\n"):
            parts.append("\n")
        parts.append(part)

    position = 0
    for replacement in sorted(replacements, key=lambda m: m.start):
        start = to_original(replacement.start)
        push(original[position:start])
        ending = _line_ending_at(original, start)
        push(replacement.new_text if ending == "\n" else replacement.new_text.replace("\n", ending))
        position = to_original(replacement.end)
    push(original[position:])
    return "".join(parts)


def _line_ending_at(content: str, offset: int) -> str:
    """The ending of the line holding `offset` (the line before, for an unterminated last line); a
    lone CR counts only in a file without any LF (classic Mac), elsewhere it is inside a line."""
    line_feed = content.find("\n", offset)
    if line_feed == -1:
        line_feed = content.rfind("\n", 0, offset + 1)
    if line_feed == -1:
        return "\r" if "\r" in content else "\n"
    return "\r\n" if line_feed > 0 and content[line_feed - 1] == "\r" else "\n"


def _find(content: str, old_text: str) -> tuple[int, int, bool]:
    """(start, length, fuzzy) of the first match, exact before fuzzy; start -1 if none."""
    exact = content.find(old_text)
    if exact != -1:
        return exact, len(old_text), False
    fuzzy_old = normalize_for_fuzzy_match(old_text)
    fuzzy = normalize_for_fuzzy_match(content).find(fuzzy_old)
    return fuzzy, len(fuzzy_old), fuzzy != -1


def _count_occurrences(content: str, old_text: str) -> int:
    return normalize_for_fuzzy_match(content).count(normalize_for_fuzzy_match(old_text))


def _not_found(path: str, index: int, total: int) -> ToolError:
    if total == 1:
        return ToolError(
            f"Could not find the exact text in {path}. "
            "The old text must match exactly including all whitespace and newlines."
        )
    return ToolError(
        f"Could not find edits[{index}] in {path}. The oldText must match exactly including all whitespace "
        "and newlines."
    )


def _duplicate(path: str, index: int, total: int, count: int) -> ToolError:
    if total == 1:
        return ToolError(
            f"Found {count} occurrences of the text in {path}. "
            "The text must be unique. Please provide more context to make it unique."
        )
    return ToolError(
        f"Found {count} occurrences of edits[{index}] in {path}. "
        "Each oldText must be unique. Please provide more context to make it unique."
    )


def _no_change(path: str, total: int) -> ToolError:
    if total == 1:
        return ToolError(
            f"No changes made to {path}. The replacement produced identical content. "
            "This might indicate an issue with special characters or the text not existing as expected."
        )
    return ToolError(f"No changes made to {path}. The replacements produced identical content.")


def apply_edits_to_normalized_content(content: str, edits: Sequence[EditLike], path: str) -> tuple[str, str]:
    """Spec 11.6: (base, new) for LF-normalised `content`; raises ToolError, all or nothing."""
    base, new, _ = plan_replacements(content, edits, path)
    return base, new


def plan_replacements(content: str, edits: Sequence[EditLike], path: str) -> tuple[str, str, list[_Match]]:
    """(base, new, replacements) for LF-normalised `content`: the replacements, in `content`'s
    offsets, are what turns base into new (for `apply_replacements_to_original`)."""
    normalized = [Edit(normalize_to_lf(e.old_text), normalize_to_lf(e.new_text)) for e in edits]
    total = len(normalized)
    for i, edit in enumerate(normalized):
        if not edit.old_text:
            raise ToolError(
                f"oldText must not be empty in {path}."
                if total == 1
                else f"edits[{i}].oldText must not be empty in {path}."
            )
    use_fuzzy = any(_find(content, edit.old_text)[2] for edit in normalized)
    base = normalize_for_fuzzy_match(content) if use_fuzzy else content
    matches: list[_Match] = []
    for i, edit in enumerate(normalized):
        start, length, _ = _find(base, edit.old_text)
        if start == -1:
            raise _not_found(path, i, total)
        count = _count_occurrences(base, edit.old_text)
        if count > 1:
            raise _duplicate(path, i, total, count)
        matches.append(_Match(i, start, length, edit.new_text))
    ordered = sorted(matches, key=lambda m: m.start)
    for previous, current in zip(ordered, ordered[1:], strict=False):
        if previous.end > current.start:
            raise ToolError(
                f"edits[{previous.index}] and edits[{current.index}] overlap in {path}. "
                "Merge them into one edit or target disjoint regions."
            )
    replacements = _widened_to_lines(content, base, matches) if use_fuzzy else matches
    new = _splice(content, replacements)
    if new == content:
        raise _no_change(path, total)
    return content, new, replacements


# --- diffs ---------------------------------------------------------------------------------------


class DiffPart(msgspec.Struct):
    """One run of jsdiff's `diffLines` output: lines keep their trailing newline."""

    lines: list[str]
    added: bool = False
    removed: bool = False


def _tokens(text: str) -> list[str]:
    return _LINES_WITH_ENDINGS.findall(text)


def diff_lines(old: str, new: str) -> list[DiffPart]:
    """Line diff as runs of equal / removed / added lines (removals before additions)."""
    import difflib  # on an edit's first diff, not in every daemon's start-up

    a, b = _tokens(old), _tokens(new)
    parts: list[DiffPart] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            parts.append(DiffPart(a[i1:i2]))
            continue
        if i2 > i1:
            parts.append(DiffPart(a[i1:i2], removed=True))
        if j2 > j1:
            parts.append(DiffPart(b[j1:j2], added=True))
    return parts


def _strip_endings(lines: list[str]) -> list[str]:
    return [line[:-1] if line.endswith("\n") else line for line in lines]


def generate_diff_string(old: str, new: str, context_lines: int = 4) -> tuple[str, int | None]:
    """Spec 11.7: the display diff and the new-file line number of the first change."""
    width = len(str(max(len(old.split("\n")), len(new.split("\n")))))
    out: list[str] = []
    old_no = new_no = 1
    first_changed: int | None = None
    parts = diff_lines(old, new)

    def context(lines: list[str]) -> None:
        nonlocal old_no, new_no
        for line in lines:
            out.append(f" {str(old_no).rjust(width)} {line}")
            old_no += 1
            new_no += 1

    def skip(count: int) -> None:
        nonlocal old_no, new_no
        if count > 0:
            out.append(f" {' ' * width} ...")
            old_no += count
            new_no += count

    last_was_change = False
    for i, part in enumerate(parts):
        lines = _strip_endings(part.lines)
        if part.added or part.removed:
            if first_changed is None:
                first_changed = new_no
            for line in lines:
                if part.added:
                    out.append(f"+{str(new_no).rjust(width)} {line}")
                    new_no += 1
                else:
                    out.append(f"-{str(old_no).rjust(width)} {line}")
                    old_no += 1
            last_was_change = True
            continue
        next_is_change = i + 1 < len(parts) and (parts[i + 1].added or parts[i + 1].removed)
        if last_was_change and next_is_change:
            if len(lines) <= context_lines * 2:
                context(lines)
            else:
                context(lines[:context_lines])
                skip(len(lines) - 2 * context_lines)
                context(lines[-context_lines:])
        elif last_was_change:
            context(lines[:context_lines])
            skip(len(lines) - min(len(lines), context_lines))
        elif next_is_change:
            hidden = max(0, len(lines) - context_lines)
            skip(hidden)
            context(lines[hidden:])
        else:
            old_no += len(lines)
            new_no += len(lines)
        last_was_change = False
    return "\n".join(out), first_changed


class PatchHunk(msgspec.Struct):
    """One `@@` hunk of a unified patch: 1-based starts and counts of both sides, the body lines
    (each with its ` `/`-`/`+` prefix and its newline), and which `diff_lines` parts it changes."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    body: list[str]
    parts: range


def patch_hunks(parts: Sequence[DiffPart], context_lines: int = 4) -> list[PatchHunk]:
    """The hunks jsdiff's structuredPatch groups the parts into: changes closer than twice the
    context share a hunk. The one grouping both the patch and a hunk selection number by."""
    hunks: list[PatchHunk] = []
    old_no = new_no = 1
    hunk_old = hunk_new = 0  # 0: no hunk open
    first = 0
    body: list[str] = []
    for i, part in enumerate(parts):
        if part.added or part.removed:
            if not hunk_old:
                lead = parts[i - 1].lines[-context_lines:] if i > 0 and context_lines > 0 else []
                body = [" " + line for line in lead]
                hunk_old, hunk_new, first = old_no - len(lead), new_no - len(lead), i
            body += [("+" if part.added else "-") + line for line in part.lines]
            if part.added:
                new_no += len(part.lines)
            else:
                old_no += len(part.lines)
            continue
        if hunk_old:
            if len(part.lines) <= context_lines * 2 and i < len(parts) - 1:
                body += [" " + line for line in part.lines]
            else:
                tail = part.lines[:context_lines]
                body += [" " + line for line in tail]
                old_count, new_count = old_no - hunk_old + len(tail), new_no - hunk_new + len(tail)
                hunks.append(PatchHunk(hunk_old, old_count, hunk_new, new_count, body, range(first, i)))
                hunk_old = hunk_new = 0
        old_no += len(part.lines)
        new_no += len(part.lines)
    if hunk_old:
        old_count, new_count = old_no - hunk_old, new_no - hunk_new
        hunks.append(PatchHunk(hunk_old, old_count, hunk_new, new_count, body, range(first, len(parts))))
    return hunks


def hunk_text(hunk: PatchHunk) -> str:
    """The hunk as a unified patch writes it: its `@@` header and body, newline-terminated."""
    # Unified diff quirk: an empty side's start is one lower than expected.
    out = [
        f"@@ -{hunk.old_start - 1 if hunk.old_count == 0 else hunk.old_start},{hunk.old_count} "
        f"+{hunk.new_start - 1 if hunk.new_count == 0 else hunk.new_start},{hunk.new_count} @@"
    ]
    for line in hunk.body:
        if line.endswith("\n"):
            out.append(line[:-1])
        else:
            out.append(line)
            out.append("\\ No newline at end of file")
    return "\n".join(out) + "\n"


def generate_unified_patch(path: str, old: str, new: str, context_lines: int = 4) -> str:
    """Spec 11.8: a unified diff with file headers only, as jsdiff's createTwoFilesPatch."""
    hunks = patch_hunks(diff_lines(old, new), context_lines)
    return f"--- {path}\n+++ {path}\n" + "".join(hunk_text(hunk) for hunk in hunks)


__all__ = [
    "DiffPart",
    "Edit",
    "LineEnding",
    "apply_edits_to_normalized_content",
    "apply_replacements_to_original",
    "detect_line_ending",
    "plan_replacements",
    "diff_lines",
    "generate_diff_string",
    "generate_unified_patch",
    "hunk_text",
    "patch_hunks",
    "PatchHunk",
    "normalize_for_fuzzy_match",
    "normalize_to_lf",
    "restore_line_endings",
    "strip_bom",
]
