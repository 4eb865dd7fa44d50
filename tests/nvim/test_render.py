"""Rendering from recorded agent events, in a real Neovim but without the daemon."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .conftest import Editor

pytestmark = pytest.mark.nvim

FOLDCLOSED = """
local win, lnum = ...
return vim.api.nvim_win_call(win, function() return vim.fn.foldclosed(lnum) end)
"""
NOTICE = "[Showing lines 2001-4000 of 4000. Full output: /tmp/pi-bash-0123456789abcdef.log]"


def apply(ed: Editor, events: list[dict[str, Any]]) -> None:
    ed.lua(
        """
        for _, ev in ipairs(...) do
          require('pi_rpc.status').apply(ev)
          require('pi_rpc.chat').apply(ev)
        end
        """,
        events,
    )


def update(kind: str, **fields: Any) -> dict[str, Any]:
    return {"type": "message_update", "assistantMessageEvent": {"type": kind, **fields}}


def test_text_streams_in_place_from_deltas(make_editor: Any) -> None:
    """spec 18.6: message_update carries deltas only; the chat appends them as they come."""
    ed = make_editor()
    apply(
        ed,
        [
            {"type": "agent_start"},
            {"type": "message_start", "message": {"role": "user", "content": "hi", "timestamp": 1}},
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            update("thinking_start", contentIndex=0),
            update("thinking_delta", contentIndex=0, delta="Let me"),
            update("thinking_delta", contentIndex=0, delta=" look.\nSecond"),
            update("text_start", contentIndex=1),
            update("text_delta", contentIndex=1, delta="Hel"),
        ],
    )
    assert ed.chat_lines() == ["## You", "", "hi", "", "## Pi", "", "> Let me look.", "> Second", "", "Hel"]
    apply(ed, [update("text_delta", contentIndex=1, delta="lo\nworld")])
    assert ed.chat_lines()[-2:] == ["Hello", "world"]
    assert ed.lua("return require('pi_rpc').statusline()") == "π streaming"


def test_tool_status_live_output_and_folded_truncated_result(make_editor: Any) -> None:
    """spec 9.11, 9.12, 15.2: a tool shows running -> live output -> done, its result folded,
    Pi's truncation notice visible outside the fold."""
    ed = make_editor()
    ed.lua("require('pi_rpc.window').open_chat(true)")
    args = {"command": "seq 1 4000"}
    apply(
        ed,
        [
            {"type": "agent_start"},
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            update("toolcall_start", contentIndex=0, id="call_1", toolName="bash"),
            update(
                "toolcall_end",
                contentIndex=0,
                toolCall={"type": "toolCall", "id": "call_1", "name": "bash", "arguments": args},
            ),
            {"type": "tool_execution_start", "toolCallId": "call_1", "toolName": "bash", "args": args},
            {
                "type": "tool_execution_update",
                "toolCallId": "call_1",
                "toolName": "bash",
                "args": args,
                "partialResult": {
                    "content": [{"type": "text", "text": "\n".join(map(str, range(1, 101)))}],
                    "details": None,
                },
            },
        ],
    )
    lines = ed.chat_lines()
    assert "**bash** `seq 1 4000` — ⏳ running" in lines
    assert "… 70 earlier lines" in lines and lines[-2:] == ["100", "```"]
    assert ed.lua("return require('pi_rpc').statusline()") == "π bash"

    text = "\n".join(map(str, range(2001, 4001))) + "\n\n" + NOTICE
    details = {
        "truncation": {"truncated": True, "truncatedBy": "lines", "totalLines": 4000},
        "fullOutputPath": "/tmp/pi-bash-0123456789abcdef.log",
    }
    apply(
        ed,
        [
            {
                "type": "tool_execution_end",
                "toolCallId": "call_1",
                "toolName": "bash",
                "result": {"content": [{"type": "text", "text": text}], "details": details},
                "isError": False,
            },
        ],
    )
    lines = ed.chat_lines()
    header = lines.index("**bash** `seq 1 4000` — ✓ done")
    # Only the tail stays in the chat: a 2000-line block would break markdown highlighting.
    assert lines[header + 1] == "```text" and lines[header + 2] == "… 1960 earlier lines (go: all)"
    assert lines[header + 3] == "3961" and lines[header + 42] == "4000" and lines[header + 43] == "```"
    assert lines[header + 3] != NOTICE and lines[-1] == NOTICE + "  (go: open full output)"
    win = ed.lua("return require('pi_rpc.window').chat_win()")
    closed = ed.lua(FOLDCLOSED, win, header + 3)
    assert closed == header + 2  # the fence line, 1-based, starts the closed fold
    assert ed.lua(FOLDCLOSED, win, len(lines)) == -1  # the notice stays visible
    assert ed.lua("return require('pi_rpc.chat').block_at(...).full_output_path", len(lines)) == (
        "/tmp/pi-bash-0123456789abcdef.log"
    )
    assert ed.lua("return require('pi_rpc').statusline()") == "π streaming"


def test_error_result_keeps_status_line_and_notice(make_editor: Any) -> None:
    """spec 9.13: on a non-zero exit the notice is still part of the text, before the status."""
    ed = make_editor()
    text = "tail\n\n" + NOTICE + "\n\nCommand exited with code 2"
    # A failed bash call whose output was cut keeps its details (PROTOCOL.md, "Tool result details").
    details = {"truncation": {"truncated": True}, "fullOutputPath": "/tmp/pi-bash-0123456789abcdef.log"}
    apply(
        ed,
        [
            {"type": "tool_execution_start", "toolCallId": "c", "toolName": "bash", "args": {"command": "x"}},
            {
                "type": "tool_execution_end",
                "toolCallId": "c",
                "toolName": "bash",
                "result": {"content": [{"type": "text", "text": text}], "details": details},
                "isError": True,
            },
        ],
    )
    assert ed.chat_lines()[-7:] == [
        "**bash** `x` — ✗ error",
        "```text",
        "tail",
        "",
        "Command exited with code 2",
        "```",
        NOTICE + "  (go: open full output)",
    ]


def result_event(call_id: str, tool: str, text: str, details: Any) -> dict[str, Any]:
    return {
        "type": "tool_execution_end",
        "toolCallId": call_id,
        "toolName": tool,
        "args": {"path": "notes.md"} if tool == "read" else {"command": "x"},
        "result": {"content": [{"type": "text", "text": text}], "details": details},
        "isError": False,
    }


def test_the_full_log_is_the_one_the_details_name_never_the_notices_words(make_editor: Any) -> None:
    """A file the agent reads that ends like Pi's notice names nothing to open: only a result's
    `details.fullOutputPath` is a log (the plugin used to take the path out of the notice's text)."""
    ed = make_editor()
    lookalike = "my notes\n\n[Showing lines 1-2 of 9. Full output: /etc/hostname]"
    real = "\n".join(map(str, range(1, 6))) + "\n\n[Showing lines 1-5 of 9. Full output: /tmp/elsewhere.log]"
    log = "/tmp/pi-bash-fedcba9876543210.log"
    apply(
        ed,
        [
            result_event("read1", "read", lookalike, None),
            result_event("bash1", "bash", real, {"truncation": {"truncated": True}, "fullOutputPath": log}),
        ],
    )
    lines = ed.chat_lines()
    read_at = lines.index("**read** `notes.md` — ✓ done") + 1
    bash_at = lines.index("**bash** `x` — ✓ done") + 1
    paths = "return require('pi_rpc.chat').block_at(...).full_output_path"
    assert ed.lua(paths, read_at) is None  # its words stay the file's text, inside the fence
    assert "[Showing lines 1-2 of 9. Full output: /etc/hostname]" in lines[read_at:bash_at]
    assert ed.lua(paths, bash_at) == log
    assert lines[-1] == "[Showing lines 1-5 of 9. Full output: /tmp/elsewhere.log]  (go: open full output)"
    ed.lua(
        "vim.api.nvim_set_current_buf(require('pi_rpc.chat').buf()) vim.api.nvim_win_set_cursor(0, { ..., 0 })",
        read_at + 1,
    )
    ed.lua("require('pi_rpc.chat').open_full_output()")
    assert ed.lua("return vim.api.nvim_buf_get_name(0)") == "pi-rpc://output/read1"  # the result, not /etc/hostname


def test_keys_bound_to_the_card_plug_mappings_move_between_tool_calls(make_editor: Any) -> None:
    """<Plug>(pi-rpc-next-card) and -prev-card focus the chat from another window and move its
    cursor from one tool call's header to the next, skipping the text between."""
    ed = make_editor()
    ed.lua("vim.keymap.set('n', '<F7>', '<Plug>(pi-rpc-next-card)')")
    ed.lua("vim.keymap.set('n', '<F8>', '<Plug>(pi-rpc-prev-card)')")
    apply(
        ed,
        [
            {"type": "message_start", "message": {"role": "user", "content": "go", "timestamp": 1}},
            result_event("c1", "bash", "one", None),
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            update("text_start", contentIndex=0),
            update("text_delta", contentIndex=0, delta="between"),
            result_event("c2", "read", "two", None),
        ],
    )
    ed.lua("require('pi_rpc.window').open_chat(true) vim.api.nvim_win_set_cursor(0, { 1, 0 }) vim.cmd('wincmd p')")
    line = "return vim.api.nvim_get_current_line()"
    ed.nvim.input("<F7>")
    ed.wait("vim.api.nvim_get_current_buf() == require('pi_rpc.chat').buf()")
    assert ed.lua(line) == "**bash** `x` — ✓ done"
    ed.nvim.input("<F7>")
    ed.wait("vim.api.nvim_get_current_line():find('read', 1, true) ~= nil")
    assert ed.lua(line) == "**read** `notes.md` — ✓ done"
    ed.nvim.input("<F8>")
    ed.wait("vim.api.nvim_get_current_line():find('bash', 1, true) ~= nil")


def test_output_with_backticks_gets_a_longer_fence(make_editor: Any) -> None:
    ed = make_editor()
    apply(
        ed,
        [
            {
                "type": "tool_execution_end",
                "toolCallId": "c",
                "toolName": "read",
                "args": {"path": "a.md"},
                "result": {"content": [{"type": "text", "text": "````lua\nx\n````"}]},
                "isError": False,
            },
        ],
    )
    assert ed.chat_lines()[-5:] == ["`````text", "````lua", "x", "````", "`````"]


def test_errors_aborts_and_retries_are_shown(make_editor: Any) -> None:
    """spec 15.5c, 15.14, 18.6: error/aborted assistant messages and auto-retry notices."""
    ed = make_editor()
    apply(
        ed,
        [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            {
                "type": "auto_retry_start",
                "attempt": 1,
                "maxAttempts": 3,
                "delayMs": 2000,
                "errorMessage": "overloaded",
            },
            {
                "type": "message_end",
                "message": {
                    "role": "assistant",
                    "content": [],
                    "stopReason": "error",
                    "errorMessage": "boom",
                },
            },
            {
                "type": "message_end",
                "message": {
                    "role": "assistant",
                    "content": [],
                    "stopReason": "aborted",
                    "errorMessage": None,
                },
            },
            {"type": "agent_end", "messages": []},
        ],
    )
    assert ed.chat_lines()[-5:] == [
        "_Retrying (1/3) in 2.0s: overloaded_",
        "",
        "**Error:** boom",
        "",
        "_Aborted._",
    ]
    assert ed.lua("return require('pi_rpc').statusline()") == "π idle"


def test_statusline_counts_queued_messages(make_editor: Any) -> None:
    """spec 18.6 queue_update."""
    ed = make_editor()
    apply(ed, [{"type": "agent_start"}, {"type": "queue_update", "steering": ["a"], "followUp": ["b", "c"]}])
    assert ed.lua("return require('pi_rpc').statusline()") == "π streaming (3 queued)"
    assert ed.lua("return vim.g.pi_rpc_status") == "π streaming (3 queued)"


def test_selection_context_names_file_and_lines(make_editor: Any) -> None:
    ed = make_editor()
    (ed.workspace / "m.py").write_text("a = 1\nb = 2\nc = 3\n")
    ed.nvim.command("edit m.py")
    assert ed.lua("return require('pi_rpc').selection_context(2, 3)") == [
        "From `m.py`, lines 2-3:",
        "```python",
        "b = 2",
        "c = 3",
        "```",
    ]


def tool_run(call_id: str, name: str, args: dict[str, Any], text: str, **end: Any) -> list[dict[str, Any]]:
    return [
        {"type": "tool_execution_start", "toolCallId": call_id, "toolName": name, "args": args},
        {
            "type": "tool_execution_end",
            "toolCallId": call_id,
            "toolName": name,
            "result": {"content": [{"type": "text", "text": text}], "details": end.pop("details", None)},
            "isError": end.pop("is_error", False),
        },
    ]


def test_chat_follows_the_output_when_the_cursor_is_on_the_last_line(make_editor: Any) -> None:
    """A chat window whose cursor is on the last line follows new output; one whose
    cursor is further up stays where the user put it."""
    ed = make_editor()
    win = ed.lua("return require('pi_rpc.window').open_chat(false)")
    apply(ed, [{"type": "message_start", "message": {"role": "user", "content": "hi"}}])
    ed.lua("vim.api.nvim_win_set_cursor(..., { vim.api.nvim_buf_line_count(require('pi_rpc.chat').buf()), 0 })", win)
    apply(
        ed,
        [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            update("text_start", contentIndex=0),
            update("text_delta", contentIndex=0, delta="one\ntwo\nthree"),
        ],
    )
    count = len(ed.chat_lines())
    assert ed.lua("return vim.api.nvim_win_get_cursor(...)[1]", win) == count
    ed.lua("vim.api.nvim_win_set_cursor(..., { 1, 0 })", win)
    apply(ed, [update("text_delta", contentIndex=0, delta="\nfour")])
    assert ed.lua("return vim.api.nvim_win_get_cursor(...)[1]", win) == 1


def test_folds_start_at_the_output_even_at_the_top_of_the_chat(make_editor: Any) -> None:
    """A tool block that starts the buffer (the first thing after :PiNew) had its fold
    one line off, so the fold began on the header and was labelled as thinking."""
    ed = make_editor()
    win = ed.lua("return require('pi_rpc.window').open_chat(false)")
    apply(ed, tool_run("c", "bash", {"command": "seq 3"}, "1\n2\n3"))
    assert ed.chat_lines() == ["**bash** `seq 3` — ✓ done", "```text", "1", "2", "3", "```"]
    assert ed.lua(FOLDCLOSED, win, 3) == 2
    assert ed.lua(FOLDCLOSED, win, 1) == -1
    label = ed.lua("return vim.api.nvim_win_call(..., function() return vim.fn.foldtextresult(2) end)", win)
    assert label == "  ▸ 3 lines of output (za to open)"


def test_thinking_fold_label_and_short_or_failed_output_stay_open(make_editor: Any) -> None:
    """Fold labels say "1 line", not "1 lines"; a one-line result is not folded; a
    tool error is never folded away."""
    ed = make_editor()
    win = ed.lua("return require('pi_rpc.window').open_chat(false)")
    apply(
        ed,
        [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            update("thinking_start", contentIndex=0),
            update("thinking_delta", contentIndex=0, delta="a\nb"),
            update("thinking_end", contentIndex=0),
            *tool_run("one", "bash", {"command": "echo x"}, "x"),
            *tool_run("bad", "bash", {"command": "false"}, "oops\nfailed\n\nCommand exited with code 1", is_error=True),
        ],
    )
    lines = ed.chat_lines()
    thinking = lines.index("> a") + 1
    assert ed.lua(FOLDCLOSED, win, thinking) == thinking
    label = ed.lua(
        "local w, l = ... return vim.api.nvim_win_call(w, function() return vim.fn.foldtextresult(l) end)",
        win,
        thinking,
    )
    assert label == "  ▸ thinking, 2 lines (za to open)"
    assert ed.lua("return require('pi_rpc.format').fold_text('```text', 3)") == "  ▸ 1 line of output (za to open)"
    one = lines.index("x") + 1
    assert ed.lua(FOLDCLOSED, win, one) == -1
    failed = lines.index("Command exited with code 1") + 1
    assert ed.lua(FOLDCLOSED, win, failed) == -1 and ed.lua(FOLDCLOSED, win, failed - 3) == -1


def test_an_edit_shows_its_diff_unfolded(make_editor: Any) -> None:
    """An edit shows the unified diff the daemon sends (details.patch) as a diff block,
    not the edits' item count and "Successfully replaced 1 block(s)"."""
    ed = make_editor()
    win = ed.lua("return require('pi_rpc.window').open_chat(false)")
    patch = "--- src/greet.py\n+++ src/greet.py\n@@ -1,2 +1,2 @@\n-print('helo')\n+print('hello')\n x = 1\n"
    args = {"path": "src/greet.py", "edits": [{"oldText": "helo", "newText": "hello"}]}
    apply(
        ed,
        tool_run(
            "e",
            "edit",
            args,
            "Successfully replaced 1 block(s) in src/greet.py.",
            details={"diff": "-1 print('helo')\n+1 print('hello')", "patch": patch, "firstChangedLine": 1},
        ),
    )
    lines = ed.chat_lines()
    assert lines == [
        "**edit** `src/greet.py` (1 edit) — ✓ done",
        "````diff".replace("````", "```"),
        "--- src/greet.py",
        "+++ src/greet.py",
        "@@ -1,2 +1,2 @@",
        "-print('helo')",
        "+print('hello')",
        " x = 1",
        "```",
    ]
    assert all(ed.lua(FOLDCLOSED, win, n) == -1 for n in range(1, len(lines) + 1))


def test_long_output_leaves_markdown_highlighting_intact(make_editor: Any) -> None:
    """After a 2000-line result the next header still highlights as a header (the
    markdown syntax looks back only so far), because the chat keeps just the output's tail."""
    ed = make_editor()
    win = ed.lua("return require('pi_rpc.window').open_chat(true)")
    ed.nvim.command("syntax on")
    apply(
        ed,
        [
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            *tool_run("c", "bash", {"command": "seq 2000"}, "\n".join(map(str, range(1, 2001)))),
            {"type": "message_start", "message": {"role": "user", "content": "next **bold**"}},
        ],
    )
    lines = ed.chat_lines()
    assert len(lines) < 80
    header = len(lines) - 2  # "## You", 1-based
    assert lines[header - 1] == "## You"
    ed.nvim.command("normal! zRG")
    group = ed.lua(
        "local w, l = ... return vim.api.nvim_win_call(w, function() "
        "return vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.synID(l, 4, 1)), 'name') end)",
        win,
        header,
    )
    assert group == "Title"


def test_a_burst_of_deltas_renders_in_a_few_writes_with_the_same_text(make_editor: Any) -> None:
    """20,000 deltas one buffer write each froze Neovim; queued events render together
    (runs of deltas merged), and the chat ends up with exactly the streamed text."""
    ed = make_editor()
    result = ed.lua(
        """
        local chat = require('pi_rpc.chat')
        local writes = 0
        vim.api.nvim_buf_attach(chat.buf(), false, { on_lines = function() writes = writes + 1 end })
        local function up(e) return { type = 'message_update', assistantMessageEvent = e } end
        chat.push({ type = 'message_start', message = { role = 'assistant', content = {} } })
        chat.push(up({ type = 'thinking_start', contentIndex = 0 }))
        chat.push(up({ type = 'thinking_delta', contentIndex = 0, delta = 'hm' }))
        chat.push(up({ type = 'text_start', contentIndex = 1 }))
        local expected = {}
        for i = 1, 20000 do
          local d = ('w%d '):format(i) .. (i % 10 == 0 and '\\n' or '')
          expected[#expected + 1] = d
          chat.push(up({ type = 'text_delta', contentIndex = 1, delta = d }))
        end
        vim.wait(60000, function() return chat.text():find('w20000', 1, true) ~= nil end, 5)
        return { writes = writes, text = chat.text(), expected = table.concat(expected) }
        """
    )
    assert result["text"] == "## Pi\n\n> hm\n\n" + result["expected"]
    assert result["writes"] < 20


def test_chat_keys_open_all_output_jump_messages_and_yank_code(make_editor: Any) -> None:
    """`go` opens all of a long result (the chat keeps its tail), `]]`/`[[` move between
    messages, `gy` yanks the fenced block under the cursor."""
    ed = make_editor()
    win = ed.lua("return require('pi_rpc.window').open_chat(true)")
    apply(
        ed,
        [
            {"type": "message_start", "message": {"role": "user", "content": "count"}},
            {"type": "message_start", "message": {"role": "assistant", "content": []}},
            *tool_run("c", "bash", {"command": "seq 100"}, "\n".join(map(str, range(1, 101)))),
            {"type": "message_start", "message": {"role": "user", "content": "again"}},
        ],
    )
    ed.nvim.command("normal! gg")
    ed.nvim.feedkeys("]]", "x", False)
    assert ed.nvim.current.line == "## Pi"
    ed.nvim.feedkeys("]]", "x", False)
    assert ed.nvim.current.line == "## You" and ed.nvim.current.window.cursor[0] > 3
    ed.nvim.feedkeys("[[", "x", False)
    assert ed.nvim.current.line == "## Pi"
    lines = ed.chat_lines()
    last = lines.index("100") + 1
    ed.lua("vim.api.nvim_win_set_cursor(..., { " + str(last) + ", 0 })", win)
    ed.nvim.command("normal! zv")
    ed.nvim.feedkeys("gy", "x", False)
    yanked = ed.lua("return vim.fn.getreg('\"')").split("\n")
    assert yanked[0] == "… 60 earlier lines (go: all)" and yanked[-2] == "100"
    ed.nvim.feedkeys("go", "x", False)
    assert ed.nvim.current.buffer.name.endswith("pi-rpc://output/c")
    assert ed.nvim.current.buffer[:] == [str(n) for n in range(1, 101)]


@pytest.fixture
def plain_ed(make_editor: Any, monkeypatch: pytest.MonkeyPatch) -> Editor:
    # A zone with daylight saving time: a reading through os.time's local time would be off by
    # an hour for half the year.
    monkeypatch.setenv("TZ", "America/New_York")
    editor: Editor = make_editor()
    return editor


OFFSETS = st.integers(min_value=-12 * 60, max_value=14 * 60).map(lambda m: timedelta(minutes=m))
MOMENTS = st.datetimes(min_value=datetime(1971, 1, 2), max_value=datetime(2099, 12, 30), timezones=st.just(UTC))


@settings(max_examples=60, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(moment=MOMENTS, offset=OFFSETS, millis=st.booleans())
def test_a_checkpoints_time_reads_back_as_the_instant_it_names(
    plain_ed: Editor, moment: datetime, offset: timedelta, millis: bool
) -> None:
    """The rewind picker's ages come from the daemon's ISO 8601 times, in UTC or with an offset."""
    moment = moment.replace(microsecond=moment.microsecond // 1000 * 1000 if millis else 0)
    local = moment.astimezone(timezone(offset))
    stamp = local.isoformat(timespec="milliseconds" if millis else "seconds")
    if offset == timedelta(0) and millis:
        stamp = stamp.replace("+00:00", "Z")
    got = plain_ed.lua("return require('pi_rpc.rewind').epoch_seconds(...)", stamp)
    assert got == int(moment.timestamp()), stamp
    ages = plain_ed.lua(
        "local r, ms = require('pi_rpc.rewind'), ... return { r.age(ms, 100), r.age(ms, 3640), r.age(ms, 259300) }",
        100 * 1000,
    )
    assert ages == ["just now", "59 min ago", "3 days ago"]
