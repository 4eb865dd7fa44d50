"""What an OpenAI-compatible server's `GET /models` says about each model's context window."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_rpc.ai import ModelListError, ServerModel, describe_server_models

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
