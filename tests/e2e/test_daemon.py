"""The daemon as a subprocess over real pipes, in both framings (protocol/PROTOCOL.md, "Framing";
spec 15.2, 18)."""

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


def test_initialize_and_tools_list(spawn: Spawn) -> None:
    client = spawn()
    init = client.request("initialize", {"clientInfo": {"name": "pytest"}})
    assert init["serverInfo"]["name"] == "pi-rpc"
    assert init["scripted"] is True and init["model"]["api"] == "faux"
    tools = client.request("tools/list")["tools"]
    names = ["read", "bash", "powershell", "edit", "write", "grep", "find", "ls", "codemode"]
    assert [t["name"] for t in tools] == names  # codemode: Pi 1.6.0's extension, registered inactive
    active = {t["name"] for t in tools if t["active"]}
    assert active == {"read", "bash", "edit", "write"}  # spec 5.3
    read = next(t for t in tools if t["name"] == "read")
    assert read["parameters"]["required"] == ["path"] and read["label"] == "read"
    assert client.close() == 0


def test_scripted_session_runs_real_tools(spawn: Spawn, workspace: Path) -> None:
    """read, grep, edit, write, bash and text, with events in order and truncation details."""
    client = spawn("--tools", "read,bash,edit,write,grep", framing="jsonl")
    result = client.request("prompt", {"message": "tour"})
    assert result["stopReason"] == "stop"
    assert result["usage"]["totalTokens"] > 0

    events = client.events()
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types[-2:] == ["agent_end", "agent_settled"]
    assert types.count("agent_end") == 1 and types.count("turn_start") == 4 == types.count("turn_end")

    # message_update carries deltas only, never a cumulative message (spec 18.6).
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
        'Validation failed for tool "read":\n  - offset: expected number, got string\n\n'
        'Received arguments:\n{\n  "path": 42,\n  "offset": "x"\n}'
    )
    client.close()


def test_abort_mid_bash_kills_the_process_group(spawn: Spawn) -> None:
    client = spawn()
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
    """spec 18.1: U+2028/U+2029 are not record separators, and go out escaped."""
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


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_200_mb_of_output_streams_through_bounded_memory(spawn: Spawn) -> None:
    """spec 10.4: the daemon's peak memory stays bounded while 200 MB of output streams; the
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


def test_a_large_prompt_is_accepted(spawn: Spawn) -> None:
    """Messages up to the 64 MiB cap (e.g. a prompt with images) are accepted (protocol/PROTOCOL.md,
    "Framing")."""
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


def test_sigusr1_and_sigusr2_dump_the_stacks_and_the_daemon_keeps_serving(spawn: Spawn) -> None:
    client = spawn()
    assert served(client)
    client.proc.send_signal(signal.SIGUSR1)
    assert client.wait_for_log("Current thread"), client.stderr_lines  # faulthandler: every thread
    client.proc.send_signal(signal.SIGUSR2)
    assert client.wait_for_log("asyncio tasks:"), client.stderr_lines
    assert client.wait_for_log("watch_signals")  # each task's await, named by its coroutine
    assert served(client)
    assert client.close() == 0
