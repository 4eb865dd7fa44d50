"""The daemon answers requests while a long answer streams in (protocol/PROTOCOL.md, "Lifecycle":
requests are dispatched concurrently): a `state` request
sent mid-stream is answered while the model server still holds the rest of the answer back, and
the whole answer then arrives. Ordering only: the server releases the rest of the stream only
after the answer to `state` has reached the client."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.conftest import daemon_env
from tests.e2e.loopback_model import Loopback
from tests.providers.sse_server import Gate, sse_reply

from .stream_watch import completion_stream

pytestmark = pytest.mark.e2e


def test_a_request_mid_stream_is_answered_before_the_stream_ends(loopback: Loopback, tmp_path: Path) -> None:
    pieces = [f"w{i} " for i in range(100_000)]
    events = completion_stream(pieces)
    gate = loopback.portal.call(Gate)  # its event belongs to the server's loop
    half = len(events) // 2
    loopback.script(sse_reply([*events[:half], gate, *events[half:]]))
    argv = [
        "--cwd",
        str(tmp_path),
        "--api",
        "openai-completions",
        "--base-url",
        loopback.server.url + "/v1",
        "--model",
        "test-model",
    ]
    client = DaemonClient(argv, framing="jsonl", env=daemon_env(tmp_path))
    try:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        prompt = client.request_nowait("prompt", {"message": "hi"})
        client.wait_for_event(lambda e: e.get("type") == "message_update", timeout=60)
        state = client.request("state", {}, timeout=60)  # the stream is held open meanwhile
        assert state["isStreaming"] is True
        assert not any(e.get("type") == "agent_end" for e in client.events())
        loopback.portal.call(gate.opened.set)
        result = client.result(prompt, timeout=120)
        text = "".join(
            e["assistantMessageEvent"]["delta"]
            for e in client.events()
            if e.get("type") == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
        )
    finally:
        client.close()
    assert result["stopReason"] == "stop"
    assert text == "".join(pieces)
