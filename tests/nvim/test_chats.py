"""Several chats: each its own daemon, so two chats run at the same time; :PiChats
picks one; what acts on "the chat" (statusline, :PiAbort, the approval float) acts on the
current one; chats.per_tab gives each tabpage its own; completion pops up on `@` and `#`."""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Editor, require_daemon, until

pytestmark = pytest.mark.nvim

IDLE = "require('pi_rpc.status').phase() == 'idle'"


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


def slow_and_quick(marker: str) -> dict[str, Any]:
    """A prompt saying "slow" runs a 30 s command; one saying "quick" answers at once."""
    return {
        "replies": [
            {
                "match": "slow",
                "turns": [
                    [{"toolCall": {"name": "bash", "arguments": {"command": f"echo {marker}; sleep 30"}}}],
                    [{"text": "slow done"}],
                ],
            },
            {"match": "quick", "turns": [[{"text": "Quick answer."}]]},
        ]
    }


def buffer_text(ed: Editor, name: str) -> str:
    return str(ed.lua("return table.concat(vim.api.nvim_buf_get_lines(vim.fn.bufnr(...), 0, -1, false), '\\n')", name))


def test_two_chats_run_at_the_same_time_and_abort_acts_on_the_current_one(make_editor: Any, tmp_path: Any) -> None:
    marker = f"slow-{tmp_path.name}"
    ed = make_editor(slow_and_quick(marker))
    ed.nvim.command("PiPrompt slow please")
    ed.wait_chat(marker)
    first_session = ed.request("state")["result"]["sessionId"]

    ed.nvim.command("PiChat new")
    assert ed.lua("return require('pi_rpc').statusline()") == "π stopped"  # its daemon starts on use
    ed.nvim.command("PiPrompt quick one")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Quick answer.', 1, true) ~= nil")
    second = ed.request("state")["result"]
    assert second["sessionId"] != first_session  # its own daemon and session
    # The new chat's window shows only its own conversation; the first one goes on elsewhere.
    assert marker not in ed.chat_text()
    assert ed.lua("return vim.api.nvim_buf_get_name(require('pi_rpc.chat').buf())").endswith("pi-rpc://chat/2")
    assert ed.lua("return vim.api.nvim_win_get_buf(require('pi_rpc.window').chat_win())") == ed.lua(
        "return require('pi_rpc.chat').buf()"
    )
    assert marker in buffer_text(ed, "pi-rpc://chat")

    # :PiAbort in the second chat leaves the first one's run going.
    ed.nvim.command("PiAbort")
    ed.nvim.command("PiChat 1")
    assert ed.lua("return require('pi_rpc').statusline()") == "π bash"
    assert ed.request("state")["result"]["sessionId"] == first_session
    ed.nvim.command("PiAbort")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('_Aborted._', 1, true) ~= nil")
    assert "Quick answer." not in ed.chat_text()


def test_pichats_lists_each_chat_with_its_first_prompt_and_state(make_editor: Any, tmp_path: Any) -> None:
    marker = f"slow-{tmp_path.name}"
    ed = make_editor(slow_and_quick(marker))
    ed.nvim.command("PiPrompt slow please")
    ed.wait_chat(marker)
    ed.nvim.command("PiChat new")
    ed.nvim.command("PiPrompt quick one")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Quick answer.', 1, true) ~= nil")
    # vim.ui.select is the seam Telescope and friends replace: record what it offers, pick #1.
    labels = ed.lua(
        """
        local shown
        vim.ui.select = function(items, opts, on_choice)
          shown = vim.tbl_map(opts.format_item, items)
          on_choice(items[1], 1)
        end
        vim.cmd('PiChats')
        return shown
        """
    )
    assert labels == [" #1 bash  slow please", "*#2 idle  quick one", "+ new chat"]
    assert marker in ed.chat_text()
    assert ed.lua("return require('pi_rpc').statusline()") == "π bash"
    ed.nvim.command("PiAbort")
    ed.wait(IDLE)


def test_an_approval_of_a_chat_in_the_background_waits_for_it(make_editor: Any, tmp_path: Any) -> None:
    script = {
        "replies": [
            {
                "match": "write",
                "turns": [
                    [{"toolCall": {"name": "write", "arguments": {"path": "new.txt", "content": "hi\n"}}}],
                    [{"text": "written"}],
                ],
            },
        ]
    }
    ed = make_editor(script, approvals={"policy": "ask"})
    ed.request("state")  # the first chat's daemon, idle
    ed.nvim.command("PiChat new")
    ed.nvim.command("PiPrompt write it")
    ed.wait("require('pi_rpc.approval').float_win() ~= nil")
    ed.nvim.command("PiChat 1")
    # The float went with its chat; the first chat's statusline does not ask.
    assert ed.lua("return require('pi_rpc.approval').float_win()") is None
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"
    ed.nvim.command("PiChat 2")
    ed.wait("require('pi_rpc.approval').float_win() ~= nil")
    assert ed.lua("return require('pi_rpc').statusline()") == "π approve write?"
    ed.lua("require('pi_rpc.approval').decide('allow')")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('written', 1, true) ~= nil")
    assert (ed.workspace / "new.txt").read_text() == "hi\n"


def test_a_background_request_is_announced(make_editor: Any) -> None:
    script = {
        "replies": [
            {
                "match": "write",
                "turns": [
                    [{"toolCall": {"name": "write", "arguments": {"path": "bg.txt", "content": "x\n"}}}],
                    [{"text": "written"}],
                ],
            },
        ]
    }
    ed = make_editor(script, approvals={"policy": "ask"})
    ed.nvim.command("PiPrompt write in the background")
    ed.lua("require('pi_rpc.chats').new()")  # switch before the request comes
    ed.wait("vim.fn.execute('messages'):find('chat #1 waits for approval of write', 1, true) ~= nil")
    assert ed.lua("return require('pi_rpc.approval').float_win()") is None


def test_per_tab_chats_follow_the_tabpage(make_editor: Any) -> None:
    ed = make_editor(
        {
            "replies": [
                {"match": "one", "turns": [[{"text": "Answer one."}]]},
                {"match": "two", "turns": [[{"text": "Answer two."}]]},
            ]
        },
        chats={"per_tab": True},
    )
    ed.nvim.command("PiPrompt tab one")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Answer one.', 1, true) ~= nil")
    ed.nvim.command("tabnew")
    assert ed.lua("return require('pi_rpc.chats').current().id") == 2
    ed.nvim.command("PiPrompt tab two")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Answer two.', 1, true) ~= nil")
    assert "Answer one." not in ed.chat_text()
    ed.nvim.command("tabprevious")
    assert ed.lua("return require('pi_rpc.chats').current().id") == 1
    assert "Answer one." in ed.chat_text() and "Answer two." not in ed.chat_text()


def test_quitting_stops_every_chats_daemon(make_editor: Any) -> None:
    ed = make_editor()
    ed.request("state")
    ed.nvim.command("PiChat new")
    ed.request("state")
    log = ed.log_file
    try:
        ed.nvim.command("qa!")
    except (OSError, EOFError):
        pass

    until(lambda: log.read_text().count("daemon exited (code 0, signal 0)") >= 2)
    assert log.read_text().count("daemon exited (code 0, signal 0)") == 2


def completion_words(ed: Editor, *, shown: bool = True) -> list[str]:
    """The words of the insert-mode completion menu: once it shows (each request lets Neovim's
    main loop take the typeahead in between), or with `shown=False` as it is now."""

    def words() -> list[str]:
        return list(ed.lua("return vim.tbl_map(function(i) return i.word end, vim.fn.complete_info({'items'}).items)"))

    return until(words) if shown else words()


@pytest.mark.parametrize("typed, expected", [("@READ", ["@README.md"]), ("#di", ["#diagnostics"])])
def test_completion_pops_up_after_at_and_hash(make_editor: Any, typed: str, expected: list[str]) -> None:
    ed = make_editor()
    ed.lua("require('pi_rpc').open_input('prompt')")
    ed.nvim.input(typed)
    assert completion_words(ed) == expected
    assert ed.lua("return vim.fn.mode()") == "i"


def test_no_completion_pops_up_inside_a_word(make_editor: Any) -> None:
    ed = make_editor()
    ed.lua("require('pi_rpc').open_input('prompt')")
    ed.nvim.input("me@example.org issue#")
    # Once every key is in the line, the plugin has seen each one: a menu would be open by now.
    until(lambda: ed.lua("return vim.api.nvim_get_current_line()") == "me@example.org issue#")
    assert completion_words(ed, shown=False) == []
    assert ed.lua("return vim.api.nvim_get_current_line()") == "me@example.org issue#"


def test_entering_a_chats_window_makes_it_current(make_editor: Any) -> None:
    ed = make_editor({"replies": [{"match": "one", "turns": [[{"text": "Answer one."}]]}]})
    ed.nvim.command("PiPrompt one")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Answer one.', 1, true) ~= nil")
    ed.nvim.command("PiChat new")
    assert ed.lua("return require('pi_rpc').statusline()") == "π stopped"
    ed.nvim.command("tab sbuffer pi-rpc://chat")  # chat 1's buffer, in a window of its own
    assert ed.lua("return require('pi_rpc.chats').current().id") == 1
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"
    assert "Answer one." in ed.chat_text()


def daemon_exits(ed: Editor, expected: int) -> int:
    """Daemons stopped gracefully so far, once `expected` have (the log line follows the exit)."""
    ed.wait(
        f"select(2, table.concat(vim.fn.readfile({str(ed.log_file)!r}), '\\n')"
        f":gsub('daemon exited %(code 0, signal 0%)', '')) >= {expected}"
    )
    return ed.log_file.read_text().count("daemon exited (code 0, signal 0)")


def test_pichat_close_stops_that_chats_daemon(make_editor: Any) -> None:
    ed = make_editor({"replies": [{"match": "one", "turns": [[{"text": "Answer one."}]]}]})
    ed.nvim.command("PiPrompt one")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Answer one.', 1, true) ~= nil")
    ed.nvim.command("PiChat new")
    ed.request("state")
    ed.nvim.command("PiChat close")
    assert daemon_exits(ed, 1) == 1
    assert ed.lua("return vim.tbl_map(function(r) return r.id end, require('pi_rpc.chats').list())") == [1]
    assert ed.lua("return vim.fn.bufexists('pi-rpc://chat/2')") == 0
    assert "Answer one." in ed.chat_text()  # back in the chat left
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"
    ed.nvim.command("PiChat close 1")  # the only chat: a new, empty one takes its place
    assert daemon_exits(ed, 2) == 2
    assert ed.lua("return vim.tbl_map(function(r) return r.id end, require('pi_rpc.chats').list())") == [3]
    assert ed.chat_lines() == [""]


def test_closing_a_tab_closes_its_chat(make_editor: Any) -> None:
    ed = make_editor(chats={"per_tab": True})
    ed.request("state")
    ed.nvim.command("tabnew")
    ed.request("state")
    ed.nvim.command("tabclose")
    assert daemon_exits(ed, 1) == 1
    assert ed.lua("return vim.tbl_map(function(r) return r.id end, require('pi_rpc.chats').list())") == [1]
