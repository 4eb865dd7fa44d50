"""Memory stays bounded while streaming (protocol/PROTOCOL.md, "Events: the agent/event
notification"), measured as RSS of the daemon process:
an SSE line with no newline is cut off at the line bound, and a client that stops reading does not
make the daemon keep every event (it then gets the whole answer, exactly, when it reads again).

The daemon runs as a subprocess over real pipes against the scripted loopback server of the
provider tests; the bounds are several times the answer size apart from what the old code took,
so they cannot flake."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.ai.sse import MAX_SSE_LINE_BYTES, MIB
from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.conftest import daemon_env
from tests.e2e.loopback_model import Loopback
from tests.providers.sse_server import sse_reply

from .stream_watch import completion_stream, read_jsonl_until, status_kib, wait_idle

pytestmark = pytest.mark.e2e


def test_an_endless_sse_line_is_cut_off_with_memory_bounded(
    loopback: Loopback, argv: list[str], tmp_path: Path
) -> None:
    endless = [b'data: {"choices": [{"delta": {"content": "'] + [b"x" * MIB] * 200  # 200 MiB, no newline
    loopback.script(sse_reply([*completion_stream(["before "])[:2], *endless]))
    client = DaemonClient(argv, env=daemon_env(tmp_path))
    try:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        before = status_kib(client.proc.pid)["VmRSS"]
        result = client.request("prompt", {"message": "hi"}, timeout=120)
        growth_mib = (status_kib(client.proc.pid)["VmHWM"] - before) / 1024
    finally:
        client.close()
    # The whole line took the daemon from 53 to 706 MiB; the bound keeps it to a few times 32 MiB.
    assert growth_mib < 4 * MAX_SSE_LINE_BYTES / MIB
    assert result["stopReason"] == "error"
    assert result["errorMessage"].startswith(f"Provider sent an SSE line over {MAX_SSE_LINE_BYTES // MIB} MiB")


ANSWER_MIB = 48
PIECE = 8 * 1024


def test_a_client_that_stops_reading_costs_bounded_memory_and_then_gets_every_byte(
    loopback: Loopback, argv: list[str], tmp_path: Path
) -> None:
    pieces = [
        f"[{i:07d}]" + "abcdefghijklmnopqrstuvwxyz0123456789"[i % 36] * (PIECE - 9)
        for i in range(ANSWER_MIB * MIB // PIECE)
    ]
    loopback.script(sse_reply(completion_stream(pieces)))
    command = [sys.executable, "-m", "pi_rpc", "--framing", "jsonl", *argv]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=daemon_env(tmp_path)
    )
    assert proc.stdin is not None and proc.stdout is not None
    out = proc.stdout.fileno()
    received = bytearray()
    try:
        proc.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n')
        proc.stdin.flush()
        read_jsonl_until(out, b'"id":1,', received)
        before = status_kib(proc.pid)["VmRSS"]
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"prompt","params":{"message":"hi"}}\n')
        proc.stdin.flush()
        # The client reads nothing now, while the whole answer streams in.
        loopback.portal.call(lambda: loopback.server.wait_for_request(1))
        wait_idle(proc.pid)
        stalled_mib = (status_kib(proc.pid)["VmHWM"] - before) / 1024
        read_jsonl_until(out, b'"id":2,', received)  # the client reads again
        peak_mib = (status_kib(proc.pid)["VmHWM"] - before) / 1024
    finally:
        proc.stdin.close()
        proc.wait(60)
        proc.stdout.close()
    messages = [json.loads(line) for line in bytes(received).splitlines() if line.strip()]
    events = [m["params"] for m in messages if m.get("method") == "agent/event"]
    text = "".join(
        e["assistantMessageEvent"]["delta"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert text == "".join(pieces)  # every byte, in order
    assert "agent_end" in [e["type"] for e in events]
    assert messages[-1]["id"] == 2 and messages[-1]["result"]["stopReason"] == "stop"
    # Measured: keeping every encoded event (and the answer again in text_end, message_end,
    # turn_end and agent_end) grew the daemon by 437 MiB while stalled, 476 MiB at the peak (about
    # nine times the answer). Queued deltas now share the builder's strings and whole-message
    # events wait unencoded: 199 MiB, the peak being the answer joined once at its end plus the
    # session file's encoding of it.
    assert stalled_mib < 5 * ANSWER_MIB
    assert peak_mib < 6 * ANSWER_MIB


def test_acp_chunks_merge_for_a_client_that_stops_reading(loopback: Loopback, argv: list[str], tmp_path: Path) -> None:
    pieces = [f"<{i}>" + "z" * 200 for i in range(20_000)]  # 4 MB of text
    loopback.script(sse_reply(completion_stream(pieces)))
    command = [sys.executable, "-m", "pi_rpc", "--mode", "acp", *argv]
    proc = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=daemon_env(tmp_path)
    )
    assert proc.stdin is not None and proc.stdout is not None
    out = proc.stdout.fileno()
    received = bytearray()

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(message).encode() + b"\n")
        proc.stdin.flush()

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        read_jsonl_until(out, b'"id":1,', received)
        send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}})
        read_jsonl_until(out, b'"id":2,', received)
        # The response, not a notification that may follow it (the session's slash commands).
        replies = [json.loads(line) for line in bytes(received).splitlines() if b'"id":2,' in line]
        session = replies[0]["result"]["sessionId"]
        send(
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "session/prompt",
                "params": {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]},
            }
        )
        loopback.portal.call(lambda: loopback.server.wait_for_request(1))
        wait_idle(proc.pid)  # the whole answer is in; the client has read none of it
        read_jsonl_until(out, b'"id":3,', received)
    finally:
        proc.stdin.close()
        proc.wait(60)
        proc.stdout.close()
    messages = [json.loads(line) for line in bytes(received).splitlines() if line.strip()]
    chunks = [
        m["params"]["update"]
        for m in messages
        if m.get("method") == "session/update" and m["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert "".join(c["content"]["text"] for c in chunks) == "".join(pieces)
    assert [m["result"]["stopReason"] for m in messages if m.get("id") == 3] == ["end_turn"]
    # One update per delta until about 1 MiB waits unread; the rest merged (20 000 without).
    assert len(chunks) < len(pieces) / 4
