"""Keeping one hunk of two in the approval float, in a real headless Neovim against the real
daemon: the float marks each hunk, `t` on the first rejects it, `a` allows the rest, and the file
and the tool result in the chat (what the agent reads) show exactly the kept hunk."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .approval_float import FLOAT_OPEN, IDLE, float_lines, press
from .conftest import require_daemon
from .screenshot import resize, screenshot

pytestmark = pytest.mark.nvim

SCRIPT = json.loads((Path(__file__).parents[1] / "e2e" / "scripts" / "hunks.json").read_text())
ORIGINAL = "".join(f"line {n}\n" for n in range(1, 31))
SECOND_ONLY = ORIGINAL.replace("line 28\n", "line twenty-eight\n")
MARKS = "return require('pi_rpc.hunks').marks(vim.api.nvim_win_get_buf(require('pi_rpc.approval').float_win()))"
FOOTER = "return vim.api.nvim_win_get_config(require('pi_rpc.approval').float_win()).footer"


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


def footer(ed: Any) -> str:
    return "".join(part[0] for part in ed.lua(FOOTER))


def wait_kept(ed: Any, kept: int) -> None:
    """Until the float's footer counts `kept` hunks (the key was handled)."""
    ed.wait(
        "table.concat(vim.tbl_map(function(p) return p[1] end, vim.api.nvim_win_get_config("
        f"require('pi_rpc.approval').float_win()).footer)):find('({kept} of 2 kept)', 1, true) ~= nil"
    )


def asked_about_two_changes(make_editor: Any) -> tuple[Any, list[str]]:
    """An editor whose agent edits two places of notes.txt: its approval float and the float's lines."""
    ed = make_editor(SCRIPT, approvals={"policy": "ask"})
    (ed.workspace / "notes.txt").write_text(ORIGINAL)
    resize(ed.nvim)  # the size of the README's picture of the float
    ed.nvim.command("PiPrompt two changes")
    ed.wait(FLOAT_OPEN)
    return ed, float_lines(ed)


def test_t_rejects_the_hunk_under_the_cursor_and_a_applies_the_other(make_editor: Any, tmp_path: Path) -> None:
    ed, lines = asked_about_two_changes(make_editor)
    headers = [n for n, line in enumerate(lines, 1) if line.startswith("@@")]
    assert len(headers) == 2
    assert ed.lua(MARKS) == [
        [headers[0], "✓ hunk 1/2 kept (t rejects it)"],
        [headers[1], "✓ hunk 2/2 kept (t rejects it)"],
    ]
    assert "t keep/reject hunk (2 of 2 kept)" in footer(ed)
    # The cursor on the first hunk's changed line, as the user moves it there.
    ed.nvim.current.window.cursor = (lines.index("+line two") + 1, 0)
    press(ed, "t")
    wait_kept(ed, 1)
    assert ed.lua(MARKS) == [
        [headers[0], "✗ hunk 1/2 rejected (t keeps it)"],
        [headers[1], "✓ hunk 2/2 kept (t rejects it)"],
    ]
    assert (ed.workspace / "notes.txt").read_text() == ORIGINAL
    screenshot(ed.nvim, tmp_path, "hunks.png")
    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('edited', 1, true) ~= nil")
    assert (ed.workspace / "notes.txt").read_text() == SECOND_ONLY
    chat = ed.chat_text()
    assert "+line twenty-eight\n" in chat and "+line two\n" not in chat  # the diff of what landed
    assert "Kept 1 of 2 hunk(s); the rejected ones were not applied." in chat
    messages = ed.request("messages")["result"]["messages"]
    result = next(m for m in messages if m["role"] == "toolResult")
    assert result["content"][0]["text"].startswith(
        "Successfully applied 1 of 2 hunk(s) to notes.txt. The user kept hunk(s) 2 and rejected hunk(s) 1,"
    )


def test_rejecting_every_hunk_rejects_the_call(make_editor: Any) -> None:
    ed, lines = asked_about_two_changes(make_editor)
    for changed in ("+line two", "+line twenty-eight"):
        ed.nvim.current.window.cursor = (lines.index(changed) + 1, 0)
        kept = 1 if changed == "+line two" else 0
        press(ed, "t")
        wait_kept(ed, kept)
    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('edited', 1, true) ~= nil")
    assert (ed.workspace / "notes.txt").read_text() == ORIGINAL
    assert "They rejected every hunk of the change to notes.txt, so nothing was written." in ed.chat_text()
