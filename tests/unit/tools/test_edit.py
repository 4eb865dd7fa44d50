"""The edit tool (spec 11): shim, matching rules, error texts, line endings, diff and patch."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.agent.types import AgentToolResult, ToolError
from pi_rpc.ai.types import JsonSchemaSampling
from pi_rpc.tools import fs
from pi_rpc.tools.edit import EditOperations, EditParams, create_edit_tool, prepare_edit_arguments
from pi_rpc.tools.edit_diff import (
    Edit,
    apply_edits_to_normalized_content,
    diff_lines,
    generate_diff_string,
    generate_unified_patch,
    normalize_for_fuzzy_match,
)

from .helpers import run_tool, text_of, wire_details

pytestmark = pytest.mark.anyio


def _names(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


async def _edit(cwd: Path, args: dict[str, Any], operations: EditOperations | None = None) -> AgentToolResult:
    tool = create_edit_tool(operations=operations)
    assert tool.prepare_arguments is not None
    return await run_tool(tool, args, cwd)


async def _error(cwd: Path, args: dict[str, Any]) -> str:
    with pytest.raises(ToolError) as info:
        await _edit(cwd, args)
    return str(info.value)


def _one(old: str, new: str, path: str = "f.txt") -> dict[str, Any]:
    return {"path": path, "edits": [{"oldText": old, "newText": new}]}


# --- declaration and shim ------------------------------------------------------------------------


def test_declaration() -> None:
    """spec 11.1, 11.2, 4.2."""
    tool = create_edit_tool()
    assert tool.name == tool.label == "edit"
    assert tool.description == (
        "Edit a single file using exact text replacement. Every edits[].oldText must match a unique, "
        "non-overlapping region of the original file. If two changes affect the same block or nearby lines, "
        "merge them into one edit instead of emitting overlapping edits. Do not include large unchanged "
        "regions "
        "just to connect distant changes."
    )
    assert tool.prompt_snippet == (
        "Make precise file edits with exact text replacement, including multiple disjoint edits in one call"
    )
    assert tool.prompt_guidelines == [  # Pi 1.6.0's
        "Use edit for targeted changes. Batch changes to one file in a single call.",
        "Each edits[].oldText must exactly and uniquely match the original file. Keep matches short and "
        "non-overlapping; merge nearby changes without including large unchanged regions.",
    ]
    assert tool.constrained_sampling == JsonSchemaSampling(strict="prefer")
    assert tool.execution_mode == "parallel"  # spec 14.5
    _, defs = msgspec.json.schema_components([EditParams])
    root, item = defs["EditParams"], defs["ReplaceEdit"]
    assert root["required"] == ["path", "edits"]
    assert root["properties"]["path"]["description"] == "Path to the file to edit (relative or absolute)"
    assert root["properties"]["edits"]["description"] == (
        "One or more targeted replacements. Each edit is matched against the original file, not "
        "incrementally. "
        "Do not include overlapping or nested edits. If two changes touch the same block or nearby lines, "
        "merge "
        "them into one edit instead."
    )
    assert "minItems" not in root["properties"]["edits"]
    assert item["required"] == ["oldText", "newText"]
    assert item["properties"]["oldText"]["description"] == (
        "Exact text for one targeted replacement. It must be unique in the original file and must not "
        "overlap "
        "with any other edits[].oldText in the same call."
    )
    assert item["properties"]["newText"]["description"] == "Replacement text for this targeted edit."
    assert "additionalProperties" not in root and "additionalProperties" not in item


def test_shim_parses_edits_sent_as_a_json_string() -> None:
    """spec 11.3.1: a JSON array string, or a single object string."""
    assert prepare_edit_arguments({"path": "p", "edits": '[{"oldText": "a", "newText": "b"}]'}) == {
        "path": "p",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    assert prepare_edit_arguments({"path": "p", "edits": '{"oldText": "a", "newText": "b"}'}) == {
        "path": "p",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    broken = {"path": "p", "edits": "[{oops"}
    assert prepare_edit_arguments(broken) is broken  # validation reports it


def test_shim_wraps_a_single_edit_object() -> None:
    """spec 11.3.2."""
    assert prepare_edit_arguments({"path": "p", "edits": {"oldText": "a", "newText": "b"}}) == {
        "path": "p",
        "edits": [{"oldText": "a", "newText": "b"}],
    }


def test_shim_moves_legacy_top_level_fields_into_edits() -> None:
    """spec 11.3.3: appended to edits (or a new list); the top-level fields are removed."""
    assert prepare_edit_arguments({"path": "p", "oldText": "a", "newText": "b"}) == {
        "path": "p",
        "edits": [{"oldText": "a", "newText": "b"}],
    }
    assert prepare_edit_arguments(
        {"path": "p", "edits": [{"oldText": "x", "newText": "y"}], "oldText": "a", "newText": "b"}
    ) == {"path": "p", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "a", "newText": "b"}]}
    half = {"path": "p", "oldText": "a"}
    assert prepare_edit_arguments(half) is half


def test_shim_leaves_other_input_alone() -> None:
    """spec 11.3 and 3.2: non-objects and already-good arguments come back as the same object."""
    good = {"path": "p", "edits": [{"oldText": "a", "newText": "b"}]}
    assert prepare_edit_arguments(good) is good
    assert prepare_edit_arguments("nonsense") == "nonsense"
    assert prepare_edit_arguments(None) is None


async def test_legacy_shape_runs_end_to_end(tmp_path: Path) -> None:
    """spec 11.3 then 11.5.6: the shim's output validates and executes."""
    (tmp_path / "f.txt").write_text("hello world\n")
    result = await _edit(tmp_path, {"path": "f.txt", "oldText": "world", "newText": "there"})
    assert text_of(result) == "Successfully replaced 1 block(s) in f.txt."
    assert (tmp_path / "f.txt").read_text() == "hello there\n"


async def test_empty_edits_rejected(tmp_path: Path) -> None:
    """spec 11.4."""
    (tmp_path / "f.txt").write_text("x")
    assert await _error(tmp_path, {"path": "f.txt", "edits": []}) == (
        "Edit tool input is invalid. edits must contain at least one replacement."
    )


# --- access and I/O ------------------------------------------------------------------------------


async def test_missing_file(tmp_path: Path) -> None:
    """spec 11.5.1: `Could not edit file: {path}. Error code: {CODE}.` with the path as given."""
    assert await _error(tmp_path, _one("a", "b", "missing.txt")) == (
        "Could not edit file: missing.txt. Error code: ENOENT."
    )


async def test_access_error_without_code(tmp_path: Path) -> None:
    """spec 11.5.1: `Could not edit file: broken.txt. Error: disk offline.`."""

    async def access(path: str) -> None:
        raise RuntimeError("disk offline")

    async def never(*_: Any) -> Any:
        raise AssertionError("not reached")

    ops = EditOperations(read_file=never, write_file=never, access=access)
    with pytest.raises(ToolError) as info:
        await _edit(tmp_path, _one("a", "b", "broken.txt"), operations=ops)
    assert str(info.value) == "Could not edit file: broken.txt. Error: disk offline."


async def test_operations_route_io_elsewhere() -> None:
    """spec 1.11: readFile, writeFile and access are replaceable (e.g. an editor's unsaved buffer)."""
    buffers = {"/ws/a.py": b"x = 1\n"}

    async def read_file(path: str) -> bytes:
        return buffers[path]

    async def write_file(path: str, content: str) -> None:
        buffers[path] = content.encode()

    async def access(path: str) -> None:
        if path not in buffers:
            raise FileNotFoundError(2, "No such file or directory", path)

    result = await _edit(Path("/ws"), _one("x = 1", "x = 2", "a.py"), EditOperations(read_file, write_file, access))
    assert text_of(result) == "Successfully replaced 1 block(s) in a.py."
    assert buffers == {"/ws/a.py": b"x = 2\n"}


async def test_bom_and_crlf_are_preserved(tmp_path: Path) -> None:
    """spec 11.5.2-5: BOM stripped for matching and written back; CRLF kept."""
    target = tmp_path / "win.txt"
    target.write_bytes(b"\xef\xbb\xbfone\r\ntwo\r\nthree\r\n")
    await _edit(tmp_path, _one("one\ntwo", "uno\ndos", "win.txt"))
    assert target.read_bytes() == b"\xef\xbb\xbfuno\r\ndos\r\nthree\r\n"


async def test_crlf_in_old_text_matches_lf_file(tmp_path: Path) -> None:
    """spec 11.5.3: oldText and newText are normalised to LF too."""
    target = tmp_path / "unix.txt"
    target.write_bytes(b"a\nb\nc\n")
    await _edit(tmp_path, _one("a\r\nb", "A\r\nB", "unix.txt"))
    assert target.read_bytes() == b"A\nB\nc\n"


# Answers of Pi 1.6.0's own edit (edit-diff.js applyEditsToNormalizedContent, then
# applyReplacementsToOriginal) for these files and edits, recorded from the installed package.
_PI_EDITS_KEEP_LINE_ENDINGS = [
    (b"a\r\nb\nc\rd", "d", "D", b"a\r\nb\nc\rD"),
    (b"a\r\nb\nc\r\n", "b", "B", b"a\r\nB\nc\r\n"),
    (b"one\r\ntwo\nthree\r\nfour\n", "two\nthree", "2\n3\n3b", b"one\r\n2\n3\n3b\r\nfour\n"),
    (b"x\ny\r\nz", "y\nz", "Y\nZ", b"x\nY\r\nZ"),
    (b"a  \r\nb\n", "a\nb", "A\nB", b"A\r\nB\r\n"),
    (b"p\rq\rr", "q", "Q\nQ2", b"p\rQ\rQ2\rr"),
    (b"k\r\n\nl", "\nl", "L", b"k\r\nL"),
]


@pytest.mark.parametrize(("before", "old", "new", "after"), _PI_EDITS_KEEP_LINE_ENDINGS)
async def test_mixed_line_endings_are_kept_as_pi_keeps_them(
    tmp_path: Path, before: bytes, old: str, new: str, after: bytes
) -> None:
    """spec 11.5 (Pi 1.5.1): untouched text keeps its bytes, so a mixed CRLF/LF file stays mixed;
    a new text's line breaks take the ending of the line its replacement starts on."""
    target = tmp_path / "mixed.txt"
    target.write_bytes(before)
    await _edit(tmp_path, _one(old, new, "mixed.txt"))
    assert target.read_bytes() == after


# --- matching rules ------------------------------------------------------------------------------


async def test_multiple_edits_match_the_original(tmp_path: Path) -> None:
    """spec 11.6: all edits match the same original; the count is reported."""
    (tmp_path / "f.txt").write_text("alpha\nbeta\ngamma\n")
    result = await _edit(
        tmp_path,
        {
            "path": "f.txt",
            "edits": [{"oldText": "gamma", "newText": "alpha"}, {"oldText": "alpha", "newText": "A"}],
        },
    )
    assert text_of(result) == "Successfully replaced 2 block(s) in f.txt."
    assert (tmp_path / "f.txt").read_text() == "A\nbeta\nalpha\n"


async def test_empty_old_text(tmp_path: Path) -> None:
    """spec 11.6: single and multi wording (0-based index)."""
    (tmp_path / "f.txt").write_text("x")
    assert await _error(tmp_path, _one("", "y")) == "oldText must not be empty in f.txt."
    multi = {"path": "f.txt", "edits": [{"oldText": "x", "newText": "y"}, {"oldText": "", "newText": "z"}]}
    assert await _error(tmp_path, multi) == "edits[1].oldText must not be empty in f.txt."


async def test_not_found(tmp_path: Path) -> None:
    """spec 11.6: single and multi wording."""
    (tmp_path / "f.txt").write_text("abc\n")
    assert await _error(tmp_path, _one("zzz", "y")) == (
        "Could not find the exact text in f.txt. The old text must match exactly including all whitespace and newlines."
    )
    multi = {
        "path": "f.txt",
        "edits": [{"oldText": "abc", "newText": "y"}, {"oldText": "zzz", "newText": "z"}],
    }
    assert await _error(tmp_path, multi) == (
        "Could not find edits[1] in f.txt. The oldText must match exactly including all whitespace and newlines."
    )


async def test_duplicates_are_counted_in_fuzzy_space(tmp_path: Path) -> None:
    """spec 11.6: trailing whitespace and CRLF variants count as the same text."""
    (tmp_path / "f.txt").write_text("hello world   \nhello world\n")
    assert await _error(tmp_path, _one("hello world", "x")) == (
        "Found 2 occurrences of the text in f.txt. The text must be unique. Please provide more context to "
        "make "
        "it unique."
    )
    (tmp_path / "g.txt").write_bytes(b"a\r\nb\na\nb\nc")
    multi = {
        "path": "g.txt",
        "edits": [{"oldText": "c", "newText": "C"}, {"oldText": "a\nb", "newText": "x"}],
    }
    assert await _error(tmp_path, multi) == (
        "Found 2 occurrences of edits[1] in g.txt. Each oldText must be unique. Please provide more "
        "context to "
        "make it unique."
    )


async def test_overlapping_edits(tmp_path: Path) -> None:
    """spec 11.6: indices are the original ones, in position order."""
    (tmp_path / "f.txt").write_text("abcdef")
    edits = [{"oldText": "cde", "newText": "1"}, {"oldText": "abc", "newText": "2"}]
    assert await _error(tmp_path, {"path": "f.txt", "edits": edits}) == (
        "edits[1] and edits[0] overlap in f.txt. Merge them into one edit or target disjoint regions."
    )


async def test_no_change(tmp_path: Path) -> None:
    """spec 11.6: single and multi wording."""
    (tmp_path / "f.txt").write_text("same\nother\n")
    assert await _error(tmp_path, _one("same", "same")) == (
        "No changes made to f.txt. The replacement produced identical content. This might indicate an "
        "issue with "
        "special characters or the text not existing as expected."
    )
    multi = {
        "path": "f.txt",
        "edits": [{"oldText": "same", "newText": "same"}, {"oldText": "other", "newText": "other"}],
    }
    assert await _error(tmp_path, multi) == "No changes made to f.txt. The replacements produced identical content."


async def test_failure_writes_nothing(tmp_path: Path) -> None:
    """spec 11.6: atomic across edits - one bad edit and the file is untouched."""
    target = tmp_path / "f.txt"
    target.write_text("keep me\nand me\n")
    multi = {
        "path": "f.txt",
        "edits": [{"oldText": "keep", "newText": "lose"}, {"oldText": "absent", "newText": "x"}],
    }
    await _error(tmp_path, multi)
    assert target.read_text() == "keep me\nand me\n"


async def test_fuzzy_match_keeps_untouched_lines_byte_for_byte(tmp_path: Path) -> None:
    """spec 11.6: smart quotes / dashes / trailing spaces match fuzzily; other lines keep their bytes."""
    target = tmp_path / "f.py"
    original = "title = \u2018Caf\u00e9\u2019   \nnote = \u201cleave \u2014 me\u201d  \nvalue = 1\n"
    target.write_text(original)
    result = await _edit(tmp_path, _one("title = 'Café'\n", "title = 'Bar'\n", "f.py"))
    assert text_of(result) == "Successfully replaced 1 block(s) in f.py."
    assert target.read_text() == "title = 'Bar'\nnote = \u201cleave \u2014 me\u201d  \nvalue = 1\n"


async def test_one_fuzzy_edit_moves_all_edits_to_fuzzy_space(tmp_path: Path) -> None:
    """spec 11.6: if ANY edit needed fuzzy matching, ALL are matched against the fuzzy content."""
    target = tmp_path / "f.txt"
    target.write_text("a \u2013 b\nplain   \nlast\n")
    edits = [{"oldText": "a - b", "newText": "AB"}, {"oldText": "last", "newText": "LAST"}]
    await _edit(tmp_path, {"path": "f.txt", "edits": edits})
    assert target.read_text() == "AB\nplain   \nLAST\n"


def test_fuzzy_normalisation() -> None:
    """spec 11.6: NFKC, trailing whitespace, quotes, dashes, spaces."""
    text = "\ufb01 \u2018a\u2019 \u201cb\u201d \u2010\u2015\u2212 x\u00a0y\u3000z  \t\nnext "
    assert normalize_for_fuzzy_match(text) == "fi 'a' \"b\" --- x y z\nnext"


@settings(max_examples=80, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="abc xyz", min_size=1, max_size=6), min_size=1, max_size=12, unique=True),
    data=st.data(),
)
def test_disjoint_unique_edits_apply_like_a_direct_rewrite(lines: list[str], data: st.DataObject) -> None:
    """spec 11.6: matched against the original, applied all at once, independent of order."""
    tagged = [f"<{i}:{line}>" for i, line in enumerate(lines)]
    content = "\n".join(tagged) + "\n"
    chosen = data.draw(st.lists(st.integers(0, len(tagged) - 1), min_size=1, unique=True))
    edits = [Edit(tagged[i], f"[{i}]") for i in chosen]
    base, new = apply_edits_to_normalized_content(content, edits, "f")
    expected = "\n".join(f"[{i}]" if i in chosen else line for i, line in enumerate(tagged)) + "\n"
    assert (base, new) == (content, expected)


# --- result details: display diff and patch ------------------------------------------------------


async def test_details_carry_diff_patch_and_first_changed_line(tmp_path: Path) -> None:
    """spec 11.5.6, 11.7, 11.8: context 4, `...` for skipped runs, 4-line-context patch."""
    (tmp_path / "f.txt").write_text("".join(f"l{i}\n" for i in range(1, 21)))
    result = await _edit(tmp_path, _one("l10\n", "L10\n"))
    assert wire_details(result) == {
        "diff": "\n".join(
            [
                "    ...",
                "  6 l6",
                "  7 l7",
                "  8 l8",
                "  9 l9",
                "-10 l10",
                "+10 L10",
                " 11 l11",
                " 12 l12",
                " 13 l13",
                " 14 l14",
                "    ...",
            ]
        ),
        "patch": "--- f.txt\n+++ f.txt\n@@ -6,9 +6,9 @@\n l6\n l7\n l8\n l9\n-l10\n+L10\n l11\n l12\n l13\n l14\n",
        "firstChangedLine": 10,
    }


def test_display_diff_between_distant_changes() -> None:
    """spec 11.7: between changes all if <= 8 lines, else first 4, `...`, last 4."""
    old = "".join(f"l{i}\n" for i in range(1, 31))
    new = old.replace("l5\n", "L5\n").replace("l25\n", "L25\n")
    diff, first = generate_diff_string(old, new)
    assert first == 5
    assert diff.split("\n") == [
        "  1 l1", "  2 l2", "  3 l3", "  4 l4",
        "- 5 l5", "+ 5 L5",
        "  6 l6", "  7 l7", "  8 l8", "  9 l9",
        "    ...",
        " 21 l21", " 22 l22", " 23 l23", " 24 l24",
        "-25 l25", "+25 L25",
        " 26 l26", " 27 l27", " 28 l28", " 29 l29",
        "    ...",
    ]  # fmt: skip
    near = old.replace("l5\n", "L5\n").replace("l12\n", "L12\n")
    near_diff, _ = generate_diff_string(old, near)
    assert [line for line in near_diff.split("\n") if line.strip() == "..."] == ["    ..."]  # only the tail
    assert generate_unified_patch("f", old, new).split("\n")[2:3] == ["@@ -1,9 +1,9 @@"]
    assert "@@ -21,9 +21,9 @@" in generate_unified_patch("f", old, new)


def test_patch_marks_missing_final_newline() -> None:
    """spec 11.8: jsdiff's `\\ No newline at end of file` markers."""
    assert generate_unified_patch("f.txt", "a\nb", "a\nc") == (
        "--- f.txt\n+++ f.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n"
        "\\ No newline at end of file\n"
    )
    assert generate_unified_patch("f.txt", "a\nb", "a\nb\nc") == (
        "--- f.txt\n+++ f.txt\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n"
        "\\ No newline at end of file\n"
    )


def test_patch_for_pure_insertion_and_deletion() -> None:
    """spec 11.8: an empty side's start is one lower (unified diff convention)."""
    assert generate_unified_patch("f", "", "new\n") == "--- f\n+++ f\n@@ -0,0 +1,1 @@\n+new\n"
    assert generate_unified_patch("f", "gone\n", "") == "--- f\n+++ f\n@@ -1,1 +0,0 @@\n-gone\n"


@settings(max_examples=80, deadline=None)
@given(
    old=st.lists(st.sampled_from(["a", "b", "c", ""]), max_size=15),
    new=st.lists(st.sampled_from(["a", "b", "d", ""]), max_size=15),
)
def test_line_diff_reconstructs_both_sides(old: list[str], new: list[str]) -> None:
    """spec 11.7: equal+removed runs rebuild the old text, equal+added runs the new one."""
    old_text, new_text = "\n".join(old), "\n".join(new)
    parts = diff_lines(old_text, new_text)
    assert "".join("".join(p.lines) for p in parts if not p.added) == old_text
    assert "".join("".join(p.lines) for p in parts if not p.removed) == new_text


# --- abort ---------------------------------------------------------------------------------------


async def test_abort_mid_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """spec 11.5 with atomic writes: an abort during the write leaves the original content."""
    target = tmp_path / "f.txt"
    target.write_text("before\n")
    started = anyio.Event()
    proceed = threading.Event()
    original_fill = fs._fill

    def slow_fill(fd: int, data: bytes, mode: int) -> None:
        anyio.from_thread.run_sync(started.set)
        proceed.wait()
        original_fill(fd, data, mode)

    monkeypatch.setattr(fs, "_fill", slow_fill)
    scope = anyio.CancelScope()

    async def run() -> None:
        with scope:
            await _edit(tmp_path, _one("before", "after"))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await started.wait()
            scope.cancel()
            proceed.set()
    assert scope.cancelled_caught
    assert target.read_text() == "before\n"
    assert _names(tmp_path) == ["f.txt"]


@pytest.mark.anyio
async def test_bytes_that_are_not_utf8_survive_an_edit(tmp_path: Path) -> None:
    """Improvement over Pi (which decodes with replacement): a Latin-1 byte elsewhere in the
    file is written back unchanged, and the diff shows it as U+FFFD."""
    target = tmp_path / "legacy.txt"
    target.write_bytes(b"caf\xe9 au lait\nprice = 1\n")
    result = await run_tool(
        create_edit_tool(),
        {"path": "legacy.txt", "edits": [{"oldText": "price = 1", "newText": "price = 2"}]},
        str(tmp_path),
    )
    assert target.read_bytes() == b"caf\xe9 au lait\nprice = 2\n"
    assert "caf\ufffd au lait" in wire_details(result)["patch"]


@pytest.mark.anyio
async def test_a_fifo_cannot_be_edited(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ToolError, match="Could not edit file: pipe. Error code: EINVAL."):
        await run_tool(create_edit_tool(), {"path": "pipe", "edits": [{"oldText": "a", "newText": "b"}]}, str(tmp_path))


@pytest.mark.anyio
async def test_a_symlink_loop_gets_node_style_text(tmp_path: Path) -> None:
    os.symlink("b", tmp_path / "a")
    os.symlink("a", tmp_path / "b")
    with pytest.raises(ToolError, match=r"^Could not edit file: a\. Error code: ELOOP\.$"):
        await run_tool(create_edit_tool(), {"path": "a", "edits": [{"oldText": "a", "newText": "b"}]}, str(tmp_path))
