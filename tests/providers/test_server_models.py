"""What an OpenAI-compatible server's `GET /models` says about each model's context window."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai import (
    ModelListError,
    ServerModel,
    describe_server_models,
    server_model_details,
    template_renders_tools,
)

from .sse_server import RecordedRequest, Reply, SSEServer, json_reply

URL = "http://127.0.0.1:8080/v1"


def _listing(*entries: dict[str, Any]) -> list[ServerModel]:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"object": "list", "data": entries}))
    return describe_server_models(URL, transport=transport)


def test_each_servers_figure_is_read_and_named() -> None:
    llama = {"id": "smol", "meta": {"n_ctx": 8192, "n_ctx_train": 65536, "n_vocab": 49152}}
    vllm = {"id": "qwen", "max_model_len": 32768}
    studio = {"id": "phi", "context_length": 4096}
    ollama = {"id": "qwen2.5-coder:14b", "owned_by": "library"}
    assert _listing(llama, vllm, studio, ollama) == [
        ServerModel("smol", 8192, f"meta.n_ctx of GET {URL}/models"),
        ServerModel("qwen", 32768, f"max_model_len of GET {URL}/models"),
        ServerModel("phi", 4096, f"context_length of GET {URL}/models"),
        ServerModel("qwen2.5-coder:14b"),
    ]


@settings(max_examples=60, derandomize=True)
@given(
    st.dictionaries(
        st.sampled_from(["meta", "max_model_len", "context_length", "created"]),
        st.one_of(
            st.none(), st.integers(-5, 10**7), st.text(max_size=3), st.dictionaries(st.text(max_size=5), st.integers())
        ),
    )
)
def test_any_entry_gives_a_positive_window_or_none(extra: dict[str, Any]) -> None:
    """Odd extra fields never lose the listing: the id is still read."""
    [model] = _listing({"id": "m", **extra})
    assert model.id == "m"
    assert model.context_window is None or model.context_window > 0


def test_a_non_listing_is_a_clear_error() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={"models": []}))
    with pytest.raises(ModelListError, match="not an OpenAI model list"):
        describe_server_models(URL, transport=transport)


# --- the servers' own endpoints, on 127.0.0.1 ---------------------------------------------------


def _server(routes: dict[str, Any]) -> Callable[[RecordedRequest], Reply]:
    def answer(request: RecordedRequest) -> Reply:
        body = routes.get(request.path)
        return json_reply(200, body) if body is not None else json_reply(404, {"error": "Not Found"})

    return answer


async def _details(server: SSEServer, listed: ServerModel) -> ServerModel:
    # The client is synchronous (start-up); the server runs in this loop: call it from a thread.
    return await anyio.to_thread.run_sync(server_model_details, server.url + "/v1", listed)


@pytest.mark.anyio
async def test_llama_cpp_props_give_the_window_and_no_vision(sse_server: SSEServer) -> None:
    props = {"default_generation_settings": {"n_ctx": 4096}, "modalities": {"vision": False}}
    sse_server.responder = _server({"/props": props})
    details = await _details(sse_server, ServerModel("smol"))
    assert details == ServerModel(
        "smol", 4096, f"default_generation_settings.n_ctx of GET {sse_server.url}/props", False
    )
    # A figure the listing gave is kept.
    listed = ServerModel("smol", 8192, "meta.n_ctx of GET /v1/models")
    assert (await _details(sse_server, listed)).context_window == 8192


@pytest.mark.anyio
async def test_ollama_show_gives_the_context_length_and_capabilities(sse_server: SSEServer) -> None:
    show = {
        "model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768},
        "capabilities": ["completion"],
    }
    sse_server.responder = _server({"/api/show": show})
    details = await _details(sse_server, ServerModel("qwen2.5-coder:14b"))
    assert (details.context_window, details.image_input) == (32768, False)
    assert details.context_from == f"model_info.*.context_length of POST {sse_server.url}/api/show"
    assert sse_server.requests[-1].json == {"model": "qwen2.5-coder:14b"}


@pytest.mark.anyio
async def test_a_server_with_neither_endpoint_leaves_the_model_as_listed(sse_server: SSEServer) -> None:
    sse_server.responder = _server({})
    listed = ServerModel("qwen", 32768, "max_model_len of GET /v1/models")
    assert await _details(sse_server, listed) == listed


@pytest.mark.parametrize(
    ("props", "renders"),
    [
        ({"chat_template_caps": {"supports_tool_calls": False, "supports_tools": False}}, False),
        ({"chat_template_caps": {"supports_tool_calls": True, "supports_tools": True}}, True),
        ({"default_generation_settings": {"n_ctx": 8192}}, None),  # an older llama.cpp
        (None, None),  # not llama.cpp: no /props
    ],
)
def test_llama_cpp_props_say_whether_the_template_renders_tools(props: Any, renders: bool | None) -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/props"  # beside /v1, not under it
        return httpx.Response(200, json=props) if props is not None else httpx.Response(404)

    assert template_renders_tools(URL, transport=httpx.MockTransport(answer)) is renders
