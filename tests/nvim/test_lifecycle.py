"""Daemon lifecycle: started on first use, stopped with Neovim, restarted when it dies."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from .conftest import live_group_members, quit_editor, require_daemon, run_shell, wait_exit

pytestmark = pytest.mark.nvim


@pytest.fixture(autouse=True)
def _daemon() -> None:
    require_daemon()


def test_daemon_starts_on_first_use_only(make_editor: Any) -> None:
    ed = make_editor()
    assert ed.lua("return require('pi_rpc.daemon').is_running()") is False
    assert ed.lua("return require('pi_rpc').statusline()") == "π stopped"
    ed.request("state")
    assert ed.lua("return require('pi_rpc.daemon').is_ready()") is True
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"
    assert "starting: " in ed.log_file.read_text()


def test_quitting_neovim_during_a_run_leaves_no_process(make_editor: Any, tmp_path: Any) -> None:
    """VimLeavePre sends shutdown (which aborts the run, spec 15.14) and exit: neither the daemon
    nor the command it was running survives Neovim."""
    marker = f"pi-nvim-quit-{tmp_path.name}"
    ed = make_editor(
        {
            "replies": [
                {
                    "turns": [
                        [
                            {
                                "toolCall": {
                                    "name": "bash",
                                    "arguments": {"command": f"printf 'go-%s\\n' {marker}; sleep 30; :"},
                                }
                            }
                        ],
                    ]
                }
            ]
        }
    )
    ed.nvim.command("PiPrompt run it")
    ed.wait_chat(f"go-{marker}")
    daemon = ed.daemon_pid()
    group = live_group_members(run_shell(marker, "sleep 30"))

    quit_editor(ed)
    assert wait_exit(daemon), "the daemon outlived Neovim"
    for pid in group:
        assert wait_exit(pid), f"process {pid} of the run outlived Neovim"
    # A graceful stop (shutdown, then exit), not the daemon noticing its stdin close.
    assert "daemon exited (code 0, signal 0)" in ed.log_file.read_text()


def test_a_dead_daemon_is_restarted_with_a_message(make_editor: Any) -> None:
    ed = make_editor()
    old = ed.daemon_pid()
    os.kill(old, signal.SIGKILL)
    ed.wait("vim.fn.execute('messages'):find('exited unexpectedly', 1, true) ~= nil")
    ed.wait("require('pi_rpc.daemon').is_ready()")
    new = ed.daemon_pid()
    assert new != old
    messages = ed.messages()
    assert f"pi-rpc: the daemon exited unexpectedly (code 0, signal {int(signal.SIGKILL)})\nRestarting. Log: " in (
        messages
    )
    assert "**Error:** the daemon exited unexpectedly" in ed.chat_text()
    assert ed.request("state")["result"]["messageCount"] == 0


def test_pinew_starts_an_empty_session_and_clears_the_chat(make_editor: Any) -> None:
    ed = make_editor({"replies": [{"turns": [[{"text": "Hello there."}]]}]})
    ed.nvim.command("PiPrompt hi")
    ed.wait(
        "require('pi_rpc.status').phase() == 'idle' and "
        "require('pi_rpc.chat').text():find('Hello there.', 1, true) ~= nil"
    )
    old_pid = ed.daemon_pid()
    old_session = ed.request("state")["result"]["sessionId"]
    ed.nvim.command("PiNew")
    ed.wait("require('pi_rpc.daemon').is_ready()")
    state = ed.request("state")["result"]
    assert state["messageCount"] == 0 and state["sessionId"] != old_session
    assert ed.daemon_pid() == old_pid  # the same daemon: no restart needed
    assert ed.chat_lines() == [""]


def test_checkhealth_reports_a_real_round_trip(make_editor: Any) -> None:
    ed = make_editor()
    ed.nvim.command("checkhealth pi_rpc")
    text = "\n".join(ed.nvim.current.buffer[:])
    assert "daemon answers: pi-rpc 0.1.0, protocol 1" in text
    assert "model: faux/scripted (scripted model: replies come from a script)" in text


def test_without_a_key_health_and_prompt_say_what_to_set(make_editor: Any) -> None:
    """The default command without a key gets no scripted model; the user is told."""
    ed = make_editor(scripted=False)
    ed.nvim.command("checkhealth pi_rpc")
    text = "\n".join(ed.nvim.current.buffer[:])
    assert "no model is configured, so prompts fail" in text
    ed.nvim.command("PiPrompt Can you write a docstring for main()?")
    ed.wait("vim.fn.execute('messages'):find('No model is configured', 1, true) ~= nil")
    assert "OPENAI_API_KEY" in ed.messages()
    assert not (ed.workspace / "NOTES.md").exists()


def test_pilog_opens_the_daemon_log(make_editor: Any) -> None:
    ed = make_editor()
    ed.request("state")
    ed.nvim.command("PiLog")
    assert ed.nvim.current.buffer.name == str(ed.log_file)
    assert "starting: " in "\n".join(ed.nvim.current.buffer[:])


def test_pisessions_resumes_a_stored_conversation(make_editor: Any) -> None:
    """The daemon keeps each conversation on disk; :PiSessions brings one back into the chat."""
    ed = make_editor(
        {
            "replies": [
                {
                    "turns": [
                        [{"text": "Reading it."}, {"toolCall": {"name": "read", "arguments": {"path": "README.md"}}}],
                        [{"text": "It says hello."}],
                    ]
                },
                {"repeat": True, "turns": [[{"text": "Anything else?"}]]},
            ]
        }
    )
    ed.nvim.command("PiPrompt what does the readme say")
    ed.wait(
        "require('pi_rpc.status').phase() == 'idle' and "
        "require('pi_rpc.chat').text():find('It says hello.', 1, true) ~= nil"
    )
    first = ed.request("state")["result"]["sessionId"]
    ed.nvim.command("PiName readme")
    ed.wait("vim.fn.execute('messages'):find('session named \"readme\"', 1, true) ~= nil")
    # Without a name, :PiName asks, the current name filled in; vim.ui.input stands in for the user.
    ed.lua("vim.ui.input = function(opts, on_confirm) _G.pi_default = opts.default on_confirm('readme tour') end")
    ed.nvim.command("PiName")
    ed.wait("vim.fn.execute('messages'):find('session named \"readme tour\"', 1, true) ~= nil")
    assert ed.lua("return _G.pi_default") == "readme"
    assert ed.request("state")["result"]["sessionName"] == "readme tour"
    ed.nvim.command("PiNew")
    ed.wait("require('pi_rpc.chat').text():find('It says hello.', 1, true) == nil")
    # vim.ui.select stands in for the user: it keeps the lines the picker showed and chooses the
    # newest stored session that is not empty.
    ed.lua(
        "vim.ui.select = function(items, opts, on_choice) "
        "_G.pi_shown = vim.tbl_map(opts.format_item, items) "
        "for _, s in ipairs(items) do if s.messageCount > 0 then return on_choice(s) end end end"
    )
    ed.nvim.command("PiSessions")
    ed.wait("require('pi_rpc.chat').text():find('It says hello.', 1, true) ~= nil")
    shown = ed.lua("return _G.pi_shown")
    assert any(line.endswith("msgs  readme tour") for line in shown), shown  # named: shown by its name
    text = ed.chat_text()
    assert "what does the readme say" in text and "Reading it." in text and "read" in text
    state = ed.request("state")["result"]
    assert state["sessionId"] == first and state["messageCount"] > 0


def test_a_missing_executable_is_named_and_not_restarted(make_editor: Any, tmp_path: Any) -> None:
    """No "exited unexpectedly (code 127)" and three restarts, but the reason."""
    missing = str(tmp_path / "no-such-dir" / "pi-rpc")
    ed = make_editor(cmd=[missing])
    ed.lua("pcall(vim.cmd, 'PiPrompt hi')")  # an error message raises through the API; pcall keeps it
    ed.wait("vim.fn.execute('messages'):find('cannot start the daemon', 1, true) ~= nil")
    messages = ed.messages()
    assert f"`{missing}` is not an executable on PATH" in messages
    assert "exited unexpectedly" not in messages
    assert f"**Error:** cannot start the daemon: `{missing}` is not an executable" in ed.chat_text()
    assert ed.lua("return require('pi_rpc').statusline()") == "π stopped"


def test_bad_daemon_arguments_show_its_error_once(make_editor: Any) -> None:
    """The daemon's own stderr (argparse's message) is in the message; a daemon that
    never got as far as `initialize` is not restarted over and over."""
    ed = make_editor(args=["--no-such-option"])
    ed.lua("pcall(require('pi_rpc.daemon').ensure)")
    ed.wait("vim.fn.execute('messages'):find('Not restarting', 1, true) ~= nil")
    messages = ed.messages()
    assert "unrecognized arguments: --no-such-option" in messages
    assert ed.log_file.read_text().count("starting: ") == 1


def test_a_crashed_daemon_comes_back_with_the_same_conversation(make_editor: Any) -> None:
    """The chat still shows the conversation, so the new daemon continues it
    (session/load) instead of starting empty."""
    ed = make_editor(
        {
            "replies": [
                {"turns": [[{"text": "Hello there."}]]},
                {"turns": [[{"text": "Still here."}]]},
            ]
        }
    )
    ed.nvim.command("PiPrompt hi")
    ed.wait(f"{IDLE} and require('pi_rpc.chat').text():find('Hello there.', 1, true) ~= nil")
    before = ed.request("state")["result"]
    old = ed.daemon_pid()
    os.kill(old, signal.SIGKILL)
    ed.wait("require('pi_rpc.chat').text():find('the conversation goes on', 1, true) ~= nil")
    assert ed.daemon_pid() != old
    after = ed.request("state")["result"]
    assert after["sessionId"] == before["sessionId"] and after["messageCount"] == before["messageCount"] > 0


def test_pinew_during_a_running_tool_leaves_the_new_chat_empty(make_editor: Any) -> None:
    """The aborted run's last events (the tool's error result, "Aborted") arrive after
    :PiNew emptied the chat; they belong to the old conversation."""
    ed = make_editor({"replies": [{"turns": [[{"toolCall": {"name": "bash", "arguments": {"command": "sleep 30"}}}]]}]})
    ed.lua(
        "_G.answered = false require('pi_rpc.daemon').trace = function(kind, method) "
        "if kind == 'response' and method == 'prompt' then _G.answered = true end end"
    )
    ed.nvim.command("PiPrompt wait")
    ed.wait("require('pi_rpc.chat').text():find('running', 1, true) ~= nil")
    ed.nvim.command("PiNew")
    # The old prompt's answer (aborted) comes last, after the run's final events.
    ed.wait(f"_G.answered and {IDLE} and require('pi_rpc.daemon').is_ready()")
    ed.lua("require('pi_rpc.chat').flush()")
    assert ed.chat_lines() == [""]


IDLE = "require('pi_rpc.status').phase() == 'idle'"
