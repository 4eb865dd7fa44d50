"""A client that stops reading holds the stream, not the daemon (protocol/PROTOCOL.md, "Events:
the agent/event notification"): past a few MiB waiting for it, the model's stream waits at its
next event and live tool snapshots are skipped, the log says so once, an abort sent meanwhile is
served, and once the client reads again every byte arrives.

Measured as RSS of the daemon (a subprocess over real pipes, against the scripted loopback server
of the provider tests). The test waits on the daemon's own log line, never on a fixed time; the
memory bound is a constant (`STALL_BOUND_MIB`), far below what the unbounded queue took."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest

from pi_rpc.ai.sse import MIB
from tests.e2e.conftest import daemon_env
from tests.e2e.loopback_model import Loopback
from tests.providers.sse_server import sse_reply
from tests.reliability.stream_watch import completion_chunk, completion_stream, read_jsonl_until, status_kib, wait_idle

pytestmark = pytest.mark.e2e


# What a stalled client may cost the daemon, whatever the answer's size: the writer holds the
# stream past 4 MiB queued (modes/writer.py HOLD_BACKLOG), plus up to 1 MiB framed, the pipe, the
# part of the answer the builder holds, and the allocator's slack.
STALL_BOUND_MIB = 16
HOLDING = "holding the stream"
RESUMED = "reading again"


class _Log:
    """The daemon's stderr, line by line, with an event per line seen."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[bytes]) -> None:
        with stream:
            for raw in stream:
                with self._changed:
                    self.lines.append(raw.decode(errors="replace"))
                    self._changed.notify_all()

    def join(self) -> None:
        self._thread.join(60)

    def wait_for(self, text: str, guard: float = 120) -> bool:
        with self._changed:
            return self._changed.wait_for(lambda: any(text in line for line in self.lines), guard)

    def count(self, text: str) -> int:
        with self._changed:
            return sum(text in line for line in self.lines)


class _Daemon:
    def __init__(self, argv: list[str], tmp_path: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_rpc", *argv],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=daemon_env(tmp_path),
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None and self.proc.stderr is not None
        self.stdin = self.proc.stdin
        self.out = self.proc.stdout.fileno()
        self.log = _Log(self.proc.stderr)
        self.received = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        self.stdin.write(json.dumps(message).encode() + b"\n")
        self.stdin.flush()

    def read_until(self, marker: bytes) -> None:
        read_jsonl_until(self.out, marker, self.received, guard=240)

    def rss_kib(self) -> dict[str, int]:
        return status_kib(self.proc.pid)

    def messages(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in bytes(self.received).splitlines() if line.strip()]

    def close(self) -> None:
        self.stdin.close()
        self.proc.wait(60)
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        self.log.join()


def test_a_stalled_client_holds_a_200_mb_stream_in_bounded_memory_and_its_abort_is_served(
    loopback: Loopback, argv: list[str], tmp_path: Path
) -> None:
    piece = completion_chunk({"content": "y" * (8 * 1024 - 1) + "\n"})
    # 200 MiB of answer, the same chunk object over and over (the test holds one copy).
    loopback.script(sse_reply(completion_stream(["warm"])))
    loopback.script(
        sse_reply([*completion_stream([])[:1], *[piece] * (200 * MIB // (8 * 1024)), *completion_stream([])[1:]])
    )
    daemon = _Daemon(["--framing", "jsonl", *argv], tmp_path)
    try:
        daemon.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        daemon.read_until(b'"id":1,')
        # A first answer read whole: what a first request loads (the provider, httpx) is not the stall's.
        daemon.send({"jsonrpc": "2.0", "id": 5, "method": "prompt", "params": {"message": "warm up"}})
        daemon.read_until(b'"id":5,')
        before = daemon.rss_kib()["VmRSS"]
        daemon.send({"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"message": "hi"}})
        # The client reads nothing now: the daemon reaches its bound and says it holds the stream.
        assert daemon.log.wait_for(HOLDING)
        wait_idle(daemon.proc.pid)  # then it does nothing more while the client stays stalled
        stalled_mib = (daemon.rss_kib()["VmHWM"] - before) / 1024
        daemon.send({"jsonrpc": "2.0", "id": 3, "method": "abort", "params": {}})
        wait_idle(daemon.proc.pid)
        daemon.read_until(b'"id":2,')  # the client reads again
        assert daemon.log.wait_for(RESUMED)
    finally:
        daemon.close()
    messages = daemon.messages()
    assert [sorted(m) for m in messages if m.get("id") == 3] == [["id", "jsonrpc", "result"]]  # the abort was served
    assert [m["result"]["stopReason"] for m in messages if m.get("id") == 2] == ["aborted"]
    warmed = next(i for i, m in enumerate(messages) if m.get("id") == 5)
    events = [m["params"] for m in messages[warmed:] if m.get("method") == "agent/event"]
    streamed = "".join(
        e["assistantMessageEvent"]["delta"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
    )
    [end] = [e["message"] for e in events if e["type"] == "message_end" and e["message"]["role"] == "assistant"]
    assert streamed and streamed == "".join(block.get("text", "") for block in end["content"])  # whole, in order
    assert daemon.log.count(HOLDING) == 1  # once per stall
    # Measured: the unbounded queue kept everything that streamed (the whole 200 MiB and more);
    # held, the stall costs a constant, whatever the answer's size.
    assert stalled_mib < STALL_BOUND_MIB


BASH_SCRIPT = {
    "replies": [
        {
            "turns": [
                [{"toolCall": {"name": "bash", "arguments": {"command": "yes 0123456789abcdef | head -c 200000000"}}}],
                [{"text": "done"}],
            ]
        }
    ]
}


@pytest.mark.parametrize("mode", ["jsonrpc", "acp"])
def test_200_mb_of_bash_output_to_a_stalled_client_costs_bounded_memory(mode: str, tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(BASH_SCRIPT))
    workspace = tmp_path / "work"
    workspace.mkdir()
    argv = ["--cwd", str(workspace), "--script", str(script), "--approval-policy", "auto"]
    daemon = _Daemon(["--framing", "jsonl", *argv] if mode == "jsonrpc" else ["--mode", "acp", *argv], tmp_path)
    try:
        if mode == "jsonrpc":
            daemon.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
            daemon.read_until(b'"id":1,')
            prompt: dict[str, Any] = {"message": "run it"}
            method = "prompt"
        else:
            daemon.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
            daemon.read_until(b'"id":1,')
            params = {"cwd": str(workspace), "mcpServers": []}
            daemon.send({"jsonrpc": "2.0", "id": 4, "method": "session/new", "params": params})
            daemon.read_until(b'"id":4,')
            [reply] = [m for m in daemon.messages() if m.get("id") == 4]
            prompt = {"sessionId": reply["result"]["sessionId"], "prompt": [{"type": "text", "text": "run it"}]}
            method = "session/prompt"
        before = daemon.rss_kib()["VmRSS"]
        daemon.send({"jsonrpc": "2.0", "id": 2, "method": method, "params": prompt})
        wait_idle(daemon.proc.pid)  # the command has run to its end; the client read nothing
        stalled_mib = (daemon.rss_kib()["VmHWM"] - before) / 1024
        daemon.read_until(b'"id":2,')
    finally:
        daemon.close()
    replies = [m for m in daemon.messages() if m.get("id") == 2]
    assert len(replies) == 1 and "result" in replies[0]
    assert stalled_mib < STALL_BOUND_MIB
