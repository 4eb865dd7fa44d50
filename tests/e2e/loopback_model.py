"""A loopback model server for the daemon-over-pipes tests, and the streamed turns it answers with."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import pytest

from tests.providers.sse_server import (
    Delay,
    RecordedRequest,
    Reply,
    SSEServer,
    sse_event,
    sse_reply,
)

# Base backoff for the daemon's retries (pi_rpc/ai/http.py): 1, 2, 4 ms instead of 2, 4, 8 s.
RETRY_BASE_MS = "1"


Call = tuple[str, str, dict[str, Any]]  # (id, tool name, arguments)


async def _serve(server: SSEServer, *, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
    async with anyio.create_task_group() as tg:
        await server.start(tg)
        task_status.started()


@dataclass
class Loopback:
    portal: anyio.from_thread.BlockingPortal
    server: SSEServer

    def script(self, *replies: Reply) -> None:
        self.portal.call(lambda: self.server.script(*replies))

    def requests(self) -> list[RecordedRequest]:
        return self.portal.call(lambda: list(self.server.requests))

    def wait_disconnected(self, n: int, timeout: float = 10) -> None:
        async def wait() -> None:
            with anyio.fail_after(timeout):
                request = await self.server.wait_for_request(n)
                await request.disconnected.wait()

        self.portal.call(wait)


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    with anyio.from_thread.start_blocking_portal() as portal:
        server = portal.call(SSEServer)  # its events belong to the server's own loop
        serving, _ = portal.start_task(_serve, server)
        try:
            yield Loopback(portal, server)
        finally:
            serving.cancel()
            portal.call(server.aclose)


def text_pieces(text: str) -> list[str]:
    middle = max(1, len(text) // 2)
    return [text[:middle], text[middle:]] if len(text) > 1 else [text]


def completions_turn(
    text: str = "", calls: list[Call] | None = None, usage: tuple[int, int] = (0, 0), stall: bool = False
) -> Reply:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return sse_event(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": "test-model",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
        )

    events: list[bytes | Delay] = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": piece}) for piece in text_pieces(text)] if text else []
    if stall:
        return sse_reply(events, stall=True)
    for index, (call_id, name, arguments) in enumerate(calls or []):
        first, second = text_pieces(json.dumps(arguments))
        events.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": first},
                        }
                    ]
                }
            )
        )
        events.append(chunk({"tool_calls": [{"index": index, "function": {"arguments": second}}]}))
    events.append(chunk({}, "tool_calls" if calls else "stop"))
    prompt, completion = usage
    events.append(
        sse_event(
            {
                "id": "chatcmpl-1",
                "choices": [],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            }
        )
    )
    events.append(b"data: [DONE]\n\n")
    return sse_reply(events)
