"""A provider error that echoes the API key never shows the key to anyone (protocol/PROTOCOL.md,
"Secrets").

Each API's error path inside a stream (Anthropic `event: error`, a Chat Completions error chunk,
a Responses `error` / `response.failed` event), an HTTP-status error and a retried 429 all quote
the key the daemon sent. The daemon runs as a subprocess against a loopback server; everything a
client and the disk see (every message on stdout, the prompt result, the session files, stderr at
DEBUG) is scanned for the key.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from pi_rpc.agent.agent import Agent
from pi_rpc.agent.loop import LoopConfig
from pi_rpc.agent.types import MessageEnd
from pi_rpc.ai.apis import api_declaration
from pi_rpc.ai.providers.faux import FAUX_MODEL
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import AssistantMessage, Context, Model, UserMessage
from pi_rpc.demo.rpc_client import DaemonClient
from tests.e2e.conftest import daemon_env
from tests.e2e.loopback_model import Loopback
from tests.providers.sse_server import Reply, json_reply, sse_event, sse_reply

pytestmark = pytest.mark.e2e

KEY = "sk-test-9f8e7d6c5b4a39281706"
ECHO = f"Invalid API key: {KEY} (header was 'Bearer {KEY}')"


def _key_variable(api: str) -> str:
    """The variable the daemon reads the key of `api`'s provider from."""
    provider = api_declaration(api).provider
    assert provider is not None
    return provider.key_variable


# --- key-echoing replies, one per error path ---------------------------------------------------------


def anthropic_error_event() -> Reply:
    def event(data: dict[str, Any]) -> bytes:
        return sse_event(data, event=str(data["type"]))

    return sse_reply(
        [
            event(
                {
                    "type": "message_start",
                    "message": {
                        "id": "m",
                        "type": "message",
                        "role": "assistant",
                        "model": "test-model",
                        "content": [],
                        "usage": {"input_tokens": 1, "output_tokens": 1},
                    },
                }
            ),
            event({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            event({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            event({"type": "error", "error": {"type": "authentication_error", "message": ECHO}}),
        ]
    )


def completions_error_chunk() -> Reply:
    return sse_reply(
        [
            sse_event(
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "model": "test-model",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}],
                }
            ),
            sse_event({"error": {"message": ECHO, "type": "invalid_request_error", "code": KEY}}),
        ]
    )


def _responses_start() -> list[bytes]:
    return [sse_event({"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}})]


def responses_error_event() -> Reply:
    return sse_reply([*_responses_start(), sse_event({"type": "error", "code": KEY, "message": ECHO})])


def responses_failed_event() -> Reply:
    failed = {"id": "r", "status": "failed", "output": [], "error": {"code": KEY, "message": ECHO}}
    return sse_reply([*_responses_start(), sse_event({"type": "response.failed", "response": failed})])


def http_status_error() -> Reply:
    return json_reply(401, {"error": {"message": ECHO}})


def retried_then_stream_error() -> Reply:
    return json_reply(429, {"error": {"message": ECHO}}, headers={"retry-after-ms": "1"})


CASES: dict[str, tuple[str, Callable[[], list[Reply]]]] = {
    "anthropic-event-error": ("anthropic-messages", lambda: [anthropic_error_event()]),
    "anthropic-http-401": ("anthropic-messages", lambda: [http_status_error()]),
    "completions-error-chunk": ("openai-completions", lambda: [completions_error_chunk()]),
    "completions-429-retried": ("openai-completions", lambda: [retried_then_stream_error(), completions_error_chunk()]),
    "responses-error": ("openai-responses", lambda: [responses_error_event()]),
    "responses-failed": ("openai-responses", lambda: [responses_failed_event()]),
    "responses-429-exhausted": ("openai-responses", lambda: [retried_then_stream_error()] * 4),
}


def _everything_on_disk(root: Path) -> str:
    return "\n".join(path.read_text("utf-8", "replace") for path in sorted(root.rglob("*")) if path.is_file())


@pytest.mark.parametrize("case", list(CASES))
def test_no_path_shows_the_key(case: str, loopback: Loopback, tmp_path: Path) -> None:
    api, replies = CASES[case]
    loopback.script(*replies())
    workspace, sessions = tmp_path / "ws", tmp_path / "sessions"
    workspace.mkdir()
    env = daemon_env(tmp_path / "home")
    env.update({_key_variable(api): KEY, "PI_RPC_RETRY_BASE_MS": "1", "PI_RPC_SESSION_DIR": str(sessions)})
    base_url = loopback.server.url + ("" if api == "anthropic-messages" else "/v1")
    argv = [
        "--cwd",
        str(workspace),
        "--api",
        api,
        "--base-url",
        base_url,
        "--model",
        "test-model",
        "--api-key-env",
        _key_variable(api),
        "--log-level",
        "DEBUG",
    ]
    with DaemonClient(argv, env=env) as client:
        client.request("initialize", {"clientInfo": {"name": "pytest"}})
        result = client.request("prompt", {"message": "hello"})
        client.close()

    # The key really went out, and the server really quoted it back.
    sent = loopback.requests()[0].headers
    assert KEY in (sent.get("x-api-key", "") + sent.get("authorization", ""))
    assert result["stopReason"] == "error" and "Invalid API key" in result["errorMessage"]
    assert "[redacted]" in result["errorMessage"]

    seen = {
        "stdout": msgspec.json.encode(client.messages).decode(),
        "prompt result": json.dumps(result),
        "session files": _everything_on_disk(sessions),
        "stderr": "\n".join(client.stderr_lines),
    }
    assert _everything_on_disk(sessions), "the failed turn is persisted"
    leaks = {where: text.count(KEY) for where, text in seen.items() if KEY in text}
    assert leaks == {}


# --- a stream function that is not HTTP, or that breaks its contract -------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["fails", "raises"])
async def test_the_loop_scrubs_any_stream_functions_errors(how: str) -> None:
    async def echoing(
        model: Model, context: Context, options: StreamOptions, builder: AssistantBuilder
    ) -> AssistantMessage:
        if how == "raises":
            raise RuntimeError(f"broken provider quoting {options.api_key}")
        return builder.fail("error", f"rejected {options.headers['x-team-token']}")

    agent = Agent()
    ends: list[AssistantMessage] = []
    agent.subscribe(
        lambda e: (
            ends.append(e.message) if isinstance(e, MessageEnd) and isinstance(e.message, AssistantMessage) else None
        )
    )
    options = StreamOptions(api_key=KEY, headers={"x-team-token": "Bearer team-secret-123"})
    config = LoopConfig(
        model=FAUX_MODEL, stream_fn=echoing, options=options, system_prompt=lambda: "", tools=lambda: []
    )
    await agent.prompt([UserMessage(content="hi")], config)
    (message,) = ends
    assert message.stop_reason == "error" and isinstance(message.error_message, str)
    assert "[redacted]" in message.error_message
    assert KEY not in message.error_message and "team-secret-123" not in message.error_message
