"""The daemon as a subprocess over real pipes, in both framings (issue 4; spec 15.1, 16)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient, RpcError

from .conftest import descendants, still_running, watch

pytestmark = pytest.mark.e2e

Spawn = Callable[..., DaemonClient]


def watch_tool_processes(daemon_pid: int) -> list[int]:
    """pidfds of the processes the daemon's running tool started (never another test's)."""
    fds = watch(descendants(daemon_pid))
    assert fds, "the tool's processes should be running"
    return fds


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_initialize_and_tools_list(spawn: Spawn, framing: str) -> None:
    client = spawn(framing=framing)
    init = client.request("initialize", {"clientInfo": {"name": "pytest"}})
    assert init["serverInfo"]["name"] == "pi-rpc"
    assert init["scripted"] is True and init["model"]["api"] == "faux"
    tools = client.request("tools/list")["tools"]
    assert [t["name"] for t in tools] == ["read", "bash", "powershell", "edit", "write", "grep", "find", "ls"]
    active = {t["name"] for t in tools if t["active"]}
    assert active == {"read", "bash", "edit", "write"}  # spec 5.3
    read = next(t for t in tools if t["name"] == "read")
    assert read["parameters"]["required"] == ["path"] and read["label"] == "read"
    assert client.close() == 0


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_scripted_session_runs_real_tools(spawn: Spawn, workspace: Path, framing: str) -> None:
    """read, grep, edit, write, bash and text, with events in order and truncation details."""
    client = spawn("--tools", "read,bash,edit,write,grep", framing=framing)
    result = client.request("prompt", {"message": "tour"})
    assert result["stopReason"] == "stop"
    assert result["usage"]["totalTokens"] > 0

    events = client.events()
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-2:] == ["agent_end", "agent_settled"]
    assert types.count("agent_end") == 1 and types.count("turn_start") == 4 == types.count("turn_end")

    # message_update carries deltas only, never a cumulative message (issue 4).
    updates = [e for e in events if e["type"] == "message_update"]
    assert all(set(e) == {"type", "assistantMessageEvent"} for e in updates)
    text = "".join(
        e["assistantMessageEvent"].get("delta", "")
        for e in updates
        if e["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert text == "Reading the project.All done: fixed the greeting."

    ends = {e["toolName"]: e for e in events if e["type"] == "tool_execution_end"}
    assert set(ends) == {"read", "grep", "edit", "write", "bash"}
    assert not any(e["isError"] for e in ends.values())
    for end in ends.values():
        start = next(
            i
            for i, e in enumerate(events)
            if e["type"] == "tool_execution_start" and e["toolCallId"] == end["toolCallId"]
        )
        assert start < events.index(end)
    assert "Helo" in ends["read"]["result"]["content"][0]["text"]
    assert "greet.py:" in ends["grep"]["result"]["content"][0]["text"]
    assert ends["edit"]["result"]["content"][0]["text"] == "Successfully replaced 1 block(s) in src/greet.py."

    bash = ends["bash"]["result"]
    details = bash["details"]
    assert details["truncation"]["truncated"] is True and details["truncation"]["totalLines"] == 4001
    log = Path(details["fullOutputPath"])
    assert log.read_text().splitlines()[0] == "Hello, Ada!"
    assert bash["content"][0]["text"].endswith(
        f"[Showing lines 2002-4001 of 4001. Full output: {details['fullOutputPath']}]"
    )
    assert any(e["type"] == "tool_execution_update" and e["toolName"] == "bash" for e in events)

    assert "Hello, {name}!" in (workspace / "src" / "greet.py").read_text()
    assert (workspace / "notes" / "NOTES.md").read_text() == "fixed\n"
    messages = client.request("messages")["messages"]
    assert [m["role"] for m in messages][:3] == ["system", "user", "assistant"]
    assert client.close() == 0


def test_broken_tool_arguments_reach_the_model_as_an_error(spawn: Spawn) -> None:
    """spec 3.6/3.7: a model's broken JSON arguments → model-readable validation error, run goes on."""
    client = spawn()
    assert client.request("prompt", {"message": "bad args"})["stopReason"] == "stop"
    end = next(e for e in client.events() if e["type"] == "tool_execution_end")
    assert end["isError"] is True
    text = end["result"]["content"][0]["text"]
    # 42 converts to "42" as TypeBox does (spec 3.4); "x" is no number.
    assert text == (
        'Validation failed for tool "read":\n  - offset: must be number\n\n'
        'Received arguments:\n{\n  "path": 42,\n  "offset": "x"\n}'
    )
    client.close()


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_abort_mid_bash_kills_the_process_group(spawn: Spawn, framing: str) -> None:
    client = spawn(framing=framing)
    prompt_id = client.request_nowait("prompt", {"message": "slow"})
    client.wait_for_event(
        lambda e: e["type"] == "tool_execution_update" and "started" in str(e["partialResult"]["content"])
    )
    tool_processes = watch_tool_processes(client.proc.pid)
    assert client.request("abort") is None  # resolves once idle
    assert still_running(tool_processes) == 0
    outcome = client.result(prompt_id)
    assert outcome["stopReason"] == "aborted"
    end = next(e for e in client.events() if e["type"] == "tool_execution_end")
    assert end["isError"] is True
    assert end["result"]["content"][0]["text"] == "started\n\n\nCommand aborted"  # output keeps its newline (spec 9.13)
    assert client.request("state")["isStreaming"] is False
    # The daemon stays up and serves the next prompt.
    assert client.request("prompt", {"message": "again"})["stopReason"] == "stop"
    assert client.close() == 0


def test_cancel_request_aborts_the_pending_prompt(spawn: Spawn) -> None:
    client = spawn()
    prompt_id = client.request_nowait("prompt", {"message": "stream forever"})
    client.wait_for_event(lambda e: e["type"] == "message_update")
    client.notify("$/cancelRequest", {"id": prompt_id})
    response = client.response(prompt_id)
    assert response["error"]["code"] == -32800
    client.wait_for_type("agent_settled")
    events = client.events()
    assert [e["type"] for e in events].count("agent_end") == 1
    assistant = next(e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    assert assistant["stopReason"] == "aborted" and assistant["content"][0]["text"] == "ti"
    assert client.request("state")["isStreaming"] is False
    client.close()


def test_prompt_while_running_needs_a_streaming_behaviour(spawn: Spawn) -> None:
    """spec 15.12 (session level): refused without streamingBehavior, queued with it."""
    client = spawn()
    first = client.request_nowait("prompt", {"message": "stream forever"})
    client.wait_for_event(lambda e: e["type"] == "message_update")
    with pytest.raises(RpcError) as refused:
        client.request("prompt", {"message": "second"})
    assert refused.value.code == -32002
    assert "streamingBehavior" in refused.value.message
    assert client.request("prompt", {"message": "later", "streamingBehavior": "followUp"}) == {"queued": "followUp"}
    client.request("steer", {"message": "steer me"})
    queue = client.wait_for_type("queue_update", start=0)
    assert queue["type"] == "queue_update"
    assert client.request("clearQueue") == {"steering": ["steer me"], "followUp": ["later"]}
    client.request("abort")
    assert client.result(first)["stopReason"] == "aborted"
    client.close()


def test_tools_set_active_changes_the_list(spawn: Spawn) -> None:
    client = spawn()
    assert client.request("tools/setActive", {"names": ["read", "grep", "nope"]}) == {"active": ["read", "grep"]}
    tools = client.request("tools/list")["tools"]
    assert {t["name"] for t in tools if t["active"]} == {"read", "grep"}
    assert client.request("state")["activeTools"] == ["read", "grep"]
    client.close()


def test_models_list_and_set(spawn: Spawn) -> None:
    client = spawn()
    models = client.request("models/list")["models"]
    assert {"provider": "faux", "id": "scripted"}.items() <= models[0].items()
    assert client.request("model/set", {"provider": "faux", "modelId": "scripted"})["id"] == "scripted"
    with pytest.raises(RpcError) as missing:
        client.request("model/set", {"provider": "nope", "modelId": "x"})
    assert missing.value.message == "Model not found: nope/x"
    client.close()


# --- bad input ----------------------------------------------------------------------------------


def served(client: DaemonClient) -> bool:
    return client.request("state")["isStreaming"] is False


def error_of(client: DaemonClient, before: int) -> dict[str, Any]:
    """The first error response with id null that arrived after message index `before`."""
    message = client.wait_for_message(lambda m: "error" in m and m.get("id") is None, timeout=30, start=before)
    error: dict[str, Any] = message["error"]
    return error


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_malformed_json_gets_parse_error_and_the_next_message_is_served(spawn: Spawn, framing: str) -> None:
    client = spawn(framing=framing)
    before = len(client.messages)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": '
    client.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) if framing == "lsp" else body + b"\n")
    assert error_of(client, before)["code"] == -32700
    assert served(client)
    client.close()


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_invalid_utf8_is_a_parse_error(spawn: Spawn, framing: str) -> None:
    client = spawn(framing=framing)
    before = len(client.messages)
    body = b'{"jsonrpc": "2.0", "id": 7, "method": "state", "params": {"x": "\xff\xfe"}}'
    client.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) if framing == "lsp" else body + b"\n")
    assert error_of(client, before)["code"] == -32700
    assert served(client)
    client.close()


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_unknown_method_and_bad_params(spawn: Spawn, framing: str) -> None:
    client = spawn(framing=framing)
    with pytest.raises(RpcError) as unknown:
        client.request("tools/explode")
    assert unknown.value.code == -32601
    with pytest.raises(RpcError) as bad:
        client.request("prompt", {"message": 12})
    assert bad.value.code == -32602
    assert "`$.message`" in bad.value.message and "Expected `str`" in bad.value.message
    with pytest.raises(RpcError) as missing:
        client.request("tools/setActive", {})
    assert missing.value.code == -32602 and "names" in missing.value.message
    with pytest.raises(RpcError) as invalid:
        client.request("prompt", {"message": "x", "streamingBehavior": "later"})
    assert invalid.value.code == -32602 and "streamingBehavior" in invalid.value.message
    assert served(client)
    client.close()


def test_invalid_requests(spawn: Spawn) -> None:
    client = spawn()
    for body in (b"[]", b'"just a string"', b'{"id": 3, "method": "state"}', b'{"jsonrpc": "2.0", "id": 4}'):
        before = len(client.messages)
        client.send_raw(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        error = client.wait_for_message(lambda m: "error" in m, timeout=30, start=before)["error"]
        assert error["code"] == -32600, body
    assert served(client)
    client.close()


def test_bad_headers_are_reported_on_stderr_and_skipped(spawn: Spawn) -> None:
    client = spawn()
    client.send_raw(b"Content-Length: banana\r\n\r\n")
    client.send_raw(b"X-Nothing-Useful: yes\r\n\r\n{}")
    client.send_raw(b"this is not a header at all\r\n\r\n")
    assert served(client)
    assert client.request("state")["messageCount"] == 0
    client.close()
    assert any("framing error" in line for line in client.stderr_lines)


@pytest.mark.parametrize("framing", ["lsp", "jsonl"])
def test_oversized_message_is_skipped_without_buffering_it(spawn: Spawn, framing: str) -> None:
    """A 100 MB frame: a clear error on stderr, the stream resyncs, the daemon answers."""
    client = spawn(framing=framing)
    size = 100 * 1024 * 1024
    if framing == "lsp":
        client.send_raw(b"Content-Length: %d\r\n\r\n" % size)
    chunk = b"x" * (1 << 20)
    for _ in range(100):
        client.send_raw(chunk)
    if framing == "jsonl":
        client.send_raw(b"\n")
    assert served(client)
    client.close()
    assert any("exceeds the limit" in line for line in client.stderr_lines)


def test_jsonl_separators_inside_strings(spawn: Spawn) -> None:
    """spec 16.1: U+2028/U+2029 are not record separators, and go out escaped."""
    client = spawn(framing="jsonl")
    message = "line\u2028separator\u2029para"
    client.request("prompt", {"message": message})
    user = client.request("messages")["messages"][0]
    assert user["role"] in ("user", "system")
    users = [m for m in client.request("messages")["messages"] if m["role"] == "user"]
    assert users[0]["content"] == [{"type": "text", "text": message}]
    client.close()


def test_crlf_jsonl_records_are_accepted(spawn: Spawn) -> None:
    client = spawn(framing="jsonl")
    client.send_raw(b'{"jsonrpc": "2.0", "id": 99, "method": "state"}\r\n')
    assert client.result(99)["isStreaming"] is False
    client.close()


# --- stdout and shutdown ------------------------------------------------------------------------


def test_stdout_fd_is_private(spawn: Spawn) -> None:
    """fd 1 of the daemon points at stderr, so nothing but the writer reaches the protocol pipe."""
    client = spawn()
    served(client)
    pid = client.proc.pid
    assert os.readlink(f"/proc/{pid}/fd/1") == os.readlink(f"/proc/{pid}/fd/2")
    client.close()


def test_stdin_closing_during_a_run_kills_children_and_exits_zero(spawn: Spawn) -> None:
    client = spawn()
    client.request_nowait("prompt", {"message": "slow"})
    client.wait_for_event(
        lambda e: e["type"] == "tool_execution_update" and "started" in str(e["partialResult"]["content"])
    )
    tool_processes = watch_tool_processes(client.proc.pid)
    assert client.close() == 0
    assert still_running(tool_processes) == 0


def test_sigterm_during_a_run_kills_children_and_exits_zero(spawn: Spawn) -> None:
    client = spawn()
    client.request_nowait("prompt", {"message": "slow"})
    client.wait_for_event(
        lambda e: e["type"] == "tool_execution_update" and "started" in str(e["partialResult"]["content"])
    )
    tool_processes = watch_tool_processes(client.proc.pid)
    client.proc.send_signal(signal.SIGTERM)
    assert client.proc.wait(30) == 0
    assert still_running(tool_processes) == 0
    types = [e["type"] for e in client.events()]
    assert types.count("agent_end") == 1


def test_shutdown_then_exit(spawn: Spawn) -> None:
    client = spawn()
    assert client.request("shutdown") is None
    with pytest.raises(RpcError) as refused:
        client.request("state")
    assert refused.value.code == -32600
    client.notify("exit")
    assert client.proc.wait(30) == 0


def test_session_new_starts_an_empty_transcript(spawn: Spawn) -> None:
    client = spawn()
    first_id = client.request("state")["sessionId"]
    client.request("prompt", {"message": "hello"})
    assert client.request("state")["messageCount"] > 0
    new_id = client.request("session/new")["sessionId"]
    state = client.request("state")
    assert new_id != first_id and state["sessionId"] == new_id
    assert state["messageCount"] == 0 and client.request("messages") == {"messages": []}
    assert client.request("prompt", {"message": "hello again"})["stopReason"] == "stop"
    client.close()


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_200_mb_of_output_streams_through_bounded_memory(spawn: Spawn) -> None:
    """issue 3/4: the daemon's peak memory stays bounded while 200 MB of output streams; the
    full log holds every byte. (A bound on memory, which cannot flake, not on time.)"""
    client = spawn()
    baseline = peak_rss_kib(client.proc.pid)
    assert client.request("prompt", {"message": "flood"}, timeout=300)["stopReason"] == "stop"
    end = next(e for e in client.events() if e["type"] == "tool_execution_end")
    details = end["result"]["details"]
    total = 200 * 1024 * 1024
    assert details["truncation"]["totalBytes"] == total
    assert Path(details["fullOutputPath"]).stat().st_size == details["truncation"]["totalBytes"]
    growth_mib = (peak_rss_kib(client.proc.pid) - baseline) / 1024
    assert growth_mib < 64, f"daemon grew by {growth_mib:.0f} MiB while streaming 200 MB"
    Path(details["fullOutputPath"]).unlink()
    client.close()


def test_prompt_with_an_image_keeps_it_in_the_transcript(spawn: Spawn) -> None:
    client = spawn()
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    client.request("prompt", {"message": "what is this?", "images": [{"data": png, "mimeType": "image/png"}]})
    user = next(m for m in client.request("messages")["messages"] if m["role"] == "user")
    assert user["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image", "data": png, "mimeType": "image/png"},
    ]
    client.close()


def test_a_large_prompt_is_accepted(spawn: Spawn) -> None:
    """issue 4: messages up to the 64 MiB cap (e.g. a prompt with images) are accepted."""
    client = spawn()
    data = "A" * (20 * 1024 * 1024)
    outcome = client.request("prompt", {"message": "big", "images": [{"data": data, "mimeType": "image/png"}]})
    assert outcome["stopReason"] == "stop"
    client.close()


def test_a_dead_client_ends_the_daemon_and_its_children(workspace: Path, tmp_path: Path) -> None:
    """Both pipes of the client gone mid-run: the daemon kills the tool's group and exits 0."""
    import subprocess
    import sys

    from .conftest import SCRIPTS, daemon_env

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pi_rpc",
            "--framing",
            "jsonl",
            "--cwd",
            str(workspace),
            "--script",
            str(SCRIPTS / "e2e.json"),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=daemon_env(tmp_path),
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"message":"slow"}}\n')
    proc.stdin.flush()
    for line in proc.stdout:
        event = json.loads(line).get("params", {})
        if event.get("type") == "tool_execution_update" and "started" in str(event["partialResult"]["content"]):
            break
    tool_processes = watch_tool_processes(proc.pid)
    proc.stdout.close()
    proc.stdin.close()
    assert proc.wait(30) == 0
    assert still_running(tool_processes) == 0


def test_sessions_persist_and_resume(spawn: Spawn) -> None:
    """The transcript is kept on disk, message by message; a new daemon can list and resume it."""
    first = spawn()
    first.request("prompt", {"message": "hello"})
    state = first.request("state")
    path = Path(state["sessionFile"])
    lines = path.read_text().splitlines()
    assert '"type":"session"' in lines[0] and len(lines) == 1 + state["messageCount"]
    stats = first.request("session/stats")
    assert stats["userMessages"] == 1 and stats["assistantMessages"] == 1 and stats["tokens"]["total"] > 0
    session_id = state["sessionId"]
    first.close()

    second = spawn()
    listed = second.request("session/list")["sessions"]
    assert [s["sessionId"] for s in listed] == [session_id] and listed[0]["firstMessage"] == "hello"
    loaded = second.request("session/load", {"sessionId": session_id})
    assert loaded == {"sessionId": session_id, "messageCount": state["messageCount"]}
    restored = second.request("messages")["messages"]
    assert [m["role"] for m in restored] == ["system", "user", "assistant"] and restored[1]["content"] == [
        {"type": "text", "text": "hello"}
    ]
    second.request("prompt", {"message": "and again"})
    assert second.request("state")["sessionFile"] == str(path)
    assert len(path.read_text().splitlines()) > len(lines)
    with pytest.raises(RpcError) as missing:
        second.request("session/load", {"sessionId": "nope"})
    assert missing.value.code == -32004 and missing.value.message == "Session not found: nope"
    second.close()


def test_no_session_keeps_nothing_on_disk(spawn: Spawn) -> None:
    client = spawn("--no-session")
    client.request("prompt", {"message": "hello"})
    assert client.request("state")["sessionFile"] is None
    assert client.request("session/list") == {"sessions": []}
    client.close()


def test_a_file_name_that_is_not_utf8_does_not_break_the_event_stream(spawn: Spawn, workspace: Path) -> None:
    """Undecodable bytes reach the client as U+FFFD instead of making events unencodable."""
    import os

    os.close(os.open(os.path.join(os.fsencode(workspace), b"caf\xe9.txt"), os.O_CREAT | os.O_WRONLY))
    client = spawn("--tools", "ls")
    assert client.request("prompt", {"message": "list files"})["stopReason"] == "stop"
    end = next(e for e in client.events() if e["type"] == "tool_execution_end")
    assert "caf\ufffd.txt" in end["result"]["content"][0]["text"]
    assert [e["type"] for e in client.events()][-2:] == ["agent_end", "agent_settled"]
    client.close()


def test_thinking_level_is_clamped_to_the_model(spawn: Spawn) -> None:
    client = spawn()
    # The scripted model has no reasoning: every level clamps to "off".
    assert client.request("thinking/set", {"level": "high"}) == {"level": "off", "available": ["off"]}
    assert client.request("state")["thinkingLevel"] == "off"
    with pytest.raises(RpcError) as bad:
        client.request("thinking/set", {"level": "extreme"})
    assert bad.value.code == -32602
    client.close()


def test_a_broken_image_is_refused_at_the_wire(spawn: Spawn) -> None:
    client = spawn()
    with pytest.raises(RpcError) as bad:
        client.request("prompt", {"message": "x", "images": [{"data": "!!!not base64", "mimeType": "image/png"}]})
    assert bad.value.code == -32602 and "$.images[0].data" in bad.value.message
    with pytest.raises(RpcError) as html:
        client.request("prompt", {"message": "x", "images": [{"data": "AAAA", "mimeType": "text/html"}]})
    assert html.value.code == -32602 and "$.images[0].mimeType" in html.value.message
    assert client.request("state")["messageCount"] == 0
    client.close()


def test_deeply_nested_json_is_a_parse_error_not_a_crash(spawn: Spawn) -> None:
    client = spawn(framing="jsonl")
    before = len(client.messages)
    client.send_raw(b'{"jsonrpc":"2.0","id":5,"method":"state","params":{"a":' + b"[" * 5000 + b"]" * 5000 + b"}}\n")
    assert error_of(client, before)["code"] == -32700
    assert served(client)
    client.close()


def test_a_lone_surrogate_escape_from_a_javascript_client_is_accepted(spawn: Spawn) -> None:
    client = spawn(framing="jsonl")
    client.send_raw(b'{"jsonrpc":"2.0","id":42,"method":"prompt","params":{"message":"odd \\ud800 text"}}\n')
    assert client.result(42)["stopReason"] == "stop"
    users = [m for m in client.request("messages")["messages"] if m["role"] == "user"]
    assert users[0]["content"] == [{"type": "text", "text": "odd \ufffd text"}]
    client.close()


def test_an_abort_sent_right_after_the_prompt_is_not_lost(spawn: Spawn) -> None:
    """Pipelined: the run's task has not started when abort arrives; it must still take effect."""
    client = spawn(framing="jsonl")
    client.send_raw(
        b'{"jsonrpc":"2.0","id":1,"method":"prompt","params":{"message":"slow"}}\n'
        b'{"jsonrpc":"2.0","id":2,"method":"abort"}\n'
    )
    assert client.result(2) is None
    assert client.result(1)["stopReason"] == "aborted"
    assert not any(e["type"] == "tool_execution_start" for e in client.events())
    client.close()


def test_cancel_request_without_an_id_is_ignored_silently(spawn: Spawn) -> None:
    """A notification is never answered, even a malformed one."""
    client = spawn(framing="jsonl")
    before = len(client.messages)
    client.send_raw(
        b'{"jsonrpc":"2.0","method":"$/cancelRequest","params":[1]}\n{"jsonrpc":"2.0","method":"$/cancelRequest"}\n'
    )
    assert served(client)
    assert [m for m in client.messages[before:] if "error" in m] == []
    client.close()


def test_exit_during_a_run_kills_children_and_exits_zero(spawn: Spawn) -> None:
    client = spawn()
    client.request_nowait("prompt", {"message": "slow"})
    client.wait_for_event(
        lambda e: e["type"] == "tool_execution_update" and "started" in str(e["partialResult"]["content"])
    )
    tool_processes = watch_tool_processes(client.proc.pid)
    client.notify("exit")
    assert client.proc.wait(30) == 0
    assert still_running(tool_processes) == 0


def test_loading_the_current_session_during_a_run_keeps_every_message(spawn: Spawn) -> None:
    client = spawn()
    prompt_id = client.request_nowait("prompt", {"message": "slow"})
    client.wait_for_event(
        lambda e: e["type"] == "tool_execution_update" and "started" in str(e["partialResult"]["content"])
    )
    state = client.request("state")
    loaded = client.request("session/load", {"sessionId": state["sessionId"]})
    assert client.result(prompt_id)["stopReason"] == "aborted"
    on_disk = Path(state["sessionFile"]).read_text().splitlines()[1:]
    assert loaded["messageCount"] == len(on_disk) == len(client.request("messages")["messages"])
    with pytest.raises(RpcError):
        client.request("session/load", {"sessionId": "*"})
    client.close()
