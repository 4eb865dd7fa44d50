"""`pi-rpc --mode lsp` in Neovim's built-in LSP client, with no plugin: the "Fix with Pi" code action
changes the unsaved buffer by workspace/applyEdit, and `u` takes the change back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pynvim  # type: ignore[import-untyped]
import pytest

from tests.lsp.editor import ON_DISK, SCRIPTS, UNSAVED
from tests.nvim.conftest import GUARD_MS, PI_RPC, isolated_environment, require_daemon

pytestmark = pytest.mark.nvim

# README.md's Neovim configuration, with the test's script added to the command.
CONFIGURE = """
local cmd = ...
vim.lsp.config('pi', {
  cmd = cmd,
  root_markers = { '.git' },
  init_options = { approvalPolicy = 'auto', answer = 'message' },
})
vim.lsp.enable('pi')
"""

ATTACHED = """
return vim.wait(..., function()
  local client = vim.lsp.get_clients({ bufnr = 0, name = 'pi' })[1]
  return client ~= nil and client.initialized
end, 10)
"""

FIX = """
vim.lsp.buf.code_action({
  apply = true,
  filter = function(action) return action.title == 'Fix with Pi' end,
  context = { diagnostics = { {
    range = { start = { line = 1, character = 12 }, ['end'] = { line = 1, character = 16 } },
    message = 'Misspelled word: Helo',
  } }, only = nil },
})
"""


@pytest.fixture
def nvim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, nvim_bin: Path) -> Iterator[pynvim.Nvim]:
    require_daemon()
    isolated_environment(tmp_path, monkeypatch)
    editor = pynvim.attach("child", argv=[str(nvim_bin), "--embed", "--headless", "--clean", "-n", "-i", "NONE"])
    yield editor
    try:
        editor.command("qa!")
    except Exception:  # Neovim closing its end is the expected outcome
        pass
    editor.close()


def buffer_text(nvim: pynvim.Nvim) -> str:
    return "\n".join(nvim.current.buffer[:]) + "\n"


def wait_for(nvim: pynvim.Nvim, condition: str) -> None:
    ok = nvim.exec_lua(f"return vim.wait(30000, function() return {condition} end, 10)")
    assert ok is True, f"never true: {condition}\nbuffer:\n{buffer_text(nvim)}"


def test_fix_with_pi_edits_the_buffer_and_undo_takes_it_back(nvim: pynvim.Nvim, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "greet.py").write_text(ON_DISK)
    (workspace / ".git").mkdir()  # the root marker
    nvim.command(f"cd {workspace}")
    nvim.exec_lua(CONFIGURE, [str(PI_RPC), "--mode", "lsp", "--script", str(SCRIPTS / "lsp.json")])
    nvim.command("edit greet.py")
    assert nvim.exec_lua(ATTACHED, GUARD_MS) is True
    nvim.current.buffer[:] = UNSAVED.splitlines()  # unsaved, sent by didChange: only the editor has it
    nvim.exec_lua(FIX)
    wait_for(nvim, "vim.api.nvim_buf_get_lines(0, 1, 2, false)[1]:find('Hello', 1, true) ~= nil")
    assert buffer_text(nvim) == UNSAVED.replace("Helo", "Hello")
    assert (workspace / "greet.py").read_text() == ON_DISK  # nothing was written behind the editor
    wait_for(nvim, "#vim.fn.execute('messages') > 0 and vim.fn.execute('messages'):find('Hello', 1, true) ~= nil")
    nvim.command("normal! u")
    assert buffer_text(nvim) == UNSAVED
    assert json.loads(nvim.exec_lua("return vim.json.encode(vim.bo.modified)")) is True
