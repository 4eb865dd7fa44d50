""":PiRewind in a real headless Neovim against the real daemon on the scripted model: a run edits
two files, writes one, creates one and deletes one with bash; a second run edits again. Rewinding
the files to before the second run gives the first run's result, to before the first the original
tree, and the loaded buffers show it; a file the user changed in between is a conflict, shown in
the preview with its diff and left alone until forced. The pickers are vim.ui.select, stubbed
inside Neovim to choose by label as a user would."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from .conftest import Editor, require_daemon
from .screenshot import resize, screenshot

pytestmark = pytest.mark.nvim

Tree = dict[str, tuple[int, bytes]]


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


def edit(path: str, old: str, new: str) -> dict[str, Any]:
    return {"toolCall": {"name": "edit", "arguments": {"path": path, "edits": [{"oldText": old, "newText": new}]}}}


def bash(command: str) -> dict[str, Any]:
    return {"toolCall": {"name": "bash", "arguments": {"command": command}}}


SCRIPT = {
    "replies": [
        {
            "match": "^first",
            "turns": [
                [edit("a.txt", "alpha", "ALPHA")],
                [edit("b.txt", "beta", "BETA")],
                [{"toolCall": {"name": "write", "arguments": {"path": "notes/new.md", "content": "# new\n"}}}],
                [bash("printf 'made\\n' > made.txt && sed -i s/one/two/ tool.sh && chmod 700 tool.sh")],
                [bash("rm gone.txt")],
                [{"text": "first done"}],
            ],
        },
        {"match": "^second", "turns": [[edit("a.txt", "ALPHA", "OMEGA")], [{"text": "second done"}]]},
    ]
}

# vim.ui.select answers by the first label holding the next queued text; what each picker asked
# (its prompt, its labels, the preview split's lines when one is open) is kept for the asserts.
# HOLD leaves the picker open (its preview on screen) until the test calls _G.held(text).
HOLD = "<hold>"
STUB_SELECT = """
_G.answers, _G.asked = {}, {}
vim.ui.select = function(items, opts, on_choice)
  local want = table.remove(_G.answers, 1)
  if want == '<hold>' then
    _G.held = function(text)
      _G.held = nil
      table.insert(_G.answers, 1, text)
      vim.ui.select(items, opts, on_choice)
    end
    return
  end
  local labels = {}
  for i, item in ipairs(items) do
    labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
  end
  local preview = vim.fn.bufnr('pi-rpc://rewind')
  table.insert(_G.asked, {
    prompt = opts.prompt,
    labels = labels,
    preview = preview > 0 and vim.api.nvim_buf_get_lines(preview, 0, -1, false) or vim.NIL,
  })
  for i, label in ipairs(labels) do
    if want and label:find(want, 1, true) then
      return vim.schedule(function() on_choice(items[i], i) end)
    end
  end
  vim.schedule(function() on_choice(nil, nil) end)
end
"""

REWIND = """
_G.answers, _G.asked, _G.rewound = ..., {}, nil
require('pi_rpc').rewind(function(result) _G.rewound = result or false end)
"""


def tree(workspace: Path) -> Tree:
    """Every file below the workspace: its mode and bytes."""
    found: Tree = {}
    for folder, _, names in os.walk(workspace):
        for name in names:
            path = Path(folder, name)
            found[str(path.relative_to(workspace))] = (stat.S_IMODE(path.stat().st_mode), path.read_bytes())
    return found


def start_tree(ws: Path) -> Tree:
    (ws / "a.txt").write_text("alpha\n")
    (ws / "b.txt").write_text("beta\n")
    (ws / "gone.txt").write_text("to be deleted\n")
    (ws / "tool.sh").write_text("#!/bin/sh\necho one\n")
    (ws / "tool.sh").chmod(0o755)
    return tree(ws)


def rewind(ed: Editor, *answers: str, shot: Path | None = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:PiRewind with the pickers answered in turn; the rewind's result and what was asked.
    `shot`: the screen is pictured there (see screenshot.py) while the last picker is open."""
    if shot is None:
        ed.lua(REWIND, list(answers))
    else:
        ed.lua(REWIND, [*answers[:-1], HOLD])
        ed.wait("_G.held ~= nil")
        screenshot(ed.nvim, shot.parent, shot.name)
        ed.lua("_G.held(...)", answers[-1])
    ed.wait("_G.rewound ~= nil")
    result = ed.lua("return _G.rewound")
    assert result, f"the rewind did not happen: {ed.lua('return _G.asked')}\n{ed.messages()}"
    return result, list(ed.lua("return _G.asked"))


def buffer_lines(ed: Editor, path: Path) -> list[str]:
    return list(ed.lua("return vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false)", str(path)))


def loaded(ed: Editor, path: Path) -> bool:
    return bool(ed.lua("return vim.fn.bufloaded(...)", str(path)))


def undo_seq(ed: Editor, path: Path) -> int:
    return int(ed.lua("return vim.fn.undotree(vim.fn.bufnr(...)).seq_last", str(path)))


def prompt(ed: Editor, text: str, done: str) -> None:
    ed.nvim.command(f"PiPrompt {text}")
    ed.wait(f"require('pi_rpc.status').phase() == 'idle' and require('pi_rpc.chat').text():find('{done}', 1, true)")


def test_rewind_files_to_before_each_run_with_a_conflict(make_editor: Any, tmp_path: Path) -> None:
    ed: Editor = make_editor(SCRIPT)
    resize(ed.nvim)  # the size of the README's picture of the preview
    ws = ed.workspace
    original = start_tree(ws)
    for name in ("a.txt", "b.txt", "gone.txt"):
        ed.nvim.command(f"edit {name}")
    ed.lua(STUB_SELECT)

    prompt(ed, "first", "first done")
    after_first = tree(ws)
    assert after_first["made.txt"][1] == b"made\n" and "gone.txt" not in after_first
    assert after_first["notes/new.md"][1] == b"# new\n" and after_first["a.txt"][1] == b"ALPHA\n"
    assert after_first["tool.sh"] == (0o700, b"#!/bin/sh\necho two\n")
    ed.nvim.command("edit made.txt")
    ed.nvim.command("edit notes/new.md")
    prompt(ed, "second", "second done")
    assert (ws / "a.txt").read_text() == "OMEGA\n" and buffer_lines(ed, ws / "a.txt") == ["OMEGA"]
    chat = ed.chat_text()

    # Before the second run: the picker lists the most recent prompt first, with what it changed.
    seq = undo_seq(ed, ws / "a.txt")
    result, asked = rewind(ed, "second", "Files:", "Rewind: put back")
    picked, actions, confirm = asked
    assert picked["prompt"] == "Rewind to before"
    assert picked["labels"][0].startswith("second  · just now · ~")
    assert picked["labels"][0].endswith("a.txt") and picked["labels"][1].startswith("first  · just now · ")
    # the first run's files, sorted, four named: b.txt modified, gone.txt deleted, made.txt created
    assert picked["labels"][1].endswith(" · ~a.txt ~b.txt -gone.txt +made.txt and 2 more")
    assert any(label.startswith("Edit this prompt") for label in actions["labels"])
    assert confirm["labels"] == ["Rewind: put back 1 file", "Cancel"]
    assert "-OMEGA" in confirm["preview"] and "+ALPHA" in confirm["preview"]
    assert result["restored"] == [str(ws / "a.txt")] and result["conflicts"] == []
    assert tree(ws) == after_first
    assert buffer_lines(ed, ws / "a.txt") == ["ALPHA"]
    assert undo_seq(ed, ws / "a.txt") == seq + 1  # restored through the buffer: one undo step
    assert ed.lua("return vim.fn.bufnr('pi-rpc://rewind')") == -1  # the preview closed
    assert ed.chat_text() == chat  # files only: the conversation stays

    # The user changes b.txt (and saves it); rewinding before the first run leaves it alone.
    ed.nvim.command("buffer b.txt")
    ed.nvim.current.buffer[:] = ["BETA", "mine"]
    ed.nvim.command("write")
    result, asked = rewind(ed, "first", "Files:", "Rewind: put back", shot=tmp_path / "rewind.png")
    confirm = asked[-1]
    assert confirm["labels"] == [
        "Rewind: put back 5 files and leave the 1 conflict alone",
        "Force: put back the 1 conflict too",
        "Cancel",
    ]
    preview = confirm["preview"]
    conflicts_at = preview.index("# 1 file was changed since the agent's last change: left alone unless forced")
    assert "+mine" not in preview[conflicts_at:] and "-mine" in preview[conflicts_at:]
    assert "+beta" in preview[conflicts_at:]
    assert [c["path"] for c in result["conflicts"]] == [str(ws / "b.txt")]
    assert "left alone (changed since the agent's change): b.txt" in ed.messages()
    assert (ws / "b.txt").read_text() == "BETA\nmine\n" and buffer_lines(ed, ws / "b.txt") == ["BETA", "mine"]
    assert tree(ws) == {**original, "b.txt": (original["b.txt"][0], b"BETA\nmine\n")}
    assert not (ws / "notes").exists()  # the folder the write made went with its file
    assert buffer_lines(ed, ws / "a.txt") == ["alpha"]
    assert buffer_lines(ed, ws / "gone.txt") == ["to be deleted"]  # back on disk, reloaded
    assert not loaded(ed, ws / "made.txt") and not loaded(ed, ws / "notes" / "new.md")  # their files are gone

    # Forced, the conflict is put back too: the original tree, in the buffers as on disk.
    result, asked = rewind(ed, "first", "Files:", "Force:")
    assert str(ws / "b.txt") in result["restored"]
    assert result["conflicts"] == []
    assert tree(ws) == original
    assert buffer_lines(ed, ws / "b.txt") == ["beta"]


def test_edit_prompt_rewinds_both_and_opens_the_input_with_its_text(make_editor: Any) -> None:
    """:PiEditPrompt: files and conversation go back to before the prompt, and the input holds
    its text to change and send again."""
    ed: Editor = make_editor(SCRIPT)
    ws = ed.workspace
    start_tree(ws)
    ed.lua(STUB_SELECT)
    prompt(ed, "first", "first done")
    after_first = tree(ws)
    prompt(ed, "second", "second done")
    ed.lua(
        """
        _G.answers, _G.rewound = { 'second', 'Rewind: put back' }, nil
        require('pi_rpc').edit_prompt(function(result) _G.rewound = result or false end)
        """
    )
    ed.wait("_G.rewound ~= nil")
    assert ed.lua("return _G.rewound.text") == "second"
    assert tree(ws) == after_first
    # The chat shows the fork: the first exchange only, and the input holds the prompt's text.
    ed.wait("require('pi_rpc.chat').text():find('second done', 1, true) == nil")
    assert "first done" in ed.chat_text()
    assert ed.lua("return vim.b.pi_rpc_input_mode") == "prompt"
    assert ed.nvim.current.buffer[:][0] == "second"
