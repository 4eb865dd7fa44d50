"""The plugin against the real daemon on the scripted model, in a real headless Neovim."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .conftest import live_group_members, require_daemon, run_shell, wait_exit

pytestmark = pytest.mark.nvim


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


IDLE = "require('pi_rpc.status').phase() == 'idle'"


def one_reply(*turns: list[dict[str, Any]]) -> dict[str, Any]:
    return {"replies": [{"turns": list(turns)}]}


def test_prompt_streams_and_tools_show_status_and_output(make_editor: Any) -> None:
    """spec 15.2, 15.5, 18.6: text and thinking stream in as deltas; read and bash appear with
    their arguments, a live status and their output."""
    ed = make_editor(
        one_reply(
            [
                {"thinking": "Let me look.", "chunk": 4},
                {"text": "I'll read the file.", "chunk": 4},
                {"toolCall": {"name": "read", "arguments": {"path": "README.md"}}},
                {"toolCall": {"name": "bash", "arguments": {"command": "echo hello"}}},
            ],
            [{"text": "Done."}],
        )
    )
    # Snapshot the chat after every text delta, rendering what is queued: the text must grow
    # piece by piece.
    ed.lua("""
        _G.snapshots = {}
        require('pi_rpc.daemon').on_event(function(ev)
          local a = ev.assistantMessageEvent
          if a and a.type == 'text_delta' then
            require('pi_rpc.chat').flush()
            table.insert(_G.snapshots, require('pi_rpc.chat').text())
          end
        end)
    """)
    ed.nvim.command("PiPrompt read the readme")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Done.', 1, true) ~= nil")
    snapshots = ed.lua("return _G.snapshots")
    tails = [s.rsplit("\n", 1)[-1] for s in snapshots]
    assert tails == ["I'll", "I'll rea", "I'll read th", "I'll read the fi", "I'll read the file.", "Done."]

    lines = ed.chat_lines()
    assert lines[:8] == ["## You", "", "read the readme", "", "## Pi", "", "> Let me look.", ""]
    read = lines.index("**read** `README.md` — ✓ done")
    assert lines[read + 1 : read + 6] == ["```text", "# Demo", "", "Hello from the workspace.", "```"]
    bash = lines.index("**bash** `echo hello` — ✓ done")
    assert lines[bash + 1 : bash + 4] == ["```text", "hello", "```"]
    assert lines[-1] == "Done."
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"


def test_a_key_bound_to_the_send_plug_mapping_sends_the_input(make_editor: Any) -> None:
    """<Plug>(pi-rpc-send) in insert mode sends what the input holds; elsewhere it opens it."""
    ed = make_editor(one_reply([{"text": "Sent."}]))
    ed.lua("vim.keymap.set({ 'n', 'i' }, '<F9>', '<Plug>(pi-rpc-send)')")
    ed.nvim.input("<F9>")
    ed.wait("vim.b.pi_rpc_input_mode == 'prompt' and vim.fn.mode() == 'i'")
    ed.nvim.input("hello there<F9>")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Sent.', 1, true) ~= nil")
    assert ed.chat_lines()[:3] == ["## You", "", "hello there"]


def test_truncated_bash_result_shows_notice_and_opens_the_log(make_editor: Any) -> None:
    """spec 9.12, 10.5: 4000 lines are cut to the last 2000; the chat shows Pi's notice and
    `go` opens the full output file."""
    ed = make_editor(
        one_reply(
            [{"toolCall": {"name": "bash", "arguments": {"command": "seq 1 4000"}}}],
            [{"text": "Truncated."}],
        )
    )
    ed.nvim.command("PiPrompt count")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Truncated.', 1, true) ~= nil")
    lines = ed.chat_lines()
    notices = [line for line in lines if line.startswith("[Showing")]
    assert len(notices) == 1
    match = re.fullmatch(
        r"\[Showing lines 2001-4000 of 4000\. Full output: (/\S+/pi-bash-[0-9a-f]{16}\.log)\]"
        r"  \(go: open full output\)",
        notices[0],
    )
    assert match, notices[0]
    path = match.group(1)
    header = lines.index("**bash** `seq 1 4000` — ✓ done")
    assert lines[header + 2] == "… 1960 earlier lines (go: all)" and lines[header + 42] == "4000"

    notice_lnum = lines.index(notices[0]) + 1
    ed.lua(
        """
        local lnum = ...
        local win = require('pi_rpc.window').open_chat(true)
        vim.api.nvim_win_set_cursor(win, { lnum, 0 })
    """,
        notice_lnum,
    )
    assert ed.lua("return vim.fn.foldclosed(...)", header + 3) == header + 2
    ed.nvim.command("normal go")
    assert ed.nvim.current.buffer.name == path
    assert ed.lua("return vim.api.nvim_buf_line_count(0)") == 4000
    assert ed.nvim.current.buffer[0] == "1"


def test_abort_stops_a_long_bash_and_kills_its_processes(make_editor: Any, tmp_path: Any) -> None:
    """spec 9.8, 9.13, 15.14: :PiAbort during `sleep 30` kills the process group at once; the
    tool ends in error with `Command aborted` and the run stops as aborted."""
    marker = f"pi-nvim-{tmp_path.name}"
    # The output differs from the command text, so seeing it means the process runs.
    command = f"printf 'out-%s\\n' {marker}; sleep 30; echo never-{marker}"
    ed = make_editor(
        one_reply(
            [{"toolCall": {"name": "bash", "arguments": {"command": command}}}],
            [{"text": "not reached"}],
        )
    )
    ed.nvim.command("PiPrompt sleep please")
    ed.wait_chat(f"out-{marker}")
    assert ed.lua("return require('pi_rpc').statusline()") == "π bash"
    assert "— ⏳ running" in ed.chat_text()
    pgid = run_shell(f"never-{marker}")
    members = live_group_members(pgid)
    assert pgid in members

    ed.nvim.command("PiAbort")
    ed.wait(IDLE)
    for pid in members:
        assert wait_exit(pid), f"process {pid} of the aborted command survived"
    assert live_group_members(pgid) == []
    text = ed.chat_text()
    assert "— ✗ error" in text and "Command aborted" in text and "_Aborted._" in text
    assert "not reached" not in text
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"


def test_pitools_toggles_a_tool_and_tools_list_agrees(make_editor: Any) -> None:
    """spec 5.3, 5.5: tools/setActive through :PiTools; unknown names are refused client-side."""
    ed = make_editor()

    def active() -> list[str]:
        out = ed.request("tools/list")
        return [t["name"] for t in out["result"]["tools"] if t["active"]]

    assert active() == ["read", "bash", "edit", "write"]
    ed.lua("_G.toggled = nil; require('pi_rpc.pickers').toggle_tool('grep', function(a) _G.toggled = a end)")
    ed.wait("_G.toggled ~= nil")
    assert sorted(active()) == ["bash", "edit", "grep", "read", "write"]
    assert "grep on (active: " in ed.messages()

    # The picker: vim.ui.select is the seam Telescope and friends replace; choose "bash".
    ed.lua("""
        vim.ui.select = function(items, opts, on_choice)
          _G.shown = vim.tbl_map(opts.format_item, items)
          for _, item in ipairs(items) do
            if item.name == 'bash' then on_choice(item) end
          end
        end
    """)
    ed.nvim.command("PiTools")
    ed.wait("vim.fn.execute('messages'):find('bash off', 1, true) ~= nil")
    assert sorted(active()) == ["edit", "grep", "read", "write"]
    shown = ed.lua("return _G.shown")
    assert any(s.startswith("[x] read ") for s in shown) and any(s.startswith("[ ] ls ") for s in shown)


def test_visual_range_is_sent_with_file_and_lines(make_editor: Any) -> None:
    """The selection goes to the model with its file and line range as context."""
    ed = make_editor({"replies": [{"match": "m\\.py`, lines 2-3", "turns": [[{"text": "Seen the range."}]]}]})
    (ed.workspace / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    ed.nvim.command("edit m.py")
    ed.nvim.command("2,3PiPrompt explain this")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Seen the range.', 1, true) ~= nil")
    lines = ed.chat_lines()
    start = lines.index("From `m.py`, lines 2-3:")
    assert lines[start : start + 7] == [
        "From `m.py`, lines 2-3:",
        "```python",
        "b = 2",
        "c = 3",
        "```",
        "",
        "explain this",
    ]


def test_follow_up_queued_during_a_run_is_delivered_after_it(make_editor: Any) -> None:
    """spec 15.13: a follow-up waits until the agent would stop, then runs."""
    ed = make_editor(
        {
            "replies": [
                {
                    "match": "first",
                    "turns": [
                        [{"text": "Working"}, {"delayMs": 3000}, {"text": " done."}],
                        [{"text": "Follow-up answered."}],
                    ],
                },
            ]
        }
    )
    ed.nvim.command("PiPrompt first")
    ed.wait_chat("Working")
    ed.nvim.command("PiFollowUp and then this")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Follow-up answered.', 1, true) ~= nil")
    text = ed.chat_text()
    assert text.index(" done.") < text.index("and then this") < text.index("Follow-up answered.")


def test_visual_mapping_opens_the_input_with_context_and_submits(make_editor: Any) -> None:
    """<leader>pa in visual mode: the input opens prefilled with the selection; <CR> sends it."""
    ed = make_editor({"replies": [{"match": "m\\.py`, lines 1-2[\\s\\S]*why", "turns": [[{"text": "Because."}]]}]})
    (ed.workspace / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    ed.nvim.command("edit m.py")
    keys = ed.nvim.replace_termcodes("1GVj\\pa", True, False, True)
    ed.nvim.feedkeys(keys, "x", False)
    assert ed.nvim.current.buffer[:] == [
        "From `m.py`, lines 1-2:",
        "```python",
        "a = 1",
        "b = 2",
        "```",
        "",
        "",
    ]
    assert ed.lua("return vim.b.pi_rpc_input_mode") == "prompt"
    assert tuple(ed.nvim.current.window.cursor) == (7, 0)
    ed.nvim.current.buffer[6] = "why?"
    ed.nvim.feedkeys(ed.nvim.replace_termcodes("<Esc><CR>", True, False, True), "x", False)
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Because.', 1, true) ~= nil")
    assert "b = 2\n```\n\nwhy?" in ed.chat_text()


def test_an_edit_shows_its_diff_and_reloads_the_edited_buffer(make_editor: Any) -> None:
    """The chat shows the edit's diff, the buffer open on that file shows the new text
    (no stale text beside a chat saying it is fixed), and `gf` jumps to the first change."""
    ed = make_editor(
        one_reply(
            [
                {
                    "toolCall": {
                        "name": "edit",
                        "arguments": {"path": "greet.py", "edits": [{"oldText": "helo", "newText": "hello"}]},
                    }
                }
            ],
            [{"text": "Fixed."}],
        )
    )
    (ed.workspace / "greet.py").write_text("import sys\n\nprint('helo')\n")
    ed.nvim.command("edit greet.py")
    source = ed.nvim.current.buffer
    ed.nvim.command("PiPrompt fix the typo")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Fixed.', 1, true) ~= nil")
    assert source[:] == ["import sys", "", "print('hello')"]
    lines = ed.chat_lines()
    header = lines.index("**edit** `greet.py` (1 edit) — ✓ done")
    assert lines[header + 1] == "```diff"
    assert "-print('helo')" in lines and "+print('hello')" in lines
    ed.lua(
        "local w = require('pi_rpc.window').open_chat(true) vim.api.nvim_win_set_cursor(w, { ..., 0 })",
        header + 2,
    )
    ed.nvim.command("normal gf")
    assert ed.nvim.current.buffer.name == str(ed.workspace / "greet.py")
    assert ed.lua("return vim.api.nvim_win_get_cursor(0)[1]") == 3


def test_buffer_and_diagnostics_go_along_as_context(make_editor: Any) -> None:
    """`#buffer` and `#diagnostics` in the input send the buffer the input was opened
    from and its diagnostics; `@` and `#` complete in the input."""
    ed = make_editor({"replies": [{"match": "undefined name", "turns": [[{"text": "Got it."}]]}]})
    (ed.workspace / "m.py").write_text("a = 1\nprint(b)\n")
    (ed.workspace / "module_two.py").write_text("")
    ed.nvim.command("edit m.py")
    ed.lua(
        "vim.diagnostic.set(vim.api.nvim_create_namespace('t'), 0, "
        "{ { lnum = 1, col = 6, severity = vim.diagnostic.severity.ERROR, message = \"undefined name 'b'\", "
        "source = 'pyflakes' } })"
    )
    ed.nvim.command("PiPrompt")
    assert ed.lua("return require('pi_rpc.context').omnifunc(0, '#dia')") == ["#diagnostics"]
    assert ed.lua("return require('pi_rpc.context').omnifunc(0, '@module_')") == ["@module_two.py"]
    ed.nvim.current.buffer[:] = ["fix #diagnostics in #buffer"]
    ed.nvim.feedkeys(ed.nvim.replace_termcodes("<Esc><CR>", True, False, True), "x", False)
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Got it.', 1, true) ~= nil")
    text = ed.chat_text()
    assert "fix the diagnostics of `m.py` in `m.py`" in text
    assert "- line 2, col 7, ERROR [pyflakes]: undefined name 'b'" in text
    assert "```python\na = 1\nprint(b)\n```" in text


def test_thinking_stats_clear_queue_and_edit_last_prompt(make_editor: Any) -> None:
    """Commands for what the daemon already has: thinking/set, session/stats, clearQueue; and
    :PiEdit brings the last prompt back into the input."""
    ed = make_editor({"replies": [{"repeat": True, "turns": [[{"text": "Done."}]]}]})
    ed.nvim.command("PiPrompt first try")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Done.', 1, true) ~= nil")
    ed.nvim.command("PiThinking high")
    ed.wait("vim.fn.execute('messages'):find('pi-rpc: thinking: ', 1, true) ~= nil")
    assert "(this model has: off)" in ed.messages()  # the scripted model has no reasoning
    ed.nvim.command("PiStats")
    ed.wait("vim.fn.execute('messages'):find('tool calls; tokens in', 1, true) ~= nil")
    assert re.search(r"pi-rpc: \d+ messages, 0 tool calls; tokens in \d+, out \d+, .* cost \$0\.0000", ed.messages())
    ed.nvim.command("PiClearQueue")
    ed.wait("vim.fn.execute('messages'):find('removed 0 queued messages', 1, true) ~= nil")
    ed.nvim.command("PiEdit")
    assert ed.nvim.current.buffer[0] == "first try"
    assert ed.lua("return vim.b.pi_rpc_input_mode") == "prompt"


def test_a_command_the_user_ran_shows_in_a_replayed_chat(make_editor: Any) -> None:
    """A transcript holding the user's own command (Pi's `bashExecution` message: from Pi's `!`, or
    another client of the session) shows the command and its output when the chat is rebuilt."""
    ed = make_editor()
    ran = ed.request("bash", {"command": "printf 'one\\ntwo\\n'; exit 3"})
    assert ran.get("err") is None, ran
    messages = ed.request("messages")["result"]["messages"]
    assert [m["role"] for m in messages] == ["bashExecution"]
    ed.lua("require('pi_rpc.chat').replay(...)", messages)
    text = ed.chat_text()
    assert "## You ran `printf 'one\\ntwo\\n'; exit 3`\n\n```text\none\ntwo\n```\n_Exit code 3._" in text


def test_a_compacted_session_shows_its_summary_in_a_replayed_chat(make_editor: Any, tmp_path: Any) -> None:
    """A compacted transcript starts with Pi's `compactionSummary` message: a rebuilt chat shows
    it under a heading that says what it stands for, then the turns kept (spec 16.1)."""
    settings = tmp_path / "xdg-config" / "pi-rpc" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text('{"compaction": {"keepRecentTokens": 10}}')
    summary = {"match": "^<conversation>", "turns": [[{"text": "## Goal\nGreet everyone"}]]}
    answers = [{"match": f"^{word}", "turns": [[{"text": f"answer {word}"}]]} for word in ("one", "two")]
    ed = make_editor({"replies": [summary, *answers]})
    for word in ("one", "two"):
        assert ed.request("prompt", {"message": f"{word} " + "f" * 400}).get("err") is None
    compacted = ed.request("compact")
    assert compacted.get("err") is None, compacted
    messages = ed.request("messages")["result"]["messages"]
    # The system message the compaction kept comes first (the chat shows none), then the summary.
    assert [message["role"] for message in messages[:2]] == ["system", "compactionSummary"]
    ed.lua("require('pi_rpc.chat').replay(...)", messages)
    text = ed.chat_text()
    tokens = messages[1]["tokensBefore"]
    assert f"## Earlier conversation summarised ({tokens} tokens)\n\n## Goal\nGreet everyone\n" in text
    assert text.index("Earlier conversation") < text.index("answer two")
