"""Stream failures say what happened and where (protocol/PROTOCOL.md, "Errors"): a reset names the
URL and how far the response got, a connect failure names the URL, an endless SSE line is cut off
with a clear message, and the API key appears in none of them. Real HTTP on 127.0.0.1."""

from __future__ import annotations

import socket

import pytest

from pi_rpc.ai.providers import anthropic, openai_completions
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.sse import MAX_SSE_LINE_BYTES, MIB
from pi_rpc.ai.types import Context, Model, TextDeltaEvent, UserMessage
from tests.providers.helpers import run_provider
from tests.providers.sse_server import SSEServer, sse_event, sse_reply

pytestmark = pytest.mark.anyio

KEY = "sk-proj-SECRET-stream-key"
OPTIONS = StreamOptions(api_key=KEY, max_retries=0, idle_timeout=5)
CONTEXT = Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")])


def _model(base_url: str) -> Model:
    return Model(id="gpt-4o", name="GPT-4o", api="openai-completions", provider="openai", base_url=base_url)


def _text_events(count: int) -> list[bytes]:
    return [sse_event({"choices": [{"index": 0, "delta": {"content": f"piece {i} "}}]}) for i in range(count)]


async def test_a_reset_mid_stream_names_the_url_and_how_far_it_got(sse_server: SSEServer) -> None:
    sse_server.script(sse_reply(_text_events(20), reset_after=10))
    message, events = await run_provider(openai_completions.stream, _model(sse_server.url + "/v1"), CONTEXT, OPTIONS)
    assert message.stop_reason == "error"
    text = str(message.error_message)
    url = f"http://127.0.0.1:{sse_server.port}/v1/chat/completions"
    assert text.startswith(f"Connection to {url} was reset mid-stream after ")
    received = int(text.split(" after ")[1].split(" bytes")[0])
    assert received > 0  # ten events had arrived
    assert KEY not in text
    assert sum(isinstance(e, TextDeltaEvent) for e in events) == 10  # what arrived is kept


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("stream", [openai_completions.stream, anthropic.stream])
async def test_a_refused_connection_names_the_url_without_credentials(stream: object) -> None:
    port = _free_port()  # nothing listens there once the probe is closed
    base = f"http://user:{KEY}@127.0.0.1:{port}/v1?key={KEY}"
    model = _model(base)
    message, _ = await run_provider(stream, model, CONTEXT, OPTIONS)  # type: ignore[arg-type]
    text = str(message.error_message)
    assert message.stop_reason == "error"
    assert text.startswith(f"Connection error: could not connect to http://127.0.0.1:{port}/v1")
    assert KEY not in text


async def test_an_endless_sse_line_fails_the_message_clearly(sse_server: SSEServer) -> None:
    one_mib = b"x" * MIB
    line = [b"data: "] + [one_mib] * (MAX_SSE_LINE_BYTES // MIB + 2)  # no newline, ever
    sse_server.script(sse_reply([*_text_events(3), *line]))
    message, events = await run_provider(openai_completions.stream, _model(sse_server.url + "/v1"), CONTEXT, OPTIONS)
    assert message.stop_reason == "error"
    text = str(message.error_message)
    assert text.startswith(
        f"Provider sent an SSE line over {MAX_SSE_LINE_BYTES // MIB} MiB "
        f"(http://127.0.0.1:{sse_server.port}/v1/chat/completions, after "
    )
    assert KEY not in text
    assert sum(isinstance(e, TextDeltaEvent) for e in events) == 3
