"""The plugin's side of `fs/readTextFile` and `fs/writeTextFile`, called directly in a real
headless Neovim: a write changes only the lines that differ, as one undo step, and what a read
returns is what `:write` would put in the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Editor

pytestmark = pytest.mark.nvim

# A few distinct lines, so that diffs between two lists have insertions, deletions and moves.
LINES = st.lists(st.sampled_from(["a", "b", "c", "", "def f():", "    return 1"]), max_size=12)

WRITE_AND_UNDO = """
local path, lines = ...
local files = require('pi_rpc.files')
local buf = files.loaded_buffer(path)
local before = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local seq = vim.fn.undotree(buf).seq_cur
local _, err = files.write_text_file({ path = path, content = table.concat(lines, '\\n') .. '\\n' })
local after = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
local read = files.read_text_file({ path = path }).content
local steps = vim.fn.undotree(buf).seq_last - seq
if steps > 0 then
  vim.api.nvim_buf_call(buf, function() vim.cmd('silent undo') end)
end
return { err = err, after = after, read = read, undone = vim.api.nvim_buf_get_lines(buf, 0, -1, false),
         before = before, steps = steps }
"""


@pytest.fixture
def ed(make_editor: Any) -> Editor:
    editor: Editor = make_editor()
    (editor.workspace / "f.txt").write_text("start\n")
    editor.nvim.command("edit f.txt")
    return editor


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=LINES, new=LINES)
def test_a_write_is_one_undo_step_and_reads_back(ed: Editor, old: list[str], new: list[str]) -> None:
    path = str(ed.workspace / "f.txt")
    ed.nvim.current.buffer[:] = old or [""]  # the user's unsaved text
    got = ed.lua(WRITE_AND_UNDO, path, new)
    assert got.get("err") is None
    assert got["after"] == (new or [""])
    assert got["read"] == "\n".join(new) + "\n"
    assert got["undone"] == got["before"]
    assert got["steps"] == (0 if (new or [""]) == (old or [""]) else 1)
    assert (ed.workspace / "f.txt").read_text() == "start\n"  # the buffer had unsaved changes


def test_crlf_files_keep_their_line_ends(ed: Editor) -> None:
    path = ed.workspace / "dos.txt"
    path.write_bytes(b"one\r\ntwo\r\n")
    ed.nvim.command("edit dos.txt")
    assert ed.lua("return vim.bo.fileformat") == "dos"
    read = ed.lua("return require('pi_rpc.files').read_text_file({ path = ... }).content", str(path))
    assert read == "one\r\ntwo\r\n"
    ed.lua("require('pi_rpc.files').write_text_file({ path = ..., content = 'one\\r\\n2\\r\\n' })", str(path))
    assert ed.nvim.current.buffer[:] == ["one", "2"]
    assert path.read_bytes() == b"one\r\n2\r\n"  # saved: the buffer had no unsaved changes


def test_files_no_buffer_holds_are_read_and_written_on_disk(ed: Editor, tmp_path: Path) -> None:
    path = ed.workspace / "elsewhere.txt"
    path.write_text("disk text\n")
    files = "require('pi_rpc.files')"
    assert ed.lua(f"return {files}.read_text_file({{ path = ... }}).content", str(path)) == "disk text\n"
    ed.lua(f"{files}.write_text_file({{ path = ..., content = 'new\\n' }})", str(path))
    assert path.read_text() == "new\n"
    assert ed.lua("return vim.fn.bufloaded(...)", str(path)) == 0
    missing = ed.lua(f"local _, err = {files}.read_text_file({{ path = ... }}) return err", str(tmp_path / "no"))
    assert "No such file" in missing["message"]


def test_a_write_while_the_user_types_is_an_undo_step_of_its_own(ed: Editor) -> None:
    """`u` takes back the agent's change and keeps what the user typed in insert mode meanwhile."""
    path = str(ed.workspace / "f.txt")
    ed.nvim.input("Gotyped")  # still in insert mode
    assert ed.nvim.api.get_mode()["mode"] == "i"
    ed.lua("require('pi_rpc.files').write_text_file({ path = ..., content = 'START\\ntyped\\n' })", path)
    ed.nvim.input("<Esc>u")
    ed.wait("vim.fn.mode() == 'n'")
    assert ed.nvim.current.buffer[:] == ["start", "typed"]
