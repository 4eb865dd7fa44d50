"""The daemon against real llama.cpp servers: `pi-rpc --base-url` as a subprocess over real pipes,
as an editor starts it, with no --model (the model and its window are the server's). A turn
streams text deltas and reports usage; an abort mid-stream ends the run at once and the server
stops generating (its log says so)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.conftest import daemon_env

from .servers import CONTEXT_TOKENS, LlamaProcess

pytestmark = [pytest.mark.llama, pytest.mark.e2e]

Json = dict[str, Any]


def _daemon(server: LlamaProcess, tmp_path: Path) -> DaemonClient:
    client = DaemonClient(
        ["--cwd", str(tmp_path), "--base-url", server.base_url], framing="jsonl", env=daemon_env(tmp_path)
    )
    client.request("initialize", {"clientInfo": {"name": "pytest"}})
    return client


def _is_text_delta(event: Json) -> bool:
    return event.get("type") == "message_update" and event["assistantMessageEvent"]["type"] == "text_delta"


def test_a_turn_streams_text_and_reports_usage(llama: LlamaProcess, tmp_path: Path) -> None:
    with _daemon(llama, tmp_path) as client:
        state = client.request("state", {})
        if llama.kind == "llama-server":  # discovered from the server, not the 128k guess
            assert state["model"]["contextWindow"] == CONTEXT_TOKENS
        result = client.request("prompt", {"message": "Say hello."}, timeout=300)
        deltas = [e for e in client.events() if _is_text_delta(e)]
    assert result["stopReason"] in ("stop", "length"), result
    assert len(deltas) > 1
    if llama.kind == "llama-server":  # llama-cpp-python's stream reports no usage
        assert result["usage"]["input"] > 0 and result["usage"]["output"] > 0


def test_an_abort_mid_stream_stops_the_server(llama: LlamaProcess, tmp_path: Path) -> None:
    log_start = len(llama.log_text())
    with _daemon(llama, tmp_path) as client:
        prompt = client.request_nowait("prompt", {"message": "Count from 1 to 500, one number a line."})
        client.wait_for_event(_is_text_delta, timeout=300)
        client.request("abort", {}, timeout=60)
        result = client.result(prompt, timeout=60)
    assert result["stopReason"] == "aborted"
    if llama.kind == "llama-server":
        after = llama.wait_for_log("cancel task", log_start)
        llama.wait_for_log("stop processing", log_start + after.index("cancel task"))
        slots = httpx.get(llama.root_url + "/slots", timeout=10).json()
        assert not any(slot["is_processing"] for slot in slots)
    else:
        llama.wait_for_log("Disconnected from client", log_start)
