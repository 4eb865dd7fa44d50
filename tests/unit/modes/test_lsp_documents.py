"""The edits the language server sends for a write to an open document: applied by an editor to
the old text they give the new text, whatever the line ends, encodings or where the change is."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types as lsp
from pygls.workspace import TextDocument
from pygls.workspace.position_codec import PositionCodec

from pi_rpc.modes.lsp.chat import last_user_block
from pi_rpc.modes.lsp.documents import lsp_lines, minimal_edit

# Lines with every LSP line end, none at the end, astral characters (two UTF-16 units) and the
# separators str.splitlines takes for line ends but LSP does not.
_pieces = st.sampled_from(["a", "é", "😀", "x = 1", "", "\u2028", "\x0c", "  "])
_ends = st.sampled_from(["\n", "\r\n", "\r"])
_text = st.lists(st.tuples(_pieces, _ends), max_size=6).flatmap(
    lambda lines: st.sampled_from(["", "tail", "😀"]).map(lambda tail: "".join(p + e for p, e in lines) + tail)
)


def apply(old: str, edit: lsp.TextEdit, encoding: lsp.PositionEncodingKind) -> str:
    """The edit as the LSP specification says an editor applies it (pygls' own documents split
    lines as str.splitlines does, so they cannot be the reference here)."""
    lines = lsp_lines(old)

    def offset(position: lsp.Position) -> int:
        if position.line >= len(lines):
            return len(old)
        start = sum(len(line) for line in lines[: position.line])
        units = 0
        for index, char in enumerate(lines[position.line]):
            if units >= position.character:
                return start + index
            units += 2 if encoding == lsp.PositionEncodingKind.Utf16 and ord(char) > 0xFFFF else 1
        return start + len(lines[position.line])

    return old[: offset(edit.range.start)] + edit.new_text + old[offset(edit.range.end) :]


@settings(max_examples=150, deadline=None)
@given(_text, _text, st.sampled_from([lsp.PositionEncodingKind.Utf16, lsp.PositionEncodingKind.Utf32]))
def test_the_edit_turns_the_old_text_into_the_new(old: str, new: str, encoding: lsp.PositionEncodingKind) -> None:
    document = TextDocument("file:///t.py", old, version=1, position_codec=PositionCodec(encoding=encoding))
    edit = minimal_edit(document, old, new)
    if old == new:
        assert edit is None
        return
    assert edit is not None
    assert apply(old, edit, encoding) == new


def test_only_the_changed_lines_are_replaced() -> None:
    old = "a\nb\nc\nd\n"
    edit = minimal_edit(TextDocument("file:///t.py", old), old, "a\nB\nc\nd\n")
    assert edit == lsp.TextEdit(
        range=lsp.Range(start=lsp.Position(line=1, character=0), end=lsp.Position(line=2, character=0)), new_text="B\n"
    )


def test_lines_split_where_lsp_splits_them() -> None:
    assert lsp_lines("a\u2028b\r\nc\rd") == ["a\u2028b\r\n", "c\r", "d"]


def test_the_last_user_block_is_sent() -> None:
    chat = "### You\nfirst\n\n### Pi\n\nanswer\n\n### You\n\nsecond\nquestion\n"
    assert last_user_block(chat) == "second\nquestion"
    assert last_user_block("no headings yet\n") == "no headings yet"
