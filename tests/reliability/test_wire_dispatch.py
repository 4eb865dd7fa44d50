"""JSON-RPC dispatch over real pipes: what the daemon answers and what it must not (issue 9, item 2)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from pi_rpc.modes.framing import encode_lsp

pytestmark = pytest.mark.e2e

Spawn = Callable[..., DaemonClient]


def framed(*messages: dict[str, Any]) -> bytes:
    return b"".join(encode_lsp(msgspec.json.encode(m)) for m in messages)


def test_requests_pipelined_behind_shutdown_are_refused_and_none_runs(spawn: Spawn) -> None:
    client = spawn()
    client.send_raw(
        framed(
            {"jsonrpc": "2.0", "id": 1, "method": "shutdown"},
            {"jsonrpc": "2.0", "id": 2, "method": "prompt", "params": {"message": "stream forever"}},
            {"jsonrpc": "2.0", "id": 3, "method": "state"},
        )
    )
    assert client.result(1) is None
    assert client.response(2)["error"]["code"] == -32600
    assert client.response(3)["error"]["code"] == -32600
    client.notify("exit")
    assert client.proc.wait(30) == 0
    assert client.events() == []  # the prompt never started a run


def test_an_extra_top_level_member_is_ignored(spawn: Spawn) -> None:
    client = spawn(script=None)
    client.send({"jsonrpc": "2.0", "id": 1, "method": "state", "trace": "on"})
    assert client.result(1)["isStreaming"] is False
    assert client.close() == 0


def test_responses_from_the_client_are_never_answered(spawn: Spawn) -> None:
    client = spawn(script=None)
    client.send_raw(
        framed(
            {"jsonrpc": "2.0", "id": 7, "result": None},
            {"jsonrpc": "2.0", "id": 8, "error": {"code": -32601, "message": "no such method"}},
            {"jsonrpc": "2.0", "id": 9, "result": 1, "extra": True},
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        )
    )
    assert client.request("state")["isStreaming"] is False  # everything before it was handled
    assert client.close() == 0
    answered = [m for m in client.messages if m.get("id") in (7, 8, 9, None)]
    assert answered == []
    assert sum("ignored a response from the client" in line for line in client.stderr_lines) == 4


def test_a_boolean_id_is_an_invalid_request(spawn: Spawn) -> None:
    client = spawn(script=None)
    before = len(client.messages)
    client.send({"jsonrpc": "2.0", "id": True, "method": "state"})
    reply = client.wait_for_message(lambda m: "error" in m or "result" in m, timeout=30, start=before)
    assert reply["id"] is None and reply["error"]["code"] == -32600
    assert client.close() == 0


def test_cancel_request_sent_as_a_request_is_answered(spawn: Spawn) -> None:
    client = spawn()
    prompt_id = client.request_nowait("prompt", {"message": "stream forever"})
    client.wait_for_event(lambda e: e["type"] == "message_update")
    client.send({"jsonrpc": "2.0", "id": "cancel-1", "method": "$/cancelRequest", "params": {"id": prompt_id}})
    assert client.result("cancel-1", timeout=10) is None
    assert client.response(prompt_id)["error"]["code"] == -32800
    client.send({"jsonrpc": "2.0", "id": "cancel-2", "method": "$/cancelRequest", "params": {}})
    assert client.response("cancel-2", timeout=10)["error"]["code"] == -32602
    assert client.close() == 0


def test_a_client_response_reusing_a_pending_prompts_id_leaves_it_cancellable(spawn: Spawn) -> None:
    client = spawn()
    prompt_id = client.request_nowait("prompt", {"message": "stream forever"})
    client.wait_for_event(lambda e: e["type"] == "message_update")
    client.send({"jsonrpc": "2.0", "id": prompt_id, "result": None})
    client.notify("$/cancelRequest", {"id": prompt_id})
    assert client.response(prompt_id, timeout=30)["error"]["code"] == -32800
    assert client.close() == 0
