"""The daemon against a real loopback model server: `python -m pi_rpc --api
openai-completions|anthropic-messages --base-url http://127.0.0.1:PORT…` completes a multi-tool
session end to end, reports provider failures, retries, and aborts a stalled stream.

The scripted server of the provider tests (`tests/providers/sse_server.py`) runs on its own event
loop in a background thread (an anyio blocking portal); the daemon is a subprocess driven by the
blocking `DaemonClient`. Spec references: 15.1 (events), 15.4 (turns), 15.13 (abort), 16 (RPC).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_rpc.demo.rpc_client import DaemonClient
from tests.providers.sse_server import (
    Delay,
    RecordedRequest,
    Reply,
    json_reply,
    sse_event,
    sse_reply,
)

from .conftest import daemon_env
from .loopback_model import RETRY_BASE_MS, Call, Loopback, completions_turn, text_pieces

pytestmark = pytest.mark.e2e

APIS = ["openai-completions", "anthropic-messages"]
EDITED = "Successfully replaced 1 block(s) in src/greet.py."


# --- the loopback server in a thread ----------------------------------------------------------------


@pytest.fixture
def daemon(workspace: Path, loopback: Loopback) -> Iterator[Callable[[str], DaemonClient]]:
    clients: list[DaemonClient] = []

    def start(api: str) -> DaemonClient:
        env = daemon_env()
        env["PI_RPC_RETRY_BASE_MS"] = RETRY_BASE_MS
        base_url = loopback.server.url
        if api == "anthropic-messages":
            env["ANTHROPIC_API_KEY"] = "test-key"  # Pi's convention: the base URL has no /v1
        else:
            base_url += "/v1"  # a local OpenAI-compatible server needs no key
        argv = ["--cwd", str(workspace), "--api", api, "--base-url", base_url, "--model", "test-model"]
        if api == "anthropic-messages":
            argv += ["--api-key-env", "ANTHROPIC_API_KEY"]  # an explicit URL gets a key only when named
        client = DaemonClient(argv, env=env)
        clients.append(client)
        return client

    yield start
    for client in clients:
        if client.proc.poll() is None:
            client.proc.kill()
            client.proc.wait()
        client.terminate()


# --- streamed turns in each API's wire format -----------------------------------------------------


def anthropic_turn(
    text: str = "", calls: list[Call] | None = None, usage: tuple[int, int] = (0, 0), stall: bool = False
) -> Reply:
    def event(data: dict[str, Any]) -> bytes:
        return sse_event(data, event=str(data["type"]))

    prompt, completion = usage
    events: list[bytes | Delay] = [
        event(
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "model": "test-model",
                    "content": [],
                    "usage": {"input_tokens": prompt, "output_tokens": 1},
                },
            }
        )
    ]
    index = 0
    if text:
        events.append(event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
        events += [
            event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
            for piece in text_pieces(text)
        ]
        if stall:
            return sse_reply(events, stall=True)
        events.append(event({"type": "content_block_stop", "index": 0}))
        index = 1
    for offset, (call_id, name, arguments) in enumerate(calls or []):
        i = index + offset
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append(event({"type": "content_block_start", "index": i, "content_block": block}))
        events += [
            event(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
            for piece in text_pieces(json.dumps(arguments))
        ]
        events.append(event({"type": "content_block_stop", "index": i}))
    stop_reason = "tool_use" if calls else "end_turn"
    events.append(
        event({"type": "message_delta", "delta": {"stop_reason": stop_reason}, "usage": {"output_tokens": completion}})
    )
    events.append(event({"type": "message_stop"}))
    return sse_reply(events)


TURNS = {"openai-completions": completions_turn, "anthropic-messages": anthropic_turn}
PATHS = {"openai-completions": "/v1/chat/completions", "anthropic-messages": "/v1/messages"}


def tool_results_sent(api: str, request: RecordedRequest) -> dict[str, str]:
    """tool call id -> result text, as the request carried them back to the model."""
    found: dict[str, str] = {}
    for message in request.json["messages"]:
        if api == "openai-completions" and message["role"] == "tool":
            found[message["tool_call_id"]] = message["content"]
        elif api == "anthropic-messages" and message["role"] == "user":
            for block in message["content"]:
                if block["type"] == "tool_result":
                    content = block["content"]
                    found[block["tool_use_id"]] = (
                        content if isinstance(content, str) else "".join(part.get("text", "") for part in content)
                    )
    return found


def tool_calls_sent(api: str, request: RecordedRequest) -> list[str]:
    ids: list[str] = []
    for message in request.json["messages"]:
        if message["role"] != "assistant":
            continue
        if api == "openai-completions":
            ids += [call["id"] for call in message.get("tool_calls", [])]
        else:
            ids += [block["id"] for block in message["content"] if block["type"] == "tool_use"]
    return ids


# --- a whole session -----------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_multi_tool_session_end_to_end(
    daemon: Callable[[str], DaemonClient], loopback: Loopback, workspace: Path, api: str
) -> None:
    """Turn 1 reads and runs bash in one batch, turn 2 edits, turn 3 answers (spec 15.2, 15.5)."""
    turn = TURNS[api]
    loopback.script(
        turn(
            "Let me look.",
            [
                ("call_read_1", "read", {"path": "README.md"}),
                ("call_bash_1", "bash", {"command": "echo from-bash; ls src"}),
            ],
            usage=(100, 20),
        ),
        turn(
            calls=[
                ("call_edit_1", "edit", {"path": "src/greet.py", "edits": [{"oldText": "Helo", "newText": "Hello"}]})
            ],
            usage=(150, 10),
        ),
        turn("Fixed the greeting.", usage=(200, 5)),
    )
    client = daemon(api)
    init = client.request("initialize", {"clientInfo": {"name": "pytest"}})
    assert init["model"]["api"] == api and init["model"]["id"] == "test-model"

    result = client.request("prompt", {"message": "fix the greeting"})
    assert result["stopReason"] == "stop"
    usage = result["usage"]
    assert (usage["input"], usage["output"], usage["totalTokens"]) == (450, 35, 485)

    # The files changed on disk.
    assert 'f"Hello, {name}!"' in (workspace / "src" / "greet.py").read_text()

    # The events (spec 15.2).
    events = client.events()
    types = [e["type"] for e in events]
    assert types[0] == "agent_start" and types.count("agent_end") == 1
    assert types.count("turn_start") == 3 == types.count("turn_end")
    ends = {e["toolCallId"]: e for e in events if e["type"] == "tool_execution_end"}
    assert {k: (v["toolName"], v["isError"]) for k, v in ends.items()} == {
        "call_read_1": ("read", False),
        "call_bash_1": ("bash", False),
        "call_edit_1": ("edit", False),
    }
    assert "Known bug" in ends["call_read_1"]["result"]["content"][0]["text"]
    assert "from-bash\ngreet.py" in ends["call_bash_1"]["result"]["content"][0]["text"]
    assert ends["call_edit_1"]["result"]["content"][0]["text"] == EDITED
    starts = [e for e in events if e["type"] == "tool_execution_start"]
    assert starts[0]["args"] == {"path": "README.md"}
    text = "".join(
        e["assistantMessageEvent"]["delta"]
        for e in events
        if e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert text == "Let me look.Fixed the greeting."

    # What the server received.
    requests = loopback.requests()
    assert len(requests) == 3 and all(r.path == PATHS[api] for r in requests)
    first = requests[0]
    assert first.json["model"] == "test-model" and first.json["stream"] is True
    declared = first.json["tools"]
    names = [t["function"]["name"] if api == "openai-completions" else t["name"] for t in declared]
    assert set(names) == {"read", "bash", "edit", "write"}
    if api == "anthropic-messages":
        assert first.headers["x-api-key"] == "test-key"
    else:
        assert "authorization" not in first.headers  # no key configured: no header at all
    assert tool_results_sent(api, first) == {}

    second = requests[1]
    assert tool_calls_sent(api, second) == ["call_read_1", "call_bash_1"]
    results = tool_results_sent(api, second)
    assert list(results) == ["call_read_1", "call_bash_1"]
    assert "Known bug" in results["call_read_1"] and "from-bash" in results["call_bash_1"]

    third = requests[2]
    assert tool_calls_sent(api, third) == ["call_read_1", "call_bash_1", "call_edit_1"]
    assert tool_results_sent(api, third)["call_edit_1"] == EDITED
    assert client.close() == 0


# --- failures ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
def test_server_error_retried_until_exhausted(
    daemon: Callable[[str], DaemonClient], loopback: Loopback, api: str
) -> None:
    """A 500 is retried (three retries by default) and then ends the run with the server's message."""
    loopback.script(*[json_reply(500, {"error": {"message": "upstream exploded"}}) for _ in range(4)])
    client = daemon(api)
    result = client.request("prompt", {"message": "hi"})
    assert result["stopReason"] == "error"
    assert result["errorMessage"] == "500 Internal Server Error: upstream exploded"
    events = client.events()
    starts = [e for e in events if e["type"] == "auto_retry_start"]
    retries = [(e["attempt"], e["maxAttempts"], e["delayMs"]) for e in starts]
    assert retries == [(1, 3, 1), (2, 3, 2), (3, 3, 4)]
    assert all(e["errorMessage"] == "500 Internal Server Error: upstream exploded" for e in starts)
    end = next(e for e in events if e["type"] == "auto_retry_end")
    assert (end["success"], end["attempt"]) == (False, 3)
    assert len(loopback.requests()) == 4
    assert client.close() == 0


@pytest.mark.parametrize("api", APIS)
def test_server_recovers_after_a_retry(daemon: Callable[[str], DaemonClient], loopback: Loopback, api: str) -> None:
    loopback.script(json_reply(503, {"error": {"message": "busy"}}), TURNS[api]("Back.", usage=(3, 2)))
    client = daemon(api)
    result = client.request("prompt", {"message": "hi"})
    assert result["stopReason"] == "stop"
    types = [e["type"] for e in client.events()]
    assert types.count("auto_retry_start") == 1
    end = next(e for e in client.events() if e["type"] == "auto_retry_end")
    assert (end["success"], end["attempt"]) == (True, 1)
    assert client.close() == 0


@pytest.mark.parametrize("api", APIS)
def test_unauthorized_is_an_error_without_retry(
    daemon: Callable[[str], DaemonClient], loopback: Loopback, api: str
) -> None:
    loopback.script(
        json_reply(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
    )
    client = daemon(api)
    result = client.request("prompt", {"message": "hi"})
    assert result["stopReason"] == "error"
    assert result["errorMessage"] == "401 Unauthorized: invalid x-api-key"
    types = [e["type"] for e in client.events()]
    assert "auto_retry_start" not in types and "auto_retry_end" not in types
    assert types.count("turn_end") == 1 and types.count("agent_end") == 1
    assert len(loopback.requests()) == 1
    assert client.close() == 0


@pytest.mark.parametrize("api", APIS)
def test_abort_during_a_stalled_stream(daemon: Callable[[str], DaemonClient], loopback: Loopback, api: str) -> None:
    """spec 15.14: abort closes the connection (the server sees it) and the prompt ends `aborted`."""
    loopback.script(TURNS[api]("Thinking it over", stall=True))
    client = daemon(api)
    prompt_id = client.request_nowait("prompt", {"message": "hi"})
    client.wait_for_event(
        lambda e: e["type"] == "message_update" and e["assistantMessageEvent"]["type"] == "text_delta"
    )
    assert client.request("abort") is None  # resolves once the session is idle
    loopback.wait_disconnected(1)
    outcome = client.result(prompt_id)
    assert outcome["stopReason"] == "aborted"
    end = next(e for e in client.events() if e["type"] == "message_end" and e["message"]["role"] == "assistant")
    assert end["message"]["stopReason"] == "aborted"
    assert end["message"]["content"][0]["text"] == "Thinking it over"
    assert client.request("state")["isStreaming"] is False
    assert client.close() == 0
