"""A turn's request costs no import work once the first request is done: a module that is not
installed is not searched for again on every request (httpcore imports `sniffio`, which anyio 4
no longer brings, four times per request)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

import pytest

from pi_rpc.ai.clients import HttpClients
from pi_rpc.ai.providers import openai_completions
from pi_rpc.ai.registry import StreamOptions
from pi_rpc.ai.stream import AssistantBuilder
from pi_rpc.ai.types import Context, Model, ProviderEvent, UserMessage

from .sse_server import SSEServer, sse_event, sse_reply

pytestmark = pytest.mark.anyio


class SearchLog:
    """A meta path finder that finds nothing and records every module the import system looked for."""

    def __init__(self) -> None:
        self.searched: list[str] = []

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        self.searched.append(fullname)
        return None


@pytest.fixture
def search_log() -> Iterator[SearchLog]:
    log = SearchLog()
    sys.meta_path.insert(0, log)
    try:
        yield log
    finally:
        sys.meta_path.remove(log)


def _answer() -> bytes:
    return sse_event({"choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "stop"}]})


async def test_a_warm_request_searches_for_no_module(sse_server: SSEServer, search_log: SearchLog) -> None:
    model = Model(id="m", name="m", api="openai-completions", provider="p", base_url=sse_server.url + "/v1")
    pool = HttpClients()
    sse_server.script(*[sse_reply([_answer(), b"data: [DONE]\n\n"]) for _ in range(3)])
    try:
        for turn in range(3):
            if turn == 2:
                search_log.searched.clear()  # turns 1 and 2 may import lazily, once
            events: list[ProviderEvent] = []
            context = Context(system_prompt="", messages=[UserMessage(content="hello")])
            message = await openai_completions.stream(
                model, context, StreamOptions(http=pool, max_retries=0), AssistantBuilder(model, events.append)
            )
            assert message.stop_reason == "stop"
    finally:
        await pool.aclose()
    assert search_log.searched == []


_FIRST_REQUEST_IMPORTS = """
import sys
import pi_rpc.ai.providers.openai_completions, pi_rpc.ai.clients
import httpx
print(" ".join(name for name in ("httpx._main", "click", "pygments", "rich") if sys.modules.get(name)))
print(callable(httpx.main))
"""


def test_the_first_request_does_not_import_httpxs_command_line_client() -> None:
    # click comes with pi-rpc (uvicorn, of the MCP SDK, needs it), and httpx imports its CLI on
    # that alone: the provider's imports leave the CLI out, and httpx's stub `main` stands.
    done = subprocess.run(
        [sys.executable, "-c", _FIRST_REQUEST_IMPORTS], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.splitlines() == ["", "True"]
