"""`@` mentions in the prompt input, the context share in the chat's winbar, :PiCompact, and the
folder's last conversation back after Neovim restarts: in a real headless Neovim against the
daemon on the scripted model. What a mention carries is read back from the daemon's own
transcript (`messages`): the text the model received."""

from __future__ import annotations

import json
import re
import sys
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from .conftest import GUARD_MS, Editor, quit_editor, require_daemon
from .screenshot import resize, screenshot

pytestmark = pytest.mark.nvim

IDLE = "require('pi_rpc.status').phase() == 'idle'"
ANSWER = {"replies": [{"repeat": True, "turns": [[{"text": "Noted."}]]}]}
SYMBOL_SERVER = Path(__file__).with_name("symbol_server.py")


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


def answers(ed: Editor) -> int:
    return int(ed.lua("return select(2, require('pi_rpc.chat').text():gsub('Noted%.', ''))"))


def send_input(ed: Editor, text: str) -> None:
    """Opens the prompt input from the current buffer, types `text`, sends it, waits for the run
    (for its answer: the chat may hold an earlier run's)."""
    before = answers(ed)
    ed.nvim.command("PiPrompt")
    ed.nvim.current.buffer[:] = text.split("\n")
    ed.nvim.feedkeys(ed.nvim.replace_termcodes("<Esc><CR>", True, False, True), "x", False)
    ed.wait(f"{IDLE} and select(2, require('pi_rpc.chat').text():gsub('Noted%.', '')) == {before + 1}")


def received(ed: Editor) -> str:
    """The last user message's text in the daemon's transcript."""
    messages = ed.request("messages")["result"]["messages"]
    users = [m for m in messages if m["role"] == "user"]
    content = users[-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block["type"] == "text")


def words(items: list[Any]) -> list[str]:
    return [item if isinstance(item, str) else item["word"] for item in items]


def start_symbol_server(ed: Editor) -> None:
    ed.lua(
        "vim.lsp.start({ name = 'test-symbols', cmd = ..., root_dir = vim.fn.getcwd() })",
        [sys.executable, str(SYMBOL_SERVER), str(ed.workspace)],
    )
    ed.wait("#vim.lsp.get_clients({ name = 'test-symbols', bufnr = 0 }) == 1")
    ed.wait("vim.lsp.get_clients({ name = 'test-symbols' })[1].initialized == true")


def test_file_folder_symbol_and_buffer_mentions_reach_the_model(make_editor: Any, tmp_path: Path) -> None:
    """`@calc.py` sends the file, `@pkg/` the folder's entries, `@symbol:add` the function the
    LSP server locates (completed from workspace/symbol), `@buffer` the buffer with its unsaved
    text; a mention written twice is sent once, a word that is no mention stays as written."""
    ed = make_editor(ANSWER)
    resize(ed.nvim)  # the size of the README's picture of the chat
    (ed.workspace / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\ndef sub(a, b):\n    return a - b\n")
    (ed.workspace / "pkg").mkdir()
    (ed.workspace / "pkg" / "inner.txt").write_text("x\n")
    (ed.workspace / "pkg" / "deeper").mkdir()
    (ed.workspace / "notes.py").write_text("saved = True\n")
    ed.nvim.command("edit notes.py")
    ed.nvim.current.buffer[:] = ["unsaved = 'only in Neovim'"]
    start_symbol_server(ed)

    ed.nvim.command("PiPrompt")
    completed = ed.lua("return require('pi_rpc.context').omnifunc(0, '@symbol:ad')")
    assert words(completed) == ["@symbol:add"]
    assert completed[0]["menu"] == "Function calc.py"
    assert "@diagnostics:all" in words(ed.lua("return require('pi_rpc.context').omnifunc(0, '@dia')"))
    assert words(ed.lua("return require('pi_rpc.context').omnifunc(0, '@cal')")) == ["@calc.py"]
    ed.nvim.command("close")

    send_input(ed, "explain @symbol:add, see @calc.py and @pkg/ and @calc.py again; mail me@example.com\n@buffer")
    text = received(ed)
    assert text.startswith(
        "explain `add`, see `calc.py` and `pkg/` and `calc.py` again; mail me@example.com\n`notes.py`\n"
    )
    assert "Function `add` in `calc.py`, lines 1-2:\n```python\ndef add(a, b):\n    return a + b\n```" in text
    assert text.count("`calc.py`:\n```python\ndef add(a, b):") == 1
    assert "Folder `pkg/`:\n- deeper/\n- inner.txt" in text
    assert "`notes.py`:\n```python\nunsaved = 'only in Neovim'\n```" in text
    ed.wait("require('pi_rpc.usage').text():find('% of', 1, true) ~= nil")  # the winbar's share
    screenshot(ed.nvim, tmp_path, "mentions.png")


def test_diagnostics_quickfix_terminal_and_selection_mentions_reach_the_model(make_editor: Any) -> None:
    """`@diagnostics:all` sends every buffer's diagnostics, `@quickfix` the quickfix list,
    `@terminal` the last lines of the terminal used last, `@selection` the last visual lines."""
    ed = make_editor(ANSWER)
    (ed.workspace / "a.py").write_text("one\ntwo\nthree\n")
    (ed.workspace / "b.py").write_text("x\n")
    ed.nvim.command("terminal printf 'step 1\\nbuild failed: E42\\n'")
    ed.wait("vim.api.nvim_buf_get_lines(0, 0, -1, false)[2] == 'build failed: E42'")
    ed.nvim.command("edit b.py")
    ed.lua(
        "vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, "
        "{ { lnum = 0, col = 0, severity = vim.diagnostic.severity.WARN, message = 'unused x', source = 'lint' } })"
    )
    ed.nvim.command("edit a.py")
    ed.lua(
        "vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, "
        "{ { lnum = 2, col = 1, severity = vim.diagnostic.severity.ERROR, message = 'bad three' } })"
    )
    ed.lua("vim.fn.setqflist({}, ' ', { title = 'make', lines = { 'a.py:2:1: two is wrong' }, efm = '%f:%l:%c: %m' })")
    ed.nvim.feedkeys(ed.nvim.replace_termcodes("ggjVj<Esc>", True, False, True), "x", False)

    send_input(ed, "fix @diagnostics:all from @quickfix after @terminal in @selection")
    text = received(ed)
    assert text.startswith(
        "fix the workspace's diagnostics from the quickfix list after the terminal output in lines 2-3 of `a.py`\n"
    )
    assert (
        "Diagnostics of the workspace:\n- a.py: line 3, col 2, ERROR: bad three\n"
        "- b.py: line 1, col 1, WARN [lint]: unused x" in text
    )
    assert "Quickfix list (make):\n- a.py:2:1: two is wrong" in text
    assert re.search(r"Last \d+ lines of the terminal `[^`]+`:\n```text\nstep 1\nbuild failed: E42\n", text)
    assert "From `a.py`, lines 2-3:\n```python\ntwo\nthree\n```" in text


def test_a_large_file_is_cut_to_the_cap(make_editor: Any) -> None:
    """A mention carries at most `mentions.max_lines` lines and says how many it left out; a
    mention word that finds nothing (no terminal yet) is sent as written and the user told why."""
    ed = make_editor(ANSWER, mentions={"max_lines": 50})
    (ed.workspace / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 1001)))
    send_input(ed, "summarise @big.txt, not @terminal")
    text = received(ed)
    assert text.startswith("summarise `big.txt`, not @terminal\n")
    assert "pi-rpc: @terminal: no terminal buffer" in ed.messages()
    assert "line 50\n```\n(950 more lines not included)" in text
    assert "line 51" not in text


def winbar(ed: Editor) -> str:
    return str(
        ed.lua(
            "local win = require('pi_rpc.window').chat_win() "
            "return vim.api.nvim_eval_statusline(vim.wo[win].winbar, { winid = win, use_winbar = true }).str"
        )
    )


def test_the_winbar_shows_the_context_share_and_pi_compact_frees_it(make_editor: Any, tmp_path: Path) -> None:
    """After a run the chat's winbar shows the share of the model's window the session fills, as
    session/stats reports it; :PiCompact summarises the older turns, the chat notes it, and the
    share is unknown until the next reply (the daemon reports null tokens after a compaction)."""
    settings = tmp_path / "xdg-config" / "pi-rpc" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"compaction": {"keepRecentTokens": 10}}')
    summary = {"match": "^<conversation>", "turns": [[{"text": "## Goal\nCount"}]]}
    ed = make_editor({"replies": [summary, {"repeat": True, "turns": [[{"text": "Noted."}]]}]})
    for word in ("one", "two"):
        send_input(ed, f"{word} " + "f" * 2000)
    stats = ed.request("session/stats")["result"]["contextUsage"]
    window = stats["contextWindow"]
    shown = f"{round(stats['percent'])}%" if stats["percent"] >= 0.5 else "0%"
    ed.wait(f"require('pi_rpc.usage').text():find({json.dumps(shown)}, 1, true) ~= nil")
    bar = winbar(ed)
    assert bar.startswith("π idle · context ")
    assert bar.endswith(f"{shown} of {window // 1000}k") or bar.endswith(f"{shown} of {window}")

    ed.nvim.command("PiCompact")
    ed.wait_chat("_Earlier conversation summarised (")
    ed.wait("require('pi_rpc.usage').text():find('context ? of', 1, true) ~= nil")
    assert "context ? of" in winbar(ed)


def test_a_restarted_neovim_continues_the_folders_last_conversation(
    make_editor: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Neovim quit and started again in the same folder: :PiChat shows the last conversation (from
    the session on disk, dated in local time) and the next prompt goes on in that session."""
    monkeypatch.setenv("TZ", "UTC-3")  # POSIX: three hours ahead of UTC
    first = make_editor(ANSWER)
    first.nvim.command("PiPrompt remember the number 7")
    first.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Noted.', 1, true) ~= nil")
    session = first.lua("return require('pi_rpc.daemon').session_id")
    quit_editor(first)

    again = make_editor(ANSWER)
    again.nvim.command("PiChat")
    again.wait_chat("_Continued the last session of this folder (")
    text = again.chat_text()
    assert text.index("remember the number 7") < text.index("Noted.") < text.index("_Continued the last")
    again.wait("require('pi_rpc.daemon').is_ready()")
    assert again.lua("return require('pi_rpc.daemon').session_id") == session
    modified = datetime.fromisoformat(again.request("session/list")["result"]["sessions"][0]["modified"])
    local = (modified + timedelta(hours=3)).strftime("%Y-%m-%d %H:%M")
    assert f"_Continued the last session of this folder ({local}): remember the number 7_" in text
    again.nvim.command("PiPrompt and now?")
    again.wait(f"{IDLE} and select(2, require('pi_rpc.chat').text():gsub('Noted%.', '')) == 2", GUARD_MS)
    assert [m["role"] for m in again.request("messages")["result"]["messages"]].count("user") == 2

    # :PiNew is a new session; a Neovim started with resume_last = false starts empty.
    fresh = make_editor(ANSWER, resume_last=False)
    fresh.nvim.command("PiChat")
    fresh.lua("require('pi_rpc.daemon').ensure()")
    fresh.wait("require('pi_rpc.daemon').is_ready()")
    assert "remember the number" not in fresh.chat_text()
