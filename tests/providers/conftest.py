from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest

from pi_rpc.ai import http

from .sse_server import SSEServer


@pytest.fixture
async def sse_server() -> AsyncIterator[SSEServer]:
    """A scripted HTTP server on 127.0.0.1 (port 0); see `tests/providers/sse_server.py`."""
    server = SSEServer()
    async with anyio.create_task_group() as tg:
        await server.start(tg)
        yield server
        tg.cancel_scope.cancel()
    await server.aclose()


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reported delays stay honest (delay_ms); real sleeps shrink a thousandfold.
    monkeypatch.setattr(http, "RETRY_TIME_SCALE", 0.001)
