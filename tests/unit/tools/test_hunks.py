"""Hunk selection: any subset of a change's hunks gives the file with exactly those hunks applied."""

from __future__ import annotations

import re

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from pi_rpc.agent import DiffHunk
from pi_rpc.tools.edit_diff import generate_unified_patch
from pi_rpc.tools.hunks import apply_hunks, diff_hunks

_HEADER = re.compile(r"^@@ -(\d+),(\d+) \+(\d+),(\d+) @@$")


def _patched_by_text(old: str, hunks: list[DiffHunk]) -> str:
    """The oracle: apply each hunk's own text (what the client is shown) to the old lines, from
    the bottom up, as `patch` would; nothing of the module under test is used."""
    lines = old.splitlines(keepends=True)
    for hunk in sorted(hunks, key=lambda h: h.old_start, reverse=True):
        header, *body = hunk.text.rstrip("\n").split("\n")
        match = _HEADER.match(header)
        assert match is not None, header
        old_side: list[str] = []
        new_side: list[str] = []
        last: list[list[str]] = []
        for line in body:
            if line == "\\ No newline at end of file":
                for side in last:
                    side[-1] = side[-1].removesuffix("\n")
                continue
            sides = {" ": [old_side, new_side], "-": [old_side], "+": [new_side]}[line[0]]
            for side in sides:
                side.append(line[1:] + "\n")
            last = sides
        start = hunk.old_start - 1
        assert "".join(lines[start : start + hunk.old_lines]) == "".join(old_side)
        lines[start : start + hunk.old_lines] = new_side
    return "".join(lines)


_line = st.sampled_from(["a", "b", "c", "def f():", "    return 1", "", "x = 2"])
_file = st.builds(
    lambda lines, final: "\n".join(lines) + ("\n" if final and lines else ""),
    st.lists(_line, max_size=40),
    st.booleans(),
)


@seed(20260412)
@settings(max_examples=300, deadline=None)
@given(_file, _file, st.data())
def test_any_subset_of_hunks_gives_the_file_with_exactly_those_applied(old: str, new: str, data: st.DataObject) -> None:
    hunks = diff_hunks(old, new)
    kept = data.draw(st.sets(st.sampled_from([h.index for h in hunks])) if hunks else st.just(set[int]()))
    assert apply_hunks(old, new, kept) == _patched_by_text(old, [h for h in hunks if h.index in kept])
    assert apply_hunks(old, new, {h.index for h in hunks}) == new
    assert apply_hunks(old, new, set()) == old


@seed(20260412)
@settings(max_examples=150, deadline=None)
@given(_file, _file)
def test_the_hunks_are_the_patch_s_hunks_in_order(old: str, new: str) -> None:
    hunks = diff_hunks(old, new)
    patch = generate_unified_patch("f.py", old, new)
    assert patch == "--- f.py\n+++ f.py\n" + "".join(h.text for h in hunks)
    assert [h.index for h in hunks] == list(range(len(hunks)))


def test_two_distant_changes_are_two_hunks_and_keeping_one_applies_only_it() -> None:
    old = "".join(f"line {n}\n" for n in range(1, 31))
    new = old.replace("line 2\n", "line two\n").replace("line 28\n", "line twenty-eight\n")
    first, second = diff_hunks(old, new)
    assert (first.old_start, first.old_lines, first.new_start, first.new_lines) == (1, 6, 1, 6)
    assert (second.old_start, second.new_start) == (24, 24)
    assert first.text.startswith("@@ -1,6 +1,6 @@\n line 1\n-line 2\n+line two\n")
    kept = apply_hunks(old, new, {1})
    assert "line 2\n" in kept and "line twenty-eight\n" in kept and "line two\n" not in kept
