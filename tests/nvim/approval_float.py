"""The approval float in Neovim: whether it is open, its lines, and a key pressed in it."""

from __future__ import annotations

from .conftest import Editor

IDLE = "require('pi_rpc.status').phase() == 'idle'"


FLOAT_OPEN = "require('pi_rpc.approval').float_win() ~= nil"


def press(ed: Editor, keys: str) -> None:
    """Keys as the user types them, into whatever window has the focus."""
    ed.nvim.input(keys)


def float_lines(ed: Editor) -> list[str]:
    return list(
        ed.lua(
            "local w = require('pi_rpc.approval').float_win() "
            "return vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(w), 0, -1, false)"
        )
    )
