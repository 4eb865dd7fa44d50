"""Approvals and the editor's files in a real headless Neovim against the real daemon
(editor-clients/nvim/README.md, "Approvals and your buffers"):
the agent reads unsaved buffers, its edits land in them as one undo step after the user allowed
them in a float, and Neovim never warns that a file changed behind its back (W12)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from .approval_float import FLOAT_OPEN, IDLE, float_lines, press
from .conftest import Editor, require_daemon, until

pytestmark = pytest.mark.nvim

SCRIPT = json.loads((Path(__file__).parents[1] / "e2e" / "scripts" / "approvals.json").read_text())
ORIGINAL = 'import sys\n\n\ndef greet(name):\n    return f"Helo, {name}!"\n'


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


def editor(make_editor: Any, policy: str = "ask") -> Editor:
    ed: Editor = make_editor(SCRIPT, approvals={"policy": policy})
    (ed.workspace / "src").mkdir()
    (ed.workspace / "src" / "greet.py").write_text(ORIGINAL)
    return ed


def disk(ed: Editor) -> str:
    return (ed.workspace / "src" / "greet.py").read_text()


def open_greet(ed: Editor, unsaved: bool) -> Any:
    ed.nvim.command("edit src/greet.py")
    buf = ed.nvim.current.buffer
    if unsaved:
        buf[0] = "import sys  # unsaved"
    return buf


def prompt_and_wait_for_float(ed: Editor, text: str) -> None:
    ed.nvim.command(f"PiPrompt {text}")
    ed.wait(FLOAT_OPEN)


def assert_no_file_warnings(ed: Editor) -> None:
    """No W11/W12 (in headless Neovim their dialog leaves only v:warningmsg) and no "changed
    since reading it" in the messages."""
    warning = str(ed.lua("return vim.v.warningmsg"))
    assert "W11" not in warning and "W12" not in warning, warning
    assert "changed since reading" not in ed.messages()


def write_buffer(ed: Editor) -> None:
    """`:w` as typed. Had the file changed under the buffer, Neovim would ask "Do you really want
    to write to it (y/n)?" (mode "r?") instead of writing."""
    press(ed, ":write<CR>")

    def settled() -> str:
        mode = str(ed.nvim.api.get_mode()["mode"])  # a fast request: answered even at a prompt
        if mode.startswith("r") or (mode == "n" and not ed.lua("return vim.bo.modified")):
            return mode
        return ""

    mode = until(settled)
    if mode.startswith("r"):
        press(ed, "n")
        raise AssertionError(f"`:write` asked before writing: {ed.messages()}")
    assert mode == "n", "`:write` did not write"


def test_read_returns_the_unsaved_buffer(make_editor: Any) -> None:
    ed = editor(make_editor)
    open_greet(ed, unsaved=True)
    ed.nvim.command("PiPrompt read greet")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('read it', 1, true) ~= nil")
    assert "import sys  # unsaved" in ed.chat_text()
    assert disk(ed) == ORIGINAL
    assert ed.lua("return vim.bo.modified") is True


def test_an_approved_edit_lands_in_the_unsaved_buffer_and_u_undoes_it(make_editor: Any) -> None:
    ed = editor(make_editor)
    buf = open_greet(ed, unsaved=True)
    before = buf[:]
    prompt_and_wait_for_float(ed, "fix greeting")
    # The float shows the diff, highlighted as one; nothing has changed yet.
    lines = float_lines(ed)
    assert '-    return f"Helo, {name}!"' in lines and '+    return f"Hello, {name}!"' in lines
    added = lines.index('+    return f"Hello, {name}!"') + 1
    assert ed.lua("return vim.bo.filetype") == "diff"
    assert ed.lua(f"return vim.fn.synIDattr(vim.fn.synID({added}, 1, 1), 'name')") == "diffAdded"
    assert ed.lua("return require('pi_rpc').statusline()") == "π approve edit?"
    # The chat renders on a short timer: wait for it rather than race it.
    ed.wait_chat("**edit** `src/greet.py` (1 edit) — ⏸ waiting for approval")
    assert buf[:] == before and disk(ed) == ORIGINAL

    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('fixed', 1, true) ~= nil")
    assert ed.lua("return require('pi_rpc.approval').float_win()") is None
    assert buf[:] == [*before[:4], '    return f"Hello, {name}!"']
    # The user's own change is not saved behind their back: the disk keeps its text.
    assert ed.lua(f"return vim.bo[{buf.number}].modified") is True and disk(ed) == ORIGINAL
    ed.nvim.command(f"buffer {buf.number}")
    ed.nvim.command("normal! u")
    assert buf[:] == before
    write_buffer(ed)
    assert disk(ed) == "\n".join(before) + "\n"
    assert_no_file_warnings(ed)


def test_an_edit_to_a_saved_buffer_is_written(make_editor: Any) -> None:
    ed = editor(make_editor)
    buf = open_greet(ed, unsaved=False)
    prompt_and_wait_for_float(ed, "fix greeting")
    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('fixed', 1, true) ~= nil")
    assert buf[4] == '    return f"Hello, {name}!"'
    assert ed.lua(f"return vim.bo[{buf.number}].modified") is False
    assert disk(ed) == ORIGINAL.replace("Helo", "Hello")
    assert_no_file_warnings(ed)


def test_reject_leaves_buffer_and_disk_and_the_agent_reads_the_reason(make_editor: Any) -> None:
    ed = editor(make_editor)
    buf = open_greet(ed, unsaved=True)
    before = buf[:]
    prompt_and_wait_for_float(ed, "fix greeting")
    press(ed, "rkeep the typo<CR>")  # r asks for the reason through vim.ui.input
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('fixed', 1, true) ~= nil")
    assert "The user rejected this edit call: keep the typo" in ed.chat_text()
    assert buf[:] == before and disk(ed) == ORIGINAL
    assert ed.lua(f"return vim.fn.undotree({buf.number}).seq_cur") == 1  # only the user's change
    write_buffer(ed)
    assert_no_file_warnings(ed)


def test_allow_always_stops_asking_for_that_command(make_editor: Any) -> None:
    ed = editor(make_editor)
    ed.lua(
        "_G.asked = 0 require('pi_rpc.daemon').trace = function(kind, method) "
        "if kind == 'request' and method == 'approval/request' then _G.asked = _G.asked + 1 end end"
    )
    prompt_and_wait_for_float(ed, "run tests")
    footer = ed.lua("return vim.api.nvim_win_get_config(require('pi_rpc.approval').float_win()).footer")
    assert "A always (bash(echo tests:*))" in "".join(part[0] for part in footer)
    assert float_lines(ed) == ["echo tests passed"]
    press(ed, "A")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('ran', 1, true) ~= nil")
    ed.nvim.command("PiPrompt run tests")
    ed.wait(f"{IDLE} and select(2, require('pi_rpc.chat').text():gsub('\\nran', '')) == 2")
    assert ed.lua("return _G.asked") == 1
    assert ed.chat_lines().count("**bash** `echo tests passed` — ✓ done") == 2


def test_abort_closes_the_float_and_nothing_changes(make_editor: Any) -> None:
    ed = editor(make_editor)
    buf = open_greet(ed, unsaved=True)
    before = buf[:]
    prompt_and_wait_for_float(ed, "fix greeting")
    ed.nvim.command("PiAbort")
    ed.wait(f"{IDLE} and require('pi_rpc.approval').float_win() == nil")
    assert ed.lua("return #require('pi_rpc.approval').pending()") == 0
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"
    ed.wait_chat("**edit** `src/greet.py` (1 edit) — ✗ error")
    assert buf[:] == before and disk(ed) == ORIGINAL
    assert_no_file_warnings(ed)


def test_a_hidden_request_waits_in_the_statusline_and_comes_back(make_editor: Any) -> None:
    ed = editor(make_editor)
    prompt_and_wait_for_float(ed, "run tests")
    press(ed, "q")
    ed.wait("require('pi_rpc.approval').float_win() == nil")
    assert ed.lua("return require('pi_rpc').statusline()") == "π approve bash?"
    ed.nvim.command("PiApproval")
    ed.wait(FLOAT_OPEN)
    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('ran', 1, true) ~= nil")
    assert "**bash** `echo tests passed` — ✓ done" in ed.chat_lines()


def test_a_key_bound_to_the_accept_plug_mapping_allows_from_any_window(make_editor: Any) -> None:
    """<Plug>(pi-rpc-accept) answers the call waiting for approval with the float hidden."""
    ed = editor(make_editor)
    ed.lua("vim.keymap.set('n', '<F6>', '<Plug>(pi-rpc-accept)')")
    prompt_and_wait_for_float(ed, "run tests")
    press(ed, "q")
    ed.wait("require('pi_rpc.approval').float_win() == nil")
    press(ed, "<F6>")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('ran', 1, true) ~= nil")
    assert "**bash** `echo tests passed` — ✓ done" in ed.chat_lines()


def test_read_only_policy_refuses_without_asking(make_editor: Any) -> None:
    ed = editor(make_editor)
    ed.nvim.command("PiPolicy readOnly")
    ed.wait("require('pi_rpc.daemon').policy == 'readOnly'")
    ed.nvim.command("PiPrompt fix greeting")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('fixed', 1, true) ~= nil")
    assert "read-only" in ed.chat_text()
    assert ed.lua("return require('pi_rpc.approval').float_win()") is None
    assert disk(ed) == ORIGINAL
    assert ed.request("state")["result"]["approvalPolicy"] == "readOnly"


def test_a_write_to_a_file_no_buffer_holds_goes_to_disk(make_editor: Any) -> None:
    ed = editor(make_editor, policy="acceptEdits")
    ed.nvim.command("PiPrompt write notes")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('written', 1, true) ~= nil")
    assert (ed.workspace / "NOTES.md").read_text() == "# Notes\n"


def test_an_accepted_edit_under_unsaved_changes_raises_no_w12(make_editor: Any) -> None:
    """The bug this guards against: the agent edited the file on disk under an unsaved buffer, and
    Neovim warned that the file had changed. With acceptEdits the edit runs at once, into the
    buffer."""
    ed = editor(make_editor, policy="acceptEdits")
    buf = open_greet(ed, unsaved=True)
    ed.nvim.command("PiPrompt fix greeting")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('fixed', 1, true) ~= nil")
    ed.nvim.command("checktime")  # what focusing Neovim again does
    assert_no_file_warnings(ed)
    assert buf[:] == ["import sys  # unsaved", "", "", "def greet(name):", '    return f"Hello, {name}!"']
    assert disk(ed) == ORIGINAL
    write_buffer(ed)
    assert_no_file_warnings(ed)


def test_checkhealth_names_the_policy(make_editor: Any) -> None:
    ed = editor(make_editor, policy="acceptEdits")
    ed.nvim.command("checkhealth pi_rpc")
    assert "approval policy: acceptEdits (:PiPolicy changes it)" in "\n".join(ed.nvim.current.buffer[:])


def test_calls_waiting_together_are_shown_one_after_the_other(make_editor: Any) -> None:
    two = [{"toolCall": {"name": "bash", "arguments": {"command": f"echo {n}"}}} for n in ("one", "two")]
    ed = make_editor({"replies": [{"turns": [two, [{"text": "both ran"}]]}]}, approvals={"policy": "ask"})
    ed.nvim.command("PiPrompt run both")
    ed.wait(FLOAT_OPEN)
    assert float_lines(ed) == ["echo one"]
    press(ed, "a")
    ed.wait(
        f"{FLOAT_OPEN} and vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf("
        "require('pi_rpc.approval').float_win()), 0, 1, false)[1] == 'echo two'"
    )
    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('both ran', 1, true) ~= nil")
    lines = ed.chat_lines()
    assert "**bash** `echo one` — ✓ done" in lines and "**bash** `echo two` — ✓ done" in lines


def test_a_request_nobody_answers_in_time_closes_its_float(make_editor: Any, tmp_path: Path) -> None:
    settings = tmp_path / "xdg-config" / "pi-rpc" / "settings.json"  # the daemon's user settings
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"timeoutSeconds": 1}}))
    ed = editor(make_editor)
    ed.lua(
        "_G.asked = 0 require('pi_rpc.daemon').trace = function(kind, method) "
        "if kind == 'request' and method == 'approval/request' then _G.asked = _G.asked + 1 end end"
    )
    ed.nvim.command("PiPrompt run tests")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('ran', 1, true) ~= nil")
    assert ed.lua("return _G.asked") == 1
    assert ed.lua("return require('pi_rpc.approval').float_win()") is None
    assert ed.lua("return #require('pi_rpc.approval').pending()") == 0
    assert "**bash** `echo tests passed` — ✗ error" in ed.chat_lines()


def test_a_decision_returns_to_the_window_the_user_was_in(make_editor: Any) -> None:
    ed = editor(make_editor)
    buf = open_greet(ed, unsaved=False)
    source = ed.nvim.current.window
    prompt_and_wait_for_float(ed, "fix greeting")
    assert ed.nvim.current.window.handle == ed.lua("return require('pi_rpc.approval').float_win()")
    press(ed, "a")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('fixed', 1, true) ~= nil")
    assert ed.nvim.current.window == source and ed.nvim.current.buffer == buf


def test_a_new_session_closes_the_float(make_editor: Any) -> None:
    ed = editor(make_editor)
    prompt_and_wait_for_float(ed, "run tests")
    ed.nvim.command("PiNew")
    ed.wait(f"{IDLE} and require('pi_rpc.approval').float_win() == nil")
    assert ed.lua("return #require('pi_rpc.approval').pending()") == 0
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"


def test_a_daemon_that_dies_takes_its_requests_along(make_editor: Any) -> None:
    ed = editor(make_editor)
    pid = ed.daemon_pid()
    prompt_and_wait_for_float(ed, "run tests")
    os.kill(pid, signal.SIGKILL)
    ed.wait("require('pi_rpc.approval').float_win() == nil")
    assert ed.lua("return #require('pi_rpc.approval').pending()") == 0
    ed.wait("require('pi_rpc.daemon').is_ready()")  # restarted, on the same session
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"
